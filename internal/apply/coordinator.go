// coordinator.go is the one goroutine that schedules: it gives every
// transaction a group index in relay-log order, asks the policy what it
// depends on, gathers batches, hands each job to an idle worker, and on
// every result moves the gap-less position and decides when to stop.
//
// Invariants: group indexes are handed out +1 per transaction, in relay-log
// order, and only here; a job is in inflight from its dispatch until its
// worker's result comes back; while a barrier (a DDL) is in flight, nothing
// else is dispatched.
package apply

import (
	"bytes"
	"fmt"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
	"gapless/internal/target"
)

// batchBytes bounds the source bytes of one batch.
const batchBytes = 4 << 20

// causalWindow bounds how far past the gap-less position causal commit order
// runs, which bounds the gaps a checkpoint row lists.
const causalWindow = 256

// aheadOf marks the members of a batch that wait for nothing outside it,
// nor for a member that does: they may run first, while what the batch
// waits for executes (worker.runAhead). A policy lets two transactions
// overlap only if either order gives the same result, so running them
// before the members that wait, within the batch's one target
// transaction, changes nothing of its result. It returns nil when all of
// them or none wait.
func aheadOf(waits []bool) []bool {
	n := 0
	for _, w := range waits {
		if w {
			n++
		}
	}
	if n == 0 || n == len(waits) {
		return nil
	}
	ahead := make([]bool, len(waits))
	for i, w := range waits {
		ahead[i] = !w
	}
	return ahead
}

// queueDepth is how many decoded transactions wait for the coordinator: a
// few full batches, so that gather finds a batch's worth whenever the
// decoder keeps up, and not many more. A transaction decoded far ahead
// only holds memory (several times its size in the binlog) that the
// garbage collector scans and the cache loses, until it is applied.
func queueDepth(batchMax int) int {
	return max(1024, 4*batchMax)
}

// gather takes txn and, while more are queued, the transactions after it
// that can share one target transaction with it: a batch ends where the
// queue runs dry, so batching never holds a transaction back. It returns no
// transaction when txn lies beyond --until, and more=false when the decoder
// has ended.
func (r *Replica) gather(txn *binlog.Transaction, txns <-chan *binlog.Transaction, skip map[gtid.MariaDBGTID]bool) (batch []*binlog.Transaction, more bool, err error) {
	accept := func(t *binlog.Transaction) error {
		if t.Flavor != binlog.FlavorMariaDB {
			return fmt.Errorf("%s: only MariaDB sources are applied so far", t)
		}
		return nil
	}
	if err := accept(txn); err != nil {
		return nil, true, err
	}
	if r.cfg.Until != nil && !r.cfg.Until.Contains(txn.MariaDB) {
		return nil, true, nil
	}
	batch = []*binlog.Transaction{txn}
	if r.pending != nil {
		panic("gather with a pending transaction")
	}
	size := txn.Size
	// joins says whether a transaction may join the batch: one that can
	// share its target transaction, or, after a group applied alone, the
	// next such group (a run of them, applied one by one: job.alone).
	joins := target.Joiner(txn)
	for !txn.Filtered && r.cfg.BatchMax > 1 && len(batch) < r.cfg.BatchMax && size < batchBytes && joins != nil && !skip[txn.MariaDB] && !r.untilAfter(batch[len(batch)-1]) {
		var next *binlog.Transaction
		select {
		case t, ok := <-txns:
			if !ok {
				return batch, false, nil
			}
			next = t
		default:
			return batch, true, nil
		}
		if err := r.engines.Mark(next); err != nil {
			return nil, true, err
		}
		if next.Filtered || !joins(next) || skip[next.MariaDB] || next.MariaDB.Domain != txn.MariaDB.Domain || next.SourceStarts != txn.SourceStarts ||
			target.NeedsStatementSession(next) != target.NeedsStatementSession(txn) ||
			!bytes.Equal(next.Format.Raw, txn.Format.Raw) || accept(next) != nil {
			r.pending = next
			return batch, true, nil
		}
		batch = append(batch, next)
		size += next.Size
	}
	return batch, true, nil
}

// admit asks the policy for a transaction's dependencies. A panic there is
// a gapless bug: it becomes an error that stops the run cleanly, naming the
// group, for a bug report, instead of a crash.
func admit(policy schedule.Policy, gi int64, txn *binlog.Transaction) (deps schedule.Deps, err error) {
	defer func() {
		if r := recover(); r != nil {
			deps, err = nil, fmt.Errorf("a gapless bug: panic: %v (report it with the source's binlog of this transaction)", r)
		}
	}()
	return policy.Admit(gi, txn)
}
