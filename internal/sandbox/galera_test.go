package sandbox

import (
	"context"
	"os"
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
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := count(1); n != 2 {
		t.Fatalf("node 2 holds %d rows after rejoining, want 2", n)
	}
	// It rejoined from the position its storage recovered, by an
	// incremental transfer: only its first join copied the whole state.
	if b, err := os.ReadFile(c.Nodes[1].ErrorLog); err != nil {
		t.Fatal(err)
	} else if n := strings.Count(string(b), "SST completed on joiner"); n != 1 {
		t.Errorf("node 2 received %d full state transfers, want 1 (its first join); its error log ends with:\n%s", n, tailFile(c.Nodes[1].ErrorLog, 40))
	}
}
