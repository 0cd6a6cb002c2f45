// simulate.go predicts how long gapless would take to apply a stream of
// transactions with a policy and a number of workers, by replaying the
// coordinator's rules on a model clock:
//
//   - the stream is cut into batches as the coordinator's gather does when
//     the queue is full (a replica catching up): up to --batch consecutive
//     row transactions of one domain, under 4 MiB, applied in one target
//     transaction; DDL and statement transactions go alone, but for runs of
//     up to --batch non-transactional groups (MyISAM writes), one worker's
//     job, which share their round trips (one per-transaction cost) and
//     commit each on its own (a commit cost each);
//   - batches are dispatched in order, each to a free worker, which holds it
//     until it has committed; after a barrier (the policy's Barrier()) nothing
//     is dispatched until the barrier committed;
//   - a batch starts executing once every dependency the policy named for its
//     members, outside the batch, has committed, and runs for its execution
//     cost: one per-transaction cost for the batch, plus its members' rows
//     and bytes; except that, as the workers run them ahead, the members
//     that wait for nothing uncommitted when the batch is dispatched
//     (directly or through a member that does), and the row statements of
//     the others that wait for nothing either (nor meet one before them in
//     their member that does), execute from its dispatch, and the rest
//     after them and their dependencies, a statement's share of its
//     member's cost its share of the member's bytes;
//   - strict commit order: a batch's COMMIT starts once it has executed and
//     the previous batch's COMMIT has returned, and takes the commit cost;
//   - the target works on at most Capacity batches at full speed at once
//     (executing or committing): work placed earlier is never slowed by work
//     placed later, which gets what capacity is left (on a 2-core target, 8
//     workers do not run 8 times as fast as one).
//
// Example: 3000 sysbench write transactions with 8 workers and --batch 32
// make 94 batches; batch 12 shares a row with batch 9, so it starts when
// batch 9 has committed, while batches 10 and 11 run beside it.
//
// Invariant: with one worker the makespan is the sum of all batches' costs
// (Capacity is at least 1), so the speedup of every policy at one worker is
// exactly 1.
package analyze

import (
	"fmt"
	"slices"
	"time"

	"gapless/internal/schedule"
)

// CostModel is the modelled cost of applying a transaction on the target.
type CostModel struct {
	Commit time.Duration // the COMMIT round trip: serial under strict commit order
	Txn    time.Duration // per target transaction (a batch counts once), besides the commit: BEGIN, checkpoint row, round trips
	Row    time.Duration // per row change
	KiB    time.Duration // per KiB of binlog events
	// Capacity is how many transactions the target executes at once at
	// full speed: its cores, less what the applier and others use, counted
	// in serial appliers. 0: unlimited, a core for every worker.
	Capacity float64
	// Reads, when --calibrate read the target's own data (probe.go): the
	// share of a 32-row body's time spent reading pages, the capacity of
	// the rest, and how many page reads the target overlapped from
	// ReadConnections at once. Fewer workers keep fewer reads in flight:
	// capacityAt counts a proportional part of that overlap. Capacity is
	// capacityAt(ReadConnections) then.
	ReadShare       float64
	BodyCapacity    float64
	ReadOverlap     float64
	ReadConnections int
}

// capacityAt is the target's capacity for workers workers.
func (m CostModel) capacityAt(workers int) float64 {
	if m.ReadShare <= 0 || m.ReadConnections <= 0 || m.BodyCapacity <= 0 {
		return m.Capacity
	}
	inFlight := float64(min(workers, m.ReadConnections)) / float64(m.ReadConnections)
	reads := max(1, 1+(m.ReadOverlap-1)*inFlight*writeBackOverlap)
	return 1 / ((1-m.ReadShare)/m.BodyCapacity + m.ReadShare/reads)
}

// writeBackOverlap is the part of the probe's extra overlap (over one read
// at a time) that row changes get. The probe's lookups only read; a row
// change's page is also written back once it is evicted dirty, so the
// target's IO per change is about twice the probe's and its reads overlap
// less. Measured on W7 and W7B (16 and 128 MB pools, 8 workers,
// bench/results/2026-11-24-predict-w7-0c413f0.md): with the whole overlap
// the model predicted 1.88 and 2.15 where gapless measured 1.48 and 1.52;
// half of it gives about 1.5 and 1.7. An earlier model took half the
// overlap itself (probe ratio 2.75: 1.375, against 1.875 now), which
// predicted 1.13-1.20 where W7 measured 1.46-1.68.
const writeBackOverlap = 0.5

// DefaultCostModel was measured on a 2-core VM with a sandbox target
// (innodb_flush_log_at_trx_commit=2, sync_binlog=0, loopback): gapless
// replicate --workers 1 --batch 1 applied sysbench oltp_write_only
// transactions (4 row changes, 2.2 KiB) in 1.57 ms each and 2702-row
// inserts (1015 KiB) in 185 ms each; a COMMIT round trip took 55µs; with
// --batch 32 the write transactions took 0.25 ms each. The capacity is left
// unlimited: it depends on the target's host more than on anything else,
// and --calibrate measures it.
var DefaultCostModel = CostModel{
	Commit: 60 * time.Microsecond,
	Txn:    1200 * time.Microsecond,
	Row:    60 * time.Microsecond,
	KiB:    20 * time.Microsecond,
}

func (m CostModel) String() string {
	s := fmt.Sprintf("commit %v (serial) + per target transaction %v + per row %v + per KiB %v", m.Commit, m.Txn, m.Row, m.KiB)
	if m.Capacity > 0 {
		s += fmt.Sprintf("; target capacity %.2f", m.Capacity)
	}
	return s
}

// costs returns the parallel and the serial part of a transaction applied
// alone, in µs.
func (m CostModel) costs(rows, size int) (exec, commit float64) {
	exec = micros(m.Txn) + float64(rows)*micros(m.Row) + float64(size)/1024*micros(m.KiB)
	return exec, micros(m.Commit)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ringSize is how far back dependencies are looked up, a power of two at
// least twice the transactions in flight (workers × batch): an older one has
// committed before the dependent is dispatched.
func ringSize(workers, batch int) int64 {
	n := int64(4096)
	for n < 2*int64(workers)*int64(batch) {
		n *= 2
	}
	return n
}

// maxRing bounds the memory of the rings: workers × batch at most half of it.
const maxRing = 1 << 22

// simBatch is one target transaction: consecutive members first..last.
type simBatch struct {
	first, last  int64
	deps         []int64 // group indexes before first that must commit first
	exec, commit float64 // µs
	barrier      bool
	size         int
	heaviest     *txnInfo // the member that costs the most, for the blame
	// members are the batch's transactions, for running some ahead; nil
	// when none may run ahead (transactions of the statement session).
	members []simMember
}

// simMember is a member of a batch: what it adds to the batch's execution,
// and what it waits for, outside the batch and within.
type simMember struct {
	exec    float64 // µs
	outside []int64
	inside  []int32 // indexes of earlier members
	// statements are its row statements, when the policy tells them
	// apart (schedule.Steps): each may run ahead of the others.
	statements []simStatement
}

// simStatement is a row statement of a member: its share of the member's
// execution, what it waits for, and the resources it takes (a statement
// that meets one before it that waits, waits too).
type simStatement struct {
	share   float64
	outside []int64
	inside  []int32
	taken   []schedule.Taken
}

// simulator is one (policy, workers) replay.
type simulator struct {
	workers      int
	commitEnd    []float64 // by group index, a ring
	ring         int64     // len(commitEnd)
	batchEnd     []float64 // by batch number, workers+1
	batches      int64
	lastDispatch float64
	lastCommit   float64
	barrierUntil float64
	target       capacityProfile
	serial       float64          // sum of all costs: the one-worker makespan
	turnWait     float64          // worker time spent executed but waiting for the commit turn
	depWait      float64          // worker time spent waiting for dependencies
	waits        []bool           // waitingWork's, by member
	held         []schedule.Taken // waitingStatements's: the resources of the statements that wait

	// blame follows who holds the commit line (reference simulator only).
	blame *blameTracker
}

func newSimulator(workers int, ring int64, capacity float64) *simulator {
	return &simulator{
		workers:   workers,
		commitEnd: make([]float64, ring),
		ring:      ring,
		batchEnd:  make([]float64, workers+1),
		target:    capacityProfile{capacity: capacity},
	}
}

// step replays one batch.
func (s *simulator) step(b *simBatch) {
	s.batches++
	n := s.batches
	dispatch := max(s.lastDispatch, s.barrierUntil)
	if n > int64(s.workers) {
		// Commits happen in order, so the worker freed first held batch n-workers.
		dispatch = max(dispatch, s.batchEnd[(n-int64(s.workers))%int64(len(s.batchEnd))])
	}
	start := dispatch
	for _, d := range b.deps {
		if d < b.first && b.first-d < s.ring {
			start = max(start, s.commitEnd[d%s.ring])
		}
	}
	var executed float64
	if rest, split := s.waitingWork(b, dispatch); split {
		ahead := s.target.run(dispatch, b.exec-rest, dispatch)
		executed = s.target.run(max(start, ahead), rest, dispatch)
	} else {
		executed = s.target.run(start, b.exec, dispatch)
	}
	commitStart := max(executed, s.lastCommit)
	end := s.target.run(commitStart, b.commit, dispatch)

	s.depWait += start - dispatch
	s.turnWait += commitStart - executed
	if s.blame != nil {
		s.blame.step(b, n, executed, s.lastCommit)
	}
	for gi := b.first; gi <= b.last; gi++ {
		s.commitEnd[gi%s.ring] = end
	}
	s.batchEnd[n%int64(len(s.batchEnd))] = end
	s.lastDispatch = dispatch
	s.lastCommit = end
	if b.barrier {
		s.barrierUntil = end
	}
	s.serial += b.exec + b.commit
}

// waitingWork is the execution of the batch's statements that wait, when
// it is dispatched at dispatch, for a transaction still to commit, for a
// member that does not run whole ahead, or for a statement before them in
// their member that waits (coordinator.cut); split is false when none or
// all of it waits, and the batch runs whole (worker.runAhead).
func (s *simulator) waitingWork(b *simBatch, dispatch float64) (work float64, split bool) {
	if len(b.members) < 2 && (len(b.members) == 0 || b.members[0].statements == nil) {
		return 0, false
	}
	s.waits = s.waits[:0]
	anyWaits, anyAhead := false, false
	for _, m := range b.members {
		waits := s.waitsFor(b, m.outside, m.inside, dispatch)
		switch {
		case waits && m.statements != nil:
			share, n := s.waitingStatements(b, m.statements, dispatch)
			work += m.exec * share
			waits = n > 0
			anyAhead = anyAhead || n < len(m.statements)
		case waits:
			work += m.exec
		default:
			anyAhead = true
		}
		s.waits = append(s.waits, waits)
		anyWaits = anyWaits || waits
	}
	return work, anyWaits && anyAhead
}

// waitsFor reports whether something waits for one of outside, still to
// commit at dispatch, or of inside, a member that does not run whole ahead.
func (s *simulator) waitsFor(b *simBatch, outside []int64, inside []int32, dispatch float64) bool {
	for _, d := range outside {
		if b.first-d < s.ring && s.commitEnd[d%s.ring] > dispatch {
			return true
		}
	}
	for _, i := range inside {
		if s.waits[i] {
			return true
		}
	}
	return false
}

// waitingStatements is how many of a member's statements wait, and the
// share of its execution they make.
func (s *simulator) waitingStatements(b *simBatch, statements []simStatement, dispatch float64) (share float64, n int) {
	held := s.held[:0]
	for _, st := range statements {
		if s.waitsFor(b, st.outside, st.inside, dispatch) || schedule.Meets(st.taken, held) {
			held = append(held, st.taken...)
			share += st.share
			n++
		}
	}
	s.held = held
	return share, n
}

// speedup is serial apply time over the simulated makespan.
func (s *simulator) speedup() float64 {
	if s.lastCommit <= 0 {
		return 1
	}
	return s.serial / s.lastCommit
}

// capacityProfile is how much of the target's capacity the batches already
// placed use, over time: used[i] from times[i] to times[i+1], the last
// segment open-ended. Batches are placed in dispatch order; one runs at
// min(1, capacity - used) until its work is done, so the target never does
// more than capacity batches' work at once.
type capacityProfile struct {
	capacity float64 // 0: unlimited
	times    []float64
	used     []float64
}

// run places work µs of execution starting at start and returns when it is
// done. Nothing placed later starts before horizon (the dispatch clock).
func (p *capacityProfile) run(start, work, horizon float64) float64 {
	if p.capacity <= 0 || work <= 0 {
		return start + work
	}
	p.forget(horizon)
	i := p.split(start)
	t, left := start, work
	for {
		rate := min(1, p.capacity-p.used[i])
		if rate < 1e-9 {
			rate = 0
		}
		end := p.end(i)
		if end >= inf {
			rate = max(rate, 1) // nothing runs past the last batch's end
		}
		if rate > 0 && t+left/rate <= end {
			done := t + left/rate
			p.split(done)
			p.used[i] += rate
			return done
		}
		p.used[i] += rate
		left -= rate * (end - t)
		t = end
		i++
	}
}

func (p *capacityProfile) end(i int) float64 {
	if i+1 < len(p.times) {
		return p.times[i+1]
	}
	return inf
}

const inf = 1e300

// split makes t a segment boundary and returns the segment starting there.
func (p *capacityProfile) split(t float64) int {
	if len(p.times) == 0 || t < p.times[0] {
		p.times = slices.Insert(p.times, 0, t)
		p.used = slices.Insert(p.used, 0, 0)
		if len(p.times) > 1 && p.times[1]-t < 1e-9 {
			p.times, p.used = p.times[1:], p.used[1:]
		}
		return 0
	}
	i, found := slices.BinarySearch(p.times, t)
	if found {
		return i
	}
	// t falls inside segment i-1.
	if t-p.times[i-1] < 1e-9 {
		return i - 1
	}
	if i < len(p.times) && p.times[i]-t < 1e-9 {
		return i
	}
	p.times = slices.Insert(p.times, i, t)
	p.used = slices.Insert(p.used, i, p.used[i-1])
	return i
}

// forget drops the segments that end before horizon.
func (p *capacityProfile) forget(horizon float64) {
	n := 0
	for n+1 < len(p.times) && p.times[n+1] <= horizon {
		n++
	}
	if n > 0 {
		p.times = slices.Delete(p.times, 0, n)
		p.used = slices.Delete(p.used, 0, n)
	}
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

// blameTracker charges commit-turn waits to the batch holding the commit
// line: the latest one that finished executing after its turn had come,
// named by its costliest transaction. A later batch that finished executing
// before it and then waited for its turn is held by it, for at most the
// difference.
type blameTracker struct {
	window    int64 // in batches: the workers
	holder    *txnInfo
	holderIdx int64
	executed  float64
	held      int
	wait      float64 // µs
	top       []HeldBack
	keep      int
	minWait   float64 // µs; smaller holds are not worth a line
}

func (b *blameTracker) step(batch *simBatch, idx int64, executed, turn float64) {
	if executed > turn {
		b.finish()
		b.holder, b.holderIdx, b.executed = batch.heaviest, idx, executed
		return
	}
	if b.holder != nil && idx-b.holderIdx <= b.window && executed < b.executed {
		b.held += int(batch.last - batch.first + 1)
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
