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
	"sync"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// maxRetries bounds how often one transaction is tried again after a
// deadlock or lock wait timeout; lost connections are retried until the
// target is back or the run is stopped.
const maxRetries = 10

// WorkerState is what a worker is doing, for status reports.
type WorkerState string

const (
	StateIdle          WorkerState = "idle"
	StateWaitingDeps   WorkerState = "waiting for dependencies"
	StateApplying      WorkerState = "applying"
	StateWaitingCommit WorkerState = "waiting for prior commit"
	StateRetrying      WorkerState = "retrying"
	StateReconnecting  WorkerState = "reconnecting"
)

// WorkerStatus is a snapshot of one worker.
type WorkerStatus struct {
	Slot  int
	State WorkerState
	GTID  string // the transaction it holds, "" when idle
	Since time.Time
}

type job struct {
	gi   int64
	txn  *binlog.Transaction
	deps []int64
	skip bool
}

type result struct {
	w   *worker
	job *job
	err error
}

type worker struct {
	slot    int
	replica *Replica
	db      *sql.DB
	opts    target.Options
	log     *slog.Logger

	session *target.Session
	connID  int64
	jobs    chan *job
	yield   chan struct{} // the watchdog asks the worker to roll back and retry at its turn
	// mine lists the transactions this worker committed above the gap-less
	// position (causal commit order), for its checkpoint row.
	mine []committedTxn

	mu     sync.Mutex
	status WorkerStatus
	gi     int64 // group index of the transaction held
}

type committedTxn struct {
	gi   int64
	gtid gtid.MariaDBGTID
}

func newWorker(r *Replica, slot int) *worker {
	return &worker{
		slot: slot, replica: r, db: r.cfg.Target, opts: r.cfg.Session, log: r.log,
		jobs: make(chan *job, 1), yield: make(chan struct{}, 1),
		status: WorkerStatus{Slot: slot, State: StateIdle, Since: time.Now()},
	}
}

func (w *worker) setState(s WorkerState, j *job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.State = s
	w.status.Since = time.Now()
	w.status.GTID = ""
	w.gi = 0
	if j != nil {
		w.status.GTID = j.txn.GTID()
		w.gi = j.gi
	}
}

func (w *worker) snapshot() (WorkerStatus, int64, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.gi, w.connID
}

// loop applies jobs until the channel closes.
func (w *worker) loop(ctx context.Context, done chan<- result) {
	for j := range w.jobs {
		err := w.apply(ctx, j)
		w.setState(StateIdle, nil)
		done <- result{w: w, job: j, err: err}
	}
	w.close()
}

// apply runs one job to its commit, or to errDropped when a stop or an
// error stop comes first.
func (w *worker) apply(ctx context.Context, j *job) error {
	clog := w.replica.clog
	strict := w.replica.cfg.CommitOrder == Strict
	// The transaction in flight always finishes; only waits end early.
	run := context.WithoutCancel(ctx)
	w.setState(StateWaitingDeps, j)
	if err := clog.waitDeps(run, j.gi, j.deps); err != nil {
		return err
	}
	if !strict {
		if err := clog.waitWindow(run, j.gi, causalWindow); err != nil {
			return err
		}
	}
	retries := 0
	for {
		if w.session == nil {
			w.setState(StateReconnecting, j)
			if err := w.reconnect(ctx); err != nil {
				return err
			}
			if err := w.replica.lock.Ensure(run); err != nil {
				return err
			}
			// The connection may have died during a commit: the checkpoint knows.
			done, err := w.applied(run, j.txn)
			if err != nil {
				w.log.Warn("cannot read the position back; reconnecting", "error", err)
				w.close()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if done {
				clog.commit(j.gi)
				w.remember(j)
				return nil
			}
		}
		w.setState(StateApplying, j)
		stmt := w.checkpointStatement(j)
		var err error
		if !j.skip && j.txn.Has(binlog.FlagStandalone) {
			// A standalone statement commits before its checkpoint: it may be on the target already.
			j.skip, err = w.session.InBinlog(run, j.txn)
		}
		if !j.skip && err == nil {
			err = w.session.Execute(run, j.txn, stmt)
		}
		if err == nil && strict {
			w.drainYield()
			w.setState(StateWaitingCommit, j)
			err = clog.waitTurn(run, j.gi, w.yield)
			switch {
			case errors.Is(err, errYield):
				w.log.Info("rolled back to let an earlier transaction take its lock", "gtid", j.txn.GTID())
				w.session.Rollback(run)
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
		if err == nil {
			if j.skip {
				err = w.session.Skip(run, j.txn, stmt)
			} else {
				err = w.session.Commit(run, j.txn)
			}
		}
		if err == nil {
			clog.commit(j.gi)
			w.remember(j)
			return nil
		}
		var ae *target.ApplyError
		if !errors.As(err, &ae) {
			return err
		}
		if target.Lost(ae.Err) {
			w.log.Warn("target connection lost; reconnecting", "gtid", j.txn.GTID(), "error", ae.Err)
			w.close()
			continue
		}
		if ae.Transient() && retries < maxRetries {
			retries++
			w.setState(StateRetrying, j)
			w.log.Info("retrying after a transient target error", "gtid", j.txn.GTID(), "error", ae.Message, "retry", retries)
			time.Sleep(time.Duration(retries) * 5 * time.Millisecond)
			continue
		}
		return ae
	}
}

func (w *worker) drainYield() {
	select {
	case <-w.yield:
	default:
	}
}

// checkpointStatement is the position row the job's transaction writes.
func (w *worker) checkpointStatement(j *job) string {
	store := w.replica.store
	if w.replica.cfg.CommitOrder == Strict {
		return store.Statement(w.slot, j.txn.MariaDB, j.txn.SourceTime)
	}
	lowGI, low := w.replica.gapless()
	kept := w.mine[:0]
	for _, m := range w.mine {
		if m.gi > lowGI {
			kept = append(kept, m)
		}
	}
	w.mine = kept
	above := make([]gtid.MariaDBGTID, len(w.mine))
	for i, m := range w.mine {
		above[i] = m.gtid
	}
	return store.CausalStatement(w.slot, j.txn.MariaDB, j.txn.SourceTime, low, above)
}

func (w *worker) remember(j *job) {
	if w.replica.cfg.CommitOrder == Causal {
		w.mine = append(w.mine, committedTxn{gi: j.gi, gtid: j.txn.MariaDB})
	}
}

func (w *worker) connect(ctx context.Context) error {
	w.close()
	s, err := target.Open(ctx, w.db, w.opts)
	if err != nil {
		return err
	}
	var id int64
	if err := s.Conn().QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		s.Close()
		return fmt.Errorf("target: %w", err)
	}
	w.mu.Lock()
	w.session, w.connID = s, id
	w.mu.Unlock()
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
	if w.session != nil {
		w.session.Close()
		w.session = nil
		w.connID = 0
	}
}
