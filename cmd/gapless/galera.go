// galera.go checks a target that is a node of a Galera cluster before a run
// (the rules are internal/galera's): the node must take writes, and the
// run keeps the source's GTIDs in the cluster's binlogs only where the
// cluster lets a session choose them (wsrep_gtid_mode=OFF).
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"gapless/internal/binlog"
	"gapless/internal/dburl"
	"gapless/internal/galera"
	"gapless/internal/target"
)

// checkGaleraTarget reads whether the target is a Galera node, refuses one
// that cannot take writes, and says at the start what the run does there.
//
// On a Galera node the run does not keep the source's GTIDs in the target's
// binlog: a DDL runs in total order isolation and takes the GTID the
// cluster chooses, whatever the session set (the next number of the
// executing node's domain; on the other nodes, each node's own domain),
// and with wsrep_gtid_mode=ON the node refuses the session's server_id.
// The source's GTIDs are in gapless's checkpoint table, on every node.
func checkGaleraTarget(ctx context.Context, tgt *sql.DB, writeBinlog bool, logger *slog.Logger) (galera.Node, error) {
	node, err := galera.ReadDB(ctx, tgt)
	if err != nil {
		return node, fmt.Errorf("target: %w", err)
	}
	if !node.On {
		return node, nil
	}
	if err := node.Usable(); err != nil {
		return node, fmt.Errorf("target: %w; name a node of the primary component that is synced (SHOW STATUS LIKE 'wsrep_%%' on each node)", err)
	}
	fmt.Fprintln(os.Stderr, "note: the target is a "+node.Describe())
	if writeBinlog && !node.GTIDMode {
		logger.Warn("the target cluster runs with wsrep_gtid_mode=OFF: each node logs a DDL under a GTID of its own (its gtid_domain_id, the next number there), so the nodes' binlogs disagree and a reader cannot move from one node's binlog to another's by GTID; " +
			"SET GLOBAL wsrep_gtid_mode=ON on every node (with one wsrep_gtid_domain_id) gives every transaction the same GTID on every node")
	}
	return node, nil
}

// followTargetNodes, for a target URL that names several nodes, logs each
// move to another node (the pool and the apply connections move by
// themselves: dburl.Nodes), and starts on the first node of the list that
// takes writes: before any other statement, which on a node cut off from
// its cluster would wait for the cluster (wsrep_sync_wait) and fail.
func followTargetNodes(ctx context.Context, tgt *sql.DB, cfg dburl.Config, logger *slog.Logger) {
	if cfg.Nodes == nil {
		return
	}
	cfg.Nodes.OnSwitch(func(from, to, why string) {
		logger.Warn("target node failed; writing to the next node, from the position the cluster holds", "failed", from, "node", to, "why", why)
	})
	for range len(cfg.Nodes.Addrs()) - 1 {
		node, err := galera.ReadDB(ctx, tgt)
		if err == nil && node.Usable() == nil {
			break
		}
		why := "cannot read its state"
		if err == nil {
			why = node.Usable().Error()
		}
		cfg.Nodes.Failed(cfg.Nodes.Current(), why)
	}
	fmt.Fprintf(os.Stderr, "note: the target names %d nodes (%s); writing to %s, and to the next one when it fails\n", len(cfg.Nodes.Addrs()), strings.Join(cfg.Nodes.Addrs(), ","), cfg.Nodes.Current())
}

// checkSourceNodes refuses a source URL that names several nodes unless
// they are nodes of a Galera cluster that write every transaction under
// the same GTID (wsrep_gtid_mode=ON) to their binlogs (log_slave_updates,
// so that each node's binlog holds the others' writes too): only then does
// another node's binlog go on from the position one node's left.
func checkSourceNodes(ctx context.Context, src *sql.DB, cfg dburl.Config) error {
	if cfg.Nodes == nil {
		return nil
	}
	node, err := galera.ReadDB(ctx, src)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	at := cfg.Nodes.Current()
	switch {
	case !node.On:
		return fmt.Errorf("--source names %d nodes, but %s is not a node of a Galera cluster (wsrep_on=OFF): name one server, or the nodes of one cluster", len(cfg.Nodes.Addrs()), at)
	case !node.GTIDMode:
		return fmt.Errorf("--source names %d nodes of a Galera cluster that runs with wsrep_gtid_mode=OFF (on %s): its nodes log the same transaction under different GTIDs, so no node's binlog goes on from another's position; SET GLOBAL wsrep_gtid_mode=ON on every node (with one wsrep_gtid_domain_id), or name one node", len(cfg.Nodes.Addrs()), at)
	}
	var slaveUpdates string
	if err := src.QueryRowContext(ctx, "SELECT @@log_slave_updates").Scan(&slaveUpdates); err != nil {
		return fmt.Errorf("source: read log_slave_updates: %w", err)
	}
	if slaveUpdates != "1" && !strings.EqualFold(slaveUpdates, "ON") {
		return fmt.Errorf("--source names several nodes, but %s runs with log_slave_updates=OFF: its binlog lacks what the other nodes wrote; start every node with log_slave_updates=ON, or name one node", at)
	}
	return nil
}

// sourceNodes is the receiver's node list of a source URL that names
// several, else nil.
func sourceNodes(cfg dburl.Config) binlog.SourceNodes {
	if cfg.Nodes == nil {
		return nil
	}
	return cfg.Nodes
}

// clusterBatch bounds a batch on a Galera target, where it is one writeset
// of the cluster's, to the cluster's limits (target.BatchLimits): the
// bytes of a batch (0: apply's own bound) and its transactions.
func clusterBatch(node galera.Node, batch int) (bytes, transactions int) {
	bytes, most, ok := target.BatchLimits(node)
	if !ok {
		return 0, batch
	}
	if most > 0 {
		batch = min(batch, most)
	}
	return bytes, batch
}
