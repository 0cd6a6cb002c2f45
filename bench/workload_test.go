// Tests of the workload table and the prepared tables' copies, without servers.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

func TestEveryWorkloadsContendersParse(t *testing.T) {
	ids := map[string]bool{}
	for _, w := range workloads {
		if ids[w.ID] || w.Prepared == "" || w.Prepare == nil || w.Run == nil {
			t.Errorf("%s: duplicate, or no prepared tables' name, Prepare or Run", w.ID)
		}
		ids[w.ID] = true
		for _, fast := range []bool{false, true} {
			for _, id := range defaultContenders(w, fast) {
				if _, err := parseContender(id, 8, !fast); err != nil {
					t.Errorf("%s: %v", w.ID, err)
				}
			}
		}
	}
	w9 := defaultContenders(workloadByID(t, "W9"), false)
	if !slices.Contains(w9, "gapless-writeset-N") || !slices.Contains(w9, "gapless-writeset-N/remote") {
		t.Errorf("W9 runs %v: want gapless 8 both local and over the link", w9)
	}
	if w1 := defaultContenders(workloadByID(t, "W1"), false); !slices.Contains(w1, "gapless-writeset-N/fast-nobinlog") {
		t.Errorf("W1 runs %v: want the focused contenders on non-durable targets with the binlog off too", w1)
	}
	if w1 := defaultContenders(workloadByID(t, "W1"), true); !slices.Contains(w1, "mariadb-serial/durable-nobinlog") {
		t.Errorf("W1 with --fast runs %v: want the focused contenders on durable targets with the binlog off too", w1)
	}
}

// Wherever MariaDB's replica runs in a parallel mode, it runs in all three,
// so that "MariaDB's best" is the best of them (issue 47).
func TestEveryParallelModeRunsTogether(t *testing.T) {
	lists := map[string][]string{"--quick": quickContenders}
	for _, w := range workloads {
		for _, fast := range []bool{false, true} {
			lists[fmt.Sprintf("%s fast=%v", w.ID, fast)] = defaultContenders(w, fast)
		}
	}
	for name, ids := range lists {
		variants := map[string]map[string]bool{} // target variant -> modes
		for _, id := range ids {
			c, err := parseContender(id, 8, true)
			if err != nil || c.Kind != "mariadb" || c.ParallelThreads == 0 {
				continue
			}
			if variants[c.Variant()] == nil {
				variants[c.Variant()] = map[string]bool{}
			}
			variants[c.Variant()][c.ParallelMode] = true
		}
		for v, modes := range variants {
			if len(modes) != 3 {
				t.Errorf("%s runs MariaDB's parallel modes %v on targets %q: want conservative, optimistic and aggressive", name, modes, v)
			}
		}
	}
}

// A cluster workload runs MariaDB's replica and gapless into the cluster and
// gapless through the kill of a node; the kill needs a cluster, and a
// cluster's nodes are neither reached over the link nor without binlog.
func TestClusterContendersFit(t *testing.T) {
	w1g, w1 := workloadByID(t, "W1G"), workloadByID(t, "W1")
	if w1g.Cluster != 3 {
		t.Errorf("W1G replicates into %d nodes, want 3", w1g.Cluster)
	}
	failover := false
	for _, id := range defaultContenders(w1g, false) {
		c, err := parseContender(id, 8, true)
		if err == nil {
			err = fitsWorkload(c, w1g)
		}
		if err != nil {
			t.Errorf("W1G: %v", err)
		}
		failover = failover || (c.Failover && c.Kind == "gapless" && c.Workers == 8)
	}
	if !failover {
		t.Error("W1G runs no gapless 8 with the node it writes to killed")
	}
	for _, tc := range []struct {
		id string
		w  *workload
	}{{"gapless-writeset-N/failover", w1}, {"gapless-writeset-N/nobinlog", w1g}, {"gapless-writeset-N/remote", w1g}, {"mariadb-optimistic/nobinlog", w1g}} {
		c, err := parseContender(tc.id, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		if fitsWorkload(c, tc.w) == nil {
			t.Errorf("%s on %s accepted", tc.id, tc.w.ID)
		}
	}
}

func TestResolve(t *testing.T) {
	o := options{quick: true, workers: 8, scale: 1}
	ws, cs, err := o.resolve()
	if err != nil || workloadList(ws) != "W1,W2" {
		t.Fatalf("--quick: workloads %s, %v; want W1,W2", workloadList(ws), err)
	}
	for _, w := range ws {
		if len(cs[w]) != 6 || !slices.ContainsFunc(cs[w], func(c contender) bool { return c.ID == "mariadb-aggressive/nobinlog" }) {
			t.Errorf("--quick runs %d contenders on %s, want six with MariaDB's aggressive mode among them", len(cs[w]), w.ID)
		}
	}
	o = options{workloadIDs: "W1G", contenders: "gapless-writeset-N/nobinlog", workers: 8, scale: 1}
	if _, _, err := o.resolve(); err == nil {
		t.Error("a cluster workload with a target without binlog accepted")
	}
}

func TestNodesURLNamesEveryNode(t *testing.T) {
	c := &sandbox.Cluster{Nodes: []*sandbox.Server{{Port: 3301}, {Port: 3302}, {Port: 3303}}}
	if got, want := nodesURL(c), "mysql://gapless:gapless@127.0.0.1:3301,127.0.0.1:3302,127.0.0.1:3303"; got != want {
		t.Errorf("nodesURL = %q, want %q", got, want)
	}
}

func TestFailoverDomain(t *testing.T) {
	domain, from, to, err := failoverDomain(&recording{Start: "0-1-25", End: "0-7-30025"})
	if err != nil || domain != 0 || from != 25 || to != 30025 {
		t.Errorf("failoverDomain = %d, %d, %d, %v; want domain 0 from 25 to 30025", domain, from, to, err)
	}
}

func TestQuickScalesOnlyW1AndW2(t *testing.T) {
	o := options{quick: true, scale: 0.5}
	for id, want := range map[string]float64{"W1": 0.5 * quickScale, "W2": 0.5 * quickScale, "W7": 0.5} {
		if got := o.workloadScale(workloadByID(t, id)); got != want {
			t.Errorf("--quick --scale 0.5: %s scaled %g, want %g", id, got, want)
		}
	}
	if got := (options{scale: 2}).workloadScale(workloadByID(t, "W1")); got != 2 {
		t.Errorf("--scale 2: W1 scaled %g, want 2", got)
	}
}

func TestTargetConfigCarriesTheWorkloadsSettings(t *testing.T) {
	cfg := targetConfig(t.TempDir(), workloadByID(t, "W7"), true, false)
	for _, want := range []string{"innodb_buffer_pool_size=16M", "innodb_flush_method=O_DIRECT", "log_slave_updates=OFF"} {
		if !slices.Contains(cfg.Extra, want) {
			t.Errorf("W7's target lacks %s: %v", want, cfg.Extra)
		}
	}
	if slices.Contains(workloadByID(t, "W7").TargetConf, "log_slave_updates=OFF") {
		t.Error("targetConfig wrote into the workload's own settings")
	}
}

func TestCopyPrimaryPointsTheBinlogIndexAtTheCopy(t *testing.T) {
	snap := snapshot{Home: filepath.Join(t.TempDir(), "snap", "primary")}
	binlog := filepath.Join(snap.Home, "binlog")
	if err := os.MkdirAll(filepath.Join(snap.Home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(binlog, 0o755); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(binlog, "mariadb-bin.000002") + "\n"
	for name, content := range map[string]string{"binlog/mariadb-bin.index": index, "binlog/mariadb-bin.000002": "events", "my.cnf": "port=1", "data/ibdata1": "pages"} {
		if err := os.WriteFile(filepath.Join(snap.Home, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := snap.copyPrimary(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "primary", "binlog", "mariadb-bin.index"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "primary", "binlog", "mariadb-bin.000002"); strings.TrimSpace(string(b)) != want {
		t.Errorf("the copy's binlog index lists %q, want %q", b, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "primary", "my.cnf")); !os.IsNotExist(err) {
		t.Errorf("the snapshot's my.cnf was copied (its port would be reused): %v", err)
	}
	if snap.TemplateDatadir() != filepath.Join(snap.Home, "data") {
		t.Errorf("template datadir %s", snap.TemplateDatadir())
	}

	// A primary left in the folder by an interrupted run is replaced, not
	// kept with the snapshot copied inside it.
	stale := filepath.Join(dir, "primary", "data", "ibdata1")
	if err := os.WriteFile(stale, []byte("pages written by the last run"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := snap.copyPrimary(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(stale); string(b) != "pages" {
		t.Errorf("after a second copy the primary's ibdata1 holds %q, want the snapshot's %q", b, "pages")
	}
	if _, err := os.Stat(filepath.Join(dir, "primary", "primary")); !os.IsNotExist(err) {
		t.Errorf("the snapshot was copied inside the stale primary: %v", err)
	}
}

// W11 and W11F are wide transactions, in sysbench's own options, against
// MariaDB's serial replica and every parallel mode, gapless 8 and gapless 1:
// on the run's targets and on non-durable ones with the binlog off.
func TestWideWorkloads(t *testing.T) {
	if n := wideTransaction.rowChanges(); n < 10 || n > 30 {
		t.Errorf("a wide transaction changes %d rows, want 10-30", n)
	}
	args := strings.Join(wideRun(1000).args("run", 3306), " ")
	for _, want := range []string{"oltp_write_only", "--tables=8", "--threads=16", "--events=1000",
		"--index_updates=4", "--non_index_updates=6", "--delete_inserts=5", "--rand-type=special", "--rand-spec-pct=1", "--rand-spec-res=20"} {
		if !strings.Contains(args, want) {
			t.Errorf("W11's sysbench run lacks %s: %s", want, args)
		}
	}
	if prepare := strings.Join(sbtest8.run("oltp_write_only", 2, 0).args("prepare", 3306), " "); strings.Contains(prepare, "--rand-type") {
		t.Errorf("prepare takes the run's shape: %s", prepare)
	}
	if uniform := strings.Join(sbtest4.run("oltp_write_only", 16, 10).uniform().args("run", 3306), " "); !strings.Contains(uniform, "--rand-type=uniform") || strings.Contains(uniform, "special") {
		t.Errorf("W8's run: %s", uniform)
	}
	for id, variant := range map[string]string{"W11": "", "W11F": "non-durable, binlog off"} {
		w := workloadByID(t, id)
		if !w.logsRows() {
			t.Errorf("%s: the primary's row changes are not counted", id)
		}
		var ids []string
		for _, cid := range w.Contenders {
			c, err := parseContender(cid, 8, true)
			if err != nil {
				t.Fatal(err)
			}
			if c.Variant() != variant {
				t.Errorf("%s: %s on targets %q, want %q", id, cid, c.Variant(), variant)
			}
			base, _, _ := strings.Cut(cid, "/")
			ids = append(ids, base)
		}
		for _, want := range []string{"mariadb-serial", "mariadb-conservative", "mariadb-optimistic", "mariadb-aggressive", "gapless-writeset-N", "gapless-writeset-1"} {
			if !slices.Contains(ids, want) {
				t.Errorf("%s runs %v, without %s", id, ids, want)
			}
		}
	}
	if workloadByID(t, "W1M").logsRows() || workloadByID(t, "W10").logsRows() {
		t.Error("the row events of a MIXED primary counted as every row change")
	}
}

// The row changes are counted between the recording's positions, as
// transactionsBetween counts its transactions. The sample holds 0-1-1 to
// 0-1-5 and 1-1-1 to 1-1-3; after 0-1-3 come 0-1-4 (2 rows inserted, 1
// updated), 0-1-5 (statements), and 1-1-1 to 1-1-3 (1 row inserted).
func TestCountRowChangesBetweenThePositions(t *testing.T) {
	sample := []string{"../internal/binlog/testdata/mariadb-10.11.bin"}
	start, end := "0-1-3", "0-1-5,1-1-3"
	n, err := transactionsBetween(start, end)
	if err != nil || n != 5 {
		t.Fatalf("transactionsBetween = %d, %v; want 5", n, err)
	}
	rows, err := countRowChanges(context.Background(), sample, start, end, n)
	if err != nil || rows != 4 {
		t.Errorf("countRowChanges = %d, %v; want 4", rows, err)
	}
	if _, err := countRowChanges(context.Background(), sample, start, end, n+1); err == nil {
		t.Error("a count of transactions other than the positions' accepted")
	}
}

func workloadByID(t *testing.T, id string) *workload {
	t.Helper()
	for _, w := range workloads {
		if w.ID == id {
			return w
		}
	}
	t.Fatalf("no workload %s", id)
	return nil
}
