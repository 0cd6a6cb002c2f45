// worker.go is one applier connection. A worker takes one job at a time
// from the coordinator (a transaction, or a batch): it waits for the
// transactions the policy says it depends on, executes the job with its
// checkpoint row in one target transaction, waits for its turn under strict
// commit order, and commits (a job's life: job.go; groups applied alone:
// alone.go). worker.go keeps the connection: open, lost, made again, closed.
//
// Exactly once: the checkpoint row commits with the data; when the
// connection dies during a commit, the worker reads the checkpoint back
// before trying again. A transaction rolled back for any reason is simply
// executed again: nothing of it is left on the target.
package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// maxRetries bounds how often one transaction is tried again after a
// deadlock or lock wait timeout; lost connections are retried until the
// target is back or the run is stopped, but maxLost times at most for one
// job on connections that were made again: a target that drops every
// connection running it will not apply it by being asked once more.
const (
	maxRetries = 10
	maxLost    = 30
)

// WorkerState is what a worker is doing, for status reports.
type WorkerState string

const (
	StateIdle          WorkerState = "idle"
	StateWaitingDeps   WorkerState = "waiting for dependencies"
	StateAhead         WorkerState = "executed ahead; waiting for dependencies"
	StateApplying      WorkerState = "applying"
	StateWaitingCommit WorkerState = "waiting for prior commit"
	StateRetrying      WorkerState = "retrying"
	StateReconnecting  WorkerState = "reconnecting"
	// StateConnecting is a worker opening its first connection of the run.
	StateConnecting WorkerState = "connecting"
)

// WorkerStatus is a snapshot of one worker.
type WorkerStatus struct {
	Slot  int
	State WorkerState
	GTID  string // the transaction it holds, "" when idle
	Bytes int    // the binlog bytes of the transactions it holds
	Since time.Time
}

type worker struct {
	slot    int
	replica *Replica
	db      *sql.DB
	opts    target.Options
	log     *slog.Logger

	session *target.Session
	connID  int64
	// ending: the run is over, and the worker closes its connection for
	// good. lostSeen is the Replica.lostN its session was last told of.
	ending   bool
	lostSeen int64
	// starts is the SourceStarts of the session's last connection
	// (target.Session.GoOnFrom).
	starts int
	// connected: the worker has had a connection in this run, so a
	// missing one is lost, not yet opened.
	connected bool
	jobs      chan *job
	yield     chan struct{} // the watchdog asks the worker to roll back and retry at its turn
	// awaiting is when the session waits for a script's answers, and on
	// which connection (unanswered.go).
	awaiting target.Awaiting
	// mine lists the transactions this worker committed above the gap-less
	// position (causal commit order), for its checkpoint row.
	mine []committedTxn
	// several is how many groups applied alone the next such round trip
	// holds at most (severalAlone); below 2, they go one at a time.
	several int

	mu     sync.Mutex
	status WorkerStatus
	gi     int64 // group index of the transaction held
	held   *job  // the job held, nil when idle
	// spent is the time in each state before the current one.
	spent map[WorkerState]time.Duration
}

type committedTxn struct {
	gi   int64
	gtid gtid.MariaDBGTID
}

func newWorker(r *Replica, slot int) *worker {
	opts := r.cfg.Session
	opts.Warn = func(msg string) { r.log.Warn(msg) }
	opts.SlotLock = checkpoint.SlotLockName(r.cfg.Stream, slot)
	opts.Stream = r.cfg.Stream
	opts.DeferPositions = r.cfg.CommitOrder == Strict
	opts.BegunMark = func(g gtid.MariaDBGTID) string { return r.store.BegunStatement(g) }
	w := &worker{
		slot: slot, replica: r, db: r.cfg.Target, log: r.log.With("worker", slot),
		jobs: make(chan *job, 1), yield: make(chan struct{}, 1),
		status: WorkerStatus{Slot: slot, State: StateIdle, Since: time.Now()},
	}
	// The session changes connections by itself (an XA PREPARE, a raised
	// max_allowed_packet, temporary tables of several domains): the
	// watchdog and a stop interrupt the one it is on.
	opts.Connected = func(id int64) {
		w.mu.Lock()
		w.connID = id
		w.mu.Unlock()
	}
	opts.Awaiting = &w.awaiting
	w.opts = opts
	return w
}

func (w *worker) setState(s WorkerState, j *job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if w.spent == nil {
		w.spent = map[WorkerState]time.Duration{}
	}
	w.spent[w.status.State] += now.Sub(w.status.Since)
	w.status.State = s
	w.status.Since = now
	w.status.GTID, w.status.Bytes = "", 0
	w.gi = 0
	w.held = j
	if j != nil {
		for _, txn := range j.txns {
			w.status.Bytes += txn.Size
		}
		w.status.GTID = j.lastTxn().GTID()
		if len(j.txns) > 1 {
			w.status.GTID = j.txns[0].GTID() + ".." + w.status.GTID
		}
		w.gi = j.last()
	}
}

// timeIn adds to spent the time the worker has spent in each state so far.
func (w *worker) timeIn(spent map[WorkerState]time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, d := range w.spent {
		spent[s] += d
	}
	spent[w.status.State] += time.Since(w.status.Since)
}

func (w *worker) snapshot() (WorkerStatus, int64, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.gi, w.connID
}

// loop applies jobs until the channel closes.
func (w *worker) loop(ctx context.Context, done chan<- result) {
	// The connection opens before the first job comes, so that job runs
	// as any other: ahead of what it waits for, and its script made while
	// the jobs before it run. One that cannot open now is opened by the
	// job, which reports why it cannot.
	if err := w.connect(ctx); err != nil {
		w.log.Debug("the worker's connection did not open at its start; its first job opens it", "error", err)
	}
	for {
		var idle <-chan time.Time
		if w.session != nil && w.session.Deferred() {
			idle = time.After(deferredPositionWait)
		}
		select {
		case j, ok := <-w.jobs:
			if !ok {
				w.writeDeferred()
				w.keepTemporary()
				w.ending = true
				w.close()
				return
			}
			if w.session != nil && w.session.DeferredFor() > deferredPositionAge {
				// A worker never idle writes them still: the next run
				// relies on the target's binlog for a second of groups at
				// most.
				w.writeDeferred()
			}
			w.noteLost()
			applied, err := w.apply(ctx, j)
			w.setState(StateIdle, nil)
			done <- result{w: w, job: j, err: err, applied: applied, parked: w.session != nil && w.session.Parked()}
		case <-idle:
			w.writeDeferred()
		}
	}
}

// deferredPositionWait is how long a worker with positions waiting
// (target.Session.Deferred) waits for its next job before it writes them,
// and deferredPositionAge how long they wait at most.
const (
	deferredPositionWait = 100 * time.Millisecond
	deferredPositionAge  = time.Second
)

// writeDeferred writes the positions the worker's session holds back. One
// it cannot write is no loss: the group is in the target's binlog, where
// the next run finds it.
func (w *worker) writeDeferred() {
	if w.session == nil || !w.session.Deferred() {
		return
	}
	if err := w.session.WriteDeferred(); err != nil {
		w.log.Warn("cannot write the position of a group applied alone; the next run finds the group in the target's binlog", "error", err)
	}
}

// apply runs one job to its commit, or to errDropped when a stop or an
// error stop comes first, and returns how many of its transactions
// committed. A batch that fails for good is applied again one transaction
// at a time, so the error names the transaction that failed.
func (w *worker) apply(ctx context.Context, j *job) (int, error) {
	if j.alone {
		return w.oneByOne(ctx, j)
	}
	err := w.applyJob(ctx, j)
	if err == nil {
		return len(j.txns), nil
	}
	var ae *target.ApplyError
	if len(j.txns) == 1 || !errors.As(err, &ae) || ae.Transient() {
		return 0, err
	}
	w.log.Info("a batch failed; applying its transactions one by one", "first", j.txns[0].GTID(), "error", err)
	return w.oneByOne(ctx, j)
}

// committed records the job's transactions as committed, and applied by
// this run.
func (w *worker) committed(j *job) {
	for _, txn := range j.txns {
		w.replica.appliedIn(txn.MariaDB.Domain)
	}
	w.passCommitted(j)
}

// passCommitted records the job's transactions as committed.
func (w *worker) passCommitted(j *job) {
	w.replica.passThrough(j.lastTxn())
	w.replica.clog.commitRun(j.gi, len(j.txns))
	if w.replica.listsAbove() {
		for i, txn := range j.txns {
			w.mine = append(w.mine, committedTxn{gi: j.gi + int64(i), gtid: txn.MariaDB})
		}
	}
}

func (w *worker) drainYield() {
	select {
	case <-w.yield:
	default:
	}
}

// checkpointStatement is the position row the job writes. A batch holds
// one domain, so the row of its last transaction covers all of it under
// strict order; under causal order its other members are listed too, and
// so are, under either order, the groups past the position that a run
// before applied (Replica.ahead).
func (w *worker) checkpointStatement(j *job) string {
	store := w.replica.store
	txn := j.lastTxn()
	slot := w.slot
	if j.skip || !target.PositionInside(j.txns) {
		// Written outside the target's binlog: a row of its own.
		slot += checkpoint.AloneSlots
	}
	lowGI, low, ahead := w.replica.gapless()
	if w.replica.cfg.CommitOrder == Strict && len(ahead) == 0 {
		// (w.mine may hold groups from while ahead was not empty: all of
		// them below the position now.)
		return store.Statement(slot, txn.MariaDB, w.replica.sourceTime(txn.SourceTime))
	}
	kept := w.mine[:0]
	for _, m := range w.mine {
		if m.gi > lowGI {
			kept = append(kept, m)
		}
	}
	w.mine = kept
	above := make([]gtid.MariaDBGTID, 0, len(w.mine)+len(j.txns)-1+len(ahead))
	for _, m := range w.mine {
		above = append(above, m.gtid)
	}
	for _, member := range j.txns[:len(j.txns)-1] {
		above = append(above, member.MariaDB)
	}
	above = append(above, ahead...)
	return store.CausalStatement(slot, txn.MariaDB, w.replica.sourceTime(txn.SourceTime), low, above)
}

func (w *worker) connect(ctx context.Context) error {
	w.close()
	s, err := target.Open(ctx, w.opts)
	if err != nil {
		return err
	}
	if w.slot == 0 && !w.replica.restored {
		// The statement session, first opened in this run: the source's
		// temporary tables a run before kept come back before anything
		// applies.
		restored, lost, err := s.RestoreTemporary(w.replica.cfg.Stream, w.replica.kept)
		if err != nil {
			s.Close()
			return err
		}
		w.replica.restored, w.replica.kept = true, nil
		if len(restored) > 0 {
			w.log.Info("the temporary tables of the source's sessions that the run before kept are made again", "tables", strings.Join(restored, ", "))
		}
		if len(lost) > 0 {
			w.log.Warn("temporary tables of the source's sessions that the run before kept could not be made again; a statement of the source that reads one will stop the run", "tables", strings.Join(lost, "; "))
		}
	}
	if w.slot == 0 {
		s.GoOnFrom(w.starts)
		w.lostSeen = w.replica.lostN.Load()
		s.Lose(w.replica.lostTemporary())
	}
	id := s.ConnectionID()
	w.mu.Lock()
	w.session, w.connID = s, id
	w.mu.Unlock()
	w.connected = true
	return nil
}

// reconnect waits for the target with backoff until it answers or ctx ends.
func (w *worker) reconnect(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := w.connect(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, target.ErrSlotHeld) {
			// The worker's lost connection lives on in the server: wait for
			// it to end (a COMMIT it had sent lands before the checkpoint is
			// read back), or end it.
			warn := func(msg string) { w.log.Warn(msg) }
			if err := checkpoint.SettleSlots(ctx, w.replica.cfg.Target, w.replica.cfg.Stream, w.slot, w.slot+1, warn); err != nil {
				return err
			}
			continue
		}
		if !target.Lost(errors.Unwrap(err)) && !target.Lost(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for the target: %w", err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (w *worker) applied(ctx context.Context, txn *binlog.Transaction) (bool, error) {
	a, err := w.replica.readApplied(ctx)
	if err != nil {
		return false, err
	}
	return a.Contains(txn.MariaDB), nil
}

func (w *worker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.session != nil && w.slot == 0 && !w.ending {
		// The statement session's connection ends amid the run: the
		// temporary tables the source's sessions hold end with it.
		if held := w.session.Held(); len(held) > 0 {
			w.replica.setLost(held)
			w.log.Warn("the connection that held the source's temporary tables ended; a statement that reads one will stop the run", "tables", len(held))
		}
	}
	if w.session != nil {
		w.starts = w.session.SourceStarts()
		w.session.Close()
		w.session = nil
		w.connID = 0
	}
}
