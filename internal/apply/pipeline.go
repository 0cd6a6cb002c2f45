// pipeline.go wires one session of the run: the receiver (binlog), the
// decode stage (decode.go), the workers (worker.go) and the coordinator
// (coordinator.go), each a goroutine, joined by bounded channels. A
// session ends with the coordinator's loop; the run starts another only to
// fetch a corrupt relay log again (Replica.sessions).
package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
	"gapless/internal/target"
)

// sessions runs sessions of the pipeline until one ends the run. A corrupt
// relay log is fetched again from the source, at most maxRefetches times
// at one position: the same damage again comes from the source or from the
// disk, and fetching more would loop for ever.
func (r *Replica) sessions(ctx context.Context, relay *binlog.RelayLog) (Result, error) {
	const maxRefetches = 3
	refetches, refetchedAt := 0, r.currentPosition()
	for {
		res, err := r.session(ctx, relay)
		if errors.Is(err, binlog.ErrCorruptRelay) && ctx.Err() == nil {
			if at := r.currentPosition(); !at.Equal(refetchedAt) {
				refetches, refetchedAt = 0, at
			}
			if refetches++; refetches > maxRefetches {
				return res, fmt.Errorf("%w\nthe relay log was fetched again from the source %d times and is still corrupt after position %s: check the source's binlog after that position (mariadb-binlog --start-position) and the disk under %s, then remove %s and run again",
					err, maxRefetches, refetchedAt, r.cfg.Relay.Dir, r.cfg.Relay.Dir)
			}
			r.log.Warn("relay log is corrupt; fetching its events again from the source", "error", err, "attempt", refetches, "of", maxRefetches)
			if err := relay.Reset(r.currentPosition()); err != nil {
				return res, err
			}
			continue
		}
		return res, err
	}
}

// session runs receiver, decoder, coordinator and workers until the run
// ends: it wires the stages together, and the coordinator's loop is the
// session's life.
func (r *Replica) session(ctx context.Context, relay *binlog.RelayLog) (Result, error) {
	applied, err := r.readApplied(ctx)
	if err != nil {
		return Result{}, err
	}
	// From here on a stop ends the pipeline at a gap-less point, which
	// reports it; before, what the start-up read gave up on it.
	r.applying = true
	if !relay.Continues(applied.Position) {
		if err := relay.Reset(applied.Position); err != nil {
			return Result{}, err
		}
	}
	policy, err := r.newPolicy()
	if err != nil {
		return Result{}, err
	}
	ws, _ := policy.(*schedule.Writeset)
	if ws != nil {
		ws.Warn = func(msg string) { r.log.Warn(msg) }
	}
	pipeCtx, cancelPipe := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPipe()
	skip := make(map[gtid.MariaDBGTID]bool, len(r.cfg.Skip))
	for _, g := range r.cfg.Skip {
		skip[g] = true
	}
	recvErr := r.startReceiver(pipeCtx, relay, skip)
	dec := r.newDecodeStage(relay, applied, skip)
	r.observeSession(relay, dec.hand.ch, dec.budget)
	// The decoder is closed once its goroutine has ended, never under it:
	// closing the relay reader amid its Next ends in a nil file (found by
	// the conformance short list's stopped variant: a panic as a stop
	// returned while the goroutine still read).
	defer func() {
		cancelPipe()
		dec.close()
	}()
	go dec.run(pipeCtx)

	r.clog = newCommitLog()
	r.mu.Lock()
	r.positionGI = 0
	r.mu.Unlock()
	// Stopped last: a worker stopping may wait for answers too.
	stopUnanswered := r.endUnansweredScripts()
	defer stopUnanswered()
	workers, done, stopWorkers := r.startWorkers(ctx)
	defer stopWorkers()
	stopWatchdog := r.watchdog()
	defer stopWatchdog()
	stopProbe := r.probeTargetWaits()
	defer stopProbe()

	c := &coordinator{
		r: r, policy: policy, ws: ws, relay: relay, budget: dec.budget, skip: skip,
		engines:    target.NewEngines(r.cfg.Target, r.cfg.Session.KeepGTID && r.cfg.Session.WriteBinlog),
		queue:      dec.hand.ch,
		hand:       dec.hand,
		decErr:     dec.err,
		recvErr:    recvErr,
		received:   recvErr,
		cancelPipe: cancelPipe,
		workers:    workers,
		idle:       slices.Clone(workers),
		done:       done,
		inflight:   map[int64]*job{},
		committed:  map[int64]*binlog.Transaction{},
		stopped:    ctx.Done(),
	}
	return c.loop()
}

// newPolicy makes the run's dependency policy, over the target's catalog.
func (r *Replica) newPolicy() (schedule.Policy, error) {
	return schedule.New(r.cfg.Policy, target.NewCatalog(r.cfg.Target))
}

// startReceiver starts the receiver, which fetches the source's binlog into
// the relay log until ctx ends; its end comes on the channel returned.
func (r *Replica) startReceiver(ctx context.Context, relay *binlog.RelayLog, skip map[gtid.MariaDBGTID]bool) <-chan error {
	recvCfg := r.cfg.Receiver
	recvCfg.Skip = func(g gtid.MariaDBGTID) bool { return skip[g] }
	receiver := binlog.NewReceiver(recvCfg, relay)
	r.mu.Lock()
	r.receiver = receiver
	r.mu.Unlock()
	r.clock.Store(receiver)
	recvErr := make(chan error, 1)
	go func() { recvErr <- receiver.Run(ctx) }()
	return recvErr
}

// startWorkers starts cfg.Workers workers, each waiting for jobs, and
// returns them, the channel of their results, and the func that ends them
// once their jobs are done.
func (r *Replica) startWorkers(ctx context.Context) ([]*worker, chan result, func()) {
	done := make(chan result, r.cfg.Workers)
	workers := make([]*worker, r.cfg.Workers)
	var wg sync.WaitGroup
	for i := range workers {
		w := newWorker(r, i)
		workers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.loop(ctx, done) }()
	}
	r.mu.Lock()
	r.workers = workers
	r.mu.Unlock()
	return workers, done, func() {
		for _, w := range workers {
			close(w.jobs)
		}
		wg.Wait()
	}
}
