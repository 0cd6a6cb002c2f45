// simulate.go predicts how long gapless would take to apply a stream of
// transactions with a policy and a number of workers, by replaying the
// coordinator's rules on a model clock:
//
//   - transactions are dispatched in group-index order, each to a free
//     worker, which holds it until it has committed; after a barrier (the
//     policy's Barrier()) nothing is dispatched until the barrier committed;
//   - a transaction starts executing once every dependency the policy named
//     has committed, and runs for its execution cost;
//   - strict commit order: its COMMIT starts once it has executed and the
//     previous transaction's COMMIT has returned, and takes the commit cost.
//
// Invariant: with one worker the makespan is the sum of all costs, so the
// speedup of every policy at one worker is exactly 1.
package analyze

import (
	"fmt"
	"time"

	"gapless/internal/schedule"
)

// CostModel is the modelled cost of applying a transaction on the target.
type CostModel struct {
	Commit time.Duration // the COMMIT round trip: serial under strict commit order
	Txn    time.Duration // per transaction, besides the commit (BEGIN, checkpoint row, round trips)
	Row    time.Duration // per row change
	KiB    time.Duration // per KiB of binlog events
}

// DefaultCostModel was measured on a 2-core VM with a sandbox target
// (innodb_flush_log_at_trx_commit=2, sync_binlog=0, loopback): gapless
// replicate --workers 1 applied sysbench oltp_write_only transactions (4 row
// changes, 2.2 KiB) in 1.57 ms each and 2702-row inserts (1015 KiB) in
// 185 ms each; a COMMIT round trip took 55µs. A durable target pays an
// fsync per COMMIT: raise Commit to the device's fsync latency.
var DefaultCostModel = CostModel{
	Commit: 60 * time.Microsecond,
	Txn:    1200 * time.Microsecond,
	Row:    60 * time.Microsecond,
	KiB:    20 * time.Microsecond,
}

func (m CostModel) String() string {
	return fmt.Sprintf("commit %v (serial) + per transaction %v + per row %v + per KiB %v", m.Commit, m.Txn, m.Row, m.KiB)
}

// costs returns the parallel and the serial part of a transaction, in µs.
func (m CostModel) costs(rows, size int) (exec, commit float64) {
	exec = micros(m.Txn) + float64(rows)*micros(m.Row) + float64(size)/1024*micros(m.KiB)
	return exec, micros(m.Commit)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ringSize bounds how far back a dependency is looked up; an older one has
// committed before the dependent is dispatched for any worker count below it.
const ringSize = 4096

// simulator is one (policy, workers) replay.
type simulator struct {
	workers      int
	commitEnd    [ringSize]float64
	lastDispatch float64
	lastCommit   float64
	barrierUntil float64
	serial       float64 // sum of all costs: the one-worker makespan
	turnWait     float64 // worker time spent executed but waiting for the commit turn
	depWait      float64 // worker time spent waiting for dependencies

	// blame follows who holds the commit line (reference simulator only).
	blame *blameTracker
}

func newSimulator(workers int) *simulator { return &simulator{workers: workers} }

// step replays transaction gi.
func (s *simulator) step(gi int64, deps schedule.Deps, exec, commit float64, barrier bool, who *txnInfo) {
	dispatch := max(s.lastDispatch, s.barrierUntil)
	if gi > int64(s.workers) {
		// Commits happen in order, so the worker freed first held gi-workers.
		dispatch = max(dispatch, s.commitEnd[(gi-int64(s.workers))%ringSize])
	}
	start := dispatch
	for _, d := range deps {
		if d < gi && gi-d < ringSize {
			start = max(start, s.commitEnd[d%ringSize])
		}
	}
	executed := start + exec
	commitStart := max(executed, s.lastCommit)
	end := commitStart + commit

	s.depWait += start - dispatch
	s.turnWait += commitStart - executed
	if s.blame != nil {
		s.blame.step(who, gi, executed, s.lastCommit)
	}
	s.commitEnd[gi%ringSize] = end
	s.lastDispatch = dispatch
	s.lastCommit = end
	if barrier {
		s.barrierUntil = end
	}
	s.serial += exec + commit
}

// speedup is serial apply time over the simulated makespan.
func (s *simulator) speedup() float64 {
	if s.lastCommit <= 0 {
		return 1
	}
	return s.serial / s.lastCommit
}

// HeldBack is a transaction that executed long enough to keep the commit
// line idle while later transactions, already executed, waited for their
// turn behind it.
type HeldBack struct {
	GTID         string  `json:"gtid"`
	File         string  `json:"file"`
	Position     int64   `json:"position"`
	Bytes        int     `json:"bytes"`
	Rows         int     `json:"rows"`
	CostMS       float64 `json:"cost_ms"`
	Transactions int     `json:"transactions_held"`
	WaitMS       float64 `json:"worker_wait_ms"`
}

// blameTracker charges commit-turn waits to the transaction holding the
// commit line: the latest one that finished executing after its turn had
// come. A later transaction that finished executing before it and then
// waited for its turn is held by it, for at most the difference.
type blameTracker struct {
	window   int64
	holder   *txnInfo
	executed float64
	held     int
	wait     float64 // µs
	top      []HeldBack
	keep     int
	minWait  float64 // µs; smaller holds are not worth a line
}

func (b *blameTracker) step(t *txnInfo, gi int64, executed, turn float64) {
	if executed > turn {
		b.finish()
		b.holder, b.executed = t, executed
		return
	}
	if b.holder != nil && gi-b.holder.gi <= b.window && executed < b.executed {
		b.held++
		b.wait += min(turn-executed, b.executed-executed)
	}
}

// finish ranks the current holder among the top ones.
func (b *blameTracker) finish() {
	t, held, wait := b.holder, b.held, b.wait
	b.holder, b.held, b.wait = nil, 0, 0
	if t == nil || held == 0 || wait < b.minWait {
		return
	}
	h := &HeldBack{GTID: t.txn.GTID(), File: t.file, Position: t.pos, Bytes: t.txn.Size, Rows: t.rows,
		CostMS: (t.execCost + t.commit) / 1000, Transactions: held, WaitMS: wait / 1000}
	i := len(b.top)
	for i > 0 && b.top[i-1].WaitMS < h.WaitMS {
		i--
	}
	if i >= b.keep {
		return
	}
	b.top = append(b.top, HeldBack{})
	copy(b.top[i+1:], b.top[i:])
	b.top[i] = *h
	if len(b.top) > b.keep {
		b.top = b.top[:b.keep]
	}
}
