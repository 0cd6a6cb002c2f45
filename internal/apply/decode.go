// decode.go is apply's side of the decode stage: one goroutine that takes
// the decoder's transactions, within the byte budget (--max-queued), and
// hands them to the coordinator, marked Filtered when nothing of them is to
// be applied: groups a run before applied past a gap, groups the target
// wrote itself (a ring), and what the filters leave nothing of.
//
// Invariant: every transaction it hands on has its size taken from the
// budget; the coordinator gives it back once the transaction is committed
// or passed. The decoder is closed only once the goroutine has ended.
package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
)

// decodeStage runs the decoder for one session of the run.
type decodeStage struct {
	r       *Replica
	decoder *binlog.Decoder
	budget  *byteBudget
	// extra are the groups a run before applied past a gap
	// (checkpoint.Applied.Extra), passed like filtered ones.
	extra map[gtid.MariaDBGTID]bool
	// hand carries the transactions to the coordinator; its channel is
	// closed when the stage ends, after err holds why.
	hand *handoff
	err  chan error
	// ended is closed once the goroutine has ended.
	ended chan struct{}
}

func (r *Replica) newDecodeStage(relay *binlog.RelayLog, applied checkpoint.Applied, skip map[gtid.MariaDBGTID]bool) *decodeStage {
	// Groups past a gap that a run before applied come out of the decoder
	// and pass like filtered ones (marked AppliedAhead below), so that the
	// position, and --until, pass them.
	decoder := binlog.NewDecoder(relay, applied.Position)
	r.mu.Lock()
	r.ahead = slices.Collect(maps.Keys(applied.Extra))
	r.mu.Unlock()
	// A group the decoder cannot turn into a transaction passes as one
	// with nothing to apply when --skip-gtid names it.
	decoder.Skip = func(g gtid.MariaDBGTID) bool { return skip[g] }
	held := make([]binlog.HeldTemporary, len(r.kept))
	for i, k := range r.kept {
		held[i] = binlog.HeldTemporary{Thread: k.Thread, Schema: k.DB, Table: k.Name}
	}
	decoder.HoldTemporary(held)
	if r.cfg.MaxQueued <= 0 {
		r.cfg.MaxQueued = 64 << 20
	}
	return &decodeStage{
		r: r, decoder: decoder, budget: newByteBudget(r.cfg.MaxQueued), extra: applied.Extra,
		hand:  newHandoff(queueDepth(r.cfg.BatchMax)),
		err:   make(chan error, 1),
		ended: make(chan struct{}),
	}
}

// run hands transactions on until ctx ends or the decoder fails.
func (d *decodeStage) run(ctx context.Context) {
	defer close(d.ended)
	defer close(d.hand.ch)
	for {
		txn, err := d.next(ctx)
		if err != nil {
			d.err <- err
			return
		}
		if err := d.hand.send(ctx, txn); err != nil {
			d.err <- err
			return
		}
	}
}

// next is the decoder's next transaction, within the budget, marked for
// what the coordinator does with it.
func (d *decodeStage) next(ctx context.Context) (*binlog.Transaction, error) {
	r := d.r
	if err := d.budget.room(ctx); err != nil {
		return nil, err
	}
	txn, err := d.decoder.Next(ctx)
	if err != nil {
		return nil, err
	}
	if !r.endedBefore {
		d.lostAtStart()
	}
	r.obs.decodedBytes.Add(int64(txn.Size))
	if err := d.budget.take(ctx, int64(txn.Size)); err != nil {
		return nil, err
	}
	if d.extra[txn.MariaDB] {
		txn.Events, txn.Filtered, txn.AppliedAhead = nil, true, true
	} else if own, err := r.ownGroup(txn); err != nil {
		return nil, err
	} else if own {
		txn.Events, txn.Filtered = nil, true
	} else if kept, ok := r.cfg.Filter.Apply(txn); !ok {
		txn.Filtered = true
	} else {
		txn = kept
		r.warnUnsafe(txn)
	}
	return txn, nil
}

// lostAtStart notes, once the first group is decoded after a run that was
// killed, the temporary tables the source's sessions held then: they are
// lost on the target.
func (d *decodeStage) lostAtStart() {
	r := d.r
	r.endedBefore = true
	held, ok := d.decoder.HeldAtStart()
	switch {
	case !ok:
		r.log.Warn("the run before ended without keeping the source's temporary tables (killed?), and which ones the source's sessions held cannot be told from the relay log; a statement that makes one again with IF NOT EXISTS would leave the target short of its rows")
	case len(held) > 0:
		r.setLost(held)
	}
}

// close waits for the goroutine to end (ctx ended), then closes the
// decoder.
func (d *decodeStage) close() {
	<-d.ended
	d.decoder.Close()
}

// ownGroup reports whether txn is a group the target wrote itself (its
// server id), which came back through a source that replicates from the
// target: applying it again would apply the target's own writes twice. The
// first is named in the log. Under causal commit order with the target's
// binlog written, a ring is an error: the target logs the source's groups
// under its own server id, and the source's replica applies them again.
func (r *Replica) ownGroup(txn *binlog.Transaction) (bool, error) {
	if r.cfg.TargetServerID == 0 || txn.Flavor != binlog.FlavorMariaDB || txn.MariaDB.Server != r.cfg.TargetServerID {
		return false, nil
	}
	if r.cfg.CommitOrder == Causal && r.cfg.Session.WriteBinlog {
		return true, fmt.Errorf("%s was written by the target itself (server id %d) and came back through the source: the source replicates from the target (a replication ring). "+
			"Under --commit-order causal the target logs the source's transactions under its own server id and GTIDs, which the source's replica takes for the target's writes and applies a second time. "+
			"Run with --commit-order strict (the default; the target then logs them under the source's GTIDs, which the source passes) or --no-target-binlog, and compare the source with the target: transactions applied since the ring began may have been applied twice there",
			txn.GTID(), r.cfg.TargetServerID)
	}
	r.ownSeen.Do(func() {
		r.log.Info("passing the groups the target wrote itself, which come back through the source (a replication ring), as MariaDB's replica does", "first", txn.GTID())
	})
	return true, nil
}
