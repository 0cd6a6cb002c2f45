// targetwait_test.go holds the workers back on the target as its users do
// (a client's transaction that keeps a row lock, a FLUSH TABLES WITH READ
// LOCK as backups take it) while gapless runs: the status report names the
// wait and its holder, the log says it once, and once the target lets go
// gapless goes on with every table equal.
package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/status"
)

func TestTargetHoldsTheWorkers(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO app.t VALUES (1,0),(2,0),(3,0),(4,0),(5,0)")
	addr := freeLoopbackAddr(t)
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"), "--workers", "4", "--http", addr)...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)

	ctx := context.Background()
	client, err := rootDB(t, sb.Target).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var clientID int64
	if err := client.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&clientID); err != nil {
		t.Fatal(err)
	}
	// waitFor polls the status report until the target's wait satisfies ok.
	waitFor := func(what string, ok func(*status.TargetWait) bool) *status.TargetWait {
		t.Helper()
		var last *status.TargetWait
		waitUntilHTTP(t, 30*time.Second, what, func() bool {
			st, err := status.Fetch(ctx, addr)
			if err != nil || st.Live == nil {
				return false
			}
			last = st.Live.TargetWait
			return ok(last)
		}, stderr)
		return last
	}

	// A client of the target holds a row the source then changes.
	if _, err := client.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ExecContext(ctx, "SELECT v FROM app.t WHERE id = 3 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "UPDATE app.t SET v = v + 1 WHERE id = 3", "UPDATE app.t SET v = v + 1 WHERE id = 4")
	held := waitFor("the status report to name the client's row lock", func(w *status.TargetWait) bool {
		return w != nil && w.HolderConnection == clientID
	})
	if !strings.Contains(held.Text, "row lock on `app`.`t`") {
		t.Errorf("the wait reads %q, want the row lock on `app`.`t` named", held.Text)
	}
	// Long enough for the log to name it.
	time.Sleep(time.Until(held.Since.Add(11 * time.Second)))
	// The lag grows from the held transaction's time (it read 0: nothing
	// applied yet in this run).
	if st, err := status.Fetch(ctx, addr); err != nil || st.LagSeconds == nil || *st.LagSeconds < 10 {
		t.Errorf("the lag while the target holds a transaction for 11 s: %v (%v)", st.LagSeconds, err)
	}
	if _, err := client.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)
	waitFor("the status report to drop the wait", func(w *status.TargetWait) bool { return w == nil })

	// A FLUSH TABLES WITH READ LOCK, as a backup of the target takes it.
	if _, err := client.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "UPDATE app.t SET v = v + 1 WHERE id = 5")
	held = waitFor("the status report to name the read lock", func(w *status.TargetWait) bool {
		return w != nil && strings.Contains(w.Text, "FLUSH TABLES WITH READ LOCK")
	})
	t.Logf("the wait: %s", held.Text)
	if _, err := client.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)

	// A client's transaction that read the table the source alters.
	if _, err := client.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ExecContext(ctx, "SELECT COUNT(*) FROM app.t"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "ALTER TABLE app.t ADD COLUMN w INT NOT NULL DEFAULT 7")
	held = waitFor("the status report to name the metadata lock", func(w *status.TargetWait) bool {
		return w != nil && strings.Contains(w.Text, "metadata lock")
	})
	t.Logf("the wait: %s", held.Text)
	if want := fmt.Sprintf("the oldest transaction open on the target is connection %d", clientID); !strings.Contains(held.Text, want) {
		t.Errorf("the wait reads %q, want %q", held.Text, want)
	}
	if _, err := client.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, stderr)

	r := stopAndRequireExit0(t, cmd.Process.Pid, wait)
	for _, want := range []string{"the target holds the workers back", fmt.Sprintf("the target's connection %d", clientID), "the target released the workers"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the log lacks %q:\n%s", want, r.stderr)
		}
	}
	requireEqual(t, sb)
}
