// This file owns the cluster workloads' targets (W1G): a Galera cluster of
// durable nodes in place of the lone target, every commit certified by the
// cluster, and the failover contender's kill of the node gapless writes to.
//
// A workload's cluster is made once from its prepared tables: node 1
// bootstraps on a copy of the template datadir, the others join it by state
// transfer, and every node is then stopped cleanly (node 1 last, so it may
// bootstrap again) and kept as the cluster's template. Each run copies the
// whole template and starts it again, so every contender meets three nodes
// holding the same bytes at the same cluster seqno, with cold buffer pools,
// and the joining nodes need no state transfer.
//
// The invariants: nothing ever starts a node on the template itself, and a
// run counts only when every node, each read after it applied what the
// cluster certified (wsrep_sync_wait), equals the primary.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
	"gapless/internal/verify"
)

// clusterName names a cluster's nodes: galera-1, galera-2, ...
const clusterName = "galera"

// failoverAt is the share of the recording's transactions applied when the
// failover contender kills the node gapless writes to.
const failoverAt = 0.4

// failoverLimit is how long the failover contender waits, after the kill,
// for gapless to commit on another node before it calls the run failed.
const failoverLimit = time.Minute

// targetMoveLog is what gapless logs when it leaves a failed node.
const targetMoveLog = "target node failed; writing to the next node"

// clusterConfig is the one configuration of every cluster of workload w:
// wsrep_gtid_mode=ON (the mode MariaDB recommends where Galera meets
// asynchronous replication) and the workload's own target settings.
func clusterConfig(dir string, w *workload, durable bool) sandbox.ClusterConfig {
	return sandbox.ClusterConfig{Dir: dir, Name: clusterName, Nodes: w.Cluster, GTIDMode: true, Durable: durable, Extra: slices.Clone(w.TargetConf)}
}

// clusterStarts is how many times a cluster's start is tried on its folder.
const clusterStarts = 3

// startCluster starts a cluster and registers its nodes, so an error or an
// interrupt kills them. A start that fails is tried again on the same folder,
// after a pause: a node may be reported dead while it is starting (see
// start), and on a machine loaded by other jobs a joining node may miss the
// sandbox's short group-communication timeouts and leave (it logs
// "partitioned" and "SELF-LEAVE").
func (f *fleet) startCluster(ctx context.Context, cfg sandbox.ClusterConfig) (*sandbox.Cluster, error) {
	var c *sandbox.Cluster
	var errs []error
	for attempt := 1; attempt <= clusterStarts && ctx.Err() == nil; attempt++ {
		var err error
		if c, err = sandbox.StartCluster(ctx, cfg); err == nil {
			break
		}
		errs = append(errs, err)
		if attempt < clusterStarts {
			first, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Printf("warning: starting cluster %s in %s: %s; starting it again\n", cfg.Name, cfg.Dir, first)
			time.Sleep(time.Duration(attempt) * 2 * time.Second)
		}
	}
	if c == nil {
		return nil, fmt.Errorf("starting cluster %s in %s: %w", cfg.Name, cfg.Dir, errors.Join(append(errs, ctx.Err())...))
	}
	f.mu.Lock()
	for _, n := range c.Nodes {
		f.servers[n] = true
	}
	f.mu.Unlock()
	return c, nil
}

// makeClusterTemplate makes the stopped cluster every run of rec copies, in
// dir, and returns dir.
func makeClusterTemplate(ctx context.Context, fl *fleet, rec *recording, dir string) (string, error) {
	w := rec.Workload
	if err := os.RemoveAll(dir); err != nil { // an interrupted run's, with --workdir
		return "", err
	}
	if err := copyDatadir(ctx, rec.TemplateDatadir, filepath.Join(dir, clusterName+"-1", "data")); err != nil {
		return "", err
	}
	c, err := fl.startCluster(ctx, clusterConfig(dir, w, true))
	if err != nil {
		return "", fmt.Errorf("%s: the template cluster: %w", w.ID, err)
	}
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		if err := fl.stop(c.Nodes[i]); err != nil {
			return "", fmt.Errorf("%s: the template cluster: %w", w.ID, err)
		}
	}
	// Not worth copying into every run: the buffer pool's dump (it would
	// warm the copies' pools) and Galera's write-set cache (a node makes a
	// new one at start; no node needs an incremental transfer from it).
	for _, n := range c.Nodes {
		for _, name := range []string{"ib_buffer_pool", "galera.cache", "error.log"} {
			if err := os.Remove(filepath.Join(n.DataDir, name)); err != nil && !os.IsNotExist(err) {
				return "", err
			}
		}
	}
	return dir, nil
}

// freshCluster copies the template cluster into dir and starts it, every
// node on new ports.
func freshCluster(ctx context.Context, fl *fleet, rec *recording, dir string, durable bool) (*sandbox.Cluster, error) {
	if err := copyDatadir(ctx, rec.ClusterTemplate, dir); err != nil {
		return nil, err
	}
	// The template's ports, pid files and my.cnf are its own; the view
	// state names its members at those ports; its binlog index names its
	// own binlog files.
	stale := []string{filepath.Join(dir, clusterName+".ports")}
	for i := 1; i <= rec.Workload.Cluster; i++ {
		home := filepath.Join(dir, fmt.Sprintf("%s-%d", clusterName, i))
		stale = append(stale, filepath.Join(home, "my.cnf"), filepath.Join(home, "mariadbd.pid"), filepath.Join(home, "data", "gvwstate.dat"))
		if err := pointBinlogIndex(home); err != nil {
			return nil, err
		}
	}
	for _, path := range stale {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	return fl.startCluster(ctx, clusterConfig(dir, rec.Workload, durable))
}

// nodesURL is one gapless target URL naming every node of c, node 1 first.
func nodesURL(c *sandbox.Cluster) string {
	urls := c.URLs(sandbox.ApplierUser, sandbox.ApplierPassword)
	var hosts []string
	for _, u := range urls {
		hosts = append(hosts, u[strings.LastIndex(u, "@")+1:])
	}
	first := urls[0]
	return first[:strings.LastIndex(first, "@")+1] + strings.Join(hosts, ",")
}

// rejoinKilledNodes starts again every node of c that is not running and
// waits until each has rejoined the cluster.
func rejoinKilledNodes(ctx context.Context, c *sandbox.Cluster) error {
	for i, n := range c.Nodes {
		if n.Running() {
			continue
		}
		if err := c.Restart(ctx, i); err != nil {
			return fmt.Errorf("node %d rejoining: %w", i+1, err)
		}
	}
	return nil
}

// compareNodes checks every table of every node of c against the primary,
// each node read after it applied what the cluster certified.
func compareNodes(ctx context.Context, primary *sandbox.Server, c *sandbox.Cluster) (bool, string, error) {
	var diffs []string
	for i, node := range c.Nodes {
		db, err := sql.Open("mysql", node.RootDSN("")+"&wsrep_sync_wait=1")
		if err != nil {
			return false, "", fmt.Errorf("verify: node %d: %w", i+1, err)
		}
		equal, detail, err := compareWith(ctx, primary, db)
		db.Close()
		if err != nil {
			return false, "", fmt.Errorf("node %d: %w", i+1, err)
		}
		if !equal {
			diffs = append(diffs, fmt.Sprintf("node %d: %s", i+1, detail))
		}
	}
	return len(diffs) == 0, strings.Join(diffs, "; "), nil
}

// compareWith checks every table of the target tgt against the primary.
func compareWith(ctx context.Context, primary *sandbox.Server, tgt *sql.DB) (bool, string, error) {
	src, err := primary.Open("")
	if err != nil {
		return false, "", fmt.Errorf("verify: primary: %w", err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rep, err := verify.Compare(ctx, src, tgt, verify.Options{})
	if err != nil {
		return false, "", fmt.Errorf("verify: %w", err)
	}
	if len(rep.Tables) == 0 {
		return false, "", errors.New("verify: no tables compared")
	}
	var diffs []string
	for _, t := range rep.Differing() {
		diffs = append(diffs, fmt.Sprintf("%s %s (source %d rows, target %d) %s", t.Name(), t.Status, t.SourceRows, t.TargetRows, t.Detail))
	}
	return len(diffs) == 0, strings.Join(diffs, "; "), nil
}

// failoverTimes are the seconds from the kill of the node gapless wrote to
// until the surviving nodes formed a cluster without it (View) and until
// gapless committed on one of them (Commit).
type failoverTimes struct{ View, Commit float64 }

// killWritingNode waits until gapless has applied failoverAt of the
// recording on the node it writes to, kills that node with SIGKILL, and
// returns the times from the kill until the survivors' view changed and
// until a position row that gapless wrote
// after the kill is seen committed on a surviving node: gapless writes each
// row's applied_at as it builds the statement, so a row written after the
// kill was written by a transaction that began, and committed, on another
// node. exited closes when gapless exits.
func killWritingNode(ctx context.Context, env runEnv, exited <-chan struct{}) (failoverTimes, error) {
	c := env.cluster
	if c == nil {
		return failoverTimes{}, errors.New("the failover contender needs a cluster workload")
	}
	dbs := make([]*sql.DB, len(c.Nodes))
	for i, n := range c.Nodes {
		db, err := n.Open("")
		if err != nil {
			return failoverTimes{}, err
		}
		db.SetMaxOpenConns(1)
		defer db.Close()
		dbs[i] = db
	}
	domain, from, to, err := failoverDomain(env.rec)
	if err != nil {
		return failoverTimes{}, err
	}
	killAt := from + uint64(failoverAt*float64(to-from))
	writing := -1
	for writing < 0 {
		if done(exited) {
			return failoverTimes{}, fmt.Errorf("gapless exited before it had applied %.0f%% of the transactions (its error follows, if any)", 100*failoverAt)
		}
		if err := ctx.Err(); err != nil {
			return failoverTimes{}, err
		}
		if appliedSeq(ctx, dbs, domain) >= killAt {
			writing = writingNode(ctx, dbs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dbs[writing].Close() // no quit packet to a dead node later
	killedAt := time.Now()
	if err := c.Nodes[writing].Kill(); err != nil {
		return failoverTimes{}, err
	}
	since := killedAt.UTC().Format("2006-01-02 15:04:05.000000")
	var t failoverTimes
	for {
		for i, db := range dbs {
			if i == writing {
				continue
			}
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			if t.View == 0 {
				var name string
				var size int
				if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'").Scan(&name, &size); err == nil && size < len(c.Nodes) {
					t.View = time.Since(killedAt).Seconds()
				}
			}
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM gapless.checkpoint WHERE applied_at > ?", since).Scan(&n)
			cancel()
			if err == nil && n > 0 {
				t.Commit = time.Since(killedAt).Seconds()
				if t.View == 0 { // the view changed between two polls
					t.View = t.Commit
				}
				return t, nil
			}
		}
		switch {
		case ctx.Err() != nil:
			return t, ctx.Err()
		case time.Since(killedAt) > failoverLimit:
			return t, fmt.Errorf("no transaction committed on a surviving node within %s of the kill of node %d", failoverLimit, writing+1)
		case done(exited):
			return t, fmt.Errorf("gapless exited after the kill of node %d and before it committed on another node", writing+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func done(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// failoverDomain is the recording's GTID domain and its sequence numbers at
// the start and the end (W1's single domain; with several, the first of the
// end position).
func failoverDomain(rec *recording) (uint32, uint64, uint64, error) {
	start, err := gtid.ParseMariaDBPosition(rec.Start)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("start position %q: %w", rec.Start, err)
	}
	end, err := gtid.ParseMariaDBPosition(rec.End)
	if err != nil || len(end.GTIDs()) == 0 {
		return 0, 0, 0, fmt.Errorf("end position %q: %v", rec.End, err)
	}
	last := end.GTIDs()[0]
	first, _ := start.Get(last.Domain)
	return last.Domain, first.Seq, last.Seq, nil
}

// writingNode is the index of the node holding the most of gapless's
// connections, -1 while none holds one.
func writingNode(ctx context.Context, dbs []*sql.DB) int {
	best, most := -1, 0
	for i, db := range dbs {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", sandbox.ApplierUser).Scan(&n)
		if err == nil && n > most {
			best, most = i, n
		}
	}
	return best
}

// appliedSeq is the highest sequence number of domain in gapless's
// position rows on any node; 0 before gapless made its table.
func appliedSeq(ctx context.Context, dbs []*sql.DB, domain uint32) uint64 {
	var most uint64
	for _, db := range dbs {
		var seq sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MAX(seq_no) FROM gapless.checkpoint WHERE domain_id = ?", domain).Scan(&seq); err == nil && seq.Valid {
			most = max(most, uint64(seq.Int64))
		}
	}
	return most
}
