// This file proves that every bad input makes gapless replicate exit non-zero
// with one "gapless: ..." line that names the problem and what to do, before
// anything is applied, and that a second applier on the same target is
// refused while the first goes on to finish exactly once.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

// replicateArgs is a replicate command line without --until.
func replicateArgs(source, target, relay string, extra ...string) []string {
	return append([]string{"replicate", "--source", source, "--target", target, "--relay-dir", relay, "--progress", "0"}, extra...)
}

// requireRefused checks that r failed with exactly one "gapless: ..." line on
// stderr holding every one of words (case-insensitive), and logs that line.
func requireRefused(t *testing.T, r run, words ...string) {
	t.Helper()
	msg := strings.TrimSpace(r.stderr)
	t.Logf("exit %d: %s", r.code, msg)
	if r.code == 0 || r.signaled {
		t.Errorf("exit code %d (signaled %v), want a non-zero exit", r.code, r.signaled)
	}
	if !strings.HasPrefix(msg, "gapless: ") || strings.Contains(msg, "\n") {
		t.Errorf("stderr is not one \"gapless: ...\" line:\n%s", r.stderr)
	}
	for _, w := range words {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Errorf("the message does not say %q", w)
		}
	}
}

// requireNothingApplied checks that the target holds neither the schema
// schema nor gapless's own, and wrote nothing to its binlog.
func requireNothingApplied(t *testing.T, sb *sandboxT, schema string) {
	t.Helper()
	var n int
	err := rootDB(t, sb.Target).QueryRow(
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?, ?)", schema, checkpoint.Schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the target has %d of the schemas %s and %s; it should have neither", n, schema, checkpoint.Schema)
	}
	if pos := binlogPos(t, sb.Target); pos != "" {
		t.Errorf("the target wrote %s to its binlog; it should have written nothing", pos)
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// appliedPosition is the position of the default stream on the target.
func appliedPosition(ctx context.Context, sb *sandboxT) (gtid.MariaDBPosition, error) {
	db, err := sb.Target.Open("")
	if err != nil {
		return gtid.MariaDBPosition{}, err
	}
	defer db.Close()
	return checkpoint.ForStream(db, "default").Position(ctx)
}

// waitApplied polls the target until its position covers want and is not
// empty; stderr is the running gapless's, shown when the wait times out.
func waitApplied(t *testing.T, sb *sandboxT, want gtid.MariaDBPosition, timeout time.Duration, stderr interface{ String() string }) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		pos, err := appliedPosition(ctx, sb)
		cancel()
		if err == nil && !pos.IsEmpty() && pos.Covers(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target's position is %q (error: %v) after %s, want %q\ngapless stderr:\n%s", pos.String(), err, timeout, want.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func primaryPosition(t *testing.T, sb *sandboxT) gtid.MariaDBPosition {
	t.Helper()
	p, err := gtid.ParseMariaDBPosition(binlogPos(t, sb.Primary))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stopAndRequireExit0 sends SIGTERM to a background gapless and checks it exits 0.
func stopAndRequireExit0(t *testing.T, pid int, wait func() run) run {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if r.code != 0 || r.signaled {
		t.Fatalf("gapless exited %d after SIGTERM (signaled %v)\nstdout:\n%s\nstderr:\n%s", r.code, r.signaled, r.stdout, r.stderr)
	}
	return r
}

// purgeBinlogs rotates the binlog and purges every file before the new one.
// The server keeps a file until the engine has made its transactions
// durable, so the purge is repeated until it took.
func purgeBinlogs(t *testing.T, srv *sandbox.Server) {
	t.Helper()
	mustExec(t, srv, "FLUSH BINARY LOGS")
	db := rootDB(t, srv)
	var newest string
	var discard any
	if err := db.QueryRow("SHOW MASTER STATUS").Scan(&newest, &discard, &discard, &discard); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mustExec(t, srv, "PURGE BINARY LOGS TO '"+newest+"'")
		var first string
		if err := db.QueryRow("SHOW BINARY LOGS").Scan(&first, &discard); err != nil {
			t.Fatal(err)
		}
		if first == newest {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still has %s after PURGE BINARY LOGS TO %q", first, newest)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRefusesWrongPasswords(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	const bad = "Not-The-Password"
	t.Run("source", func(t *testing.T) {
		r := gapless(t, nil, replicateArgs(sb.Primary.URL(sandbox.ReplUser, bad), sb.TargetURL, relay)...)
		requireRefused(t, r, "source", "access denied", "user '"+sandbox.ReplUser+"'", "wrong password")
		if strings.Contains(r.stderr+r.stdout, bad) {
			t.Error("gapless printed the password")
		}
	})
	t.Run("target", func(t *testing.T) {
		r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.Target.URL(sandbox.ApplierUser, bad), relay)...)
		requireRefused(t, r, "target", "access denied", "user '"+sandbox.ApplierUser+"'", "wrong password")
		if strings.Contains(r.stderr+r.stdout, bad) {
			t.Error("gapless printed the password")
		}
	})
	requireNothingApplied(t, sb, "w")
}

func TestRefusesUnreachableHosts(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	port := closedPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	t.Run("source", func(t *testing.T) {
		r := gapless(t, nil, replicateArgs("mysql://repl:repl@"+addr, sb.TargetURL, relay)...)
		requireRefused(t, r, "source", "cannot reach "+addr, "connection refused")
	})
	t.Run("target", func(t *testing.T) {
		r := gapless(t, nil, replicateArgs(sb.SourceURL, "mysql://gapless:gapless@"+addr, relay)...)
		requireRefused(t, r, "target", "cannot reach "+addr, "connection refused")
	})
}

func TestRefusesSourceUserWithoutReplicationSlave(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"SET sql_log_bin=0",
		"CREATE USER 'norepl'@'%' IDENTIFIED BY 'norepl'",
		"GRANT SELECT, BINLOG MONITOR ON *.* TO 'norepl'@'%'",
	)
	smallWorkload(t, sb, 20, 11)
	r := gapless(t, nil, append(replicateArgs(sb.Primary.URL("norepl", "norepl"), sb.TargetURL, filepath.Join(t.TempDir(), "relay")),
		"--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "source", "user 'norepl'", "lacks the REPLICATION SLAVE privilege", "GRANT REPLICATION SLAVE ON *.* TO 'norepl'@'%'")
}

func TestRefusesTargetUserWithoutApplyPrivileges(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target,
		"SET sql_log_bin=0",
		"CREATE USER 'weak'@'%' IDENTIFIED BY 'weak'",
		"GRANT SELECT, INSERT ON *.* TO 'weak'@'%'",
	)
	smallWorkload(t, sb, 20, 12)
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.Target.URL("weak", "weak"), filepath.Join(t.TempDir(), "relay")),
		"--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "target", "user 'weak'@'%' lacks", "BINLOG ADMIN", "BINLOG REPLAY", "SUPER", "GRANT", "nothing was applied")
	requireNothingApplied(t, sb, "w")
}

func TestRefusesSourcesWithoutBinlog(t *testing.T) {
	noBinlog := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "nobinlog", Binlog: false})
	target := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target", Binlog: true})
	r := gapless(t, nil, replicateArgs(noBinlog.URL(sandbox.ReplUser, sandbox.ReplPassword),
		target.URL(sandbox.ApplierUser, sandbox.ApplierPassword), filepath.Join(t.TempDir(), "relay"))...)
	requireRefused(t, r, "source", "has no binlog", "log_bin=OFF", "binlog_format=ROW")
}

func TestRefusesSourceThatPurgedTheNeededBinlogs(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 50, 13)
	purgeBinlogs(t, sb.Primary)
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay")),
		"--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "source", "no longer has the binlogs", "purged", "re-seed the target")
}

func TestRefusesUnwritableRelayDir(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 20, 14)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	relay := filepath.Join(file, "relay")
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "relay directory "+relay, "not a directory", "--relay-dir")
	requireNothingApplied(t, sb, "w")
}

// TestRefusesAnHTTPAddressInUse: --http at an address another process
// listens on is refused with the listen error, after the checks against
// the servers and before anything is applied. (It once crashed gapless: the
// stop-while-starting check read the context startHTTP had left nil.)
func TestRefusesAnHTTPAddressInUse(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 20, 14)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	relay := filepath.Join(t.TempDir(), "relay")
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, relay),
		"--until", binlogPos(t, sb.Primary), "--http", taken.Addr().String())...)
	requireRefused(t, r, "--http", taken.Addr().String(), "address already in use")
	requireNothingApplied(t, sb, "w")
}

func TestRefusesInvalidFlags(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	noEnv := []string{"GAPLESS_SOURCE=", "GAPLESS_TARGET="}
	cases := []struct {
		name  string
		args  []string
		words []string
	}{
		{"until garbage", replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", "garbage"),
			[]string{"--until", `"garbage"`, "e.g. 0-1-51253"}},
		{"until empty", replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", ""),
			[]string{"--until is empty", "e.g. 0-1-51253"}},
		{"start-position empty", replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--start-position", " "),
			[]string{"--start-position is empty"}},
		{"skip-gtid x", replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--skip-gtid", "x"),
			[]string{"--skip-gtid", `"x"`, "e.g. 0-1-51253"}},
		{"unknown scheme", replicateArgs(strings.Replace(sb.SourceURL, "mysql://", "postgres://", 1), sb.TargetURL, relay),
			[]string{"source", `unknown URL scheme "postgres"`, "mysql://user:password@host:port"}},
		{"missing source", []string{"replicate", "--target", sb.TargetURL, "--relay-dir", relay},
			[]string{"--source is required", "$GAPLESS_SOURCE"}},
		{"unknown flag", replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--untill", "0-1-1"),
			[]string{"unknown flag", "--untill"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := gapless(t, noEnv, c.args...)
			requireRefused(t, r, c.words...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (a wrong command line, which the service unit does not restart)", r.code)
			}
		})
	}
	if _, err := os.Stat(relay); err == nil {
		t.Errorf("a refused run created the relay directory %s", relay)
	}
	requireNothingApplied(t, sb, "w")
}

func TestSecondApplierIsRefusedWhileTheFirstRuns(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 1500, 15)
	dir := t.TempDir()
	first, firstErr, waitFirst := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(dir, "relay1"))...)
	waitApplied(t, sb, gtid.MariaDBPosition{}, 30*time.Second, firstErr)

	second := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(dir, "relay2")),
		"--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, second, "another gapless is already applying stream \"default\"", "connection ", "of user gapless", "from 127.0.0.1")

	smallWorkload(t, sb, 200, 16)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, firstErr)
	stopAndRequireExit0(t, first.Process.Pid, waitFirst)
	requireEqual(t, sb)
}

// TestLoadDataOnATargetWithoutLocalInfile stops, with the setting to change,
// at a LOAD DATA logged as a statement when the target refuses LOAD DATA
// LOCAL INFILE, which gapless runs it as; nothing of it is applied.
func TestLoadDataOnATargetWithoutLocalInfile(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"local_infile=OFF"}})
	file := filepath.Join(t.TempDir(), "rows.txt")
	if err := os.WriteFile(file, []byte("1\tx\n2\ty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary,
		"CREATE DATABASE ld", "CREATE TABLE ld.t (a INT PRIMARY KEY, b VARCHAR(10)) ENGINE=InnoDB",
		"SET SESSION binlog_format=STATEMENT",
		"LOAD DATA INFILE '"+file+"' INTO TABLE ld.t",
	)
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.Target.URL(sandbox.ApplierUser, sandbox.ApplierPassword),
		filepath.Join(t.TempDir(), "relay")), "--until", binlogPos(t, sb.Primary))...)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	for _, w := range []string{"apply ", "target error 4166", "SET GLOBAL local_infile=ON on the target", "replication stopped before"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
		}
	}
	if n := queryText(t, sb.Target, "SELECT COUNT(*) FROM ld.t"); n != "0" {
		t.Errorf("the target holds %s rows of the refused LOAD DATA", n)
	}
}

// TestTargetThatDropsEveryConnectionOnATransactionStops: a target that
// drops the connection each time it runs one transaction (here a trigger
// only the target has, and a killer of its connections) must stop the run
// with an error that names the transaction, not have gapless reconnect and
// try again for ever; the transaction is not applied, the one before is.
func TestTargetThatDropsEveryConnectionOnATransactionStops(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE drops",
		"CREATE TABLE drops.t (a INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO drops.t VALUES (1)",
	)
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0",
		"CREATE TRIGGER drops.slow BEFORE INSERT ON drops.t FOR EACH ROW SET @gapless_test_drops = SLEEP(0.2)")
	// A statement, so that the target's trigger runs.
	mustExec(t, sb.Primary, "SET SESSION binlog_format=MIXED", "INSERT INTO drops.t VALUES (2)")
	stuck := domain0(t, sb.Primary)
	done := make(chan struct{})
	defer close(done)
	go func() {
		target := rootDB(t, sb.Target)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			var id int64
			if target.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE STATE = 'User sleep' LIMIT 1").Scan(&id) == nil {
				target.Exec(fmt.Sprintf("KILL CONNECTION %d", id))
			}
		}
	}()
	r := gapless(t, nil, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0")
	if r.code == 0 || !strings.Contains(r.stderr, stuck.String()) || !strings.Contains(r.stderr, "dropped the connection") {
		t.Fatalf("gapless did not stop at %s, dropped on every try, with one message (exit %d):\n%s", stuck, r.code, r.stderr)
	}
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM drops.t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%v: drops.t holds %d rows on the target; want 1", err, n)
	}
}

// TestGroupWhoseWritesStayIsNotRunAgain: a group that writes an InnoDB
// table, then two MyISAM tables, waits for a lock on the last one (the
// target holds it locked). The writes before stay on the target: with its
// binlog written the target commits each statement of such a group as a
// part of its own, and without it the MyISAM row is written at once
// whatever the transaction does. gapless must stop at the group, as
// MariaDB's replica does, not run it again: each try wrote those rows once
// more. With and without the target's binlog, after:
//   - timeout: a lock wait timeout, the group alone or after 200 MyISAM
//     groups (runs of groups applied alone);
//   - killed: the connection that waits is killed, then the lock released
//     (a run that tried again went on to exit 0, the rows written twice);
//   - crashed: gapless is killed with SIGKILL while it waits, the
//     connection too, and a new run starts (it ran the group again).
//
// The source logs in STATEMENT format: in ROW it writes each MyISAM
// statement's rows as a group of its own, which a retry may run again.
func TestGroupWhoseWritesStayIsNotRunAgain(t *testing.T) {
	for _, binlog := range []bool{true, false} {
		for _, end := range []string{"timeout", "timeout-amid-a-run", "killed", "crashed"} {
			t.Run(fmt.Sprintf("binlog=%v/%s", binlog, end), func(t *testing.T) { groupWhoseWritesStay(t, binlog, end) })
		}
	}
}

func groupWhoseWritesStay(t *testing.T, binlog bool, end string) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE parts",
		"CREATE TABLE parts.t (a INT) ENGINE=InnoDB", // no key: a row written twice shows
		"CREATE TABLE parts.m (a INT) ENGINE=MyISAM",
		"CREATE TABLE parts.locked (a INT) ENGINE=MyISAM",
		"CREATE TABLE parts.before (a INT) ENGINE=MyISAM",
	)
	relay := filepath.Join(t.TempDir(), "relay")
	var extra []string
	if !binlog {
		extra = append(extra, "--no-target-binlog")
	}
	replicateUntilCaughtUp(t, sb, relay, extra...)
	stmts := []string{"SET SESSION binlog_format=STATEMENT"}
	amid := end == "timeout-amid-a-run"
	if amid {
		for i := range 200 {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO parts.before VALUES (%d)", i))
		}
	}
	mustExec(t, sb.Primary, append(stmts, "BEGIN", "INSERT INTO parts.t VALUES (8)", "INSERT INTO parts.m VALUES (2)",
		"INSERT INTO parts.locked VALUES (3)", "COMMIT")...)
	stuck := domain0(t, sb.Primary)
	locker, err := rootDB(t, sb.Target).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	if _, err := locker.ExecContext(context.Background(), "LOCK TABLES parts.locked WRITE"); err != nil {
		t.Fatal(err)
	}
	// waiting returns the id of the apply connection that waits for the lock.
	waiting := func() int64 {
		for range 500 {
			var id int64
			err := rootDB(t, sb.Target).QueryRow("SELECT ID FROM information_schema.PROCESSLIST " +
				"WHERE USER = 'gapless' AND STATE LIKE 'Waiting for table%' LIMIT 1").Scan(&id)
			if err == nil {
				return id
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Error("no apply connection waited for the table lock")
		return 0
	}
	args := append([]string{"replicate", "--source", sb.SourceURL, "--until", binlogPos(t, sb.Primary),
		"--relay-dir", relay, "--progress", "0"}, extra...)
	var r run
	switch end {
	case "timeout", "timeout-amid-a-run":
		r = gapless(t, nil, append(args, "--target", sb.TargetURL+"?lock_wait_timeout=1")...)
	case "killed":
		go func() {
			defer locker.ExecContext(context.Background(), "UNLOCK TABLES")
			if id := waiting(); id != 0 {
				rootDB(t, sb.Target).Exec(fmt.Sprintf("KILL CONNECTION %d", id))
			}
		}()
		r = gapless(t, nil, append(args, "--target", sb.TargetURL+"?lock_wait_timeout=60")...)
	case "crashed":
		cmd, _, wait := background(t, append(args, "--target", sb.TargetURL+"?lock_wait_timeout=60")...)
		id := waiting()
		cmd.Process.Signal(syscall.SIGKILL)
		wait()
		rootDB(t, sb.Target).Exec(fmt.Sprintf("KILL CONNECTION %d", id))
		locker.ExecContext(context.Background(), "UNLOCK TABLES")
		r = gapless(t, nil, append(args, "--target", sb.TargetURL)...)
	}
	locker.ExecContext(context.Background(), "UNLOCK TABLES")
	for _, table := range []string{"parts.t", "parts.m"} {
		var n int
		if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n > 1 {
			t.Fatalf("%v: %s holds %d rows on the target; the group ran more than once:\n%s", err, table, n, r.stderr)
		}
	}
	if r.code == 0 || !strings.Contains(r.stderr, stuck.String()) || !strings.Contains(r.stderr, "does not run it again") {
		t.Fatalf("gapless did not stop at %s, a group whose writes stay, after it may have begun (exit %d):\n%s", stuck, r.code, r.stderr)
	}
	if amid {
		var n int
		if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM parts.before").Scan(&n); err != nil || n != 200 {
			t.Fatalf("%v: parts.before holds %d rows on the target; want the 200 of the groups before the one that failed", err, n)
		}
	}
	// What the message says: the tables made what the source's were
	// after the group, then the group skipped.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0",
		"DELETE FROM parts.t", "INSERT INTO parts.t VALUES (8)",
		"DELETE FROM parts.m", "INSERT INTO parts.m VALUES (2)",
		"DELETE FROM parts.locked", "INSERT INTO parts.locked VALUES (3)")
	if r := gapless(t, nil, append(args, "--target", sb.TargetURL, "--skip-gtid", stuck.String())...); r.code != 0 {
		t.Fatalf("the run with --skip-gtid %s exited %d:\n%s", stuck, r.code, r.stderr)
	}
	requireEqualData(t, sb, true) // the skipped group is not in the target's binlog
}

// A --source that names another server, whose binlog has never held the
// domain of the target's position: MariaDB streams it whatever else it
// holds, without an error, so gapless refuses it before applying anything.
func TestRefusesASourceThatNeverWroteTheTargetsDomains(t *testing.T) {
	sb := upSandbox(t)
	other := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "other", Binlog: true, Extra: []string{"gtid_domain_id=5"}})
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 200, 15)
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, other, "CREATE DATABASE other_app", "CREATE TABLE other_app.t (a INT PRIMARY KEY)", "INSERT INTO other_app.t VALUES (1),(2)")
	r := gapless(t, nil, replicateArgs(other.URL(sandbox.ReplUser, sandbox.ReplPassword), sb.TargetURL, relay, "--until", binlogPos(t, other))...)
	requireRefused(t, r, "source has never written domain 0", "--source names another server")
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'other_app'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the other server's database reached the target (%d, %v)", n, err)
	}
	requireEqual(t, sb)
}
