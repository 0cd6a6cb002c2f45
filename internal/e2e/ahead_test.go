// ahead_test.go proves that a batch's transactions that wait for nothing
// still to commit, and the statements of those that do that wait for
// nothing, run ahead of
// what waits (worker.runAhead) without changing what the target ends with:
// in ROW and in MIXED binlogs, and when the target holds a trigger that
// makes every transaction meet the ones before it, a conflict the policy
// cannot see.
package e2e

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// aheadWorkload writes, from many clients, mostly rows drawn at random
// from many, and now and then one hot row, before or after them: in a
// backlog applied in batches, most transactions of a batch share no row
// with the batch before, and a few do.
func aheadWorkload(t *testing.T, sb *sandboxT, format string, clients, perClient int) {
	t.Helper()
	mustExec(t, sb.Primary,
		"SET GLOBAL binlog_format="+format,
		"CREATE DATABASE IF NOT EXISTS ahead",
		"CREATE TABLE IF NOT EXISTS ahead.u (id INT PRIMARY KEY, n INT NOT NULL, c VARCHAR(40) NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO ahead.u SELECT seq, 0, '' FROM ahead.seq_1_to_3000",
		"CREATE TABLE IF NOT EXISTS ahead.hot (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO ahead.hot VALUES (1, 0)",
	)
	db := rootDB(t, sb.Primary) // its connections open under the new format
	runClients(t, db, clients, perClient, func(rng *rand.Rand, client, i int) error {
		id := 1 + rng.Intn(3000)
		stmts := []string{fmt.Sprintf("UPDATE ahead.u SET n = n + 1, c = '%d-%d' WHERE id = %d", client, i, id)}
		switch rng.Intn(8) {
		case 0:
			stmts = append(stmts, "UPDATE ahead.hot SET n = n + 1 WHERE id = 1")
		case 1:
			// The hot row first: in ROW, the statement after it runs
			// ahead of it.
			stmts = append([]string{"UPDATE ahead.hot SET n = n + 1 WHERE id = 1"}, stmts...)
		case 2, 3:
			// The row goes and comes back, as sysbench's oltp_write_only
			// does: its three statements run in their order, ahead or not.
			stmts = append(stmts, fmt.Sprintf("DELETE FROM ahead.u WHERE id = %d", id),
				fmt.Sprintf("INSERT INTO ahead.u (id, n, c) VALUES (%d, %d, 'back')", id, 1+rng.Intn(5)))
			if rng.Intn(2) == 0 {
				stmts = append([]string{"UPDATE ahead.hot SET n = n + 1 WHERE id = 1"}, stmts...)
			}
		}
		return runTransaction(db, stmts)
	})
	mustExec(t, sb.Primary, "SET GLOBAL binlog_format=ROW")
}

var ranAheadLine = regexp.MustCompile(`; (\d+) ran ahead of what their batch waited for \((\d+) of them in part\)`)

// ranAhead reads how many transactions ran ahead from a verbose run's
// output, whole or their first statements.
func ranAhead(t *testing.T, stdout string) int {
	n, _ := ranAheadInPart(t, stdout)
	return n
}

// ranAheadInPart reads how many transactions ran ahead, and how many of
// them ran only some of their statements ahead.
func ranAheadInPart(t *testing.T, stdout string) (n, inPart int) {
	t.Helper()
	m := ranAheadLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no count of transactions run ahead in the output:\n%s", stdout)
	}
	n, _ = strconv.Atoi(m[1])
	inPart, _ = strconv.Atoi(m[2])
	return n, inPart
}

func TestBatchesRunAheadOfWhatTheyWait(t *testing.T) {
	for _, format := range []string{"ROW", "MIXED"} {
		t.Run(format, func(t *testing.T) {
			sb := upSandbox(t)
			relay := filepath.Join(t.TempDir(), "relay")
			aheadWorkload(t, sb, format, 16, 60)
			r := replicateUntilCaughtUp(t, sb, relay, "--workers", "8", "--batch", "16", "-v")
			requireEqual(t, sb)
			n, inPart := ranAheadInPart(t, r.stdout)
			if n == 0 {
				t.Fatalf("no transaction ran ahead of its batch's dependencies:\n%s", r.stdout)
			}
			// In ROW, a transaction that updates the hot row runs its
			// other statements ahead; in MIXED its statements are text,
			// run ahead whole or not at all.
			if format == "ROW" && inPart == 0 {
				t.Errorf("no transaction ran some of its statements ahead of its batch's dependencies:\n%s", r.stdout)
			}
			if !regexp.MustCompile(`worker time: .*applying \d+%`).MatchString(r.stdout) {
				t.Errorf("no share of the workers' time applying in the output:\n%s", r.stdout)
			}
			t.Logf("%s: %d transactions ran ahead, %d of them in part", format, n, inPart)
		})
	}
}

// TestRunAheadYieldsToLocksThePolicyCannotSee has a trigger on the target
// count every change to ahead.u in one row: each transaction run ahead
// takes that row's lock, which the batch before it needs. The watchdog must
// make the batch run ahead give the lock back, and every change must be
// counted exactly once.
func TestRunAheadYieldsToLocksThePolicyCannotSee(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE ahead", "CREATE TABLE ahead.seen (id INT PRIMARY KEY) ENGINE=InnoDB")
	replicateUntilCaughtUp(t, sb, relay)
	sideCounter(t, sb,
		"CREATE TABLE ahead.u (id INT PRIMARY KEY, n INT NOT NULL, c VARCHAR(40) NOT NULL) ENGINE=InnoDB",
		"CREATE TRIGGER ahead.count AFTER UPDATE ON ahead.u FOR EACH ROW UPDATE side.counter SET n = n + NEW.n - OLD.n WHERE id = 1")
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin = 0",
		"CREATE TABLE ahead.u (id INT PRIMARY KEY, n INT NOT NULL, c VARCHAR(40) NOT NULL) ENGINE=InnoDB")
	// Updates only, one row each: the trigger adds what each adds to n.
	db := rootDB(t, sb.Primary)
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin = 0", "INSERT INTO ahead.u SELECT seq, 0, '' FROM ahead.seq_1_to_3000")
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "INSERT INTO ahead.u SELECT seq, 0, '' FROM ahead.seq_1_to_3000")
	mustExec(t, sb.Primary, "CREATE TABLE ahead.hot (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB", "INSERT INTO ahead.hot VALUES (1, 0)")
	runClients(t, db, 8, 60, func(rng *rand.Rand, client, i int) error {
		stmts := []string{fmt.Sprintf("UPDATE ahead.u SET n = n + 1 WHERE id = %d", 1+rng.Intn(3000))}
		if rng.Intn(6) == 0 {
			stmts = append(stmts, "UPDATE ahead.hot SET n = n + 1 WHERE id = 1")
		}
		return runTransaction(db, stmts)
	})

	r := replicateWithoutStall(t, sb, relay, 3*time.Minute, "--workers", "8", "--batch", "8", "-v")
	t.Logf("%d ran ahead; %d gave their locks back", ranAhead(t, r.stdout), strings.Count(r.stderr, "rolled back the transactions run ahead"))
	var counted, sum int
	tgt := rootDB(t, sb.Target)
	if err := tgt.QueryRow("SELECT n FROM side.counter").Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if err := tgt.QueryRow("SELECT SUM(n) FROM ahead.u").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if counted != sum || sum == 0 {
		t.Errorf("the target's trigger counted %d changes, the table holds %d (each exactly once)", counted, sum)
	}
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP TRIGGER ahead.count", "DROP DATABASE side")
	requireEqual(t, sb)
}

// TestKilledWhileStatementsRunAhead kills runs whose batches run some of
// their statements ahead, put first, after their 3rd, 150th and 400th
// transaction committed (batches of 16, 960 transactions), and checks
// that the run after them applies every transaction exactly once: each
// batch commits whole or not at all, whatever order its statements ran in.
func TestKilledWhileStatementsRunAhead(t *testing.T) {
	sb := upSandbox(t)
	aheadWorkload(t, sb, "ROW", 16, 60)
	relay := filepath.Join(t.TempDir(), "relay")
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0",
		"--workers", "8", "--batch", "16"}
	for _, after := range []int{3, 150, 400} {
		r := gapless(t, []string{fmt.Sprintf("GAPLESS_CRASH_AFTER_COMMITS=%d", after)}, args...)
		if !r.signaled {
			t.Fatalf("run with a crash after %d commits exited %d without being killed:\n%s%s", after, r.code, r.stdout, r.stderr)
		}
	}
	r := replicateUntilCaughtUp(t, sb, relay, "--workers", "8", "--batch", "16", "-v")
	requireEqual(t, sb)
	if n, inPart := ranAheadInPart(t, r.stdout); inPart == 0 {
		t.Errorf("the last run ran no transaction ahead in part (%d whole or in part):\n%s", n, r.stdout)
	}
}
