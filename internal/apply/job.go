// job.go is one job's life on its worker, top to bottom: wait for what it
// depends on (running ahead what may), try it on the target, wait for its
// turn, commit; after an error, settle what the try left and try again or
// stop. Each special case of a try is a step named after it.
//
// Exactly once: the checkpoint row commits with the data; a job that may
// have committed without the worker hearing of it (a lost connection, an
// interrupted COMMIT) reads the checkpoint back before it runs again, and a
// group that may be on the target before its position (applied alone) asks
// the target first.
package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

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
	// ahead is, of each transaction of a batch, how many of its first
	// events (whole statements, put first by coordinator.cut) wait for
	// none of deps, directly or through a transaction of the batch or a
	// statement before them that does: they may run before the rest, while
	// deps execute (worker.runAhead). Nil when nothing waits or all of it
	// does (aheadOf).
	ahead []int
}

func (j *job) last() int64 { return j.gi + int64(len(j.txns)) - 1 }

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

// applyJob runs one job to its commit, or to the error that ends it.
func (w *worker) applyJob(ctx context.Context, j *job) error {
	r := w.newJobRun(ctx, j)
	defer r.release()
	if err := r.start(); err != nil {
		return err
	}
	for {
		if then, err := r.try(); then == finish {
			return err
		}
	}
}

// What comes after a step of a try.
type next int

const (
	proceed  next = iota // the try goes on
	tryAgain             // a new try begins
	finish               // the job is over, with the error returned beside it (nil: committed)
)

// jobRun is one job's life on its worker: what its tries have met so far.
type jobRun struct {
	w    *worker
	j    *job
	txn  *binlog.Transaction // the job's last transaction, which its position names
	clog *commitLog
	ctx  context.Context // the worker's: a stop ends it
	// run is ctx without its end: the transaction in flight always
	// finishes; only waits end early.
	run    context.Context
	strict bool
	// early: the job starts once its dependencies have executed, not
	// committed (see start); after a lost connection it waits for their
	// commits again (startAfterCommitted).
	early bool
	// held: the transactions ahead have executed, and the target
	// transaction waits open, with their locks, for the others.
	held bool
	// retries counts the tries after a transient error, lost those on a
	// connection lost.
	retries, lost int
	// attempted: this job has been sent to the target once in this run, so
	// its group may be there though its position is not.
	attempted bool
	// begun: why this job may have run in part already (the error its
	// last try met), or nil; cut: the error that cut its last try off
	// (a lost or interrupted connection), which began it only if its
	// begun mark was written (see PartsStay in foundOnTarget).
	begun, cut error
	// lateRetry: a job that failed after starting beside its dependencies
	// runs once more after everything before it has committed, so that an
	// error is only ever reported from the order the source had.
	lateRetry bool
	// executed: the job has executed and holds its row locks, told to the
	// commit log (release undoes that).
	executed bool
}

func (w *worker) newJobRun(ctx context.Context, j *job) *jobRun {
	strict := w.replica.cfg.CommitOrder == Strict
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
	return &jobRun{
		w: w, j: j, txn: j.lastTxn(), clog: w.replica.clog,
		ctx: ctx, run: context.WithoutCancel(ctx),
		strict: strict, early: early, lateRetry: early,
	}
}

// release tells the commit log that the job no longer holds what it
// executed.
func (r *jobRun) release() {
	if r.executed {
		r.clog.execute(r.j.gi, r.j.last(), false)
		r.executed = false
	}
}

// start waits until the job may start: its dependencies executed or
// committed, and under strict order, where conflicts the policy cannot see
// are about, its turn. A batch runs its transactions that wait for nothing
// ahead meanwhile (runAhead).
func (r *jobRun) start() error {
	w, j, clog := r.w, r.j, r.clog
	ahead := r.early && j.ahead != nil && w.session != nil && !w.replica.serializing()
	if w.session != nil {
		// The script is made while the jobs before it run, not after.
		if ahead {
			w.session.Prepare(j.txns, j.ahead)
		} else {
			w.session.Prepare(j.txns, nil)
		}
	}
	r.held = ahead && w.runAhead(r.run, j)
	if r.held {
		w.drainYield()
		w.setState(StateAhead, j)
		err := clog.waitDeps(r.run, j.gi, j.deps, r.early, w.yield)
		if err != nil {
			w.session.Rollback(r.run)
			r.held = false
		}
		switch {
		case errors.Is(err, errYield):
			// A lock the policy could not see: the job runs whole, as
			// any other, once its dependencies have executed.
			w.log.Info("rolled back the transactions run ahead to let an earlier transaction take its lock", "gtid", r.txn.GTID())
			w.replica.retried(RetryYield)
		case err != nil:
			return err
		}
	}
	if !r.held {
		w.setState(StateWaitingDeps, j)
		if err := clog.waitDeps(r.run, j.gi, j.deps, r.early, nil); err != nil {
			return err
		}
	}
	if !r.strict {
		// Measured from the batch's first transaction: from its last, a
		// batch longer than the window would never come within it.
		if err := clog.waitWindow(r.run, j.gi, causalWindow); err != nil {
			return err
		}
	}
	if r.strict && !r.held && (w.replica.serializing() || target.PreparesXA(r.txn)) {
		// Conflicts the policy cannot see are about: start at the turn.
		// So too an XA PREPARE: its branch, once prepared, keeps its
		// locks until the group that ends it, and neither the watchdog
		// nor a retry can take them back from an earlier transaction
		// that waits for one (a gap the policy does not see).
		if err := clog.waitTurn(r.run, j.gi, nil); err != nil {
			return err
		}
	}
	return nil
}

// try is one try of the job: on a connection, unless it is found on the
// target already, it executes, waits for its turn and commits.
func (r *jobRun) try() (next, error) {
	w, j := r.w, r.j
	if w.session == nil {
		if then, err := r.reconnect(); then != proceed {
			return then, err
		}
	}
	if then, err := r.mayHaveBegun(); then != proceed {
		return then, err
	}
	w.setState(StateApplying, j)
	stmt := w.checkpointStatement(j)
	skip, then, err := r.foundOnTarget()
	if then != proceed {
		return then, err
	}
	// Whose turn it already is (always so with causal order) commits
	// in the same round trip as it executes.
	commitNow := !skip && (!r.strict || r.clog.turn(j.gi))
	if !skip && err == nil {
		r.attempted = true
		switch {
		case r.held:
			r.held = false
			err = w.session.Continue(r.run, commitNow)
		case commitNow:
			err = w.session.Apply(r.run, j.txns, stmt)
		default:
			err = w.session.Execute(r.run, j.txns, stmt)
		}
	}
	if err == nil && r.strict && !commitNow {
		if then, err := r.waitTurn(); then != proceed {
			return then, err
		}
	}
	switch {
	case err != nil || commitNow:
	case skip:
		err = w.session.Skip(r.run, r.txn, stmt)
	default:
		err = w.session.Commit(r.run, r.txn)
	}
	if err == nil {
		r.committed(skip)
		return finish, nil
	}
	r.release()
	return r.afterError(err)
}

// reconnect gives the worker a connection, and reads the position back: the
// connection may have died during a commit.
func (r *jobRun) reconnect() (next, error) {
	w, j := r.w, r.j
	// lost: the worker had a connection (this job's or an
	// earlier one's), not one it could not open at its start.
	lost := w.connected
	if lost {
		w.setState(StateReconnecting, j)
	} else {
		w.setState(StateConnecting, j)
	}
	err := w.reconnect(r.ctx)
	if err != nil && r.ctx.Err() != nil {
		// A stop came first. A job it dropped needs no connection:
		// the checkpoint says whether an earlier attempt committed.
		// One the stop point includes must commit, so it connects
		// still, for as long as a stop waits for the target.
		if r.clog.dropped(j.gi) {
			if !r.attempted {
				return finish, errDropped
			}
			return finish, w.settleDropped(r.run, j)
		}
		patient, cancel := context.WithTimeout(r.run, settleTimeout)
		err = w.reconnect(patient)
		cancel()
	}
	if err != nil {
		return finish, err
	}
	if err := w.replica.lock.Ensure(r.run); err != nil {
		return finish, err
	}
	if then, err := r.readPosition(); then != proceed {
		if then == tryAgain {
			time.Sleep(100 * time.Millisecond)
		}
		return then, err
	}
	// After a lost connection the transactions around this one run
	// again in whatever order their workers come back, so it starts
	// again only once its dependencies have committed.
	if r.early && lost {
		if err := r.startAfterCommitted(); err != nil {
			return finish, err
		}
	}
	return proceed, nil
}

// readPosition reads the position back, for a job an earlier try of which
// may have committed: finish when it did; tryAgain, on a new connection,
// when the position could not be read.
func (r *jobRun) readPosition() (next, error) {
	done, err := r.w.applied(r.run, r.txn)
	if err != nil {
		r.w.log.Warn("cannot read the position back; reconnecting", "error", err)
		r.w.close()
		return tryAgain, nil
	}
	if done {
		r.w.committed(r.j)
		return finish, nil
	}
	return proceed, nil
}

// startAfterCommitted makes the job, which started beside its dependencies,
// wait for their commits before it runs again: the transactions around it
// run again in whatever order their workers come back.
func (r *jobRun) startAfterCommitted() error {
	r.early = false
	r.w.setState(StateWaitingDeps, r.j)
	return r.clog.waitDeps(r.run, r.j.gi, r.j.deps, false, nil)
}

// mayHaveBegun settles what the try before left unknown: a round trip of
// several groups that held this one and was lost may have committed it,
// and a try cut off began it if its begun mark is the domain's last.
func (r *jobRun) mayHaveBegun() (next, error) {
	w, txn := r.w, r.txn
	if r.j.unsure && !r.attempted && w.session != nil {
		// A round trip that held it was lost or failed amid it: its
		// position may be written already.
		if done, err := w.applied(r.run, txn); err == nil && done {
			w.committed(r.j)
			return finish, nil
		}
		r.cut = errRoundTripLost
	}
	if r.cut != nil && w.session != nil && target.Marked(txn) {
		// It began if its mark, committed before its first
		// statement, is the domain's last one.
		marks, err := w.replica.store.Begun(r.run)
		if err != nil {
			return finish, err
		}
		if marks[txn.MariaDB.Domain] == txn.MariaDB {
			r.begun = r.cut
		}
	}
	r.cut = nil
	return proceed, nil
}

// foundOnTarget reports whether the job is on the target already, to be
// skipped (its position written at its turn): a group the run before
// applied without its position, or one applied alone that the target holds.
// A group whose writes stay that may have run in part stops the run
// (finish). Any other error is the try's (proceed, err).
func (r *jobRun) foundOnTarget() (skip bool, then next, err error) {
	w, j, txn := r.w, r.j, r.txn
	skip = j.skip
	domain := txn.MariaDB.Domain
	first := r.attempted || j.unsure || !w.replica.hasApplied(domain)
	if !skip {
		skip, err = w.replica.appliedBefore(j)
		if skip && err == nil && w.session != nil {
			err = w.session.EndBinlogged(r.run, txn)
		}
	}
	if !skip && err == nil && len(j.txns) == 1 && target.AppliesAlone(txn) && (first || !w.replica.followsGuarded(j.gi, domain)) {
		// A DDL, a non-transactional write or an XA PREPARE is on the
		// target before its checkpoint: it may be there already. (Not
		// so right after a group whose guarded position found nothing
		// of the domain past it: then the group is not there.)
		var stop error
		if skip, stop, err = r.appliedAlone(first); stop != nil {
			return skip, finish, stop
		}
	}
	if !skip && err == nil && len(j.txns) == 1 && target.PartsStay(txn) {
		// Its round trip first commits that it begins
		// (Options.BegunMark): a run before this one, or a round
		// trip of this one that was lost, may have left it in part.
		if r.begun == nil && w.replica.begun[domain] == txn.MariaDB {
			r.begun = errBegunBefore
		}
		if r.begun != nil {
			return skip, finish, partsStay(txn, r.begun)
		}
	}
	return skip, proceed, err
}

// appliedAlone asks the target whether it holds the job's group, one
// applied alone; first says no group of its domain committed in this run
// before it (target.Session.AppliedAlone). stop is the error that stops the
// run on a group the target holds only in part (stayedBefore).
func (r *jobRun) appliedAlone(first bool) (skip bool, stop, err error) {
	w, j, txn := r.w, r.j, r.txn
	domain := txn.MariaDB.Domain
	// Resumed: groups past the position may have run before this
	// try (a run killed, a round trip lost), never after it.
	// Began: its mark says a try of it, this run's or the run
	// before's, started on the target.
	began := r.begun != nil || (!r.attempted && w.replica.begun[domain] == txn.MariaDB)
	skip, through, err := w.session.AppliedAlone(r.run, txn, first, !r.attempted && (j.unsure || !w.replica.hasApplied(domain)), began)
	if skip && err == nil && w.replica.failedBefore == txn.MariaDB {
		return skip, r.stayedBefore(), nil
	}
	if through != (gtid.MariaDBGTID{}) {
		w.log.Info("the target's binlog holds groups applied alone past the position whose positions were not written (a run killed, or a round trip lost); they are taken as applied", "from", txn.GTID(), "through", through.String())
		w.replica.through.Store(domain, through)
	}
	return skip, nil, err
}

// stayedBefore is the error for a group the target's binlog holds because
// what its statement wrote before the error the run before stopped on
// stayed, not because it was applied.
func (r *jobRun) stayedBefore() error {
	txn, rp := r.txn, r.w.replica
	return &stayedError{gtid: txn.GTID(), err: fmt.Errorf("apply %s: the run before this one stopped on it (%s), and the target logged what its statement wrote before that error under its GTID: "+
		"it is on the target in part (a table that is not transactional keeps what each statement wrote), so gapless neither takes it for applied nor runs it again; "+
		"make the target's tables what the source's were after it (`gapless verify` compares them), then replicate with --skip-gtid %s (skipping it without that loses its changes)",
		txn.GTID(), rp.failedBeforeErr, txn.GTID())}
}

// waitTurn waits, under strict order, for the job's turn to commit, holding
// what it executed; the watchdog may ask it to roll back and give way
// (errYield), and then it runs again at its turn.
func (r *jobRun) waitTurn() (next, error) {
	w, j := r.w, r.j
	if r.early {
		r.clog.execute(j.gi, j.last(), true)
		r.executed = true
	}
	w.drainYield()
	w.setState(StateWaitingCommit, j)
	err := r.clog.waitTurn(r.run, j.gi, w.yield)
	switch {
	case errors.Is(err, errYield):
		w.log.Info("rolled back to let an earlier transaction take its lock", "gtid", r.txn.GTID())
		r.begun = err
		w.session.Rollback(r.run)
		r.release()
		w.replica.retried(RetryYield)
		w.setState(StateRetrying, j)
		if err := r.clog.waitTurn(r.run, j.gi, nil); err != nil {
			return finish, err
		}
		return tryAgain, nil
	case err != nil:
		w.session.Rollback(r.run)
		return finish, err
	}
	return proceed, nil
}

// committed records the job as committed (skip: its position alone was
// written, the group being on the target already).
func (r *jobRun) committed(skip bool) {
	w, j, txn := r.w, r.j, r.txn
	r.executed = false
	if !skip && len(j.txns) == 1 && w.session.GuardsPosition(txn) {
		// Before the commit is known: the next group may start then.
		w.replica.guarded.Store(&guardedGroup{gi: j.gi, domain: txn.MariaDB.Domain})
	}
	if skip && !j.skip {
		// Found on the target, a run before's: the domain's next
		// group may be one of that run's too (another server id of
		// the domain's, say), so this run has applied none yet.
		w.passCommitted(j)
		return
	}
	w.committed(j)
}

// afterError decides, from the error a try met, whether the job runs again
// (after a reconnect, a transient error, or once more in the source's
// order) or the error ends it.
func (r *jobRun) afterError(err error) (next, error) {
	w, j, txn := r.w, r.j, r.txn
	var ae *target.ApplyError
	if !errors.As(err, &ae) {
		return finish, err
	}
	if target.Lost(ae.Err) || target.Interrupted(ae.Err) {
		r.cut = ae
	} else {
		r.begun = ae
	}
	switch {
	case target.Lost(ae.Err):
		w.close()
		if r.lost++; r.lost >= maxLost {
			return finish, fmt.Errorf("%w: the target dropped the connection applying it %d times in a row, each time on a connection made again; "+
				"see the target's error log for why (the transaction is not applied, its position is where the run stopped)", ae, r.lost)
		}
		w.log.Warn("target connection lost; reconnecting", "gtid", txn.GTID(), "error", ae.Err)
		w.replica.retried(RetryLostConnection)
		time.Sleep(min(time.Duration(r.lost)*10*time.Millisecond, 200*time.Millisecond))
		return tryAgain, nil
	case target.Interrupted(ae.Err) && w.session.HoldsTemporary():
		return r.interruptedKeepingTemporary()
	case target.Interrupted(ae.Err):
		// The watchdog broke a lock wait, or a stop rolled back a batch;
		// the statement interrupted may have been the COMMIT, so the
		// checkpoint, read on a new connection, says whether the job
		// committed and, unless the stop dropped it, must run again.
		w.close()
		if r.clog.dropped(j.gi) {
			return finish, w.settleDropped(r.run, j)
		}
		w.replica.retried(RetryInterrupted)
		return tryAgain, nil
	case ae.Transient() && r.retries < maxRetries:
		r.retries++
		w.replica.retriedAfter(ae.Code)
		w.setState(StateRetrying, j)
		w.log.Info("retrying after a transient target error", "gtid", txn.GTID(), "error", ae.Message, "retry", r.retries)
		time.Sleep(time.Duration(r.retries) * 5 * time.Millisecond)
		if w.session != nil && w.session.OnCluster() {
			// A try cut off with a node that died may have been
			// certified there: the position read on this node could
			// miss it while its writeset was still on the way (a
			// node answers a causal read from what it has delivered,
			// without asking the others), and the try again then
			// conflicts with it, here as 1213. The position, read
			// again now that the writeset is in, says whether it ran.
			if then, err := r.readPosition(); then != proceed {
				return then, err
			}
		}
		return tryAgain, nil
	case r.lateRetry && !ae.Transient():
		r.lateRetry = false
		w.replica.retried(RetryOutOfOrder)
		w.setState(StateRetrying, j)
		if err := r.clog.waitTurn(r.run, j.gi, nil); err != nil {
			return finish, err
		}
		return tryAgain, nil
	}
	return finish, ae
}

// interruptedKeepingTemporary is an interrupted statement on the
// connection that holds the source's temporary tables, which is kept: only
// its transaction ends, and the checkpoint is read through the pool.
func (r *jobRun) interruptedKeepingTemporary() (next, error) {
	w, j := r.w, r.j
	w.session.Rollback(r.run)
	if r.clog.dropped(j.gi) {
		return finish, w.settleDropped(r.run, j)
	}
	if then, err := r.readPosition(); then != proceed {
		return then, err
	}
	w.replica.retried(RetryInterrupted)
	if r.early {
		// As after a lost connection: again only once its
		// dependencies have committed.
		if err := r.startAfterCommitted(); err != nil {
			return finish, err
		}
	}
	return tryAgain, nil
}

// runAhead begins a job with the statements of its transactions that share
// no row with a transaction still to commit before them (job.ahead), while
// those run, and reports whether they executed. Whatever goes wrong, the
// job then runs whole, as any other, once its dependencies have executed:
// an error it meets again is reported from there.
func (w *worker) runAhead(ctx context.Context, j *job) bool {
	w.setState(StateApplying, j)
	err := w.session.ExecuteAhead(ctx, j.txns, j.ahead, w.checkpointStatement(j))
	if err == nil {
		for i, n := range j.ahead {
			if n > 0 {
				w.replica.ranAhead.Add(1)
			}
			if n > 0 && n < len(j.txns[i].Events) {
				w.replica.ranAheadInPart.Add(1)
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
