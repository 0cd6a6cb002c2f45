// settle.go reads the applied position on a target that is a Galera
// cluster only once the node read from holds everything the cluster
// certified: after the run's start, and after each move to another node.
//
// A node that dies right after it certified a batch (its commit in flight,
// its answer lost with it) has sent the batch's writeset to the others,
// who deliver it only once they agree it is in, at worst when they agree
// the node is gone. Read before that, the position lacks the batch, the
// batch runs again, and, on rows the writeset then changed, applies twice.
// checkpoint.Store.Settle is a write the cluster orders after the
// writeset: once it commits, the read is exact.
//
// A node left that still lives (a donor of a state transfer, one whose
// client connections dropped) is the other case: a connection of the run
// there, cut off from gapless amid a COMMIT the node had yet to run, may
// still commit after the position was read elsewhere. Before the read,
// every connection of the stream that holds a worker's slot on a node left
// is ended there (checkpoint.EndSlots), as a lone server's orphans are at a
// run's start. At the start, the same is done on every other node of the
// list, for the connections of a run before. A node that cannot be
// reached, or is out of the primary component, commits nothing.
package apply

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/galera"
	"gapless/internal/target"
)

// settler remembers whether the target's node has been settled since the
// last move.
type settler struct {
	mu      sync.Mutex
	cluster bool // the target is a node of a Galera cluster (known once checked)
	checked bool
	at      int // the node list's moves when last settled; -1 before the first
}

// readApplied reads the stream's applied position, settling the target's
// node first where it is a node of a Galera cluster.
func (r *Replica) readApplied(ctx context.Context) (checkpoint.Applied, error) {
	if err := r.settle(ctx); err != nil {
		return checkpoint.Applied{}, err
	}
	return r.store.Applied(ctx)
}

func (r *Replica) settle(ctx context.Context) error {
	s := &r.settled
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.checked {
		node, err := galera.ReadDB(ctx, r.cfg.Target)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		s.cluster, s.checked, s.at = node.On, true, -1
	}
	if !s.cluster {
		return nil
	}
	moves := 0
	if nodes := r.cfg.Session.Server.Nodes; nodes != nil {
		moves = nodes.Switches()
	}
	if moves == s.at {
		return nil
	}
	for _, addr := range r.nodesToEnd(s.at) {
		if err := r.endConnectionsOn(ctx, addr, s.at < 0); err != nil {
			return err
		}
	}
	if err := r.store.Settle(ctx); err != nil {
		return err
	}
	s.at = moves
	return nil
}

// nodesToEnd are the nodes whose connections of the stream are ended
// before the position is read: after a move, the nodes the run left; at the
// run's start, every node of the list but the one connected to, where a run
// before, killed, may have left a connection amid a COMMIT (the one
// connected to had its own ended by the start's checks).
func (r *Replica) nodesToEnd(settledAt int) []string {
	nodes := r.cfg.Session.Server.Nodes
	switch {
	case nodes == nil:
		return nil
	case settledAt >= 0:
		return nodes.Left(settledAt)
	}
	current := nodes.Current()
	var others []string
	for _, addr := range nodes.Addrs() {
		if addr != current {
			others = append(others, addr)
		}
	}
	return others
}

// nodeLeftTimeout bounds the talk with a node left: one that does not
// answer within it is taken for dead.
const nodeLeftTimeout = 5 * time.Second

// endConnectionsOn ends the stream's worker connections on addr, a node
// the run left (or, atStart, another node of the list), unless the node is
// gone or out of the primary component.
func (r *Replica) endConnectionsOn(ctx context.Context, addr string, atStart bool) error {
	db, err := r.cfg.Session.Server.OpenNode(addr)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, nodeLeftTimeout)
	defer cancel()
	node, err := galera.ReadDB(ctx, db)
	if err != nil || node.ClusterStatus != "Primary" {
		// Dead, unreachable or cut off: nothing of the run commits there.
		r.log.Debug("the node left commits nothing of the run", "node", addr, "error", err, "cluster status", node.ClusterStatus)
		return nil
	}
	if atStart {
		if err := r.noApplierOn(ctx, db, addr); err != nil {
			return err
		}
	}
	ended, err := checkpoint.EndSlots(ctx, db, r.cfg.Stream)
	switch {
	case len(ended) > 0 && atStart:
		r.log.Warn("ended connections of an earlier run of the stream on another node of the cluster, before reading the position (one may have had a COMMIT in flight)", "node", addr, "connections", ended)
	case len(ended) > 0:
		r.log.Info("ended the run's connections on the node it left, before reading the position on the next", "node", addr, "connections", ended)
	}
	switch {
	case err == nil:
		return nil
	case target.Lost(err):
		r.log.Debug("the node left went away while its connections were ended", "node", addr, "error", err)
		return nil
	}
	return fmt.Errorf("the stream's connections on %s, a node of the cluster this run does not write to, did not end (one may still commit there; the position is read once they have): %w", addr, err)
}

// otherApplierPatience is how long a stream's lock held on another node
// may take to go: that of an applier killed a moment ago stays until the
// node has noticed its connection is gone.
const otherApplierPatience = 3 * time.Second

// noApplierOn fails when another applier of the stream writes to the
// cluster through addr: the stream's lock is each node's own, so the lock
// this run holds on its node does not keep one on another node away, and
// ending that one's connections would only have two appliers fight.
func (r *Replica) noApplierOn(ctx context.Context, db *sql.DB, addr string) error {
	deadline := time.Now().Add(otherApplierPatience)
	for {
		holder := checkpoint.Holder(ctx, db, r.cfg.Stream)
		if holder == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another gapless is already applying stream %q to this cluster, through node %s (%s); stop it first, or give this one another --stream", r.cfg.Stream, addr, holder)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
