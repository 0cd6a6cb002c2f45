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
	// ahead marks the transactions of a batch that wait for none of deps,
	// directly or through a transaction of the batch that does: they may
	// run before the others, while deps execute (worker.runAhead). Nil when
	// every transaction or none waits.
	ahead []bool
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
