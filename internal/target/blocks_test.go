package target

import (
	"slices"
	"strings"
	"testing"
)

// TestInBlocks checks which statements of a batch share a compound
// statement: the source's DML and the timestamp and thread id set before
// it, never a statement whose parse or context a SET before it changes.
func TestInBlocks(t *testing.T) {
	s := &Session{maxStatement: 16 << 20}
	block := func(stmts ...string) string {
		return "BEGIN NOT ATOMIC " + strings.Join(stmts, ";\n") + ";\nEND"
	}
	cases := []struct {
		name  string
		mode  uint64
		known bool
		in    []string
		want  []string
	}{
		{
			name: "statements of two transactions", known: true,
			in: []string{"SET TIMESTAMP=1", "SET @@session.pseudo_thread_id=5", "UPDATE t SET k=k+1 WHERE id=1", "DELETE FROM t WHERE id=2",
				"SET @@session.pseudo_thread_id=6", "INSERT INTO t VALUES (2)"},
			want: []string{block("SET TIMESTAMP=1", "SET @@session.pseudo_thread_id=5", "UPDATE t SET k=k+1 WHERE id=1", "DELETE FROM t WHERE id=2",
				"SET @@session.pseudo_thread_id=6", "INSERT INTO t VALUES (2)")},
		},
		{
			name: "USE and sql_mode end a block", known: true,
			in: []string{"UPDATE t SET k=1", "UPDATE t SET k=2", "USE d2", "UPDATE t SET k=3", "SET @@session.sql_mode=0",
				"UPDATE t SET k=4", "REPLACE INTO t VALUES (1)"},
			want: []string{block("UPDATE t SET k=1", "UPDATE t SET k=2"), "USE d2", "UPDATE t SET k=3", "SET @@session.sql_mode=0",
				block("UPDATE t SET k=4", "REPLACE INTO t VALUES (1)")},
		},
		{
			name: "an insert id stays with its statement", known: true,
			in:   []string{"UPDATE t SET k=1", "SET INSERT_ID=7", "INSERT INTO t (k) VALUES (1)", "UPDATE t SET k=2", "UPDATE t SET k=3"},
			want: []string{"UPDATE t SET k=1", "SET INSERT_ID=7", "INSERT INTO t (k) VALUES (1)", block("UPDATE t SET k=2", "UPDATE t SET k=3")},
		},
		{
			name: "user variables and seeds", known: true,
			in:   []string{"SET @`a`:=1", "SET @@RAND_SEED1=1, @@RAND_SEED2=2", "INSERT INTO t VALUES (@a + RAND())", "UPDATE t SET k=2"},
			want: []string{"SET @`a`:=1", "SET @@RAND_SEED1=1, @@RAND_SEED2=2", "INSERT INTO t VALUES (@a + RAND())", "UPDATE t SET k=2"},
		},
		{
			name: "sql_mode ORACLE, then not", known: true, mode: sqlModeOracle,
			in:   []string{"UPDATE t SET k=1", "UPDATE t SET k=2", "SET @@session.sql_mode=1", "UPDATE t SET k=3", "UPDATE t SET k=4"},
			want: []string{"UPDATE t SET k=1", "UPDATE t SET k=2", "SET @@session.sql_mode=1", block("UPDATE t SET k=3", "UPDATE t SET k=4")},
		},
		{
			name: "sql_mode unknown", known: false,
			in:   []string{"UPDATE t SET k=1", "UPDATE t SET k=2"},
			want: []string{"UPDATE t SET k=1", "UPDATE t SET k=2"},
		},
		{
			name: "row events, marks, errors and terminators stay outside", known: true,
			in: []string{"BINLOG 'xx'", "UPDATE t SET k=1", aheadMark, "UPDATE t SET k=2", expecting(1062, "INSERT INTO t VALUES (1)"),
				"UPDATE t SET k=3", "INSERT INTO t VALUES (2);", "UPDATE t SET k=4", "SET @@session.foreign_key_checks=0", "UPDATE t SET k=5",
				"DELETE FROM t WHERE k=5 returning id"},
			want: []string{"BINLOG 'xx'", "UPDATE t SET k=1", aheadMark, "UPDATE t SET k=2", expecting(1062, "INSERT INTO t VALUES (1)"),
				"UPDATE t SET k=3", "INSERT INTO t VALUES (2);", "UPDATE t SET k=4", "SET @@session.foreign_key_checks=0", "UPDATE t SET k=5",
				"DELETE FROM t WHERE k=5 returning id"},
		},
	}
	for _, c := range cases {
		if got := s.inBlocks(slices.Clone(c.in), c.mode, c.known); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestInBlocksBoundsABlock checks that a compound statement stays within
// half the target's max_allowed_packet.
func TestInBlocksBoundsABlock(t *testing.T) {
	s := &Session{maxStatement: 4096}
	var in []string
	for i := 0; i < 200; i++ {
		in = append(in, "UPDATE t SET k=k+1 WHERE id=1")
	}
	out := s.inBlocks(in, 0, true)
	if len(out) < 2 {
		t.Fatalf("200 statements made %d blocks", len(out))
	}
	n := 0
	for _, b := range out {
		if len(b) > 2048+len("BEGIN NOT ATOMIC ;\nEND") {
			t.Errorf("a block of %d bytes", len(b))
		}
		n += strings.Count(b, "UPDATE")
	}
	if n != 200 {
		t.Errorf("the blocks hold %d statements of 200", n)
	}
}
