// watchdog.go breaks the one wait cycle the target cannot see. Under strict
// commit order a later transaction that has executed waits, in gapless, for
// the earlier ones to commit; if it holds a row lock an earlier one needs
// (a conflict the policy could not see: a gap lock, a trigger, a key gapless
// does not track), the earlier one waits for it inside InnoDB and neither
// moves until innodb_lock_wait_timeout. The watchdog looks at the target's
// lock waits while some worker has been executing for a while, and tells the
// later transaction to roll back and run again at its turn.
//
// A later transaction may also be executing still, itself waiting for the
// lock of a transaction that waits for its turn: jobs start as soon as their
// dependencies have executed, so such waits are normal. If an earlier
// transaction then needs one of its locks (it had to run again), the later
// one's statement is killed (KILL QUERY ID, that statement alone): it
// rolls back and runs again.
//
// Such conflicts come in runs (a trigger on the target, a key the policy
// does not know), and each costs a rollback and a look at the lock waits. So
// for serializeAfterConflict after one, jobs start only at their turn, one
// after another, instead of beside the jobs before them.
package apply

import (
	"context"
	"database/sql"
	"time"
)

const (
	// watchdogEvery is how often the watchdog looks. It must be well over
	// 100 ms: InnoDB refreshes what information_schema shows of its
	// transactions and lock waits only when nobody has read it for 100 ms,
	// so a faster watchdog would read the same stale waits for ever, and
	// a lock cycle it must break would stall the run (measured: a wait of
	// minutes on parent and child tables whose foreign key the policy did
	// not know).
	watchdogEvery = 250 * time.Millisecond
	// watchdogAfter is how long a worker executes before its lock waits are looked at.
	watchdogAfter = 100 * time.Millisecond
	// watchdogQueryTimeout bounds one look at the lock waits, so that a
	// target that went away does not take the watchdog with it.
	watchdogQueryTimeout = 5 * time.Second
	// serializeAfterConflict is how long after breaking a lock wait jobs
	// start only at their turn.
	serializeAfterConflict = time.Second
)

// serializing reports whether the watchdog broke a lock wait lately.
func (r *Replica) serializing() bool {
	last := r.lastConflict.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < serializeAfterConflict
}

func (r *Replica) watchdog() func() {
	if r.cfg.CommitOrder != Strict || r.cfg.Workers < 2 {
		return func() {}
	}
	return every(watchdogEvery, r.breakLockCycles)
}

// every calls tick every period, on a goroutine of its own, until the
// returned func is called; that ends tick's context and waits for it.
func every(period time.Duration, tick func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				tick(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

type heldBy struct {
	w  *worker
	gi int64
}

func (r *Replica) breakLockCycles(ctx context.Context) {
	byConn := map[int64]heldBy{}
	slowest := time.Duration(0)
	waitingCommit := false
	for _, w := range r.currentWorkers() {
		st, gi, conn := w.snapshot()
		switch st.State {
		case StateApplying:
			slowest = max(slowest, time.Since(st.Since))
		case StateWaitingCommit, StateAhead:
			waitingCommit = true
		}
		if conn != 0 && gi != 0 {
			byConn[conn] = heldBy{w, gi}
		}
	}
	if slowest < watchdogAfter || !waitingCommit {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, watchdogQueryTimeout)
	defer cancel()
	rows, err := r.cfg.Target.QueryContext(ctx, `
		SELECT req.trx_mysql_thread_id, blk.trx_mysql_thread_id, p.QUERY_ID
		FROM information_schema.INNODB_LOCK_WAITS w
		JOIN information_schema.INNODB_TRX req ON req.trx_id = w.requesting_trx_id
		JOIN information_schema.INNODB_TRX blk ON blk.trx_id = w.blocking_trx_id
		LEFT JOIN information_schema.PROCESSLIST p ON p.ID = blk.trx_mysql_thread_id`)
	if err != nil {
		r.log.Debug("watchdog: cannot read lock waits", "error", err)
		return
	}
	defer rows.Close()
	kills := map[int64]int64{} // connection -> the statement of its to interrupt
	for rows.Next() {
		var waiter, blocker int64
		var query sql.NullInt64
		if rows.Scan(&waiter, &blocker, &query) != nil {
			continue
		}
		a, okA := byConn[waiter]
		b, okB := byConn[blocker]
		if !okA || !okB || b.gi <= a.gi {
			continue
		}
		r.lastConflict.Store(time.Now().UnixNano())
		switch st, _, _ := b.w.snapshot(); st.State {
		case StateWaitingCommit, StateAhead:
			r.brokeLockWait(false)
			select {
			case b.w.yield <- struct{}{}:
			default:
			}
		case StateApplying:
			if _, seen := kills[blocker]; !seen && query.Valid {
				r.brokeLockWait(true)
				kills[blocker] = query.Int64
			}
		}
	}
	rows.Close()
	for conn, query := range kills {
		r.log.Info("interrupting a later transaction that holds a lock an earlier one waits for", "connection", conn)
		r.killStatement(ctx, conn, query)
	}
}

// killStatement interrupts one statement a target connection runs, by its
// query id (the processlist's QUERY_ID), once per look however many waits
// it holds: a statement that has ended by the time the kill comes is left
// alone, and so is what its connection runs next (several KILL QUERY to
// one connection preceded a script left unanswered: unanswered.go).
func (r *Replica) killStatement(ctx context.Context, conn, query int64) {
	_, err := r.cfg.Target.ExecContext(ctx, "KILL QUERY ID ?", query)
	if err != nil {
		r.log.Debug("cannot interrupt, or the statement has ended", "connection", conn, "query", query, "error", err)
	}
}
