// stop_test.go proves the two stops of a parallel run: a stop signal returns
// within about a second plus the longest transaction in flight however many
// are queued, at a gap-less point (seed 000's demonstration), batches or
// not; and a
// permanent error stops at the transaction before it, names it, and a
// restart once the cause is fixed, or with --skip-gtid, continues exactly once.
package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

func TestStopIsFastAndGapless(t *testing.T) {
	r := stopInTheMiddle(t, "--workers", "4", "--batch", "1")
	if r.applied == 0 || r.applied == 400 {
		t.Errorf("the stop came at %d of 400 rows; the test wants it in the middle", r.applied)
	}
}

// With batches, a started batch of slow transactions would take minutes to
// finish; the stop rolls it back instead, and still stops at a prefix.
func TestStopRollsBackTheBatchesInFlight(t *testing.T) {
	r := stopInTheMiddle(t, "--workers", "4")
	if !strings.Contains(r.stdout, "the stop rolled back") {
		t.Errorf("no batch was rolled back; the test wants one in flight at the stop:\n%s%s", r.stdout, r.stderr)
	}
}

type stopRun struct {
	run
	applied int // rows the target held after the stop
}

// stopInTheMiddle replicates 400 inserts that each take a second on the
// target (seed 000's demonstration), stops the run after 3 seconds, and
// checks that the stop was fast, that the target holds a prefix of the
// primary's history, and that a second run applies the rest exactly once.
func stopInTheMiddle(t *testing.T, flags ...string) stopRun {
	return stopInTheMiddleOf(t, "InnoDB", 1, flags...)
}

// TestStopAmidRoundTripsOfMyISAMStatements stops a run of MyISAM
// statements that share round trips (10 ms each on the target): the stop
// waits for the round trip in flight, and the target holds a prefix.
func TestStopAmidRoundTripsOfMyISAMStatements(t *testing.T) {
	r := stopInTheMiddleOf(t, "MyISAM", 0.01, "--workers", "4")
	if r.applied == 0 || r.applied == 400 {
		t.Errorf("the stop came at %d of 400 rows; the test wants it in the middle", r.applied)
	}
}

// stopInTheMiddleOf stops gapless amid 400 inserts into tables of engine,
// each slowed by a trigger on the target that sleeps that many seconds.
func stopInTheMiddleOf(t *testing.T, engine string, sleep float64, flags ...string) stopRun {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary,
		"CREATE DATABASE d1", "CREATE DATABASE d2",
		"CREATE TABLE d1.a (i INT) ENGINE="+engine, "CREATE TABLE d2.a (i INT) ENGINE="+engine)
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target,
		"SET GLOBAL slave_run_triggers_for_rbr = YES",
		"SET SESSION sql_log_bin = 0",
		fmt.Sprintf("CREATE TRIGGER d1.iai AFTER INSERT ON d1.a FOR EACH ROW DO SLEEP(%g)", sleep),
		fmt.Sprintf("CREATE TRIGGER d2.iai AFTER INSERT ON d2.a FOR EACH ROW DO SLEEP(%g)", sleep))
	var stmts []string
	for i := 1; i <= 200; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO d1.a VALUES (%d)", i), fmt.Sprintf("INSERT INTO d2.a VALUES (%d)", i))
	}
	mustExec(t, sb.Primary, stmts...)

	cmd, _, wait := background(t, append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), flags...)...)
	time.Sleep(3 * time.Second)
	began := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	r := wait()
	took := time.Since(began)
	t.Logf("stop took %s; %s", took.Round(time.Millisecond), strings.TrimSpace(r.stdout))
	if r.code != 0 {
		t.Fatalf("stop exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// 400 queued transactions of one second each: waiting for the queue would take minutes.
	if took > 10*time.Second {
		t.Errorf("the stop took %s; it should end within about a second plus the transaction in flight", took)
	}
	// Gap-less: the target holds the first k inserts of the primary's order, d1 before d2.
	var n1, n2, max1, max2 int
	db := rootDB(t, sb.Target)
	db.QueryRow("SELECT COUNT(*), COALESCE(MAX(i), 0) FROM d1.a").Scan(&n1, &max1)
	db.QueryRow("SELECT COUNT(*), COALESCE(MAX(i), 0) FROM d2.a").Scan(&n2, &max2)
	t.Logf("target holds %d rows of d1.a and %d of d2.a", n1, n2)
	if n1 != max1 || n2 != max2 || n1 < n2 || n1 > n2+1 {
		t.Errorf("the target is not a prefix of the primary's history: d1.a %d rows (max %d), d2.a %d rows (max %d)", n1, max1, n2, max2)
	}
	// The rest follows exactly once after the stop (without the slow triggers).
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP TRIGGER d1.iai", "DROP TRIGGER d2.iai")
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
	return stopRun{run: r, applied: n1 + n2}
}

func TestPermanentErrorStopsGaplessAndNamesTheTransaction(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE e", "CREATE TABLE e.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
	replicateUntilCaughtUp(t, sb, relay)
	// A row on the target that the primary will insert too: a duplicate key in the middle of the stream.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO e.t VALUES (150, 'local')")
	var stmts []string
	for i := 1; i <= 300; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO e.t VALUES (%d, 'primary')", i))
	}
	mustExec(t, sb.Primary, stmts...)
	until := binlogPos(t, sb.Primary)
	var failing string
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", until, "--workers", "8")

	r := gapless(t, nil, args...)
	t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code == 0 {
		t.Fatal("the run went past a duplicate key")
	}
	for _, want := range []string{"e.t", "row events", "1062", "Duplicate entry", "--skip-gtid", "the target's rows differ from the source's", "gapless verify"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if i := strings.Index(r.stderr, "--skip-gtid "); i >= 0 {
		failing = strings.Fields(r.stderr[i+len("--skip-gtid "):])[0]
	}
	requireStoppedAt150(t, sb, "e.t")
	requireSkipGoesOnOnce(t, sb, args, failing, "e.t")
}

// requireStoppedAt150 checks, after an error stop at the row 150 the
// target held already, that table holds every row of the primary before it
// and none after it: gap-less.
func requireStoppedAt150(t *testing.T, sb *sandbox.Sandbox, table string) {
	t.Helper()
	var below, above int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM " + table + " WHERE id < 150 AND v = 'primary'").Scan(&below)
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM " + table + " WHERE id > 150").Scan(&above)
	if below != 149 || above != 0 {
		t.Errorf("after the error stop the target holds %d rows below the failing one (want 149) and %d above (want 0)", below, above)
	}
}

// requireSkipGoesOnOnce runs args with --skip-gtid failing and checks that
// table then holds the primary's 300 rows, but for the one the target held
// already: skipping the failing transaction goes on exactly once, and the
// target's own row stays.
func requireSkipGoesOnOnce(t *testing.T, sb *sandbox.Sandbox, args []string, failing, table string) {
	t.Helper()
	r := gapless(t, nil, append(args, "--skip-gtid", failing)...)
	if r.code != 0 {
		t.Fatalf("the run with --skip-gtid %s exited %d:\n%s", failing, r.code, r.stderr)
	}
	var local, total int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM " + table + " WHERE v = 'local'").Scan(&local)
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM " + table).Scan(&total)
	if local != 1 || total != 300 {
		t.Errorf("after the skip the target holds %d rows (want 300), %d of them local (want 1)", total, local)
	}
}

// A client writes on the target itself, with its binlog on: the target
// binlogs it in its own @@gtid_domain_id, the source's (both 0), and the
// next group of the source there is refused (1950 in gtid_strict_mode).
// The stop says who wrote the domain and how to go on without losing the
// group, and going on so ends equal.
func TestClientWriteInTheStreamsDomainOnTheTarget(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE e", "CREATE TABLE e.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO e.t VALUES (1, 1)")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target, "CREATE DATABASE local_notes", "CREATE TABLE local_notes.n (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO local_notes.n VALUES (1)")
	mustExec(t, sb.Primary, "INSERT INTO e.t VALUES (2, 2)", "UPDATE e.t SET v = v + 1", "INSERT INTO e.t VALUES (3, 3)")
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary), "--workers", "4")
	r := gapless(t, nil, args...)
	t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code == 0 {
		t.Fatal("the run went past a GTID the target's strict mode refuses")
	}
	for _, want := range []string{"1950", "a client's write on the target itself", "gtid_strict_mode=OFF", "skipping this transaction would lose its changes"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	// As the stop says: the target's own writes out of the stream's
	// domain, strict mode off for the run.
	mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 9", "SET GLOBAL gtid_strict_mode = OFF")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 0", "SET GLOBAL gtid_strict_mode = ON") })
	replicateUntilCaughtUp(t, sb, relay)
	requireEqualTables(t, sb, "e")
}

// A write binlogged on the target in the stream's domain (a DBA's OPTIMIZE
// TABLE is), then groups that apply alone (a MyISAM write, a DDL). With the
// target in gtid_strict_mode=OFF, MariaDB's default, its own replica goes
// on; gapless stopped, taking the target's GTID past the group for a sign
// the group might be there already, and the advice it gave (strict mode
// off) could not help. Now the target's @@gtid_binlog_state, which keeps
// the source server's own last GTID of the domain, says the group is not
// there. With strict mode on, the stop's advice is followed and the run
// goes on.
func TestTargetsOwnWriteBeforeGroupsAppliedAlone(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE e", "CREATE TABLE e.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE e.m (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=MyISAM", "INSERT INTO e.t VALUES (1, 1)")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target, "SET GLOBAL gtid_strict_mode = OFF")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL gtid_strict_mode = ON") })
	mustExec(t, sb.Target, "OPTIMIZE TABLE e.t")
	mustExec(t, sb.Primary, "INSERT INTO e.m (v) VALUES (1)", "ALTER TABLE e.t ADD COLUMN w INT", "UPDATE e.m SET v = v + 1", "INSERT INTO e.t VALUES (3, 3, 3)")
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary), "--workers", "4")
	if r := gapless(t, nil, args...); r.code != 0 {
		t.Fatalf("exit %d with strict mode off on the target, where MariaDB's replica goes on:\n%s", r.code, r.stderr)
	}
	requireEqualTables(t, sb, "e")

	// Strict mode on: the stop, then its advice followed.
	mustExec(t, sb.Target, "SET GLOBAL gtid_strict_mode = ON", "OPTIMIZE TABLE e.t")
	mustExec(t, sb.Primary, "INSERT INTO e.m (v) VALUES (2)", "DELETE FROM e.m WHERE v = 2")
	args = append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary), "--workers", "4")
	r := gapless(t, nil, args...)
	if r.code == 0 || !strings.Contains(r.stderr, "gtid_strict_mode=OFF") {
		t.Fatalf("exit %d, want the stop that says to turn strict mode off:\n%s", r.code, r.stderr)
	}
	mustExec(t, sb.Target, "SET GLOBAL gtid_strict_mode = OFF")
	if r := gapless(t, nil, args...); r.code != 0 {
		t.Fatalf("exit %d after the stop's advice was followed:\n%s", r.code, r.stderr)
	}
	requireEqualTables(t, sb, "e")
}

// A source in gtid_strict_mode=OFF (MariaDB's default) whose binlog goes
// back in a domain: a session set gtid_seq_no, as mariadb-binlog's output
// replayed into the source does. gapless applied everything but those
// groups, taking them for applied already, and exited 0 (rows missing).
// Now it stops before the first such group, with everything before it
// applied, and the stop says how to go on; going on so ends equal.
func TestSourceSequenceNumbersGoBack(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE ooo", "CREATE TABLE ooo.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO ooo.t VALUES (1, 1)")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Primary, "SET GLOBAL gtid_strict_mode = OFF")
	t.Cleanup(func() { mustExec(t, sb.Primary, "SET GLOBAL gtid_strict_mode = ON") })
	mustExec(t, sb.Primary,
		"INSERT INTO ooo.t VALUES (2, 2)",
		"SET SESSION gtid_seq_no = 2", // below the domain's last
		"INSERT INTO ooo.t VALUES (3, 3)",
		"INSERT INTO ooo.t VALUES (4, 4)")
	var back string
	if err := rootDB(t, sb.Primary).QueryRow("SELECT CONCAT(@@gtid_domain_id, '-', @@server_id, '-2')").Scan(&back); err != nil {
		t.Fatal(err)
	}
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary), "--workers", "4")
	r := gapless(t, nil, args...)
	t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if r.code == 0 {
		t.Fatal("the run passed a group whose sequence number goes back")
	}
	for _, want := range []string{"its sequence numbers go back", "gtid_strict_mode", "--skip-gtid " + back} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the stop does not say %q", want)
		}
	}
	var n int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM ooo.t").Scan(&n)
	if n != 2 {
		t.Errorf("the target holds %d rows, want the 2 before the group that goes back", n)
	}
	// As the stop says: its changes by hand, outside the binlog, then on.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO ooo.t VALUES (3, 3)")
	r = gapless(t, nil, append(args, "--skip-gtid", back)...)
	if r.code != 0 {
		t.Fatalf("exit %d after --skip-gtid %s:\n%s", r.code, back, r.stderr)
	}
	requireEqualTables(t, sb, "ooo")
}

// A MEMORY table the source fills past the target's max_heap_table_size:
// the stop says the target will not grow the table and what to do. A
// MEMORY table keeps the rows written before the error, and the target
// logs them under the group's GTID: the next run took the group for
// applied and exited 0 with the table half full (silent). Now it stops
// there, and going on as it says (the table made what the source's was,
// the group skipped) ends equal.
func TestTargetTableFull(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Target, "SET GLOBAL max_heap_table_size = 1048576")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL max_heap_table_size = DEFAULT") })
	mustExec(t, sb.Primary,
		"CREATE DATABASE mem", "CREATE TABLE mem.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=MEMORY",
		"INSERT INTO mem.t SELECT seq, REPEAT('x', 200) FROM mem.seq_1_to_20000")
	var failing string
	if err := rootDB(t, sb.Primary).QueryRow("SELECT @@gtid_binlog_pos").Scan(&failing); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "CREATE TABLE mem.after (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO mem.after VALUES (1)")
	args := append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary))
	r := gapless(t, nil, args...)
	if r.code == 0 {
		t.Fatal("the run went past a table the target would not grow")
	}
	for _, want := range []string{"1114", "max_heap_table_size", "make room there and run again"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the stop does not say %q:\n%s", want, r.stderr)
		}
	}
	// Room made and run again: the group is in the target's binlog, in part.
	mustExec(t, sb.Target, "SET GLOBAL max_heap_table_size = 67108864")
	r = gapless(t, nil, args...)
	t.Logf("run again: exit %d\n%s", r.code, r.stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "it is on the target in part") || !strings.Contains(r.stderr, "--skip-gtid "+failing) {
		t.Fatalf("exit %d, want a stop at the group the target holds in part:\n%s", r.code, r.stderr)
	}
	// As it says: the table made what the source's was after the group,
	// outside the binlog, then the group skipped.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "SET SESSION max_heap_table_size = 67108864",
		"ALTER TABLE mem.t ENGINE=MEMORY", "DELETE FROM mem.t", "INSERT INTO mem.t SELECT seq, REPEAT('x', 200) FROM mem.seq_1_to_20000")
	if r = gapless(t, nil, append(args, "--skip-gtid", failing)...); r.code != 0 {
		t.Fatalf("exit %d after --skip-gtid %s:\n%s", r.code, failing, r.stderr)
	}
	requireEqualTables(t, sb, "mem")
}

// TestStopWhileStarting: a stop (SIGTERM) that comes while gapless opens
// its connections and checkpoint tables ends the run with exit 0, as any
// stop does; it exited 1 with "context canceled" (found by the random
// load's stopped variant). Each run gets the signal a little later; one
// that gets it before gapless listens for it dies of it, which is the
// signal's own doing.
func TestStopWhileStarting(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE st", "CREATE TABLE st.t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO st.t VALUES (1), (2)")
	relay := filepath.Join(t.TempDir(), "relay")
	args := replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))
	starting := 0
	for delay := 5 * time.Millisecond; delay <= 320*time.Millisecond; delay = delay * 3 / 2 {
		cmd, _, wait := background(t, args...)
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGTERM)
		r := wait()
		if !r.signaled && r.code != 0 {
			t.Fatalf("stopped %s after its start, gapless exited %d:\n%s%s", delay, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "stopped while starting") {
			starting++
		}
	}
	t.Logf("%d runs stopped while starting", starting)
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}
