// parallel_test.go proves the parallel applier keeps the target equal to the
// primary under every policy and commit order, on a workload written by many
// clients at once with hot rows and unique-key swaps, and across kill -9 of
// gapless while 8 workers apply.
package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
)

// conflictWorkload runs clients concurrently on the primary, so the binlog
// holds group commits, on few hot rows and with unique-key swaps between rows.
func conflictWorkload(t *testing.T, sb *sandboxT, clients, perClient int) {
	t.Helper()
	mustExec(t, sb.Primary,
		"CREATE DATABASE IF NOT EXISTS hot",
		"CREATE TABLE IF NOT EXISTS hot.counter (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO hot.counter (id, n) SELECT seq, 0 FROM hot.seq_1_to_5",
		"CREATE TABLE IF NOT EXISTS hot.pair (id INT PRIMARY KEY, k VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, UNIQUE KEY (k)) ENGINE=InnoDB",
		"INSERT IGNORE INTO hot.pair VALUES (1, 'a'), (2, 'B'), (3, 'c'), (4, 'D')",
		"CREATE TABLE IF NOT EXISTS hot.nokey (who INT, v INT) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS hot.parent (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT IGNORE INTO hot.parent (id) SELECT seq FROM hot.seq_1_to_3",
		"CREATE TABLE IF NOT EXISTS hot.child (id BIGINT AUTO_INCREMENT PRIMARY KEY, parent INT NOT NULL, v INT, "+
			"FOREIGN KEY (parent) REFERENCES hot.parent (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"CREATE DATABASE IF NOT EXISTS other",
		"CREATE TABLE IF NOT EXISTS other.events (id BIGINT AUTO_INCREMENT PRIMARY KEY, client INT, v INT) ENGINE=InnoDB",
	)
	db := rootDB(t, sb.Primary)
	runClients(t, db, clients, perClient, func(rng *rand.Rand, client, _ int) error {
		return conflictTransaction(db, rng, client)
	})
}

// runClients runs clients goroutines at once, each calling txn perClient
// times with a random source of its own, and fails the test on the first error.
func runClients(t *testing.T, db *sql.DB, clients, perClient int, txn func(rng *rand.Rand, client, i int) error) {
	t.Helper()
	db.SetMaxOpenConns(clients + 1)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			for i := 0; i < perClient; i++ {
				if err := txn(rng, c, i); err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func conflictTransaction(db *sql.DB, rng *rand.Rand, client int) error {
	var stmts []string
	switch rng.Intn(7) {
	case 0:
		stmts = []string{fmt.Sprintf("UPDATE hot.counter SET n = n + 1 WHERE id = %d", 1+rng.Intn(5))}
	case 1:
		// Swap the unique values of two rows through a placeholder.
		a, b := 1+rng.Intn(4), 1+rng.Intn(4)
		if a == b {
			b = a%4 + 1
		}
		stmts = []string{
			fmt.Sprintf("SELECT k INTO @ka FROM hot.pair WHERE id = %d FOR UPDATE", a),
			fmt.Sprintf("SELECT k INTO @kb FROM hot.pair WHERE id = %d FOR UPDATE", b),
			fmt.Sprintf("UPDATE hot.pair SET k = CONCAT('tmp', %d) WHERE id = %d", client, a),
			fmt.Sprintf("UPDATE hot.pair SET k = @ka WHERE id = %d", b),
			fmt.Sprintf("UPDATE hot.pair SET k = @kb WHERE id = %d", a),
		}
	case 2:
		stmts = []string{fmt.Sprintf("INSERT INTO hot.nokey VALUES (%d, %d)", client, rng.Intn(100))}
	case 3:
		stmts = []string{fmt.Sprintf("INSERT INTO hot.child (parent, v) VALUES (%d, %d)", 1+rng.Intn(3), rng.Intn(100))}
	case 4:
		// The cascade deletes children on each server by itself: the binlog
		// has only the parent's row events, so only the foreign key tells
		// that this transaction and a child's insert meet.
		p := 1 + rng.Intn(3)
		stmts = []string{fmt.Sprintf("DELETE FROM hot.parent WHERE id = %d", p), fmt.Sprintf("INSERT INTO hot.parent (id) VALUES (%d)", p)}
	default:
		stmts = []string{fmt.Sprintf("INSERT INTO other.events (client, v) VALUES (%d, %d)", client, rng.Intn(1000))}
	}
	return runTransaction(db, stmts)
}

// runTransaction runs stmts in one transaction. A deadlock or a lock wait
// timeout rolls it back and is not an error: the primary's history simply
// lacks it.
func runTransaction(db *sql.DB, stmts []string) error {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			tx.Rollback()
			if isDeadlock(err) {
				return nil
			}
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if err := tx.Commit(); err != nil && !isDeadlock(err) {
		return err
	}
	return nil
}

func isDeadlock(err error) bool {
	s := err.Error()
	return contains(s, "1213") || contains(s, "1205")
}

func contains(s, sub string) bool {
	return len(sub) <= len(s) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// resetTarget empties the target for the next run: data, gapless's position, binlog.
func resetTarget(t *testing.T, sb *sandboxT) {
	t.Helper()
	mustExec(t, sb.Target,
		"SET SESSION sql_log_bin = 0",
		"DROP DATABASE IF EXISTS app", "DROP DATABASE IF EXISTS w", "DROP DATABASE IF EXISTS hot",
		"DROP DATABASE IF EXISTS other", "DROP DATABASE IF EXISTS gapless",
		"RESET MASTER")
}

func TestEveryPolicyAndCommitOrderReplicatesEqual(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 800, 7)
	conflictWorkload(t, sb, 8, 150)
	mustExec(t, sb.Primary, "ALTER TABLE hot.counter ADD COLUMN note VARCHAR(10) DEFAULT 'x'")
	conflictWorkload(t, sb, 8, 50)
	for _, policy := range []string{"serial", "commit-id", "writeset", "schema", "domain"} {
		for _, order := range []string{"strict", "causal"} {
			t.Run(policy+"/"+order, func(t *testing.T) {
				resetTarget(t, sb)
				replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"),
					"--workers", "8", "--policy", policy, "--commit-order", order)
				requireEqualData(t, sb, order == "causal")
			})
		}
	}
	// Batches longer than causal commit order's window (256 transactions
	// past the gap-less position) once waited for ever to come within it.
	t.Run("writeset/causal/batch-1024", func(t *testing.T) {
		resetTarget(t, sb)
		replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"),
			"--workers", "8", "--policy", "writeset", "--commit-order", "causal", "--batch", "1024")
		requireEqualData(t, sb, true)
	})
}

func TestKillDuringParallelApplyThenRestart(t *testing.T) {
	for _, order := range []string{"strict", "causal"} {
		t.Run(order, func(t *testing.T) {
			sb := upSandbox(t)
			conflictWorkload(t, sb, 8, 250)
			relay := filepath.Join(t.TempDir(), "relay")
			// Batches of 32: a crash leaves at most 8 x 32 transactions of
			// other workers landing after it, so each crash point comes.
			args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
				"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0",
				"--workers", "8", "--commit-order", order, "--batch", "32"}
			for _, after := range []int{5, 300, 500} {
				r := gapless(t, []string{fmt.Sprintf("GAPLESS_CRASH_AFTER_COMMITS=%d", after)}, args...)
				if !r.signaled {
					t.Fatalf("run with a crash after %d commits exited %d without being killed:\n%s%s", after, r.code, r.stdout, r.stderr)
				}
			}
			replicateUntilCaughtUp(t, sb, relay, "--workers", "8", "--commit-order", order)
			requireEqualData(t, sb, order == "causal")
		})
	}
}

// A connection of an earlier run that outlived it (one killed with a COMMIT
// in flight, or one the server has not yet seen go) may still commit, so a
// new run reads its position only once no connection holds a worker slot
// of its stream: here one holds slot 3 with a transaction open and never
// lets go. The run must wait for it, end it (its transaction rolls back),
// and then replicate to equal tables.
func TestRunWaitsForAnEarlierRunsConnections(t *testing.T) {
	sb := upSandbox(t)
	conflictWorkload(t, sb, 4, 50)
	ctx := context.Background()
	tgt, _, err := dburl.Open(sb.TargetURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "CREATE DATABASE scratch", "CREATE TABLE scratch.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	orphan, err := tgt.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer orphan.Close()
	var got int
	if err := orphan.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", checkpoint.SlotLockName("default", 3)).Scan(&got); err != nil || got != 1 {
		t.Fatalf("taking the slot lock: %d, %v", got, err)
	}
	if _, err := orphan.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.ExecContext(ctx, "INSERT INTO scratch.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "8")
	if !strings.Contains(r.stderr, "is still open on the target after 5s; killing it") {
		t.Errorf("the run did not say it ended the earlier connection:\n%s", r.stderr)
	}
	if err := orphan.PingContext(ctx); err == nil {
		t.Errorf("the earlier connection is still open")
	}
	var n int
	if err := tgt.QueryRowContext(ctx, "SELECT COUNT(*) FROM scratch.t").Scan(&n); err != nil || n != 0 {
		t.Errorf("the earlier connection's open transaction left %d rows (%v), want it rolled back", n, err)
	}
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE scratch")
	requireEqual(t, sb)
}

// Parent and child tables with ON DELETE CASCADE, replicated with 8 workers
// one transaction at a time, strict and causal, to equal tables. A parent's
// delete cascades on each server by itself, so the binlog has no row events
// for the children it removes; the catalog marks both tables as taking part
// in a foreign key, which serializes their transactions (the catalog's own
// test checks the marking on a real server).
func TestForeignKeyTablesKeepTheirOrder(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE fk",
		"CREATE TABLE fk.parent (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO fk.parent VALUES (1), (2)",
		"CREATE TABLE fk.child (id BIGINT AUTO_INCREMENT PRIMARY KEY, parent INT NOT NULL, v INT, "+
			"FOREIGN KEY (parent) REFERENCES fk.parent (id) ON DELETE CASCADE) ENGINE=InnoDB")
	db := rootDB(t, sb.Primary)
	runClients(t, db, 4, 300, func(rng *rand.Rand, _, i int) error {
		p := 1 + rng.Intn(2)
		if i%2 == 0 {
			return runTransaction(db, []string{fmt.Sprintf("INSERT INTO fk.child (parent, v) VALUES (%d, %d)", p, i)})
		}
		return runTransaction(db, []string{fmt.Sprintf("DELETE FROM fk.parent WHERE id = %d", p), fmt.Sprintf("INSERT INTO fk.parent VALUES (%d)", p)})
	})
	for _, order := range []string{"strict", "causal"} {
		t.Run(order, func(t *testing.T) {
			mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE IF EXISTS fk", "DROP DATABASE IF EXISTS gapless", "RESET MASTER")
			replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"),
				"--workers", "8", "--policy", "writeset", "--commit-order", order, "--batch", "1")
			requireEqualData(t, sb, order == "causal")
		})
	}
}

// On the target a trigger makes every insert also update one counter row: a
// conflict the writeset keys, read from the row events, cannot see. Under
// strict order later transactions then execute first, hold the counter row
// and wait for their turn, while an earlier one waits for its lock. The
// watchdog must break each such wait at once (a stall would last until
// innodb_lock_wait_timeout, or for ever): the run ends, and the counter
// counts each insert once, however often one was rolled back and retried.
func TestWatchdogBreaksConflictsThePolicyCannotSee(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE trig", "CREATE TABLE trig.a (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	replicateUntilCaughtUp(t, sb, relay)
	sideCounter(t, sb, "CREATE TRIGGER trig.count AFTER INSERT ON trig.a FOR EACH ROW UPDATE side.counter SET n = n + 1 WHERE id = 1")
	const inserts = 120
	var stmts []string
	for i := 1; i <= inserts; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO trig.a VALUES (%d, %d)", i, i))
	}
	mustExec(t, sb.Primary, stmts...)

	r := replicateWithoutStall(t, sb, relay, 2*time.Minute, "--workers", "8", "--batch", "1", "-v")
	t.Logf("%s; %d lock waits broken", strings.TrimSpace(r.stdout), strings.Count(r.stderr, "rolled back to let")+strings.Count(r.stderr, "interrupting"))
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT n FROM side.counter").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != inserts {
		t.Errorf("the target's trigger counted %d inserts, want %d (each exactly once)", n, inserts)
	}
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP TRIGGER trig.count", "DROP DATABASE side")
	requireEqual(t, sb)
}

// sideCounter makes side.counter on the target alone, one row at 0, with
// triggers (stmts) that count there what the applied transactions do: a
// row every transaction meets, which the policy cannot see.
func sideCounter(t *testing.T, sb *sandboxT, stmts ...string) {
	t.Helper()
	mustExec(t, sb.Target, append([]string{
		"SET GLOBAL slave_run_triggers_for_rbr = YES",
		"SET SESSION sql_log_bin = 0",
		"CREATE DATABASE side",
		"CREATE TABLE side.counter (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO side.counter VALUES (1, 0)",
	}, stmts...)...)
}

// stopLimit is how long a stalled run may take to stop after SIGTERM
// before the test asks it for its goroutines (SIGQUIT).
const stopLimit = 30 * time.Second

// replicateWithoutStall runs gapless until the primary's current position
// and fails the test unless it exits 0 within limit: a run that stalls on
// lock waits is stopped and reported.
func replicateWithoutStall(t *testing.T, sb *sandboxT, relay string, limit time.Duration, extra ...string) run {
	t.Helper()
	cmd, _, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay,
		append([]string{"--until", binlogPos(t, sb.Primary)}, extra...)...)...)
	done := make(chan run, 1)
	go func() { done <- wait() }()
	select {
	case r := <-done:
		if r.code != 0 {
			t.Fatalf("replicate exited %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		return r
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case r := <-done:
			t.Fatalf("the run stalled on conflicts the watchdog should break: %s\n%s", strings.TrimSpace(r.stdout), r.stderr)
			return r
		case <-time.After(stopLimit):
			// Not even the stop ended it: its goroutines say where it hangs.
			cmd.Process.Signal(syscall.SIGQUIT)
			r := <-done
			t.Fatalf("the run stalled, and did not stop within %s of SIGTERM: %s\n%s", stopLimit, strings.TrimSpace(r.stdout), r.stderr)
			return r
		}
	}
}

// TestScriptWithoutItsAnswers has one script wait for an answer the target
// never sends (GAPLESS_UNANSWERED_SCRIPT), as a KILL QUERY that ends a
// script between two statements leaves it: once the target has shown the
// connection idle for a while, gapless closes it, the target rolls back
// what it began, and the job runs again. The run ends by itself, each
// transaction applied once (a counter updated by every one of them).
func TestScriptWithoutItsAnswers(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE quiet",
		"CREATE TABLE quiet.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE quiet.counter (id INT PRIMARY KEY, n INT) ENGINE=InnoDB",
		"INSERT INTO quiet.counter VALUES (1, 0)")
	var stmts []string
	for i := 1; i <= 60; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO quiet.t VALUES (%d, %d)", i, i), "UPDATE quiet.counter SET n = n + 1 WHERE id = 1")
	}
	mustExec(t, sb.Primary, stmts...)
	relay := filepath.Join(t.TempDir(), "relay")
	cmd, stderr, wait := startWithEnv(t, []string{"GAPLESS_UNANSWERED_SCRIPT=4"}, replicateArgs(sb.SourceURL, sb.TargetURL, relay,
		"--until", binlogPos(t, sb.Primary), "--workers", "4", "--batch", "4", "-v")...)
	r := waitExit(t, cmd, wait, 2*time.Minute, "end the wait for answers the target does not send", stderr)
	if r.code != 0 {
		t.Fatalf("replicate exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "answers stopped coming") {
		t.Errorf("no warning of the script left unanswered:\n%s", r.stderr)
	}
	requireEqual(t, sb)
}
