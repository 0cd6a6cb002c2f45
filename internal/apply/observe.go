// observe.go is what a running replica shows of itself to the status
// surfaces (internal/status: the metrics, the status API and the live page),
// read-only: apply never imports them. Snapshot copies the run's state under
// the locks that already guard it, each held only for the copy, so a reader
// never waits on the target, the disk or another reader, and never holds up
// a worker or a stop. The counters are atomics the coordinator and the
// workers bump as they go; cumulative maps are keyed by a closed set of
// reasons or by table names, never by a GTID or a value.
//
// Nothing here holds a row's values or a password: states, GTIDs, table
// names, counts and durations only.
package apply

import (
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// Reasons a transaction ran again (Snapshot.Retries).
const (
	RetryDeadlock        = "deadlock"
	RetryLockWaitTimeout = "lock_wait_timeout"
	RetryLostConnection  = "lost_connection"
	// RetryYield: rolled back while waiting for its turn, because it held a
	// lock an earlier transaction needed (the watchdog asked).
	RetryYield = "yield"
	// RetryInterrupted: its statement was interrupted (the watchdog's KILL QUERY).
	RetryInterrupted = "interrupted"
	// RetryOutOfOrder: it failed while running beside its dependencies, and
	// runs once more at its turn, in the source's order.
	RetryOutOfOrder = "out_of_order"
)

// Reasons a transaction could not run beside the ones before it (Snapshot.Conflicts).
const (
	// ConflictDependency: the policy made it wait for an earlier transaction.
	ConflictDependency = "dependency"
	// ConflictBarrier: a DDL or another barrier ran alone.
	ConflictBarrier = "barrier"
	// ConflictLockWait: the watchdog found it waiting in the target for a
	// lock a later transaction held (a conflict the policy could not see).
	ConflictLockWait = "lock_wait"
)

// How a table named by a group of statements was taken (Snapshot.StatementTables).
const (
	// StatementRowKeys: by the row keys of the rows the statements' text says.
	StatementRowKeys = "row_keys"
	// StatementWholeTable: whole, as any row of it may be written.
	StatementWholeTable = "whole_table"
)

// Histogram buckets, upper bounds.
var (
	BatchSizeBuckets     = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
	CommitSecondsBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Snapshot is a run's state at one instant.
type Snapshot struct {
	At          time.Time
	Stream      string
	Policy      string
	CommitOrder CommitOrder
	Started     bool // the pipeline runs (false while connecting, locking, reading the position)

	Applied      int64 // source transactions committed on the target in this run
	AppliedBytes int64 // their bytes, as the source wrote them
	Filtered     int64
	Batches      int64 // target transactions they took
	RolledBack   int64 // transactions of batches a stop rolled back

	ReceivedTransactions int64 // groups the receiver appended to the relay log in this run
	ReceivedBytes        int64 // bytes of the transactions read back from the relay log in this run
	RelayBytes           int64 // bytes of the relay log's segment files now

	Position         gtid.MariaDBPosition // gap-less applied position
	ReceivedPosition gtid.MariaDBPosition // end of the relay log
	Behind           uint64               // transactions received but not applied
	LagSeconds       float64              // how long ago the source wrote the oldest transaction not applied (Replica.lagSeconds); 0 when caught up
	SourceConnected  bool
	// TargetNode and TargetSwitches are Progress's.
	TargetNode     string
	TargetSwitches int

	// TargetWait is what the target makes the workers wait for (a client's
	// row lock, a read lock of a backup), nil when it tells of nothing.
	TargetWait *TargetWait

	QueuedTransactions int   // decoded, waiting for a worker
	QueuedBytes        int64 // decoded and not yet committed (what --max-queued bounds)

	Workers       []WorkerView
	Retries       map[string]int64 // by Retry* reason
	Conflicts     map[string]int64 // by Conflict* reason
	WatchdogKills int64            // statements of later transactions the watchdog interrupted
	BatchSize     Histogram        // source transactions per target transaction
	CommitSeconds Histogram        // from a worker taking a job to its commit
	// Serialized counts, per table (db.table), the transactions that had to
	// wait for an earlier one that writes the same table: where the
	// parallelism goes (what analyze calls chains). Cumulative.
	Serialized map[string]int64
	// StatementTables counts the tables groups of statements named, by
	// how the policy took them (Statement*). Cumulative.
	StatementTables map[string]int64
}

// WorkerView is one worker in a Snapshot.
type WorkerView struct {
	WorkerStatus
	// WaitingFor is the earlier transaction it waits for (its dependency,
	// or, waiting for its turn, the next one to commit); "" when it does not wait.
	WaitingFor string
	// On lists the tables it shares with WaitingFor.
	On []string
	// Transactions it holds (a batch holds several).
	Transactions int
}

// Histogram is a cumulative histogram: Counts[i] observations were at or
// below Bounds[i]; Count in all, summing to Sum.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

// histogram records observations without a lock.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (h *histogram) read() Histogram {
	out := Histogram{Bounds: h.bounds, Counts: make([]uint64, len(h.bounds)), Sum: math.Float64frombits(h.sum.Load())}
	for i := range h.counts {
		n := h.counts[i].Load()
		out.Count += n
		if i < len(h.bounds) {
			out.Counts[i] = out.Count
		}
	}
	return out
}

// observed is the part of a Replica that only the status surfaces read.
type observed struct {
	once sync.Once

	relay         atomic.Pointer[binlog.RelayLog]
	budget        atomic.Pointer[byteBudget]
	queue         atomic.Pointer[chan *binlog.Transaction]
	appliedBytes  atomic.Int64
	watchdogKills atomic.Int64
	batchSize     *histogram
	commitSeconds *histogram
	// receivedBefore counts the groups of receivers of earlier sessions (a refetch starts a new one).
	receivedBefore atomic.Int64
	receiver       *binlog.Receiver // the session's, under Replica.mu
	// decodedBytes counts the bytes of the transactions decoded from the relay log.
	decodedBytes atomic.Int64
	// statementRowKeys and statementWholeTables: see Snapshot.StatementTables.
	statementRowKeys, statementWholeTables atomic.Int64

	mu         sync.Mutex
	retries    map[string]int64
	conflicts  map[string]int64
	serialized map[string]int64
	taken      map[*job]time.Time // coordinator only: when a job went to its worker
}

func (o *observed) init() {
	o.once.Do(func() {
		o.batchSize = newHistogram(BatchSizeBuckets)
		o.commitSeconds = newHistogram(CommitSecondsBuckets)
		o.retries = map[string]int64{}
		o.conflicts = map[string]int64{}
		o.serialized = map[string]int64{}
		o.taken = map[*job]time.Time{}
	})
}

func (o *observed) count(m map[string]int64, key string, n int64) {
	o.init()
	o.mu.Lock()
	m[key] += n
	o.mu.Unlock()
}

// retried counts one transaction (or batch) run again, by reason.
func (r *Replica) retried(reason string) {
	r.obs.init()
	r.obs.count(r.obs.retries, reason, 1)
}

// retriedAfter counts a retry after a transient target error.
func (r *Replica) retriedAfter(code uint16) {
	switch code {
	case 1213:
		r.retried(RetryDeadlock)
	case 1205:
		r.retried(RetryLockWaitTimeout)
	default:
		r.retried(RetryLostConnection)
	}
}

// brokeLockWait counts a lock wait the watchdog broke; killed is true when
// it interrupted the later transaction's statement.
func (r *Replica) brokeLockWait(killed bool) {
	r.obs.init()
	r.obs.count(r.obs.conflicts, ConflictLockWait, 1)
	if killed {
		r.obs.watchdogKills.Add(1)
	}
}

// observeSession records where the session's pipeline can be read.
func (r *Replica) observeSession(relay *binlog.RelayLog, queue chan *binlog.Transaction, budget *byteBudget) {
	r.obs.init()
	r.obs.relay.Store(relay)
	r.obs.queue.Store(&queue)
	r.obs.budget.Store(budget)
	r.mu.Lock()
	defer r.mu.Unlock()
	if last := r.obs.receiver; last != nil && last != r.receiver {
		// A new session's receiver: keep what the last one counted.
		r.obs.receivedBefore.Add(last.Received())
	}
	r.obs.receiver = r.receiver
}

// observeDispatch records a job handed to a worker: when, and which earlier
// transactions in flight it waits for, by the tables it shares with them.
// Coordinator only.
func (r *Replica) observeDispatch(j *job, inflight map[int64]*job, barrier bool) {
	o := &r.obs
	o.init()
	o.taken[j] = time.Now()
	if barrier {
		o.count(o.conflicts, ConflictBarrier, 1)
	}
	if len(j.deps) == 0 {
		return
	}
	o.count(o.conflicts, ConflictDependency, int64(len(j.txns)))
	mine := jobTables(j)
	shared := map[binlog.TableRef]bool{}
	for _, d := range j.deps {
		if len(shared) == len(mine) {
			// Every table of the batch is shared already: a batch of wide
			// transactions waits for hundreds, which could add none.
			break
		}
		for _, other := range inflight {
			// The in-flight job that holds this dependency, if any.
			if d >= other.gi && d <= other.last() {
				for _, t := range other.txns[d-other.gi].Tables {
					if mine[t] {
						shared[t] = true
					}
				}
				break
			}
		}
	}
	o.mu.Lock()
	for t := range shared {
		o.serialized[t.String()] += int64(len(j.txns))
	}
	o.mu.Unlock()
}

// observeFinished records a job's end. Coordinator only.
func (r *Replica) observeFinished(j *job, err error) {
	o := &r.obs
	o.init()
	taken, ok := o.taken[j]
	delete(o.taken, j)
	if err != nil {
		return
	}
	var size int64
	for _, t := range j.txns {
		size += int64(t.Size)
	}
	o.appliedBytes.Add(size)
	o.batchSize.observe(float64(len(j.txns)))
	if ok {
		o.commitSeconds.observe(time.Since(taken).Seconds())
	}
}

func jobTables(j *job) map[binlog.TableRef]bool {
	out := map[binlog.TableRef]bool{}
	for _, t := range j.txns {
		for _, ref := range t.Tables {
			out[ref] = true
		}
	}
	return out
}

// Snapshot returns the run's state now. It is safe to call at any time from
// any goroutine, before the run has started and after it has ended.
func (r *Replica) Snapshot() Snapshot {
	r.obs.init()
	now := time.Now()
	s := Snapshot{
		At: now, Stream: r.cfg.Stream, Policy: r.cfg.Policy, CommitOrder: r.cfg.CommitOrder,
		Applied: r.applied.Load(), AppliedBytes: r.obs.appliedBytes.Load(), Filtered: r.filtered.Load(),
		Batches: r.batches.Load(), RolledBack: r.rolledBack.Load(), WatchdogKills: r.obs.watchdogKills.Load(),
		BatchSize: r.obs.batchSize.read(), CommitSeconds: r.obs.commitSeconds.read(),
		StatementTables: map[string]int64{
			StatementRowKeys:    r.obs.statementRowKeys.Load(),
			StatementWholeTable: r.obs.statementWholeTables.Load(),
		},
	}
	r.obs.mu.Lock()
	s.Retries = maps.Clone(r.obs.retries)
	s.Conflicts = maps.Clone(r.obs.conflicts)
	s.Serialized = maps.Clone(r.obs.serialized)
	r.obs.mu.Unlock()

	r.mu.Lock()
	s.Position = r.position.Clone()
	lastSource := r.lastSource
	workers := r.workers
	var clog *commitLog
	if workers != nil {
		// Set before the session's workers are published under r.mu.
		clog = r.clog
	}
	receiver := r.receiver
	r.mu.Unlock()
	s.Started = workers != nil
	s.TargetNode, s.TargetSwitches = r.targetNode()
	s.ReceivedBytes = r.obs.decodedBytes.Load()
	s.ReceivedTransactions = r.obs.receivedBefore.Load()
	if receiver != nil {
		s.SourceConnected = receiver.Connected()
		s.ReceivedTransactions += receiver.Received()
	}
	if relay := r.obs.relay.Load(); relay != nil {
		s.ReceivedPosition = relay.End()
		for _, path := range relay.Segments() {
			if fi, err := os.Stat(path); err == nil {
				s.RelayBytes += fi.Size()
			}
		}
		s.Behind = behind(s.ReceivedPosition, s.Position)
	}
	s.LagSeconds = r.lagSeconds(now, s.Behind, lastSource)
	if q := r.obs.queue.Load(); q != nil {
		s.QueuedTransactions = len(*q)
	}
	if b := r.obs.budget.Load(); b != nil {
		b.mu.Lock()
		s.QueuedBytes = b.used
		b.mu.Unlock()
	}
	s.Workers = viewWorkers(workers, clog)
	s.TargetWait = r.targetWait.Load()
	return s
}

// viewWorkers copies every worker's state and names what it waits for.
func viewWorkers(workers []*worker, clog *commitLog) []WorkerView {
	type held struct {
		view WorkerView
		job  *job
	}
	all := make([]held, len(workers))
	for i, w := range workers {
		w.mu.Lock()
		all[i] = held{view: WorkerView{WorkerStatus: w.status}, job: w.held}
		w.mu.Unlock()
		if j := all[i].job; j != nil {
			all[i].view.Transactions = len(j.txns)
		}
	}
	// holder finds the transaction with group index gi among the jobs held.
	holder := func(gi int64) (*binlog.Transaction, *job) {
		for _, h := range all {
			if j := h.job; j != nil && gi >= j.gi && gi <= j.last() {
				return j.txns[gi-j.gi], j
			}
		}
		return nil, nil
	}
	var low int64
	var pending []int64
	out := make([]WorkerView, len(all))
	for i, h := range all {
		out[i] = h.view
		j := h.job
		if j == nil || clog == nil {
			continue
		}
		var wait int64
		switch h.view.State {
		case StateWaitingDeps, StateAhead:
			clog.mu.Lock()
			pending = pending[:0]
			for _, d := range j.deps {
				if !clog.committedLocked(d) && !clog.executed[d] {
					pending = append(pending, d)
				}
			}
			clog.mu.Unlock()
			if len(pending) > 0 {
				wait = slices.Min(pending)
			}
		case StateWaitingCommit, StateRetrying:
			clog.mu.Lock()
			low = clog.lowWater
			clog.mu.Unlock()
			if low+1 < j.gi {
				wait = low + 1
			}
		}
		if wait == 0 {
			continue
		}
		txn, other := holder(wait)
		if txn == nil {
			continue
		}
		out[i].WaitingFor = txn.GTID()
		mine, otherTables := jobTables(j), jobTables(other)
		for name := range mine {
			if otherTables[name] {
				out[i].On = append(out[i].On, name.String())
			}
		}
		slices.Sort(out[i].On)
	}
	return out
}
