// worker.go is one applier connection. A worker takes one transaction at a
// time from the coordinator: it waits for the transactions the policy says
// it depends on, executes it with its checkpoint row in one target
// transaction, waits for its turn under strict commit order, and commits.
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

// job is one or more transactions with consecutive group indexes from gi
// on, applied in one target transaction.
type job struct {
	gi   int64
	txns []*binlog.Transaction
	deps []int64 // group indexes before gi that must commit first
	skip bool    // record as applied without applying (single transactions only)
	// alone: a run of groups applied alone (target.FollowsAlone), each in
	// target transactions of its own, one after another.
	alone bool
	// unsure: a round trip that held this group failed amid it, so it
	// (and, when the connection was lost, groups after it) may be on the
	// target (single transactions only).
	unsure bool
	// ahead marks the transactions of a batch that wait for none of deps,
	// directly or through a transaction of the batch that does: they may
	// run before the others, while deps execute (worker.runAhead). Nil when
	// every transaction or none waits.
	ahead []bool
}

func (j *job) last() int64                  { return j.gi + int64(len(j.txns)) - 1 }
func (j *job) lastTxn() *binlog.Transaction { return j.txns[len(j.txns)-1] }

type result struct {
	w   *worker
	job *job
	err error
	// applied counts the job's first transactions that committed: all of
	// them without err; with it, those a batch applied one by one, or a
	// run of groups applied alone, committed before err.
	applied int
	// parked: the worker's session keeps an XA branch prepared on the
	// connection that holds the source's temporary tables
	// (target.Session.Parked).
	parked bool
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

// oneByOne applies j's transactions one after another, each as a job of
// its own, and returns how many committed. A stop ends it between two:
// the worker has started the next one only if the stop's point includes
// it.
func (w *worker) oneByOne(ctx context.Context, j *job) (int, error) {
	unsure := 0 // the groups before this index may have run in a round trip that failed amid them
	// next is the job of the group at i, begun unless a stop dropped it.
	next := func(i int) (*job, bool) {
		one := &job{gi: j.gi + int64(i), txns: j.txns[i : i+1], unsure: i < unsure}
		w.setState(StateApplying, one)
		return one, !w.replica.clog.dropped(one.gi)
	}
	for i := 0; i < len(j.txns); {
		// The first waits for the job's dependencies; the others follow it.
		one, begun := &job{gi: j.gi, txns: j.txns[:1], deps: j.deps}, true
		if i > 0 {
			one, begun = next(i)
		}
		if !begun {
			return i, errDropped
		}
		if i > 0 && j.alone && !one.unsure {
			n, then, end, err := w.severalAlone(ctx, j, i)
			i += n
			switch {
			case err != nil:
				return i, err
			case then == nextInRoundTrip:
				continue
			case then == nextUnsure:
				unsure = end
			}
			if one, begun = next(i); !begun {
				return i, errDropped
			}
		}
		began := time.Now()
		if err := w.applyJob(ctx, one); err != nil {
			return i, err
		}
		if j.alone && time.Since(began) < severalAloneTime/2 {
			w.several = max(w.several, 2)
		}
		i++
	}
	return len(j.txns), nil
}

// A round trip of groups applied alone holds up to severalAloneMax of
// them, as many as the last one's time says run in about severalAloneTime,
// and groups slower than that go one at a time: a stop waits for the round
// trip in flight (a write to a MyISAM table cannot be rolled back), and
// must come within a second.
const (
	severalAloneMax  = 64
	severalAloneTime = 50 * time.Millisecond
)

// How the group after a round trip of several groups applied alone goes.
const (
	nextInRoundTrip = iota // in another such round trip, if it can
	nextAlone              // alone: it cannot share a round trip
	nextUnsure             // alone, after reading its position back and asking the target's binlog whether it ran: its round trip was lost, or it failed with a transient error
)

// severalAlone applies the groups of a run of groups applied alone from
// from on, as many as can share one round trip (target.Session.ApplyAlone),
// and returns how many committed, how the group after them goes, and
// where the round trip's groups end. It applies none when the one before
// did not just commit on this session (with its one-group check, where the
// target binlogs it), nor when fewer than two can share.
func (w *worker) severalAlone(ctx context.Context, j *job, from int) (n, then, end int, err error) {
	first := j.txns[from]
	domain := first.MariaDB.Domain
	if w.session == nil || w.replica.listsAbove() || w.several < 2 {
		// (The positions of a round trip's groups are written before any
		// of them commits: none could list those before it.)
		return 0, nextAlone, from, nil
	}
	guarded := w.session.GuardsPosition(first)
	if _, ok := w.replica.through.Load(domain); ok || guarded && !w.replica.followsGuarded(j.gi+int64(from), domain) {
		return 0, nextAlone, from, nil
	}
	end = from
	for end < len(j.txns) && end-from < w.several && w.session.Pipelines(j.txns[end]) {
		end++
	}
	if end-from < 2 {
		return 0, nextAlone, from, nil
	}
	several := &job{gi: j.gi + int64(from), txns: j.txns[from:end], alone: true}
	w.setState(StateApplying, several)
	positions := make([]string, len(several.txns))
	for k := range several.txns {
		positions[k] = w.checkpointStatement(&job{gi: several.gi + int64(k), txns: several.txns[k : k+1]})
	}
	began := time.Now()
	n, err = w.session.ApplyAlone(context.WithoutCancel(ctx), several.txns, positions)
	switch took := time.Since(began); {
	case took < severalAloneTime/2 && len(several.txns) == w.several:
		w.several = min(2*w.several, severalAloneMax)
	case took > severalAloneTime:
		w.several = int(int64(len(several.txns)) * int64(severalAloneTime) / int64(took))
	}
	if n > 0 {
		w.committed(&job{gi: several.gi, txns: several.txns[:n]})
		if guarded {
			w.replica.guarded.Store(&guardedGroup{gi: several.gi + int64(n) - 1, domain: domain})
		}
	}
	var ae *target.ApplyError
	failed := several.txns[min(n, len(several.txns)-1)] // the group the error names
	switch {
	case err == nil:
		return n, nextInRoundTrip, end, nil
	case !errors.As(err, &ae):
		return n, nextAlone, end, err
	case target.Lost(ae.Err), target.Interrupted(ae.Err):
		w.log.Warn("target connection lost or interrupted amid groups applied alone; their positions or the target's binlog say which ran", "gtid", ae.GTID, "error", ae.Err)
		w.replica.retried(RetryLostConnection)
		w.close()
		return n, nextUnsure, end, nil
	case ae.Transient() && target.PartsStay(failed):
		return n, nextAlone, end, partsStay(failed, ae)
	case ae.Transient():
		// Tried again alone, as the first try of a group alone would be:
		// after asking the target's binlog, since a group that failed
		// after a write to a non-transactional table is binlogged.
		w.replica.retriedAfter(ae.Code)
		return n, nextUnsure, from + n + 1, nil
	}
	return n, nextAlone, end, err
}

func (w *worker) applyJob(ctx context.Context, j *job) error {
	clog := w.replica.clog
	strict := w.replica.cfg.CommitOrder == Strict
	txn := j.lastTxn()
	// The transaction in flight always finishes; only waits end early.
	run := context.WithoutCancel(ctx)
	// Under strict order a job of row transactions, or of statements the
	// decoder could read, starts once its dependencies have executed: their
	// row locks make it wait in the target where it meets them (a statement's
	// reads in DML are locking reads under REPEATABLE READ, so it waits for
	// their rows and never reads past them; should one of them run again,
	// the watchdog breaks the wait it meets on the statement's locks).
	// Anything else starts once they have committed: a
	// DDL or a write to a non-transactional table is in the target's binlog
	// as soon as it has executed, so it must not pass an earlier commit; and
	// under causal order nothing would break a lock wait if a dependency had
	// to run again.
	early := strict && rowTransactions(j.txns)
	ahead := early && j.ahead != nil && w.session != nil && !w.replica.serializing()
	if w.session != nil {
		// The script is made while the jobs before it run, not after.
		if ahead {
			w.session.Prepare(j.txns, j.ahead)
		} else {
			w.session.Prepare(j.txns, nil)
		}
	}
	// held: the transactions ahead have executed, and the target
	// transaction waits open, with their locks, for the others.
	held := ahead && w.runAhead(run, j)
	if held {
		w.drainYield()
		w.setState(StateAhead, j)
		err := clog.waitDeps(run, j.gi, j.deps, early, w.yield)
		if err != nil {
			w.session.Rollback(run)
			held = false
		}
		switch {
		case errors.Is(err, errYield):
			// A lock the policy could not see: the job runs whole, as
			// any other, once its dependencies have executed.
			w.log.Info("rolled back the transactions run ahead to let an earlier transaction take its lock", "gtid", txn.GTID())
			w.replica.retried(RetryYield)
		case err != nil:
			return err
		}
	}
	if !held {
		w.setState(StateWaitingDeps, j)
		if err := clog.waitDeps(run, j.gi, j.deps, early, nil); err != nil {
			return err
		}
	}
	if !strict {
		if err := clog.waitWindow(run, j.last(), causalWindow); err != nil {
			return err
		}
	}
	if strict && !held && (w.replica.serializing() || target.PreparesXA(txn)) {
		// Conflicts the policy cannot see are about: start at the turn.
		// So too an XA PREPARE: its branch, once prepared, keeps its
		// locks until the group that ends it, and neither the watchdog
		// nor a retry can take them back from an earlier transaction
		// that waits for one (a gap the policy does not see).
		if err := clog.waitTurn(run, j.gi, nil); err != nil {
			return err
		}
	}
	retries, lost := 0, 0
	// attempted: this job has been sent to the target once in this run, so
	// its group may be there though its position is not.
	attempted := false
	// begun: why this job may have run in part already (the error its
	// last try met), or nil; cut: the error that cut its last try off
	// (a lost or interrupted connection), which began it only if its
	// begun mark was written (see PartsStay below).
	var begun, cut error
	// lateRetry: a job that failed after starting beside its dependencies
	// runs once more after everything before it has committed, so that an
	// error is only ever reported from the order the source had.
	lateRetry := early
	executed := false
	release := func() {
		if executed {
			clog.execute(j.gi, j.last(), false)
			executed = false
		}
	}
	defer release()
	for {
		if w.session == nil {
			// lost: the worker had a connection (this job's or an
			// earlier one's), not one it could not open at its start.
			lost := w.connected
			if lost {
				w.setState(StateReconnecting, j)
			} else {
				w.setState(StateConnecting, j)
			}
			err := w.reconnect(ctx)
			if err != nil && ctx.Err() != nil {
				// A stop came first. A job it dropped needs no connection:
				// the checkpoint says whether an earlier attempt committed.
				// One the stop point includes must commit, so it connects
				// still, for as long as a stop waits for the target.
				if clog.dropped(j.gi) {
					if !attempted {
						return errDropped
					}
					return w.settleDropped(run, j)
				}
				patient, cancel := context.WithTimeout(run, settleTimeout)
				err = w.reconnect(patient)
				cancel()
			}
			if err != nil {
				return err
			}
			if err := w.replica.lock.Ensure(run); err != nil {
				return err
			}
			// The connection may have died during a commit: the checkpoint knows.
			done, err := w.applied(run, txn)
			if err != nil {
				w.log.Warn("cannot read the position back; reconnecting", "error", err)
				w.close()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if done {
				w.committed(j)
				return nil
			}
			// After a lost connection the transactions around this one run
			// again in whatever order their workers come back, so it starts
			// again only once its dependencies have committed.
			if early && lost {
				early = false
				w.setState(StateWaitingDeps, j)
				if err := clog.waitDeps(run, j.gi, j.deps, false, nil); err != nil {
					return err
				}
			}
		}
		if j.unsure && !attempted && w.session != nil {
			// A round trip that held it was lost or failed amid it: its
			// position may be written already.
			if done, err := w.applied(run, txn); err == nil && done {
				w.committed(j)
				return nil
			}
			cut = errRoundTripLost
		}
		if cut != nil && w.session != nil && target.Marked(txn) {
			// It began if its mark, committed before its first
			// statement, is the domain's last one.
			marks, err := w.replica.store.Begun(run)
			if err != nil {
				return err
			}
			if marks[txn.MariaDB.Domain] == txn.MariaDB {
				begun = cut
			}
		}
		cut = nil
		w.setState(StateApplying, j)
		stmt := w.checkpointStatement(j)
		skip := j.skip
		var err error
		domain := txn.MariaDB.Domain
		first := attempted || j.unsure || !w.replica.hasApplied(domain)
		if !skip {
			skip, err = w.replica.appliedBefore(j)
			if skip && err == nil && w.session != nil {
				err = w.session.EndBinlogged(run, txn)
			}
		}
		if !skip && err == nil && len(j.txns) == 1 && target.AppliesAlone(txn) && (first || !w.replica.followsGuarded(j.gi, domain)) {
			// A DDL, a non-transactional write or an XA PREPARE is on the
			// target before its checkpoint: it may be there already. (Not
			// so right after a group whose guarded position found nothing
			// of the domain past it: then the group is not there.)
			var through gtid.MariaDBGTID
			// Resumed: groups past the position may have run before this
			// try (a run killed, a round trip lost), never after it.
			// Began: its mark says a try of it, this run's or the run
			// before's, started on the target.
			began := begun != nil || (!attempted && w.replica.begun[domain] == txn.MariaDB)
			skip, through, err = w.session.AppliedAlone(run, txn, first, !attempted && (j.unsure || !w.replica.hasApplied(domain)), began)
			if skip && err == nil && w.replica.failedBefore == txn.MariaDB {
				// In the target's binlog because what its statement wrote
				// before the error stayed, not because it was applied.
				return &stayedError{gtid: txn.GTID(), err: fmt.Errorf("apply %s: the run before this one stopped on it (%s), and the target logged what its statement wrote before that error under its GTID: "+
					"it is on the target in part (a table that is not transactional keeps what each statement wrote), so gapless neither takes it for applied nor runs it again; "+
					"make the target's tables what the source's were after it (`gapless verify` compares them), then replicate with --skip-gtid %s (skipping it without that loses its changes)",
					txn.GTID(), w.replica.failedBeforeErr, txn.GTID())}
			}
			if through != (gtid.MariaDBGTID{}) {
				w.log.Info("the target's binlog holds groups applied alone past the position whose positions were not written (a run killed, or a round trip lost); they are taken as applied", "from", txn.GTID(), "through", through.String())
				w.replica.through.Store(domain, through)
			}
		}
		if !skip && err == nil && len(j.txns) == 1 && target.PartsStay(txn) {
			// Its round trip first commits that it begins
			// (Options.BegunMark): a run before this one, or a round
			// trip of this one that was lost, may have left it in part.
			if begun == nil && w.replica.begun[domain] == txn.MariaDB {
				begun = errBegunBefore
			}
			if begun != nil {
				return partsStay(txn, begun)
			}
		}
		// Whose turn it already is (always so with causal order) commits
		// in the same round trip as it executes.
		commitNow := !skip && (!strict || clog.turn(j.gi))
		if !skip && err == nil {
			attempted = true
			switch {
			case held:
				held = false
				err = w.session.Continue(run, commitNow)
			case commitNow:
				err = w.session.Apply(run, j.txns, stmt)
			default:
				err = w.session.Execute(run, j.txns, stmt)
			}
		}
		if err == nil && strict && !commitNow {
			if early {
				clog.execute(j.gi, j.last(), true)
				executed = true
			}
			w.drainYield()
			w.setState(StateWaitingCommit, j)
			err = clog.waitTurn(run, j.gi, w.yield)
			switch {
			case errors.Is(err, errYield):
				w.log.Info("rolled back to let an earlier transaction take its lock", "gtid", txn.GTID())
				begun = err
				w.session.Rollback(run)
				release()
				w.replica.retried(RetryYield)
				w.setState(StateRetrying, j)
				if err := clog.waitTurn(run, j.gi, nil); err != nil {
					return err
				}
				continue
			case err != nil:
				w.session.Rollback(run)
				return err
			}
		}
		switch {
		case err != nil || commitNow:
		case skip:
			err = w.session.Skip(run, txn, stmt)
		default:
			err = w.session.Commit(run, txn)
		}
		if err == nil {
			executed = false
			if !skip && len(j.txns) == 1 && w.session.GuardsPosition(txn) {
				// Before the commit is known: the next group may start then.
				w.replica.guarded.Store(&guardedGroup{gi: j.gi, domain: txn.MariaDB.Domain})
			}
			if skip && !j.skip {
				// Found on the target, a run before's: the domain's next
				// group may be one of that run's too (another server id of
				// the domain's, say), so this run has applied none yet.
				w.passCommitted(j)
				return nil
			}
			w.committed(j)
			return nil
		}
		release()
		var ae *target.ApplyError
		if !errors.As(err, &ae) {
			return err
		}
		if target.Lost(ae.Err) || target.Interrupted(ae.Err) {
			cut = ae
		} else {
			begun = ae
		}
		if target.Lost(ae.Err) {
			w.close()
			if lost++; lost >= maxLost {
				return fmt.Errorf("%w: the target dropped the connection applying it %d times in a row, each time on a connection made again; "+
					"see the target's error log for why (the transaction is not applied, its position is where the run stopped)", ae, lost)
			}
			w.log.Warn("target connection lost; reconnecting", "gtid", txn.GTID(), "error", ae.Err)
			w.replica.retried(RetryLostConnection)
			time.Sleep(min(time.Duration(lost)*10*time.Millisecond, 200*time.Millisecond))
			continue
		}
		if target.Interrupted(ae.Err) && w.session.HoldsTemporary() {
			// The same, on the connection that holds the source's
			// temporary tables, kept: only its transaction ends, and the
			// checkpoint is read through the pool.
			w.session.Rollback(run)
			if clog.dropped(j.gi) {
				return w.settleDropped(run, j)
			}
			done, err := w.applied(run, txn)
			if err != nil {
				w.log.Warn("cannot read the position back; reconnecting", "error", err)
				w.close()
				continue
			}
			if done {
				w.committed(j)
				return nil
			}
			w.replica.retried(RetryInterrupted)
			if early {
				// As after a lost connection: again only once its
				// dependencies have committed.
				early = false
				w.setState(StateWaitingDeps, j)
				if err := clog.waitDeps(run, j.gi, j.deps, false, nil); err != nil {
					return err
				}
			}
			continue
		}
		if target.Interrupted(ae.Err) {
			// The watchdog broke a lock wait, or a stop rolled back a batch;
			// the statement interrupted may have been the COMMIT, so the
			// checkpoint, read on a new connection, says whether the job
			// committed and, unless the stop dropped it, must run again.
			w.close()
			if clog.dropped(j.gi) {
				return w.settleDropped(run, j)
			}
			w.replica.retried(RetryInterrupted)
			continue
		}
		if ae.Transient() && retries < maxRetries {
			retries++
			w.replica.retriedAfter(ae.Code)
			w.setState(StateRetrying, j)
			w.log.Info("retrying after a transient target error", "gtid", txn.GTID(), "error", ae.Message, "retry", retries)
			time.Sleep(time.Duration(retries) * 5 * time.Millisecond)
			continue
		}
		if lateRetry && !ae.Transient() {
			lateRetry = false
			w.replica.retried(RetryOutOfOrder)
			w.setState(StateRetrying, j)
			if err := clog.waitTurn(run, j.gi, nil); err != nil {
				return err
			}
			continue
		}
		return ae
	}
}

// runAhead begins a job with its transactions that share no row with a
// transaction still to commit before them (job.ahead), while those run,
// and reports whether they executed. Whatever goes wrong, the job then
// runs whole, as any other, once its dependencies have executed: an error
// it meets again is reported from there.
func (w *worker) runAhead(ctx context.Context, j *job) bool {
	w.setState(StateApplying, j)
	err := w.session.ExecuteAhead(ctx, j.txns, j.ahead, w.checkpointStatement(j))
	if err == nil {
		for _, a := range j.ahead {
			if a {
				w.replica.ranAhead.Add(1)
			}
		}
		return true
	}
	w.log.Debug("the transactions ahead failed; the batch runs whole after its dependencies", "gtid", j.lastTxn().GTID(), "error", err)
	var ae *target.ApplyError
	if !errors.As(err, &ae) || target.Lost(ae.Err) || target.Interrupted(ae.Err) {
		w.close()
	}
	return false
}

// settleDropped ends a job a stop interrupted: it committed if the
// checkpoint says so, and is dropped otherwise.
func (w *worker) settleDropped(ctx context.Context, j *job) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	done, err := w.applied(ctx, j.lastTxn())
	if err != nil {
		return fmt.Errorf("a stop interrupted %s, and whether it committed is unknown: %w", j.lastTxn().GTID(), err)
	}
	if done {
		w.committed(j)
		return nil
	}
	w.replica.rolledBack.Add(int64(len(j.txns)))
	return errDropped
}

// errRoundTripLost is why a group may have run in part when the round trip
// of several groups that held it was lost amid them.
var errRoundTripLost = errors.New("the target connection was lost, or a statement interrupted, while a round trip of groups applied alone that held it ran")

// errBegunBefore is why a group may have run in part when a run before
// this one began it (checkpoint.Store.Begun) and did not write its position.
var errBegunBefore = errors.New("a run before this one began it and stopped, or was killed, before its position was written")

// partsStay is the error that stops the run at txn, a group whose
// statements' writes stay on the target as each runs (target.PartsStay),
// when a try of it failed or was lost (why) after it may have begun.
func partsStay(txn *binlog.Transaction, why error) error {
	var ae *target.ApplyError
	if !errors.As(why, &ae) {
		why = fmt.Errorf("apply %s: %w", txn.GTID(), why)
	}
	return &stayedError{gtid: txn.GTID(), err: fmt.Errorf("%w; it writes tables that are not transactional on the target (or makes a table before writing its rows), "+
		"so what its statements before the one that failed or was cut off wrote may be on the target: gapless does not run it again, "+
		"as MariaDB's replica does not retry such a transaction; make the target's tables what the source's were after it, "+
		"then replicate with --skip-gtid %s (skipping it without that loses its changes); or, to have it run, make them what they were "+
		"before it and delete its row from %s.begun", why, txn.GTID(), checkpoint.Schema)}
}

// stayedError is partsStay's error: it says how to go on.
type stayedError struct {
	gtid string
	err  error
}

func (e *stayedError) Error() string { return e.err.Error() }
func (e *stayedError) Unwrap() error { return e.err }

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
	for i, txn := range j.txns {
		w.replica.clog.commit(j.gi + int64(i))
		if w.replica.listsAbove() {
			w.mine = append(w.mine, committedTxn{gi: j.gi + int64(i), gtid: txn.MariaDB})
		}
	}
}

// rowTransactions reports whether every transaction of a job is one of row
// events, or of statements the decoder could read, on transactional
// tables, which holds its changes until COMMIT. (Other statements may use
// what no lock guards: a temporary table, a non-transactional table.)
func rowTransactions(txns []*binlog.Transaction) bool {
	for _, txn := range txns {
		if !target.Batchable(txn) || target.NeedsStatementSession(txn) {
			return false
		}
	}
	return true
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

// noteLost tells the statement session of temporary tables the target
// lost since it was told last (Replica.lost).
func (w *worker) noteLost() {
	if w.slot != 0 || w.session == nil {
		return
	}
	if n := w.replica.lostN.Load(); n != w.lostSeen {
		w.lostSeen = n
		w.session.Lose(w.replica.lostTemporary())
	}
}

// keepTemporary copies, as the run ends, the temporary tables the source's
// sessions hold in the statement session, for the next run.
func (w *worker) keepTemporary() {
	if w.slot != 0 || w.session == nil || !w.replica.restored {
		return
	}
	if w.session.Parked() {
		w.log.Warn(parkedStopWarning)
	}
	kept, lost := w.session.SaveTemporary(w.replica.cfg.Stream)
	if len(lost) > 0 || w.session.Lacks() > 0 {
		// The next run must know of them (from the binlog).
		w.replica.setLost(w.session.Held())
	}
	if len(kept) > 0 {
		w.log.Info("the temporary tables the source's sessions hold are kept for the next run", "tables", strings.Join(kept, ", "))
	}
	if len(lost) > 0 {
		w.log.Warn("temporary tables the source's sessions hold end with this run: a statement of the source that reads one will stop the next run (1146); stop gapless when the source's sessions hold none", "tables", strings.Join(lost, "; "))
	}
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
	a, err := w.replica.store.Applied(ctx)
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
