package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

// TestReplicatesStatementFormatSource replicates a source whose
// binlog_format is STATEMENT, as MariaDB's replica does: every change
// arrives as a statement with its session's context (INSERT_ID, RAND
// seeds, user variables, the source session's temporary tables), on
// transactional and non-transactional tables, from stored routines and
// triggers, through several workers and across a stop; and a stored function
// that remakes a temporary MyISAM table, a LOAD DATA that fails on the
// source after its file was logged, a statement put in another GTID domain
// by SET STATEMENT, called for each row of a SELECT, which
// the source logs as one group of a statement a call, flagged DDL, and which
// the target keeps as one GTID group too. The run warns once,
// at its start, that such a source can log statements that leave a replica
// different; the target, in ROW format, binlogs the source's changes as
// rows; the tables then compare equal.
func TestReplicatesStatementFormatSource(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, PrimaryExtra: []string{"binlog_format=STATEMENT"}})
	mustExec(t, sb.Primary, "SET GLOBAL log_bin_trust_function_creators=1")
	// Temporary tables made without an engine are MyISAM on both sides, as
	// under mtr's options.
	mustExec(t, sb.Target, "SET GLOBAL log_bin_trust_function_creators=1", "SET GLOBAL default_tmp_storage_engine=MyISAM")
	var format string
	if err := rootDB(t, sb.Primary).QueryRow("SELECT @@global.binlog_format").Scan(&format); err != nil || format != "STATEMENT" {
		t.Fatalf("the primary's binlog_format is %q (%v), not STATEMENT", format, err)
	}
	s := sourceSession(t, sb.Primary,
		"SET SESSION default_tmp_storage_engine=MyISAM",
		"CREATE DATABASE st",
		"USE st",
		"CREATE TABLE st.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40), n DOUBLE) ENGINE=InnoDB",
		"CREATE TABLE st.m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
		"CREATE TABLE st.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(40)) ENGINE=InnoDB",
		"CREATE TRIGGER st.t_ins AFTER INSERT ON st.t FOR EACH ROW INSERT INTO st.audit (what) VALUES (CONCAT('t ', NEW.id))",
		"CREATE PROCEDURE st.fill(k INT) BEGIN DECLARE i INT DEFAULT 0; WHILE i < k DO INSERT INTO st.t (v) VALUES (CONCAT('proc ', i)); SET i = i + 1; END WHILE; END",
		"CREATE FUNCTION st.bump(k INT) RETURNS INT BEGIN UPDATE st.m SET v = v + k WHERE id = 1; RETURN k; END",
		"INSERT INTO st.m VALUES (1, 0), (2, 0)",
		// Context the statements need: INSERT_ID, a RAND seed, user variables.
		"INSERT INTO st.t (v) VALUES ('one'), ('two')",
		"SET @who = 'variable', @k = 3",
		"INSERT INTO st.t (v, n) VALUES (@who, RAND(7))",
		"INSERT INTO st.t (v, n) VALUES ('rand', RAND())",
		"CALL st.fill(@k)",
		"SELECT st.bump(5)",
		"CREATE FUNCTION st.remake() RETURNS INT BEGIN DROP TEMPORARY TABLE IF EXISTS rt; CREATE TEMPORARY TABLE rt (id INT); INSERT INTO rt VALUES (1), (2); RETURN (SELECT COUNT(*) FROM rt); END",
		"SELECT st.remake()",
		"SELECT st.remake() FROM st.m",
		"INSERT INTO st.t (v) SELECT CONCAT('rt ', id) FROM rt",
		// The source session's temporary tables.
		"CREATE TEMPORARY TABLE tmp (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO tmp VALUES (100, 'from tmp'), (101, 'from tmp too')",
		"INSERT INTO st.t (id, v) SELECT id, v FROM tmp",
		// A transaction over both kinds of table, and one rolled back.
		"BEGIN",
		"UPDATE st.t SET v = CONCAT(v, ' updated') WHERE id <= 2",
		"INSERT INTO st.m VALUES (3, 3)",
		"COMMIT",
		"BEGIN",
		"DELETE FROM st.t WHERE id = 1",
		"ROLLBACK",
		"UPDATE st.t SET n = 1 ORDER BY id DESC LIMIT 2",
	)
	// LOAD DATA, once loaded and once failing on a MyISAM table's
	// duplicate key (the source logs the file, then drops it: DELETE_FILE).
	rows := filepath.Join(t.TempDir(), "rows.txt")
	if err := os.WriteFile(rows, []byte("300\tloaded\n301\tloaded too\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	connExec(t, s, "LOAD DATA INFILE '"+rows+"' INTO TABLE st.t (id, v)")
	taken := filepath.Join(t.TempDir(), "taken.txt")
	if err := os.WriteFile(taken, []byte("1\t10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExecContext(context.Background(), "LOAD DATA INFILE '"+taken+"' INTO TABLE st.m"); err == nil {
		t.Fatal("a LOAD DATA of a key st.m holds did not fail")
	}
	// A statement in another GTID domain by SET STATEMENT, which the
	// source logs with its prefix.
	mustExec(t, sb.Primary, "SET STATEMENT gtid_domain_id = 20 FOR INSERT INTO st.t (v) VALUES ('domain 20')")
	relay := filepath.Join(t.TempDir(), "relay")
	first := replicateUntilCaughtUp(t, sb, relay, "--workers", "4")
	if !strings.Contains(first.stderr, "binlog_format=STATEMENT") {
		t.Errorf("the run did not warn that the source writes STATEMENT format:\n%s", first.stderr)
	}
	// The target is in ROW format, and holds the source's changes as rows
	// (internal/target/rowformat.go).
	if out := targetBinlogText(t, sb); bytes.Contains(out, []byte("INSERT INTO st.m VALUES (1, 0), (2, 0)")) {
		t.Errorf("the target's binlog, in ROW format, holds the source's INSERT as a statement:\n%.3000s", out)
	}
	// The tables only: the source's last group of domain 0 is the LOAD
	// DATA that failed, which changes nothing, and a target in ROW format
	// logs no group for it (nor does MariaDB's replica in ROW), so the
	// target's binlog ends one GTID short of the primary's until the next
	// write.
	requireEqualTables(t, sb)

	// More after a stop, on the same source session, with another
	// session's load beside it.
	for i := range 20 {
		connExec(t, s,
			fmt.Sprintf("INSERT INTO st.t (v) VALUES ('after %d')", i),
			fmt.Sprintf("UPDATE st.m SET v = v + %d WHERE id = 2", i),
			"UPDATE tmp SET v = CONCAT(v, '+')",
		)
	}
	connExec(t, s, "INSERT INTO st.t (id, v) SELECT id + 100, v FROM tmp", "DROP TEMPORARY TABLE tmp")
	smallWorkload(t, sb, 200, 41)
	replicateUntilCaughtUp(t, sb, relay, "--workers", "8")
	// (The tables only, as above: the DROP TEMPORARY TABLE and the groups
	// that change nothing leave no GTID in a ROW target's binlog.)
	requireEqualTables(t, sb)
}
