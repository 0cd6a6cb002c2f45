// silent_faults_test.go: faults that gapless used to pass over without a
// word (issue 13, point 4): a damaged relay log from a source that sends no
// checksums, a target that is down, an --until that waits for a domain the
// source never wrote, and a run stopped by an error that status forgot.
package e2e

import (
	"bytes"
	"context"
	binenc "encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

// lockedBuffer is an output buffer a test may read while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWatched starts gapless with both outputs readable while it runs.
func startWatched(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *lockedBuffer) {
	t.Helper()
	cmd = exec.Command(binary, args...)
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdout, stderr
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
	}
}

// TestNoChecksumSourceRelayDamageIsFetchedAgain: with binlog_checksum=NONE
// on the source, a byte flipped in a value of an unapplied relay segment is
// found (gapless's own CRC32), the segment is cut back with a warning naming
// it, and the events are fetched again: the target equals the source. While
// the target is down, the progress line says so.
func TestNoChecksumSourceRelayDamageIsFetchedAgain(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, PrimaryExtra: []string{"binlog_checksum=NONE"}})
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE w", "CREATE TABLE w.t (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO w.t VALUES (1, 1)")
	replicateUntilCaughtUp(t, sb, relay)

	cmd, stdout, stderr := startWatched(t, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--relay-dir", relay, "--progress", "200ms")
	waitFor(t, "the first progress line", 30*time.Second, func() bool { return strings.Contains(stdout.String(), "workers busy") })
	if err := sb.Target.Stop(); err != nil {
		t.Fatal(err)
	}
	const value = 7654321987
	mustExec(t, sb.Primary, "INSERT INTO w.t VALUES (2, 2)", "INSERT INTO w.t VALUES (3, 7654321987)", "INSERT INTO w.t VALUES (4, 4)")
	needle := binenc.LittleEndian.AppendUint64(nil, value)
	var segment string
	waitFor(t, "the row in the relay log", 30*time.Second, func() bool {
		paths, _ := filepath.Glob(filepath.Join(relay, "relay-*.bin"))
		for _, p := range paths {
			if data, _ := os.ReadFile(p); bytes.Contains(data, needle) {
				segment = p
				return true
			}
		}
		return false
	})
	waitFor(t, "a progress line saying the target is unreachable", 30*time.Second, func() bool {
		return strings.Contains(stdout.String(), "target unreachable since")
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Logf("progress while the target was down:\n%s\n%s", lastLines(stdout.String(), 2), stderr.String())

	data, err := os.ReadFile(segment)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, needle)
	data[at] ^= 0x01 // 7654321986: a value that would apply without complaint
	if err := os.WriteFile(segment, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sb.Target.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := replicateUntilCaughtUp(t, sb, relay)
	warn := r.stderr
	if !strings.Contains(warn, "level=WARN") || !strings.Contains(warn, filepath.Base(segment)) || !strings.Contains(warn, "offset=") {
		t.Errorf("the damaged relay segment was not warned of with its name and offset; stderr:\n%s", warn)
	}
	requireEqual(t, sb)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestUntilUnseenDomainWarns: --until naming a domain the source has never
// written warns at start and in the progress lines, and keeps waiting.
func TestUntilUnseenDomainWarns(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 10, 5)
	until := binlogPos(t, sb.Primary) + ",77-1-1"
	cmd, stdout, stderr := startWatched(t, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "200ms", "--until", until)
	waitFor(t, "a progress line naming domain 77", 30*time.Second, func() bool {
		return strings.Contains(stdout.String(), "--until waits for domain 77, which the source has not written")
	})
	if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), "never written") {
		t.Errorf("no warning at start; stderr:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// TestStatusShowsTheLastError: after a run stopped by an error, status
// names the failed GTID and the error, in text and as JSON; the next run
// clears it.
func TestStatusShowsTheLastError(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE w", "CREATE TABLE w.t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO w.t VALUES (1)")
	replicateUntilCaughtUp(t, sb, relay)
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0", "INSERT INTO w.t VALUES (2)")
	mustExec(t, sb.Primary, "INSERT INTO w.t VALUES (2)")
	failed := binlogPos(t, sb.Primary)
	r := gapless(t, nil, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL, "--until", failed,
		"--relay-dir", relay, "--progress", "0")
	if r.code == 0 {
		t.Fatalf("replicate over a duplicate key exited 0:\n%s", r.stdout)
	}

	s := gapless(t, nil, "status", "--target", sb.TargetURL)
	for _, w := range []string{"stopped by an error", "failed at  " + failed, "Duplicate entry"} {
		if !strings.Contains(s.stdout, w) {
			t.Errorf("status does not say %q:\n%s%s", w, s.stdout, s.stderr)
		}
	}
	j := gapless(t, nil, "status", "--target", sb.TargetURL, "--json")
	var parsed struct {
		Streams []struct {
			Stream    string `json:"stream"`
			Running   bool   `json:"running"`
			LastError *struct {
				GTID  string `json:"gtid"`
				Error string `json:"error"`
			} `json:"last_error"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &parsed); err != nil {
		t.Fatalf("status --json: %v\n%s%s", err, j.stdout, j.stderr)
	}
	if len(parsed.Streams) != 1 || parsed.Streams[0].LastError == nil || parsed.Streams[0].LastError.GTID != failed ||
		!strings.Contains(parsed.Streams[0].LastError.Error, "Duplicate entry") {
		t.Fatalf("status --json does not hold the failed GTID %s and the error:\n%s", failed, j.stdout)
	}

	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0", "DELETE FROM w.t WHERE id = 2")
	replicateUntilCaughtUp(t, sb, relay)
	if s := gapless(t, nil, "status", "--target", sb.TargetURL); strings.Contains(s.stdout, "error") {
		t.Errorf("status after a successful run still shows an error:\n%s", s.stdout)
	}
}

// TestTemporaryTableGoneAfterARestart: a source session holds a temporary
// table across a kill of gapless (the table lived in gapless's connection
// to the target, and ended with it: a run that ends keeps it for the next,
// one killed cannot), then fills a real table from it. The next run stops
// at that statement, says what happened and that skipping loses its
// changes, and applies nothing of it.
func TestTemporaryTableGoneAfterARestart(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE tt", "CREATE TABLE tt.r (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	ctx := context.Background()
	session, err := rootDB(t, sb.Primary).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, stmt := range []string{"SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE tt.tmp (id INT, v INT) ENGINE=InnoDB", "INSERT INTO tt.tmp VALUES (1, 1), (2, 2)"} {
		if _, err := session.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay)...)
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wait()
	if _, err := session.ExecContext(ctx, "INSERT INTO tt.r SELECT * FROM tt.tmp"); err != nil {
		t.Fatal(err)
	}
	lost := binlogPos(t, sb.Primary)
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", lost)...)
	for _, want := range []string{"1146", "held the temporary table `tt`.`tmp`, which the target lost", "knowing its changes are lost", "--skip-gtid " + lost} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("the run after the restart exited %d, want a stop that says %q:\n%s", r.code, want, r.stderr)
		}
	}
	var rows int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM tt.r").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the target holds %d rows of the transaction that stopped the run (%v)", rows, err)
	}
}

// TestLostTemporaryTableIsNotMadeAgainEmpty: a source session holds a
// temporary table the target lost (gapless killed; the connection that
// held it cut while gapless runs), then makes it with CREATE TEMPORARY
// TABLE IF NOT EXISTS, which does nothing on the source, and fills a real
// table from it. On the target the CREATE made an empty table and the
// real table ended short of rows, silently (as on MariaDB's replica after
// its server restarts). Now the run stops at that CREATE, saying so, and
// applies nothing of it.
func TestLostTemporaryTableIsNotMadeAgainEmpty(t *testing.T) {
	for _, how := range []string{"killed", "connection-cut"} {
		t.Run(how, func(t *testing.T) {
			sb := upSandbox(t)
			relay := filepath.Join(t.TempDir(), "relay")
			mustExec(t, sb.Primary, "CREATE DATABASE tt", "CREATE TABLE tt.r (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
			session, err := rootDB(t, sb.Primary).Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer session.Close()
			connExec(t, session, "SET SESSION binlog_format=MIXED",
				"CREATE TEMPORARY TABLE tt.tmp (id INT, v INT) ENGINE=InnoDB", "INSERT INTO tt.tmp VALUES (1, 1), (2, 2)")
			cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay)...)
			waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
			if how == "killed" {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				wait()
			} else {
				// Every connection of gapless's to the target, cut: the
				// workers connect again and go on.
				mustExec(t, sb.Target, "BEGIN NOT ATOMIC FOR c IN (SELECT id FROM information_schema.PROCESSLIST WHERE user = 'gapless') DO KILL CONNECTION c.id; END FOR; END")
			}
			connExec(t, session, "CREATE TEMPORARY TABLE IF NOT EXISTS tt.tmp (id INT, v INT) ENGINE=InnoDB", "INSERT INTO tt.r SELECT * FROM tt.tmp")
			stop := binlogPos(t, sb.Primary)
			var r run
			if how == "killed" {
				r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", stop)...)
			} else {
				select {
				case r = <-waitAsync(wait):
				case <-time.After(time.Minute):
					t.Fatalf("gapless went on past the lost temporary table:\n%s", stderr.String())
				}
			}
			if r.code == 0 || !strings.Contains(r.stderr, "which the target lost") {
				t.Fatalf("exit %d, want a stop at the CREATE ... IF NOT EXISTS of the lost table:\n%s", r.code, r.stderr)
			}
			var rows int
			if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM tt.r").Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("the target holds %d rows of tt.r, filled from a temporary table it lost (%v)", rows, err)
			}
		})
	}
}

// waitAsync runs wait in the background.
func waitAsync(wait func() run) <-chan run {
	done := make(chan run, 1)
	go func() { done <- wait() }()
	return done
}
