package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterStartsKillsAndRejoins starts a 3-node cluster, writes on one
// node, reads on another, and has a killed node rejoin with the rows.
func TestClusterStartsKillsAndRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Galera cluster")
	}
	ctx := context.Background()
	c := ClusterForTest(t, ClusterConfig{GTIDMode: true})
	if err := c.Nodes[0].Exec(ctx, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	count := func(i int) int {
		db, err := c.Nodes[i].Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// One connection: the read waits for what the cluster certified.
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var n int
		if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait=1"); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil {
			t.Fatalf("node %d: %v; its error log ends with:\n%s", i+1, err, tailFile(c.Nodes[i].ErrorLog, 60))
		}
		return n
	}
	if n := count(2); n != 1 {
		t.Fatalf("node 3 holds %d rows, want 1", n)
	}
	if err := c.Nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Exec(ctx, "INSERT INTO d.t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	// What node 2 logs from here on is its rejoin's.
	before, err := os.Stat(c.Nodes[1].ErrorLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := count(1); n != 2 {
		t.Fatalf("node 2 holds %d rows after rejoining, want 2", n)
	}
	// It rejoined from the position its storage recovered, by an
	// incremental transfer, not a full copy. A storage that recovered no
	// position (killed before it had one to keep) joins by a full
	// transfer, as a service manager's restart does.
	recoverLog := filepath.Join(c.Nodes[1].home, "wsrep-recover.log")
	r, err := os.ReadFile(recoverLog)
	if err != nil {
		t.Fatal(err)
	}
	pos, _ := recoverPositionOf(string(r))
	b, err := os.ReadFile(c.Nodes[1].ErrorLog)
	if err != nil {
		t.Fatal(err)
	}
	rejoin := string(b[min(before.Size(), int64(len(b))):])
	full := strings.Count(rejoin, "SST completed on joiner")
	switch {
	case pos == "":
		t.Logf("node 2's storage recovered no position, so it rejoined by %d full transfer(s); its recovery log ends with:\n%s", full, tailFile(recoverLog, 5))
	case full != 0:
		t.Errorf("node 2 rejoined by %d full state transfer(s), though its storage recovered %s; its error log ends with:\n%s\nits recovery log with:\n%s",
			full, pos, tailFile(c.Nodes[1].ErrorLog, 40), tailFile(recoverLog, 5))
	case !strings.Contains(rejoin, "IST received") && !strings.Contains(rejoin, "Receiving IST"):
		t.Errorf("node 2 rejoined from %s with neither a full nor an incremental transfer in its error log:\n%s", pos, tailFile(c.Nodes[1].ErrorLog, 40))
	}
}
