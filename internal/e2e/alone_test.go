// This file tests the groups the target binlogs as they execute (DDL,
// non-transactional writes, sequences, accounts, XA PREPARE): their position
// is written after them, outside the binlog, so a crash in between must
// neither run them twice nor lose them, and the target's binlog must hold
// each under the source's GTID, once.
package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

func TestKillBetweenNonTransactionalWriteAndItsPosition(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE alone",
		// No key: a group applied twice shows as an extra row.
		"CREATE TABLE alone.m (a INT) ENGINE=MyISAM",
		"CREATE TABLE alone.n (a INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE SEQUENCE alone.s NOCACHE", // every NEXTVAL writes the sequence table
	)
	for i := 1; i <= 4; i++ {
		mustExec(t, sb.Primary,
			"SET SESSION binlog_format=MIXED",
			fmt.Sprintf("INSERT INTO alone.m VALUES (%d)", i),
			"SELECT NEXTVAL(alone.s)",
			fmt.Sprintf("INSERT INTO alone.n VALUES (%d)", i),
			"XA START 'x"+fmt.Sprint(i)+"'",
			fmt.Sprintf("INSERT INTO alone.n VALUES (%d)", 100+i),
			"XA END 'x"+fmt.Sprint(i)+"'",
			"XA PREPARE 'x"+fmt.Sprint(i)+"'",
			"XA COMMIT 'x"+fmt.Sprint(i)+"'",
		)
	}
	relay := filepath.Join(t.TempDir(), "relay")
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0", "--workers", "4"}
	// Every run is killed before the position of the first group it applies
	// alone (4 DDL, then per round the MyISAM insert, the sequence, the XA
	// PREPARE and the XA COMMIT), so each such group is found on the target
	// by the next run, which must neither run it again nor lose it.
	kills := 0
	for ; kills < 40; kills++ {
		r := gapless(t, []string{"GAPLESS_CRASH_BEFORE_POSITION=1"}, args...)
		if !r.signaled {
			if r.code != 0 {
				t.Fatalf("run %d exited %d:\n%s%s", kills+1, r.code, r.stdout, r.stderr)
			}
			break
		}
	}
	if kills < 20 {
		t.Fatalf("%d runs were killed before a position; the 20 groups applied alone should each have been", kills)
	}
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
	rows, err := rootDB(t, sb.Target).Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("the target still holds a prepared XA transaction")
	}
}

// TestTemporaryTablesAcrossTransactions checks that a source session's
// temporary table, created in one event group and read by statements in
// later ones, is there for them whatever worker is free: statements all
// run on one target session, while row transactions of other sessions keep
// every worker busy in between.
func TestTemporaryTablesAcrossTransactions(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE tmp",
		"CREATE TABLE tmp.real (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE tmp.busy (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
	)
	db := rootDB(t, sb.Primary)
	session, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	run := func(stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := session.ExecContext(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	run("SET SESSION binlog_format=MIXED", "CREATE TEMPORARY TABLE tmp.scratch (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	for i := 1; i <= 30; i++ {
		var busy []string
		for k := 0; k < 8; k++ {
			busy = append(busy, fmt.Sprintf("INSERT INTO tmp.busy VALUES (%d, %d)", i*100+k, k))
		}
		mustExec(t, sb.Primary, busy...)
		run(fmt.Sprintf("INSERT INTO tmp.scratch VALUES (%d, %d)", i, i*i),
			fmt.Sprintf("INSERT INTO tmp.real SELECT id, v FROM tmp.scratch WHERE id = %d", i))
	}
	run("DROP TEMPORARY TABLE tmp.scratch")
	// A row-format target binlogs nothing for a temporary table: end with
	// a transaction it does binlog, for the GTID comparison.
	mustExec(t, sb.Primary, "INSERT INTO tmp.busy VALUES (0, 0)")
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "8", "--batch", "1")
	requireEqual(t, sb)
}
