// This file tests the groups the target binlogs as they execute (DDL,
// non-transactional writes, sequences, accounts, XA PREPARE): their position
// is written after them, outside the binlog, so a crash in between must
// neither run them twice nor lose them, and the target's binlog must hold
// each under the source's GTID, once.
package e2e

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
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
	kills := killedRuns(t, "GAPLESS_CRASH_BEFORE_POSITION=1", args, nil)
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

// TestGroupsTheTargetWouldSplit replays, on a target whose default engine
// is MyISAM, groups the source wrote as one GTID group on InnoDB tables
// made without ENGINE=: several statements in one transaction (MIXED),
// several row statements in one transaction (ROW), and CREATE TABLE ...
// SELECT logged as rows. The target binlogs each part as it executes;
// gapless must keep the source's GTIDs one group each, apply every row, and
// leave the next DDL applied (it was once taken for applied and skipped).
func TestGroupsTheTargetWouldSplit(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"default_storage_engine=MyISAM"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE sp",
		"CREATE TABLE sp.t (id INT PRIMARY KEY, v INT)",
		"SET SESSION binlog_format=MIXED",
		"BEGIN", "INSERT INTO sp.t VALUES (1, 1)", "INSERT INTO sp.t VALUES (2, 2)", "COMMIT",
		"SET SESSION binlog_format=ROW",
		"BEGIN", "INSERT INTO sp.t VALUES (3, 3)", "INSERT INTO sp.t VALUES (4, 4)", "COMMIT",
		"CREATE TABLE sp.c SELECT id, v * 10 AS w FROM sp.t",
		"CREATE TABLE sp.after (a INT)",
		"DROP TABLE sp.after",
		"INSERT INTO sp.t VALUES (5, 5)",
	)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireSameAnswers(t, sb,
		"SELECT COUNT(*), SUM(v) FROM sp.t",
		"SELECT COUNT(*), SUM(w) FROM sp.c",
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sp' AND TABLE_NAME = 'after'",
	)
}

// TestTemporaryTableInATransactionsGroup replays a source transaction that
// creates a temporary table without ENGINE= (InnoDB on the source, so the
// source logs the CREATE inside the transaction's group) and writes through
// it, onto a target whose default engine is MyISAM. Made MyISAM there, the
// table's CREATE would be binlogged as a group of its own, and the rest of
// the source's group under the next GTID: the run stopped.
func TestTemporaryTableInATransactionsGroup(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"default_storage_engine=MyISAM"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE tt",
		"CREATE TABLE tt.real (a INT) ENGINE=InnoDB",
		"SET SESSION binlog_format=MIXED", "SET autocommit=0",
		"CREATE TEMPORARY TABLE tt.scratch (a INT)",
		"INSERT INTO tt.scratch VALUES (1), (2)",
		"INSERT INTO tt.real SELECT a FROM tt.scratch",
		"COMMIT",
		"INSERT INTO tt.real SELECT a * 10 FROM tt.scratch",
		"COMMIT",
		// Dropped here, not by the session's end: the server logs that drop
		// after the client has gone, maybe after --until was read.
		"DROP TEMPORARY TABLE tt.scratch",
		"CREATE TABLE tt.after (a INT)",
	)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireSameAnswers(t, sb,
		"SELECT COUNT(*), SUM(a) FROM tt.real",
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tt' AND TABLE_NAME = 'after'",
	)
}

// TestSavepointsOnATableTheTargetHoldsInMyISAM replays transactions with
// savepoints on an InnoDB table that the target holds in MyISAM (made
// without ENGINE= under another default, main.ps_missed_cmds). There the
// savepoints protect nothing, and kept, they made the target binlog the
// insert and the COMMIT as two GTID groups: the run stopped.
func TestSavepointsOnATableTheTargetHoldsInMyISAM(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"default_storage_engine=MyISAM"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE sv", "CREATE TABLE sv.t (a INT)",
		"SET SESSION binlog_format=MIXED",
		"BEGIN", "INSERT INTO sv.t VALUES (1)", "SAVEPOINT s1", "INSERT INTO sv.t VALUES (2)", "ROLLBACK TO SAVEPOINT s1",
		"SAVEPOINT s1", "RELEASE SAVEPOINT s1", "COMMIT",
		"SET SESSION binlog_format=ROW",
		"BEGIN", "INSERT INTO sv.t VALUES (3)", "SAVEPOINT s2", "INSERT INTO sv.t VALUES (4)", "RELEASE SAVEPOINT s2", "COMMIT",
		"CREATE TABLE sv.after (a INT)",
	)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireSameAnswers(t, sb,
		"SELECT COUNT(*), SUM(a) FROM sv.t",
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sv' AND TABLE_NAME = 'after'",
	)
}

// requireSameAnswers checks that each query answers the same on the target
// as on the primary, and that the target's binlog ends at the primary's
// last GTID in the source's domain.
func requireSameAnswers(t *testing.T, sb *sandbox.Sandbox, queries ...string) {
	t.Helper()
	for _, q := range queries {
		want, got := queryText(t, sb.Primary, q), queryText(t, sb.Target, q)
		if got != want {
			t.Errorf("%s: target %q, primary %q", q, got, want)
		}
	}
	if got, g := domain0(t, sb.Target), domain0(t, sb.Primary); got != g {
		t.Errorf("the target's binlog ends at %s in the source's domain, the primary's at %s", got, g)
	}
}

// domain0 is the last GTID of domain 0 in srv's binlog.
func domain0(t *testing.T, srv *sandbox.Server) gtid.MariaDBGTID {
	t.Helper()
	pos, err := gtid.ParseMariaDBPosition(binlogPos(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	last, _ := pos.Get(0)
	return last
}

// queryText runs a query of one row and joins its columns with commas.
func queryText(t *testing.T, srv *sandbox.Server, q string) string {
	t.Helper()
	var out []string
	for _, v := range firstRow(t, rootDB(t, srv), q) {
		out = append(out, v.String)
	}
	return strings.Join(out, ",")
}

// firstRow returns the columns of a query's first row.
func firstRow(t *testing.T, db *sql.DB, q string) []sql.NullString {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if !rows.Next() {
		t.Fatalf("%s: no row", q)
	}
	values := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return values
}

// TestStopWhileTheSourceHoldsATemporaryTable stops gapless while a source
// session still holds a temporary table, then replicates what the source
// wrote next. The statement session's temporary table is dropped when
// gapless lets go of it; the target must not log that drop as a group of
// the source's domain, where it took the source's next GTID and that
// transaction was then taken for applied and skipped.
func TestStopWhileTheSourceHoldsATemporaryTable(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE held",
		"CREATE TABLE held.real (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
	)
	session, err := rootDB(t, sb.Primary).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, s := range []string{
		"SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE held.scratch (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO held.scratch VALUES (1, 1)",
		"INSERT INTO held.real VALUES (1, 1)",
	} {
		if _, err := session.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay, "--workers", "4")
	// The server logs a session's drop of its temporary tables once it has
	// seen the session end, a moment after gapless exits.
	time.Sleep(time.Second)
	sameDomain0 := func(when string) {
		t.Helper()
		if got, want := domain0(t, sb.Target), domain0(t, sb.Primary); got != want {
			t.Fatalf("%s: the target's binlog is at %s in domain 0, the primary's at %s", when, got, want)
		}
	}
	sameDomain0("after the first run")
	mustExec(t, sb.Primary, "INSERT INTO held.real VALUES (2, 2)", "INSERT INTO held.real VALUES (3, 3)")
	replicateUntilCaughtUp(t, sb, relay, "--workers", "4")
	requireEqual(t, sb)
	sameDomain0("after the second run")
}

// TestGroupTheTargetSplitStopsTheRun makes the target split a group: a
// source in STATEMENT format logs a transaction that writes InnoDB, sets a
// savepoint (so it must run in one transaction) and then writes MyISAM as
// one group; the target, which logs in MIXED format, must log the MyISAM
// write as rows, at once, in a GTID group of its own, and the rest at
// COMMIT in another, which takes the source's next sequence number and
// would make it look applied. The run must stop at that group, with its
// position not written, and say so.
func TestGroupTheTargetSplitStopsTheRun(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true})
	mustExec(t, sb.Primary,
		"CREATE DATABASE gs",
		"CREATE TABLE gs.m (id INT PRIMARY KEY) ENGINE=MyISAM",
		"CREATE TABLE gs.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"SET SESSION binlog_format=STATEMENT",
		"BEGIN", "INSERT INTO gs.t VALUES (1)", "SAVEPOINT a", "INSERT INTO gs.m VALUES (1)", "COMMIT",
		// Applied alone: a run that took the split's second part for it
		// would skip it.
		"SET SESSION binlog_format=MIXED", "INSERT INTO gs.m VALUES (2)",
	)
	split := domain0(t, sb.Primary)
	split.Seq--
	r := gapless(t, nil, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0")
	if r.code == 0 {
		t.Fatalf("gapless went on past a group the target split\nstderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, split.String()) || !strings.Contains(r.stderr, "more than one GTID group") {
		t.Fatalf("the message does not name %s as a group the target split:\n%s", split, r.stderr)
	}
	before := split
	before.Seq--
	status := gapless(t, nil, "status", "--target", sb.TargetURL)
	if !strings.Contains(status.stdout, before.String()) {
		t.Fatalf("the position should stay at %s, before the split group:\n%s%s", before, status.stdout, status.stderr)
	}
	// Run again as it was, gapless would find the source's next GTID in
	// the target's binlog (the split's second part) and take the next
	// transaction for applied; without the target's binlog it would apply
	// the split group again. Only a run that skips it, and leaves the
	// target's binlog alone, goes on.
	again := func(flags ...string) run {
		return gapless(t, nil, append([]string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
			"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0"}, flags...)...)
	}
	for _, flags := range [][]string{nil, {"--no-target-binlog"}, {"--skip-gtid", split.String()}} {
		r := again(flags...)
		if r.code == 0 || !strings.Contains(r.stderr, "--no-target-binlog --skip-gtid "+split.String()) {
			t.Fatalf("a run with %q after the split went on, or did not say how to:\n%s", flags, r.stderr)
		}
	}
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM gs.m").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%v: gs.m holds %d rows on the target after runs that were refused; want 1", err, n)
	}
	if r := again("--no-target-binlog", "--skip-gtid", split.String()); r.code != 0 {
		t.Fatalf("the run that skips the split group failed:\n%s", r.stderr)
	}
	requireEqual(t, sb)
}

// TestKillAmongNonTransactionalWritesWhosePositionsWait kills gapless among
// MyISAM autocommit writes, whose positions wait while more of them follow
// (internal/target/deferred.go): each run is killed before the position of
// the fifth such group it applies, so several groups are on the target past
// its position, and the next run must find every one of them in the
// target's binlog, neither running one twice nor losing one.
func TestKillAmongNonTransactionalWritesWhosePositionsWait(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE waits",
		// No key: a group applied twice shows as an extra row.
		"CREATE TABLE waits.m (a INT) ENGINE=MyISAM",
		"CREATE TABLE waits.n (a INT PRIMARY KEY) ENGINE=InnoDB",
	)
	mustExec(t, sb.Primary, inFormats(60, 3, func(i int) []string {
		if i%20 == 0 {
			return []string{fmt.Sprintf("INSERT INTO waits.m VALUES (%d)", i), fmt.Sprintf("INSERT INTO waits.n VALUES (%d)", i)}
		}
		return []string{fmt.Sprintf("INSERT INTO waits.m VALUES (%d)", i)}
	})...)
	relay := filepath.Join(t.TempDir(), "relay")
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0", "--workers", "4", "-v"}
	resumed := 0
	kills := killedRuns(t, "GAPLESS_CRASH_BEFORE_POSITION=5", args, func(r run) {
		if strings.Contains(r.stderr, "groups applied alone past the position") {
			resumed++
		}
	})
	if kills < 10 {
		t.Fatalf("%d runs were killed; 60 groups applied alone, five a run, should have taken at least 10", kills)
	}
	if resumed == 0 {
		t.Fatal("no run found groups past the position in the target's binlog: the positions did not wait")
	}
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
	requireSameAnswers(t, sb, "SELECT COUNT(*), SUM(a) FROM waits.m")
}

// killedRuns runs gapless with args and the crash setting env until a run
// ends without being killed (40 runs at most), and returns how many were
// killed; each run is passed to seen, if set. A run that fails fails the test.
func killedRuns(t *testing.T, env string, args []string, seen func(run)) int {
	t.Helper()
	kills := 0
	for ; kills < 40; kills++ {
		r := gapless(t, []string{env}, args...)
		if seen != nil {
			seen(r)
		}
		if !r.signaled {
			if r.code != 0 {
				t.Fatalf("run %d exited %d:\n%s%s", kills+1, r.code, r.stdout, r.stderr)
			}
			break
		}
	}
	return kills
}

// TestRunOfGroupsAppliedAloneStopsAtTheFailingOne applies 300 MyISAM
// statements, in MIXED and ROW, several to a round trip, one of which meets
// a duplicate key on the target: the run stops at that one, with every
// group before it applied once and none after it, its positions written;
// skipping it goes on exactly once. With the target's binlog written (the
// positions wait) and without it (each follows its group).
func TestRunOfGroupsAppliedAloneStopsAtTheFailingOne(t *testing.T) {
	for _, variant := range []struct {
		name  string
		flags []string
	}{{"target binlog", nil}, {"no target binlog", []string{"--no-target-binlog"}}} {
		t.Run(variant.name, func(t *testing.T) {
			sb := upSandbox(t)
			relay := filepath.Join(t.TempDir(), "relay")
			mustExec(t, sb.Primary, "CREATE DATABASE runs", "CREATE TABLE runs.m (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM")
			replicateUntilCaughtUp(t, sb, relay, variant.flags...)
			mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO runs.m VALUES (150, 'local')")
			mustExec(t, sb.Primary, inFormats(300, 4, func(i int) []string {
				return []string{fmt.Sprintf("INSERT INTO runs.m VALUES (%d, 'primary')", i)}
			})...)
			args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay, variant.flags...), "--until", binlogPos(t, sb.Primary), "--workers", "4")

			r := gapless(t, nil, args...)
			t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
			if r.code == 0 {
				t.Fatal("the run went past a duplicate key")
			}
			for _, want := range []string{"runs.m", "1062", "Duplicate entry", "--skip-gtid"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the error does not say %q", want)
				}
			}
			var failing string
			if i := strings.Index(r.stderr, "--skip-gtid "); i >= 0 {
				failing = strings.Fields(r.stderr[i+len("--skip-gtid "):])[0]
			}
			requireStoppedAt150(t, sb, "runs.m")
			f, err := gtid.ParseMariaDBPosition(failing)
			if err != nil {
				t.Fatalf("the run names %q as failing: %v", failing, err)
			}
			g, _ := f.Get(0)
			before := gtid.MariaDBGTID{Domain: g.Domain, Server: g.Server, Seq: g.Seq - 1}
			if variant.flags == nil {
				// The failing group is the one after the last the target binlogged.
				if last := domain0(t, sb.Target); last != before {
					t.Errorf("the run names %s as failing; the target's binlog ends at %s", failing, last)
				}
			}
			// The position the stop left is just before the failing group.
			st := gapless(t, nil, "status", "--target", sb.TargetURL)
			if !strings.Contains(st.stdout, before.String()) {
				t.Errorf("gapless status does not show the position %s after the error stop:\n%s", before, st.stdout)
			}
			requireSkipGoesOnOnce(t, sb, args, failing, "runs.m")
		})
	}
}

// TestApplyConnectionsKilledAmidGroupsAppliedAlone kills the target
// connection that applies a round trip of several MyISAM statements, again
// and again: whether the groups after the last answer ran is then known
// only from the target's binlog, and each must end up applied once.
func TestApplyConnectionsKilledAmidGroupsAppliedAlone(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE lost",
		// No key: a group applied twice shows as an extra row.
		"CREATE TABLE lost.m (a INT) ENGINE=MyISAM",
	)
	mustExec(t, sb.Primary, inFormats(3000, 5, func(i int) []string {
		return []string{fmt.Sprintf("INSERT INTO lost.m VALUES (%d)", i)}
	})...)
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay")),
		"--until", binlogPos(t, sb.Primary), "--workers", "4", "-v")

	target := rootDB(t, sb.Target)
	done := make(chan struct{})
	killed := make(chan int)
	go func() {
		n := 0
		defer func() { killed <- n }()
		for {
			select {
			case <-done:
				return
			case <-time.After(15 * time.Millisecond):
			}
			var id int64
			err := target.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%gapless_one_group%' AND INFO NOT LIKE '%PROCESSLIST%' LIMIT 1").Scan(&id)
			if err == nil {
				if _, err := target.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
					n++
				}
			}
		}
	}()
	r := gapless(t, nil, args...)
	close(done)
	n := <-killed
	if r.code != 0 {
		t.Fatalf("gapless exited %d after %d kills:\n%s", r.code, n, r.stderr)
	}
	lost := strings.Count(r.stderr, "amid groups applied alone")
	t.Logf("%d connections killed, %d of them amid a round trip of several groups applied alone; %d times the target's binlog held groups past the position", n, lost, strings.Count(r.stderr, "groups applied alone past the position"))
	if lost == 0 {
		t.Fatal("no connection was lost amid a round trip of several groups applied alone: the test did not test it")
	}
	requireEqual(t, sb)
	requireSameAnswers(t, sb, "SELECT COUNT(*), SUM(a) FROM lost.m")
}

// inFormats returns the statements of stmts(i) for i from 1 to n, each
// lot after a SET of the session's binlog_format: ROW for every
// rowEvery-th, MIXED for the others.
func inFormats(n, rowEvery int, stmts func(i int) []string) []string {
	var out []string
	for i := 1; i <= n; i++ {
		format := "MIXED"
		if i%rowEvery == 0 {
			format = "ROW"
		}
		out = append(append(out, "SET SESSION binlog_format="+format), stmts(i)...)
	}
	return out
}

// TestTemporaryTablesOfSeveralDomains replays source sessions of two GTID
// domains that hold temporary tables, with XA transactions prepared and
// committed among their statements, on one apply worker (every group on
// the statement session) and on four. A connection whose temporary
// tables the target would binlog may not change its GTID domain (1953
// stopped the run), and an XA branch prepared on it kept the connection
// whose end then logged a drop in the source's domain; and a group on a
// temporary table ran, sharing a round trip with MyISAM groups before it,
// where the table was not (1146).
func TestTemporaryTablesOfSeveralDomains(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE dom",
		"CREATE TABLE dom.t0 (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE dom.t1 (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE dom.m (a INT) ENGINE=MyISAM",
		"INSERT INTO dom.t1 VALUES (1, 0)")
	db := rootDB(t, sb.Primary)
	sessions := map[string]*sql.Conn{}
	for _, name := range []string{"a0", "b1", "row0", "mixed1", "xa0"} {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sessions[name] = c
	}
	on := func(name string, stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := sessions[name].ExecContext(context.Background(), s); err != nil {
				t.Fatalf("%s: %s: %v", name, s, err)
			}
		}
	}
	on("a0", "SET SESSION binlog_format=MIXED, gtid_domain_id=0", "CREATE TEMPORARY TABLE dom.ta (id INT)", "INSERT INTO dom.ta VALUES (1), (2)")
	on("b1", "SET SESSION binlog_format=MIXED, gtid_domain_id=1", "CREATE TEMPORARY TABLE dom.tb (id INT)", "INSERT INTO dom.tb VALUES (3), (4)")
	on("row0", "SET SESSION binlog_format=ROW, gtid_domain_id=0")
	on("mixed1", "SET SESSION binlog_format=MIXED, gtid_domain_id=1")
	on("xa0", "SET SESSION binlog_format=MIXED, gtid_domain_id=0")
	on("a0", "INSERT INTO dom.t0 SELECT id, 0 FROM dom.ta")
	on("b1", "INSERT INTO dom.t1 SELECT id, 0 FROM dom.tb")
	on("row0", "XA START 'r'", "INSERT INTO dom.t0 VALUES (10, 10)", "XA END 'r'", "XA PREPARE 'r'")
	on("a0", "INSERT INTO dom.t0 SELECT id + 100, 0 FROM dom.ta")
	on("mixed1", "XA START 's'", "UPDATE dom.t1 SET v = v + 1 WHERE id = 1", "XA END 's'", "XA PREPARE 's'")
	on("b1", "INSERT INTO dom.t1 SELECT id + 100, 0 FROM dom.tb")
	on("xa0", "XA START 'u'", "INSERT INTO dom.t0 VALUES (20, 20)", "XA END 'u'", "XA PREPARE 'u'")
	on("a0", "XA START 'v'", "INSERT INTO dom.t0 SELECT id + 200, 1 FROM dom.ta", "XA END 'v'", "XA PREPARE 'v'")
	on("b1", "INSERT INTO dom.t1 SELECT id + 200, 0 FROM dom.tb")
	on("row0", "XA COMMIT 'r'")
	on("a0", "XA COMMIT 'v'")
	on("mixed1", "XA COMMIT 's'")
	on("xa0", "XA ROLLBACK 'u'")
	on("a0", "INSERT INTO dom.t0 SELECT id + 300, 0 FROM dom.ta", "DROP TEMPORARY TABLE dom.ta")
	on("b1", "UPDATE dom.t1 SET v = (SELECT COUNT(*) FROM dom.tb) WHERE id = 1")
	// MyISAM groups, which share round trips when nothing keeps them
	// apart, among them one on a temporary table.
	on("b1", "CREATE TEMPORARY TABLE dom.mb (a INT) ENGINE=MyISAM", "INSERT INTO dom.m VALUES (1)", "INSERT INTO dom.mb VALUES (2)",
		"INSERT INTO dom.m SELECT a FROM dom.mb", "INSERT INTO dom.m VALUES (3)")
	// Dropped one by one: the place in the binlog of the DROP TEMPORARY
	// TABLE a session logs as it ends would depend on when the primary
	// ends the session (TestSessionEndingWithTemporaryTablesOfBothKinds
	// replays one).
	on("b1", "DROP TEMPORARY TABLE dom.mb", "DROP TEMPORARY TABLE dom.tb")
	for _, c := range sessions {
		c.Close()
	}
	// A row-format target binlogs nothing for a temporary table: end with
	// a transaction of each domain it does binlog, for the GTID comparison.
	mustExec(t, sb.Primary, "SET SESSION gtid_domain_id=1", "INSERT INTO dom.t1 VALUES (1000, 0)",
		"SET SESSION gtid_domain_id=0", "INSERT INTO dom.t0 VALUES (1000, 0)")
	for _, workers := range []string{"1", "4"} {
		t.Run("workers-"+workers, func(t *testing.T) {
			resetTarget(t, sb)
			mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE IF EXISTS dom")
			replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", workers)
			requireEqual(t, sb)
		})
	}
}

// TestSessionEndingWithTemporaryTablesOfBothKinds replays the DROP
// TEMPORARY TABLE a source session logs as it ends holding temporary
// tables of InnoDB and of MyISAM and Aria: one GTID group on the source,
// which the target, executing it, would write as two (one per kind), the
// second under the source's next sequence number. The drop must reach the
// target as one group under the source's GTID, and the groups after it
// must apply.
func TestSessionEndingWithTemporaryTablesOfBothKinds(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE kinds",
		"CREATE TABLE kinds.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	db := rootDB(t, sb.Primary)
	session, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE kinds.i (id INT) ENGINE=InnoDB",
		"CREATE TEMPORARY TABLE kinds.m (id INT) ENGINE=MyISAM",
		"CREATE TEMPORARY TABLE kinds.a (id INT) ENGINE=Aria",
		"CREATE TEMPORARY TABLE kinds.j (id INT) ENGINE=InnoDB",
		"INSERT INTO kinds.i VALUES (1), (2)",
		"INSERT INTO kinds.m VALUES (3)",
		"INSERT INTO kinds.a VALUES (4)",
		"INSERT INTO kinds.j VALUES (5)",
		"INSERT INTO kinds.t SELECT id, 0 FROM kinds.i UNION SELECT id, 1 FROM kinds.m UNION SELECT id, 2 FROM kinds.a UNION SELECT id, 3 FROM kinds.j",
	} {
		if _, err := session.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	poll := rootDB(t, sb.Primary)
	position := func() string {
		t.Helper()
		var pos string
		if err := poll.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		return pos
	}
	before := position()
	session.Close()
	db.Close() // ends the session's connection
	// The server logs the drop once the session has ended: wait for it, so
	// that the groups below come after it.
	deadline := time.Now().Add(30 * time.Second)
	for position() == before {
		if time.Now().After(deadline) {
			t.Fatal("the primary logged no DROP TEMPORARY TABLE for the ended session")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if text := queryText(t, sb.Primary, "SELECT COUNT(*) FROM kinds.t"); text != "5" {
		t.Fatalf("kinds.t holds %s rows on the primary", text)
	}
	mustExec(t, sb.Primary, "INSERT INTO kinds.t VALUES (100, 100)", "INSERT INTO kinds.t VALUES (101, 101)")
	for _, workers := range []string{"1", "4"} {
		t.Run("workers-"+workers, func(t *testing.T) {
			resetTarget(t, sb)
			mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE IF EXISTS kinds")
			replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", workers)
			requireEqual(t, sb)
			requireSameAnswers(t, sb, "SELECT COUNT(*), SUM(v) FROM kinds.t")
		})
	}
}

// TestSourceRestartEndsItsSessionsTemporaryTables replays a primary that
// crashed while a session held a temporary table, and a session after its
// restart, under the same connection id, that makes a temporary table of
// that name again. The primary's restart ended the first session without
// a DROP TEMPORARY TABLE in its binlog; the replica must drop it too
// (MariaDB's replica does so when the source's binlog says the source
// started), or the second session's CREATE TEMPORARY TABLE IF NOT EXISTS
// finds the old table, rows and all. Replayed after the fact, and with
// gapless running across the crash (its receiver reconnects where the
// binlog written at the restart begins).
func TestSourceRestartEndsItsSessionsTemporaryTables(t *testing.T) {
	for _, live := range []bool{false, true} {
		name := "replayed"
		if live {
			name = "live"
		}
		t.Run(name, func(t *testing.T) { sourceRestartWithTemporaryTables(t, live) })
	}
}

func sourceRestartWithTemporaryTables(t *testing.T, live bool) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE again",
		"CREATE TABLE again.t (n INT, v INT) ENGINE=InnoDB")
	session := func(db *sql.DB) (*sql.Conn, int64) {
		t.Helper()
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return c, id
	}
	run := func(c *sql.Conn, stmts ...string) { t.Helper(); connExec(t, c, stmts...) }
	fill := func(c *sql.Conn, n int) {
		run(c, "SET SESSION binlog_format=MIXED",
			"CREATE TEMPORARY TABLE IF NOT EXISTS again.tmp (v INT) ENGINE=InnoDB",
			fmt.Sprintf("INSERT INTO again.tmp VALUES (%d)", n),
			fmt.Sprintf("INSERT INTO again.t SELECT %d, v FROM again.tmp", n))
	}
	before, err := sb.Primary.Open("")
	if err != nil {
		t.Fatal(err)
	}
	old, id := session(before)
	fill(old, 1)
	relay := filepath.Join(t.TempDir(), "relay")
	var stop func()
	var logs interface{ String() string }
	if live {
		// gapless applies the first session's groups, its temporary table
		// held by its statement session, and keeps running.
		cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay)...)
		logs = stderr
		waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
		stop = func() {
			stopAndRequireExit0(t, cmd.Process.Pid, wait)
		}
	}
	if err := sb.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	before.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sb.Primary.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Connection ids start again from a few: take connections until one
	// has the old session's id.
	after, err := sb.Primary.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	var again *sql.Conn
	for range 10000 {
		c, got := session(after)
		if got == id {
			again = c
			break
		}
		if got > id {
			t.Fatalf("the restarted primary gave connection id %d, past the old session's %d", got, id)
		}
		_ = c.Raw(func(any) error { return driver.ErrBadConn }) // a new connection next time
	}
	if again == nil {
		t.Fatalf("no connection with id %d", id)
	}
	fill(again, 2)
	mustExec(t, sb.Primary, "INSERT INTO again.t VALUES (0, 0)")
	if live {
		waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, logs)
		stop()
	} else {
		replicateUntilCaughtUp(t, sb, relay)
	}
	requireEqual(t, sb)
}

// TestTemporaryTablesKeptAcrossRuns stops gapless while the source's
// sessions hold temporary tables, and starts it again before they read
// them. The statement session held them, and they ended with the run: the
// next run stopped for good on the first statement that read one (1146,
// "rebuild the target"), where MariaDB's replica keeps its temporary
// tables across STOP SLAVE and START SLAVE. Now a run keeps them for the
// next: two sessions holding the same name, one that shadows a base
// table, a MEMORY one, one with an invisible, a generated and an
// AUTO_INCREMENT column holding 0, one in a second GTID domain: kept
// twice over, then dropped by the source, and no copy is left.
func TestTemporaryTablesKeptAcrossRuns(t *testing.T) {
	// The target logs in MIXED, so that its binlog holds the source's
	// groups on temporary tables and ends where the primary's does (in
	// ROW it logs none of them, as MariaDB's replica in ROW does not).
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"binlog_format=MIXED"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE kept",
		"CREATE TABLE kept.t (who VARCHAR(20), id INT, v INT) ENGINE=InnoDB",
		"CREATE TABLE kept.shadow (id INT) ENGINE=InnoDB",
		"INSERT INTO kept.shadow VALUES (100)")
	db := rootDB(t, sb.Primary)
	run := connExec
	session := func(domain int, stmts ...string) *sql.Conn {
		t.Helper()
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		run(t, c, append([]string{"SET SESSION binlog_format=MIXED", fmt.Sprintf("SET SESSION gtid_domain_id=%d", domain)}, stmts...)...)
		return c
	}
	a := session(0,
		"CREATE TEMPORARY TABLE kept.tmp (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO kept.tmp VALUES (1, 10), (2, 20)",
		"CREATE TEMPORARY TABLE kept.shadow (id INT) ENGINE=MEMORY",
		"INSERT INTO kept.shadow VALUES (7)")
	b := session(0,
		"CREATE TEMPORARY TABLE kept.tmp (id INT AUTO_INCREMENT PRIMARY KEY, v INT, hidden INT INVISIBLE, twice INT AS (v * 2) VIRTUAL) ENGINE=Aria",
		"SET SESSION sql_mode='NO_AUTO_VALUE_ON_ZERO'",
		"INSERT INTO kept.tmp (id, v, hidden) VALUES (0, 5, 55), (3, 30, 33)")
	c := session(1,
		"CREATE TEMPORARY TABLE kept.first (v INT) ENGINE=InnoDB",
		"ALTER TABLE kept.first RENAME TO kept.other, ADD COLUMN w INT",
		"INSERT INTO kept.other (v) VALUES (1000)",
		// An ALTER that renames nothing, with no default database: its
		// words are no table's names.
		"ALTER TABLE kept.shadow ADD COLUMN IF NOT EXISTS x INT NOT NULL DEFAULT 7")
	relay := filepath.Join(t.TempDir(), "relay")
	if r := replicateUntilCaughtUp(t, sb, relay); strings.Contains(r.stderr, "lost") {
		t.Errorf("the stop lists temporary tables as lost:\n%s", r.stderr)
	}
	var copies int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM gapless.temporary").Scan(&copies)
	if copies != 4 {
		t.Errorf("gapless.temporary holds %d tables, want the 4 the source's sessions hold", copies)
	}

	read := func() {
		run(t, a, "INSERT INTO kept.t SELECT 'a', id, v FROM kept.tmp", "INSERT INTO kept.t SELECT 'a-shadow', id, 0 FROM kept.shadow", "UPDATE kept.tmp SET v = v + 1")
		run(t, b, "INSERT INTO kept.t SELECT 'b', id, v + hidden + twice FROM kept.tmp", "INSERT INTO kept.tmp (v) VALUES (40)")
		run(t, c, "INSERT INTO kept.t SELECT 'c', 0, v FROM kept.other")
	}
	status := gapless(t, nil, "status", "--target", sb.TargetURL)
	if !strings.Contains(status.stdout, "kept for the next run") || !strings.Contains(status.stdout, "`kept`.`other`") {
		t.Errorf("status does not list the temporary tables kept:\n%s", status.stdout)
	}
	read()
	replicateUntilCaughtUp(t, sb, relay) // the second run keeps them again
	read()
	run(t, a, "DROP TEMPORARY TABLE kept.tmp", "DROP TEMPORARY TABLE kept.shadow")
	run(t, b, "DROP TEMPORARY TABLE kept.tmp")
	run(t, c, "DROP TEMPORARY TABLE kept.other")
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM gapless.temporary").Scan(&copies)
	var tables int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'gapless' AND TABLE_NAME LIKE 'temporary\\_%'").Scan(&tables)
	if copies != 0 || tables != 0 {
		t.Errorf("%d rows of gapless.temporary and %d copies are left after the source dropped every temporary table", copies, tables)
	}

	// A reset (the target re-seeded) drops what a run kept.
	run(t, a, "CREATE TEMPORARY TABLE kept.late (v INT)", "INSERT INTO kept.late VALUES (1)")
	replicateUntilCaughtUp(t, sb, relay)
	if r := gapless(t, nil, "reset", "--target", sb.TargetURL); r.code != 0 || !strings.Contains(r.stdout, "1 temporary table(s)") {
		t.Errorf("reset exited %d, want it to say it dropped the temporary table kept:\n%s%s", r.code, r.stdout, r.stderr)
	}
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'gapless' AND TABLE_NAME LIKE 'temporary\\_%'").Scan(&tables)
	if tables != 0 {
		t.Errorf("%d copies are left after a reset", tables)
	}
}

// TestGroupCutOffByASourceRestart replays a source binlog whose last group
// before a restart holds only its first events, as a source that crashed
// amid writing a large group leaves it (its crash recovery then rolls the
// transaction back: its XID is not in the binlog). The group is never
// applied, with a warning, and what follows is, as on MariaDB's replica;
// gapless once read it as a broken stream and reconnected for ever.
func TestGroupCutOffByASourceRestart(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE torn",
		"CREATE TABLE torn.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO torn.t VALUES (1, 1)",
		"BEGIN", "INSERT INTO torn.t VALUES (2, 2)", "INSERT INTO torn.t VALUES (3, 3)", "UPDATE torn.t SET v = 10 WHERE id = 1", "COMMIT")
	file, base := queryText(t, sb.Primary, "SHOW MASTER STATUS"), queryText(t, sb.Primary, "SELECT @@log_bin_basename")
	file = strings.Split(file, ",")[0]
	// Cut the last group after its first row event.
	rows, err := rootDB(t, sb.Primary).Query("SHOW BINLOG EVENTS IN '" + file + "'")
	if err != nil {
		t.Fatal(err)
	}
	var cut int64
	var sawGTID bool
	for rows.Next() {
		var log, kind, info string
		var pos, server, end int64
		if err := rows.Scan(&log, &pos, &kind, &server, &end, &info); err != nil {
			t.Fatal(err)
		}
		switch {
		case kind == "Gtid":
			sawGTID, cut = true, 0
		case sawGTID && cut == 0 && strings.HasPrefix(kind, "Write_rows"):
			cut = end
		}
	}
	rows.Close()
	if cut == 0 {
		t.Fatal("no row event in the last group")
	}
	if err := sb.Primary.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(filepath.Dir(base), file), cut); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sb.Primary.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The primary's tables as its crash recovery would have left them:
	// without the group cut off.
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin=0", "DELETE FROM torn.t WHERE id IN (2, 3)", "UPDATE torn.t SET v = 1 WHERE id = 1")
	mustExec(t, sb.Primary, "INSERT INTO torn.t VALUES (4, 4)", "UPDATE torn.t SET v = v + 100 WHERE id = 1")
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	requireEqual(t, sb)
	if !strings.Contains(r.stdout+r.stderr, "cut off") {
		t.Errorf("no warning of the group cut off:\n%s%s", r.stdout, r.stderr)
	}
}

// TestIncidentStopsTheRunAfterWhatCameBefore: a source that changed a
// MyISAM table and could not binlog it (a row larger than its statement
// cache) logs a LOST_EVENTS incident. gapless applies every group before
// it, then stops with a message and a non-zero exit, as MariaDB's replica
// stops (error 1590); it once passed the incident without a word, and the
// target lacked the row for good.
func TestIncidentStopsTheRunAfterWhatCameBefore(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE inc",
		"CREATE TABLE inc.m (id INT PRIMARY KEY, data TEXT) ENGINE=MyISAM",
		"CREATE TABLE inc.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO inc.t VALUES (1), (2)")
	before := domain0(t, sb.Primary)
	mustExec(t, sb.Primary, "SET GLOBAL max_binlog_stmt_cache_size = 4096, binlog_stmt_cache_size = 4096")
	err := sb.Primary.Exec(context.Background(), "INSERT INTO inc.m VALUES (1, REPEAT('a', 20000))")
	mustExec(t, sb.Primary, "SET GLOBAL max_binlog_stmt_cache_size = DEFAULT, binlog_stmt_cache_size = DEFAULT")
	if err == nil || !strings.Contains(err.Error(), "1705") {
		t.Fatalf("the primary's oversized MyISAM row: %v, want error 1705 (and an incident in its binlog)", err)
	}
	mustExec(t, sb.Primary, "INSERT INTO inc.t VALUES (3)")
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0"}
	for run := range 2 { // the second run stops at once, in the same place
		r := gapless(t, nil, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "LOST_EVENTS incident after "+before.String()) {
			t.Fatalf("run %d: gapless exited %d, want a stop at the incident after %s:\n%s", run+1, r.code, before, r.stderr)
		}
		if got := queryText(t, sb.Target, "SELECT COUNT(*) FROM inc.t"); got != "2" {
			t.Fatalf("run %d: the target holds %s rows of inc.t, want the 2 before the incident", run+1, got)
		}
		if got := domain0(t, sb.Target); got != before {
			t.Fatalf("run %d: the target's binlog ends at %s, want %s, the last group before the incident", run+1, got, before)
		}
	}
}

// TestXAPrepareRetriedAfterALockWait applies an XA transaction whose row a
// client of the target holds locked past innodb_lock_wait_timeout: its
// first try fails after XA START (1205), which leaves the branch open on
// the connection, where ROLLBACK does not end it. The retry must find the
// connection free; it once met error 1953 on its first statement and the
// run stopped.
func TestXAPrepareRetriedAfterALockWait(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE xr",
		"CREATE TABLE xr.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO xr.t VALUES (1, 0), (2, 0)")
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay0"))
	mustExec(t, sb.Primary, "SET SESSION binlog_format=ROW",
		"XA START 'r1'", "UPDATE xr.t SET v = 1 WHERE id = 1", "XA END 'r1'", "XA PREPARE 'r1'", "XA COMMIT 'r1'",
		"UPDATE xr.t SET v = 2 WHERE id = 2")
	mustExec(t, sb.Target, "SET GLOBAL innodb_lock_wait_timeout = 1")
	t.Cleanup(func() { _ = sb.Target.Exec(context.Background(), "SET GLOBAL innodb_lock_wait_timeout = DEFAULT") })
	// A client of the target holds the row for 2.5 s: the XA transaction's
	// first tries wait a second each and fail.
	holder := rootDB(t, sb.Target)
	holder.SetMaxOpenConns(1)
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SELECT * FROM xr.t WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(2500 * time.Millisecond)
		tx.Rollback()
	}()
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "2")
	requireEqual(t, sb)
}

// TestXACommitKilledBeforeItsPosition kills gapless after an XA COMMIT
// ended its branch on the target and before the position passed it, then
// runs again, in every mode: the source's GTIDs in the target's binlog say
// the group is applied, and without them (causal order, no target binlog)
// XA RECOVER does, the branch no longer prepared there. It once ran the
// XA COMMIT again and stopped on XAER_NOTA (1397).
func TestXACommitKilledBeforeItsPosition(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE xk",
		"CREATE TABLE xk.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"SET SESSION binlog_format=ROW",
		"XA START 'k1'", "INSERT INTO xk.t VALUES (1)", "XA END 'k1'", "XA PREPARE 'k1'")
	prepared := binlogPos(t, sb.Primary)
	endPreparedXA(t, sb.Primary, "XA COMMIT 'k1'")
	mustExec(t, sb.Primary, "INSERT INTO xk.t VALUES (2)")
	end := binlogPos(t, sb.Primary)
	for _, extra := range [][]string{nil, {"--commit-order", "causal"}, {"--no-target-binlog"}} {
		t.Run(strings.Join(append([]string{"flags"}, extra...), " "), func(t *testing.T) {
			resetTarget(t, sb)
			mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE IF EXISTS xk")
			relay := filepath.Join(t.TempDir(), "relay")
			args := func(until string) []string {
				return append([]string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
					"--until", until, "--relay-dir", relay, "--progress", "0"}, extra...)
			}
			if r := gapless(t, nil, args(prepared)...); r.code != 0 {
				t.Fatalf("the run to the XA PREPARE exited %d:\n%s", r.code, r.stderr)
			}
			// The next group applied alone is the XA COMMIT.
			if r := gapless(t, []string{"GAPLESS_CRASH_BEFORE_POSITION=1"}, args(end)...); !r.signaled {
				t.Fatalf("the run was not killed before the XA COMMIT's position (exit %d):\n%s", r.code, r.stderr)
			}
			if r := gapless(t, nil, args(end)...); r.code != 0 {
				t.Fatalf("the run after the kill exited %d:\n%s", r.code, r.stderr)
			}
			requireEqualData(t, sb, len(extra) > 0)
		})
	}
}

// A target with a short wait_timeout, as some servers are set, and a source
// that goes quiet while a session of it holds a temporary table: gapless's
// connection holding the table must not be cut for idleness (a replica's
// thread never is), or the next statement that reads the table cannot be
// applied (it stopped with 1146).
func TestShortWaitTimeoutOnTheTarget(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET GLOBAL wait_timeout = 2", "SET GLOBAL interactive_timeout = 2")
	t.Cleanup(func() {
		mustExec(t, sb.Target, "SET GLOBAL wait_timeout = DEFAULT", "SET GLOBAL interactive_timeout = DEFAULT")
	})
	mustExec(t, sb.Primary, "CREATE DATABASE quiet", "CREATE TABLE quiet.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO quiet.t VALUES (0, 0)")
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"), "--workers", "4")...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)
	session, err := rootDB(t, sb.Primary).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, s := range []string{"SET SESSION binlog_format=MIXED", "CREATE TEMPORARY TABLE quiet.scratch (id INT, v INT) ENGINE=InnoDB", "INSERT INTO quiet.scratch VALUES (1, 10), (2, 20)"} {
		if _, err := session.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
	time.Sleep(5 * time.Second) // the source quiet past the target's wait_timeout
	if _, err := session.ExecContext(context.Background(), "INSERT INTO quiet.t SELECT id, v FROM quiet.scratch"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "INSERT INTO quiet.t VALUES (3, 30)")
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
	stopAndRequireExit0(t, cmd.Process.Pid, wait)
	requireEqualTables(t, sb, "quiet")
}

// TestStopWhileAnXABranchHoldsTemporaryTables: a source session holding a
// temporary table prepares an XA transaction that reads it. On the target
// the branch is prepared on the connection that holds the table, where
// nothing may run until it ends, not even what keeps the table's drop out
// of the binlog; ended by a stop, that connection made the target log DROP
// TEMPORARY TABLE under the next GTID of the source's domain, and the next
// run stopped on the source's XA COMMIT (1950, gtid_strict_mode). A stop
// now applies on until the branch ends. gapless stops itself after every
// commit, so one of its stops falls right after the XA PREPARE.
func TestStopWhileAnXABranchHoldsTemporaryTables(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE xt", "CREATE TABLE xt.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	sourceSession(t, sb.Primary, "SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE xt.tmp (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO xt.tmp VALUES (1, 10), (2, 20)",
		"XA START 'x1'", "INSERT INTO xt.t SELECT * FROM xt.tmp", "XA END 'x1'", "XA PREPARE 'x1'",
		"XA COMMIT 'x1'",
		"UPDATE xt.tmp SET v = v + 1",
		"XA START 'x2'", "INSERT INTO xt.t SELECT id + 10, v FROM xt.tmp", "XA END 'x2'", "XA PREPARE 'x2'",
		"XA ROLLBACK 'x2'",
		"INSERT INTO xt.t SELECT id + 20, v FROM xt.tmp")
	until := binlogPos(t, sb.Primary)
	relay := filepath.Join(t.TempDir(), "relay")
	args := replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", until)
	stops := 0
	for ; stops < 30; stops++ {
		r := gapless(t, []string{"GAPLESS_STOP_AFTER_COMMITS=1"}, args...)
		if r.code != 0 {
			t.Fatalf("run %d after %d stops exited %d:\n%s", stops+1, stops, r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "until reached") {
			break
		}
	}
	if stops < 3 {
		t.Fatalf("gapless reached the position after %d stops, want one after each commit", stops)
	}
	requireEqual(t, sb)
}

// TestTemporaryTableMadeBehindAComment: a client that puts a comment
// before its statements ("/* app */ CREATE TEMPORARY TABLE ...", as
// binlog.binlog_parallel_replication_marks_stm_mix does) made a temporary
// table gapless did not see made: it was not kept across a stop, and the
// stop ended its connection inside the binlog, so the target logged its
// DROP TEMPORARY TABLE under the source's next GTID, which the next run
// then could not apply (1950) or, for a group applied alone, took for
// applied.
func TestTemporaryTableMadeBehindAComment(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE ct", "CREATE TABLE ct.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "CREATE TABLE ct.m (id INT PRIMARY KEY) ENGINE=MyISAM")
	c := sourceSession(t, sb.Primary, "SET SESSION binlog_format=MIXED",
		"/* app: report */ CREATE TEMPORARY TABLE ct.tmp (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"# step 2\nINSERT INTO ct.tmp VALUES (1, 10), (2, 20)")
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	connExec(t, c, "/* app: report */ INSERT INTO ct.m VALUES (7)",
		"/* app: report */ INSERT INTO ct.t SELECT * FROM ct.tmp")
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

// TestKilledWhileTheStatementSessionHoldsTemporaryTables: gapless killed
// between a group applied alone on the statement session and its position
// (GAPLESS_CRASH_BEFORE_POSITION), while that session holds a temporary
// table of the source's. The target then logs the table's DROP TEMPORARY
// TABLE under the session's GTID variables, the source's server id and the
// domain's next sequence number: the GTID of the source's next group, here
// a MyISAM insert. The next run must not take that GTID for the insert
// applied: it reads the event back and stops, saying why.
func TestKilledWhileTheStatementSessionHoldsTemporaryTables(t *testing.T) {
	// The target logs in MIXED: in ROW it logs nothing of a temporary
	// table, its DROP included, so no such GTID can be left behind.
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"binlog_format=MIXED"}})
	mustExec(t, sb.Primary, "CREATE DATABASE kd", "CREATE TABLE kd.m (id INT PRIMARY KEY) ENGINE=MyISAM")
	c := sourceSession(t, sb.Primary, "SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE kd.tmp (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO kd.m VALUES (1)")
	c.Close() // the source logs the drop of kd.tmp
	until := binlogPos(t, sb.Primary)
	relay := filepath.Join(t.TempDir(), "relay")
	args := replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", until)
	for range 10 {
		r := gapless(t, []string{"GAPLESS_CRASH_BEFORE_POSITION=1"}, args...)
		switch {
		case r.signaled:
			continue
		case r.code == 0:
			requireEqual(t, sb) // only if no kill left such a drop behind
			return
		case strings.Contains(r.stderr, "the DROP TEMPORARY TABLE the target logged when gapless's connection") && strings.Contains(r.stderr, "--skip-gtid"):
			t.Logf("stopped as it must: %s", lastLines(r.stderr, 2))
			return
		default:
			t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
		}
	}
	t.Fatal("gapless did not reach the position in 10 runs")
}

// TestDDLFinishedByTheTargetsRecovery sets the target as its DDL recovery
// leaves it after a crash amid an ALTER TABLE whose change the engine held
// but the binlog did not: the ALTER logged, word for word, under the
// target's own server id at the group's sequence number, and gapless's
// begun mark naming the group. gapless takes the ALTER for applied, with a
// warning, and goes on. The same write of another statement stops the run:
// a client of the target wrote the domain.
func TestDDLFinishedByTheTargetsRecovery(t *testing.T) {
	// The source logs the terminator and the comment after the
	// statement, which gapless leaves out, and so the target's recovery.
	const alter = "ALTER TABLE dr.t ADD COLUMN w INT NOT NULL DEFAULT 5"
	for _, tc := range []struct{ name, written string }{
		{"the-alter", alter},
		{"another-statement", "CREATE TABLE dr.other (a INT)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := upSandbox(t)
			mustExec(t, sb.Primary, "CREATE DATABASE dr", "CREATE TABLE dr.t (id INT PRIMARY KEY, v INT)", "INSERT INTO dr.t VALUES (1, 1)")
			before := binlogPos(t, sb.Primary)
			mustExec(t, sb.Primary, "USE dr", alter+"; -- w for width")
			ddl := domain0(t, sb.Primary)
			mustExec(t, sb.Primary, "INSERT INTO dr.t VALUES (2, 2, 6)")
			until := binlogPos(t, sb.Primary)
			relay := filepath.Join(t.TempDir(), "relay")
			if r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", before)...); r.code != 0 {
				t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
			}
			// What the target's DDL recovery does: the statement under its
			// default database, server id and domain.
			mustExec(t, sb.Target, "USE dr", tc.written)
			if got := domain0(t, sb.Target); got.Seq != ddl.Seq || got.Server == ddl.Server {
				t.Fatalf("the target logged %s by hand, want %d-<its own>-%d", got, ddl.Domain, ddl.Seq)
			}
			mustExec(t, sb.Target, "SET SESSION sql_log_bin=0",
				fmt.Sprintf("REPLACE INTO gapless.begun (stream, domain_id, gtid, began_at) VALUES ('default', 0, '%s', UTC_TIMESTAMP(6))", ddl))
			r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", until)...)
			if tc.written != alter {
				if r.code == 0 || !strings.Contains(r.stderr, "under the target's own server id, and the run before began this DDL") {
					t.Fatalf("gapless exited %d, want the stop on a client's write of the domain:\n%s", r.code, r.stderr)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "the target's DDL recovery finished it") {
				t.Fatalf("no warning that the target's recovery finished the ALTER:\n%s", r.stderr)
			}
			requireEqualTables(t, sb, "dr")
		})
	}
}
