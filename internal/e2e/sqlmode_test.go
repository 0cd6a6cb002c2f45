// sqlmode_test.go runs gapless against servers whose global session
// defaults are not MariaDB's: a sql_mode of Oracle's dialect, autocommit
// off, a short max_statement_time (a short wait_timeout: alone_test.go).
// gapless's own statements (its tables, positions, stops, verify's
// comparisons) must read and commit the same, the source's run as the
// source ran them, and nothing of gapless be bound where a replica's
// thread is not.
package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

const oracleLikeMode = "ORACLE,EMPTY_STRING_IS_NULL,NO_BACKSLASH_ESCAPES,ANSI_QUOTES,PIPES_AS_CONCAT"

func TestServersWithAnotherGlobalSQLMode(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET GLOBAL sql_mode = '"+oracleLikeMode+"'")
	mustExec(t, sb.Primary, "SET GLOBAL sql_mode = '"+oracleLikeMode+"'", "SET GLOBAL binlog_format = MIXED")
	t.Cleanup(func() {
		mustExec(t, sb.Target, "SET GLOBAL sql_mode = DEFAULT")
		mustExec(t, sb.Primary, "SET GLOBAL sql_mode = DEFAULT", "SET GLOBAL binlog_format = ROW")
	})
	// The source's clients run under the global mode (a new connection
	// each time takes it), statements and rows both.
	mustExec(t, sb.Primary,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, s VARCHAR(40), note VARCHAR(40)) ENGINE=InnoDB",
		`INSERT INTO app.t VALUES (1, 'it''s', 'back\slash'), (2, '', NULL), (3, 'a' || 'b', 'c')`,
		"UPDATE app.t SET note = note || '!' WHERE id = 1",
		"SET SESSION binlog_format = ROW",
		`INSERT INTO app.t VALUES (4, 'x\y', '')`,
		"UPDATE app.t SET s = s || '+' WHERE id IN (2, 4)")
	var more []string
	for i := 10; i < 200; i++ {
		more = append(more, "START TRANSACTION",
			fmt.Sprintf("INSERT INTO app.t VALUES (%d, 'n' || %d, '')", i, i),
			fmt.Sprintf("UPDATE app.t SET note = 'it''s ' || id WHERE id = %d", i-1),
			"COMMIT")
	}
	mustExec(t, sb.Primary, more...)
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay, "--workers", "4")
	requireEqual(t, sb)
	if v := gapless(t, nil, "verify", "--source", sb.SourceURL, "--target", sb.TargetURL); v.code != 0 {
		t.Fatalf("gapless verify exited %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	st := gapless(t, nil, "status", "--target", sb.TargetURL)
	if st.code != 0 || !strings.Contains(st.stdout, "default") {
		t.Fatalf("gapless status exited %d:\n%s%s", st.code, st.stdout, st.stderr)
	}

	// A stop is recorded for gapless status (its own table) under that mode too.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO app.t VALUES (500, 'local', '')")
	mustExec(t, sb.Primary, "INSERT INTO app.t VALUES (500, 'source', '')")
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...)
	if r.code == 0 || strings.Contains(r.stderr, "could not be recorded") {
		t.Fatalf("exit %d, want a stop on the duplicate key, recorded:\n%s", r.code, r.stderr)
	}
	st = gapless(t, nil, "status", "--target", sb.TargetURL)
	if !strings.Contains(st.stdout, "1062") {
		t.Errorf("gapless status does not show the stop:\n%s%s", st.stdout, st.stderr)
	}
}

// A target whose global autocommit is 0, as some servers are set: gapless's
// sessions and its own statements (positions, stops, reset) commit as they
// must; the run stopped at once before (1694: sql_log_bin set inside the
// transaction a read had opened).
func TestTargetWithAutocommitOff(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET GLOBAL autocommit = 0")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL autocommit = 1") })
	mustExec(t, sb.Primary,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE app.m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
		"INSERT INTO app.t VALUES (1, 1), (2, 2)",
		"INSERT INTO app.m VALUES (1, 1)",
		"SET SESSION binlog_format = MIXED",
		"UPDATE app.m SET v = 5",
		"BEGIN", "INSERT INTO app.t VALUES (3, 3)", "INSERT INTO app.m VALUES (2, 2)", "COMMIT",
		"ALTER TABLE app.t ADD COLUMN w INT",
		"INSERT INTO app.t VALUES (4, 4, 4)")
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay, "--workers", "4")
	requireEqual(t, sb)
	st := gapless(t, nil, "status", "--target", sb.TargetURL)
	if st.code != 0 || !strings.Contains(st.stdout, binlogPos(t, sb.Primary)) {
		t.Fatalf("gapless status exited %d, want the position %s:\n%s%s", st.code, binlogPos(t, sb.Primary), st.stdout, st.stderr)
	}
	// A stop is recorded, and reset removes the position for good.
	mustExec(t, sb.Target, "SET SESSION autocommit = 1", "SET SESSION sql_log_bin = 0", "INSERT INTO app.t VALUES (9, 0, 0)")
	mustExec(t, sb.Primary, "INSERT INTO app.t VALUES (9, 9, 9)")
	if r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...); r.code == 0 {
		t.Fatal("the run went past a duplicate key")
	}
	if st = gapless(t, nil, "status", "--target", sb.TargetURL); !strings.Contains(st.stdout, "1062") {
		t.Errorf("gapless status does not show the stop:\n%s%s", st.stdout, st.stderr)
	}
	if r := gapless(t, nil, "reset", "--target", sb.TargetURL); r.code != 0 {
		t.Fatalf("gapless reset exited %d: %s", r.code, r.stderr)
	}
	if st = gapless(t, nil, "status", "--target", sb.TargetURL); !strings.Contains(st.stdout, "no gapless position") {
		t.Errorf("after reset, gapless status still shows a position:\n%s%s", st.stdout, st.stderr)
	}
}

// A target whose global max_statement_time is short, as some servers bound
// their clients' runaway queries: a replica's thread is not bound by it,
// and gapless's statements (a large statement of the source, a DDL) must
// not be either.
func TestTargetWithShortMaxStatementTime(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE big",
		"CREATE TABLE big.t (id INT PRIMARY KEY, v INT, pad CHAR(100)) ENGINE=InnoDB",
		"INSERT INTO big.t SELECT seq, seq, REPEAT('x', 100) FROM seq.seq_1_to_200000")
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target, "SET GLOBAL max_statement_time = 0.2")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL max_statement_time = 0") })
	mustExec(t, sb.Primary,
		"SET SESSION binlog_format = MIXED",
		"UPDATE big.t SET v = v + 1, pad = REPEAT('y', 100)",
		"ALTER TABLE big.t ADD COLUMN w INT NOT NULL DEFAULT 3, FORCE",
		"SET SESSION binlog_format = ROW",
		"UPDATE big.t SET v = v * 2 WHERE id % 3 = 0")
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

// A target that folds table names to lower case (lower_case_table_names=1)
// under a source that does not: MariaDB makes the source's Shop.Orders
// shop.orders there, and gapless verify matches them (it listed every
// table as missing on one side and extra on the other).
func TestTargetThatFoldsTableNames(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"lower_case_table_names=1"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE Shop",
		"CREATE TABLE Shop.Orders (Id INT PRIMARY KEY, Qty INT) ENGINE=InnoDB",
		"CREATE TABLE Shop.Items (Id INT PRIMARY KEY, OrderId INT, KEY (OrderId), FOREIGN KEY (OrderId) REFERENCES Shop.Orders (Id)) ENGINE=InnoDB",
		"INSERT INTO Shop.Orders VALUES (1, 1), (2, 2)",
		"INSERT INTO Shop.Items VALUES (1, 1), (2, 2)",
		"UPDATE Shop.Orders SET Qty = Qty + 1",
		"SET SESSION binlog_format = MIXED",
		"UPDATE Shop.Orders SET Qty = Qty + 1 WHERE Id = 1",
		"INSERT INTO Shop.Orders VALUES (3, 3)",
		"DELETE FROM Shop.Items WHERE Id = 2",
		"CREATE SEQUENCE Shop.Seq",
		"SELECT NEXTVAL(Shop.Seq)",
		"ALTER TABLE Shop.Orders ADD COLUMN Note VARCHAR(10)",
		"SET SESSION binlog_format = ROW",
		"INSERT INTO Shop.Orders VALUES (4, 4, 'x')",
		"UPDATE Shop.Orders SET Note = 'y'")
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	v := gapless(t, nil, "verify", "--source", sb.SourceURL, "--target", sb.TargetURL)
	if v.code != 0 || !strings.Contains(v.stdout, "3 tables: 3 equal") {
		t.Fatalf("gapless verify exited %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	// A row the target alone has is still found, as a row, not as names.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO shop.orders VALUES (9, 9, 'z')")
	v = gapless(t, nil, "verify", "--source", sb.SourceURL, "--target", sb.TargetURL)
	if v.code == 0 || !strings.Contains(v.stdout, "Id=9 only on target") || strings.Contains(v.stdout, "definition differs") || !strings.Contains(v.stdout, "0 missing on target, 0 extra on target") {
		t.Fatalf("gapless verify exited %d, want Shop.Orders different by a row:\n%s%s", v.code, v.stdout, v.stderr)
	}
	t.Logf("verify:\n%s", v.stdout)
}
