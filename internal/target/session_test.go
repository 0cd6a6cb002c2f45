package target

import (
	"slices"
	"strings"
	"testing"

	"gapless/internal/binlog"
)

// TestRowBatcherBoundsTableMaps checks that BINLOG statements end at a
// statement boundary once they hold maxTableMaps table maps, and that a
// statement's own table maps and rows stay together.
func TestRowBatcherBoundsTableMaps(t *testing.T) {
	b := rowBatcher{limit: 1 << 20}
	var stmts []string
	statements := 3*maxTableMaps + 1
	for i := 0; i < statements; i++ {
		// Each statement maps two tables and writes one rows event.
		stmts = b.addTableMap(stmts, []byte("m1"))
		stmts = b.addTableMap(stmts, []byte("m2"))
		stmts = b.addRows(stmts, []byte("rows"), true)
	}
	stmts = b.flush(stmts)
	perStatement := maxTableMaps / 2
	if want := (statements + perStatement - 1) / perStatement; len(stmts) != want {
		t.Fatalf("%d statements of 2 table maps made %d BINLOG statements, want %d", statements, len(stmts), want)
	}
	for i, s := range stmts {
		if !strings.HasPrefix(s, "BINLOG '") {
			t.Fatalf("statement %d is not a BINLOG statement: %.40s", i, s)
		}
	}
}

// TestRowBatcherKeepsSmallStatementsTogether checks that a few statements
// share one BINLOG statement, so a small transaction is one round trip.
func TestRowBatcherKeepsSmallStatementsTogether(t *testing.T) {
	b := rowBatcher{limit: 1 << 20}
	var stmts []string
	for i := 0; i < maxTableMaps-1; i++ {
		stmts = b.addTableMap(stmts, []byte("m"))
		stmts = b.addRows(stmts, []byte("rows"), true)
	}
	if stmts = b.flush(stmts); len(stmts) != 1 {
		t.Fatalf("%d small statements made %d BINLOG statements, want 1", maxTableMaps-1, len(stmts))
	}
}

func TestQueryStatement(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE TABLE t (a INT)\x00":          "CREATE TABLE t (a INT)",
		" INSERT INTO t VALUES (1) \x00\x00 ": "INSERT INTO t VALUES (1)",
		"INSERT INTO t VALUES ('a\x00')":      "INSERT INTO t VALUES ('a\x00')",
		"COMMIT":                              "COMMIT",
	} {
		if got := queryStatement([]byte(in)); got != want {
			t.Errorf("queryStatement(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMayMatchFulltext(t *testing.T) {
	naive := func(q string) bool { return strings.Contains(strings.ToLower(q), "against") }
	for _, q := range []string{"", "against", "AGAINST", "agains", "DELETE FROM t WHERE MATCH(a) AgAiNsT('x')",
		"aaaaagainst", "AAAAAGAINST", "aAaAgainst", "AaAaAGAINST x", "a A a A againsT", "INSERT INTO t VALUES ('again', 'st')",
		"UPDATE sbtest1 SET c='67847967377-48000963322' WHERE id=5", "ends with agains", "A"} {
		if got, want := mayMatchFulltext([]byte(q)), naive(q); got != want {
			t.Errorf("mayMatchFulltext(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestRowBatcherKeepsAStatementWhole checks that a batcher with whole never
// cuts a statement's row events, however many, and still starts a new BINLOG
// statement before the next statement once the limit is passed.
func TestRowBatcherKeepsAStatementWhole(t *testing.T) {
	for _, whole := range []bool{false, true} {
		b := rowBatcher{limit: 100, whole: whole}
		var stmts []string
		for st := 0; st < 2; st++ {
			stmts = b.addTableMap(stmts, []byte("map"))
			for i := 0; i < 10; i++ {
				stmts = b.addRows(stmts, make([]byte, 30), i == 9)
			}
		}
		stmts = b.flush(stmts)
		if whole && len(stmts) != 2 || !whole && len(stmts) <= 2 {
			t.Errorf("whole=%v: two statements of 300 bytes of rows, limit 100, made %d BINLOG statements", whole, len(stmts))
		}
	}
}

// TestBinlogClientCharset checks that a connection reads its first BINLOG
// statement, and none after it, in binlogCharset, that the session then
// forgets its client character set (the source's next statement sets its
// own), and that a statement of gapless's own with a name that is not
// ASCII sets utf8mb4 first.
func TestBinlogClientCharset(t *testing.T) {
	const set = "SET @@session.character_set_client=" + binlogCharset
	s := &Session{conn: &wire{}, state: &binlog.SessionState{HasCharset: true, CharsetClient: 45}}
	known := s.state
	b := s.rowBatcher()
	var stmts []string
	for range 2 {
		stmts = b.addTableMap(stmts, []byte("m"))
		stmts = b.addRows(stmts, []byte("rows"), true)
		stmts = b.flush(stmts)
	}
	if len(stmts) != 3 || stmts[0] != set || !strings.HasPrefix(stmts[1], "BINLOG '") || !strings.HasPrefix(stmts[2], "BINLOG '") {
		t.Fatalf("two BINLOG statements made %q, want the SET of %s once, before the first", stmts, binlogCharset)
	}
	if s.state.HasCharset || !known.HasCharset {
		t.Fatalf("after the SET the session believes its character set known (%v), or the state before it was changed in place (%v)", s.state.HasCharset, !known.HasCharset)
	}
	if got := s.utf8Client(nil, "DO SETVAL(`s`.`seq`, 1, 0, 0)"); len(got) != 1 {
		t.Fatalf("an ASCII statement got %q, want it alone", got)
	}
	got := s.utf8Client(nil, "DO SETVAL(`s`.`séq`, 1, 0, 0)")
	if len(got) != 2 || got[0] != "SET @@session.character_set_client=utf8mb4" || s.conn.singleByteClient {
		t.Fatalf("a statement with a name that is not ASCII got %q (connection in %s: %v), want utf8mb4 set first", got, binlogCharset, s.conn.singleByteClient)
	}
	if stmts = b.flush(b.addRows(nil, []byte("rows"), true)); len(stmts) != 2 || stmts[0] != set {
		t.Fatalf("a BINLOG statement after utf8mb4 was set made %q, want the SET of %s again", stmts, binlogCharset)
	}
}

// TestPreparedScriptKeepsCharsetMark checks that a script made ahead
// (Prepare) leaves the connection's latin1 mark as it found it, and that
// taking the script moves the mark with the rest of the session's state:
// a script dropped unrun must not leave the mark without its SET.
func TestPreparedScriptKeepsCharsetMark(t *testing.T) {
	txns := decodeHotPath(t, hotPathRelay(t, "hotpath-w1.bin"))
	var batch []*binlog.Transaction
	for _, txn := range txns {
		if Batchable(txn) && !HasStatements(txn) {
			batch = append(batch, txn)
		}
		if len(batch) == 3 {
			break
		}
	}
	if len(batch) < 3 {
		t.Fatalf("the recorded W1 binlog has %d row-only transactions, want 3", len(batch))
	}
	s := &Session{conn: &wire{}, opts: Options{KeepGTID: true, WriteBinlog: true}, maxStatement: 1 << 30}
	s.Prepare(batch, nil)
	if s.prepared == nil {
		t.Fatal("Prepare made no script")
	}
	if s.conn.singleByteClient {
		t.Fatal("making a script ahead set the connection's latin1 mark before the script ran")
	}
	if !slices.Contains(s.prepared.body, "SET @@session.character_set_client="+binlogCharset) {
		t.Fatalf("the prepared script has no SET of %s", binlogCharset)
	}
	if p := s.takePrepared(batch, nil); p == nil || !s.conn.singleByteClient {
		t.Fatalf("taking the prepared script (%v) left the mark %v, want it set", p != nil, s.conn.singleByteClient)
	}
}
