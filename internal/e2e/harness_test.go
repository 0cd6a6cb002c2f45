// Package e2e runs the gapless binary against real MariaDB servers started by
// the sandbox: replication of real workloads, crashes of gapless and of the
// servers, and every bad input the command line must refuse. The oracle is
// always the primary: after a run, every table on the target must equal it.
package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/gtid"
	"gapless/internal/sandbox"
	"gapless/internal/verify"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gapless-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "gapless")
	// GAPLESS_E2E_BINARY runs the tests against another build (an older
	// commit's, to show a test fails there).
	if other := os.Getenv("GAPLESS_E2E_BINARY"); other != "" {
		binary = other
	} else {
		build := exec.Command("go", "build", "-o", binary, "gapless/cmd/gapless")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building gapless:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	stopSharedCluster(code != 0)
	os.RemoveAll(dir)
	os.Exit(code)
}

// run is one finished gapless invocation.
type run struct {
	stdout, stderr string
	code           int // -1 when killed by a signal
	signaled       bool
}

func gapless(t *testing.T, env []string, args ...string) run {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errOut.String()}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.signaled = true
			}
		} else {
			t.Fatalf("running gapless: %v", err)
		}
	}
	return r
}

// background starts gapless and returns the command, its output buffers and a wait func.
func background(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, func() run) {
	t.Helper()
	return startWithEnv(t, nil, args...)
}

// startWithEnv is background with more environment variables.
func startWithEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, func() run) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan run, 1)
	go func() {
		err := cmd.Wait()
		r := run{stdout: out.String(), stderr: errOut.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.signaled = true
			}
		}
		done <- r
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &errOut, func() run { return <-done }
}

// waitExit waits up to limit for a background gapless (started with
// background) to exit by itself, and kills it and fails the test, saying
// what it did not do, when it does not.
func waitExit(t *testing.T, cmd *exec.Cmd, wait func() run, limit time.Duration, what string, stderr interface{ String() string }) run {
	t.Helper()
	done := make(chan run, 1)
	go func() { done <- wait() }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("gapless did not %s within %s:\n%s", what, limit, stderr)
		return run{}
	}
}

func mustExec(t *testing.T, srv *sandbox.Server, stmts ...string) {
	t.Helper()
	if err := srv.Exec(context.Background(), stmts...); err != nil {
		t.Fatal(err)
	}
}

// endPreparedXA runs an XA COMMIT or XA ROLLBACK of a branch an earlier
// mustExec prepared: the branch detaches from its session only once the
// server has ended that session, which closing the client's connection
// does not wait for, so until then the server answers XAER_NOTA (1397).
func endPreparedXA(t *testing.T, srv *sandbox.Server, stmt string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := srv.Exec(context.Background(), stmt)
		if err == nil {
			return
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1397 || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connExec runs stmts on one session of a server, in order.
func connExec(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// sourceSession is one session of root's on srv, closed when the test
// ends, with stmts run on it: the temporary tables it makes live as long.
func sourceSession(t *testing.T, srv *sandbox.Server, stmts ...string) *sql.Conn {
	t.Helper()
	c, err := rootDB(t, srv).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	connExec(t, c, stmts...)
	return c
}

func rootDB(t *testing.T, srv *sandbox.Server) *sql.DB {
	t.Helper()
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func binlogPos(t *testing.T, srv *sandbox.Server) string {
	t.Helper()
	var pos string
	if err := rootDB(t, srv).QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

// replicateUntilCaughtUp runs gapless until the primary's current position and checks it exits 0.
func replicateUntilCaughtUp(t *testing.T, sb *sandbox.Sandbox, relay string, extra ...string) run {
	t.Helper()
	args := append([]string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0"}, extra...)
	r := gapless(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("gapless replicate exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// requireEqual compares every table of the primary with the target.
func requireEqual(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	requireEqualData(t, sb, false)
}

// requireEqualData compares every table; causal is true when the run used
// causal commit order, under which the target's binlog has GTIDs of its own.
func requireEqualData(t *testing.T, sb *sandbox.Sandbox, causal bool) {
	t.Helper()
	requireEqualTables(t, sb)
	if causal {
		return
	}
	requireSameHistory(t, sb)
}

// requireEqualTables compares the tables of databases (every one when none
// is named) between the primary and the target.
func requireEqualTables(t *testing.T, sb *sandbox.Sandbox, databases ...string) {
	t.Helper()
	src, _, err := dburl.Open(sb.SourceURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tgt, _, err := dburl.Open(sb.TargetURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report, err := verify.Compare(ctx, src, tgt, verify.Options{Databases: databases})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Tables) == 0 {
		t.Fatal("verify compared no tables")
	}
	if !report.Equal() {
		var diffs []string
		for _, tr := range report.Tables {
			if tr.Status != "equal" {
				diffs = append(diffs, fmt.Sprintf("%s.%s: %s %s", tr.Schema, tr.Table, tr.Status, tr.Detail))
			}
		}
		t.Fatalf("target differs from the primary:\n%s", strings.Join(diffs, "\n"))
	}
}

// requireSameHistory checks that the target's binlog, keeping the source's
// GTIDs, holds exactly the primary's history, besides gapless's own schema
// in a domain of its own.
func requireSameHistory(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	target, err := gtid.ParseMariaDBPosition(binlogPos(t, sb.Target))
	if err != nil {
		t.Fatal(err)
	}
	var sourceDomains gtid.MariaDBPosition
	for _, d := range target.Domains() {
		if d != checkpoint.OwnDomain {
			g, _ := target.Get(d)
			sourceDomains.Advance(g)
		}
	}
	if got, want := sourceDomains.String(), binlogPos(t, sb.Primary); got != want {
		t.Fatalf("target gtid_binlog_pos %q, primary %q", got, want)
	}
}

type sandboxT = sandbox.Sandbox

func upSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	return sandbox.UpForTest(t, sandbox.Options{Fast: true})
}
