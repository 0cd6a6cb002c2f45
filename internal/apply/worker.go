// worker.go is one applier connection: it applies a transaction and its
// position in one target transaction, retries what may succeed on a second
// try, and after a lost connection asks the checkpoint whether the commit in
// flight happened before trying again, so nothing is applied twice.
package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/target"
)

// maxRetries bounds how often one transaction is tried again after a
// deadlock or lock wait timeout; lost connections are retried until the
// target is back or the run is stopped.
const maxRetries = 10

// WorkerState is what a worker is doing, for status reports.
type WorkerState string

const (
	StateIdle     WorkerState = "idle"
	StateApplying WorkerState = "applying"
	StateRetrying WorkerState = "retrying"
)

type worker struct {
	slot    int
	db      *sql.DB
	opts    target.Options
	store   *checkpoint.Store
	session *target.Session
	log     *slog.Logger
}

func (w *worker) connect(ctx context.Context) error {
	if w.session != nil {
		w.session.Close()
		w.session = nil
	}
	s, err := target.Open(ctx, w.db, w.opts)
	if err != nil {
		return err
	}
	w.session = s
	return nil
}

// apply applies txn exactly once. stop ends the wait for a lost target; the
// transaction in flight itself always runs to its end.
func (w *worker) apply(ctx context.Context, txn *binlog.Transaction, skip bool) error {
	run := context.WithoutCancel(ctx)
	retries := 0
	for {
		if w.session == nil {
			if err := w.reconnect(ctx); err != nil {
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
				return nil
			}
		}
		var err error
		stmt := w.store.Statement(w.slot, txn.MariaDB, txn.SourceTime)
		if skip {
			err = w.session.Skip(run, txn, stmt)
		} else {
			err = w.session.Apply(run, txn, stmt)
		}
		if err == nil {
			return nil
		}
		var ae *target.ApplyError
		if !errors.As(err, &ae) {
			return err
		}
		if target.Lost(ae.Err) {
			w.log.Warn("target connection lost; reconnecting", "gtid", txn.GTID(), "error", ae.Err)
			w.session.Close()
			w.session = nil
			continue
		}
		if ae.Transient() && retries < maxRetries {
			retries++
			w.log.Info("retrying after a transient target error", "gtid", txn.GTID(), "error", ae.Message, "retry", retries)
			time.Sleep(time.Duration(retries) * 10 * time.Millisecond)
			continue
		}
		return ae
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
	pos, err := w.store.Position(ctx)
	if err != nil {
		return false, err
	}
	return pos.Contains(txn.MariaDB), nil
}

func (w *worker) close() {
	if w.session != nil {
		w.session.Close()
		w.session = nil
	}
}
