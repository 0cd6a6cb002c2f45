// Package apply runs the replica: it wires receiver, relay log, decoder and
// workers together and decides when to stop.
//
// Invariants:
//   - the position on the target is the truth: the run starts from it, and
//     the relay log is used only when it continues that position;
//   - a transaction is handed to a worker only after every transaction before
//     it in relay-log order committed (one worker for now), so the target only
//     shows states the source had;
//   - a stop (signal, --until) lets the transaction in flight commit and
//     starts no other.
package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// Config is everything a replica run needs.
type Config struct {
	Stream   string
	Receiver binlog.ReceiverConfig
	Relay    binlog.RelayOptions
	Target   *sql.DB
	Session  target.Options
	// Start is the position to start from when the target has none.
	Start *gtid.MariaDBPosition
	// Until stops the run, gap-less, once it is applied.
	Until *gtid.MariaDBPosition
	// Skip lists transactions to record as applied without applying them.
	Skip []gtid.MariaDBGTID
	// Progress is called about once per ProgressEvery with the run's state.
	Progress      func(Progress)
	ProgressEvery time.Duration
	Logger        *slog.Logger
}

// Progress is a snapshot of a run.
type Progress struct {
	Applied     int64                // transactions applied in this run
	PerSecond   float64              // over the last interval
	Behind      uint64               // transactions received but not applied
	LagSeconds  float64              // age of the oldest unapplied transaction's predecessor, 0 when caught up
	Position    gtid.MariaDBPosition // applied position
	Received    gtid.MariaDBPosition // end of the relay log
	Connected   bool
	WorkerState WorkerState
}

// Result says where a run ended.
type Result struct {
	Position gtid.MariaDBPosition
	Applied  int64
	Reason   string // "until reached", "stopped"
}

// Replica is one run of gapless replicate.
type Replica struct {
	cfg   Config
	log   *slog.Logger
	store *checkpoint.Store

	mu         sync.Mutex
	position   gtid.MariaDBPosition
	lastSource time.Time
	state      WorkerState
	applied    atomic.Int64
}

// Run replicates until ctx ends (a stop: the transaction in flight commits
// first), Until is applied, or an error that retrying cannot mend.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	r := &Replica{cfg: cfg, log: cfg.Logger, state: StateIdle}
	return r.run(ctx)
}

func (r *Replica) run(ctx context.Context) (Result, error) {
	lock, err := checkpoint.AcquireLock(ctx, r.cfg.Target, r.cfg.Stream)
	if err != nil {
		return Result{}, err
	}
	defer lock.Release()
	r.store, err = checkpoint.Open(ctx, r.cfg.Target, r.cfg.Stream, r.cfg.Session.WriteBinlog)
	if err != nil {
		return Result{}, err
	}
	pos, err := r.store.Position(ctx)
	if err != nil {
		return Result{}, err
	}
	if pos.IsEmpty() && r.cfg.Start != nil {
		if err := r.store.Seed(ctx, *r.cfg.Start); err != nil {
			return Result{}, err
		}
		pos = r.cfg.Start.Clone()
	}
	r.position = pos
	r.log.Info("starting", "stream", r.cfg.Stream, "position", pos.String())
	if r.untilReached() {
		return Result{Position: pos, Reason: "until reached"}, nil
	}

	relay, err := binlog.OpenRelay(r.cfg.Relay)
	if err != nil {
		return Result{}, err
	}
	defer relay.Close()

	w := &worker{slot: 0, db: r.cfg.Target, opts: r.cfg.Session, store: r.store, log: r.log}
	defer w.close()

	stopProgress := r.reportProgress(relay)
	defer stopProgress()

	for {
		res, err := r.session(ctx, relay, w)
		if errors.Is(err, binlog.ErrCorruptRelay) {
			r.log.Warn("relay log is corrupt; fetching its events again from the source", "error", err)
			continue
		}
		return res, err
	}
}

// session runs receiver, decoder and worker until one of them ends the run.
func (r *Replica) session(ctx context.Context, relay *binlog.RelayLog, w *worker) (Result, error) {
	applied := r.currentPosition()
	if !relay.Continues(applied) {
		if err := relay.Reset(applied); err != nil {
			return Result{}, err
		}
	}
	pipeCtx, cancelPipe := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelPipe()

	receiver := binlog.NewReceiver(r.cfg.Receiver, relay)
	recvErr := make(chan error, 1)
	go func() { recvErr <- receiver.Run(pipeCtx) }()

	decoder := binlog.NewDecoder(relay, applied)
	defer decoder.Close()
	txns := make(chan *binlog.Transaction, 64)
	decErr := make(chan error, 1)
	go func() {
		defer close(txns)
		for {
			txn, err := decoder.Next(pipeCtx)
			if err != nil {
				decErr <- err
				return
			}
			select {
			case txns <- txn:
			case <-pipeCtx.Done():
				decErr <- pipeCtx.Err()
				return
			}
		}
	}()

	skip := make(map[gtid.MariaDBGTID]bool, len(r.cfg.Skip))
	for _, g := range r.cfg.Skip {
		skip[g] = true
	}
	finish := func(reason string) (Result, error) {
		cancelPipe()
		<-recvErr
		return Result{Position: r.currentPosition(), Applied: r.applied.Load(), Reason: reason}, nil
	}
	for {
		select {
		case <-ctx.Done():
			return finish("stopped")
		case err := <-recvErr:
			cancelPipe()
			return Result{Position: r.currentPosition(), Applied: r.applied.Load()}, err
		case txn, ok := <-txns:
			if !ok {
				err := <-decErr
				cancelPipe()
				<-recvErr
				return Result{Position: r.currentPosition(), Applied: r.applied.Load()}, err
			}
			if ctx.Err() != nil {
				return finish("stopped")
			}
			if txn.Flavor != binlog.FlavorMariaDB {
				cancelPipe()
				<-recvErr
				return Result{}, fmt.Errorf("%s: only MariaDB sources are applied so far", txn)
			}
			r.setState(StateApplying)
			err := w.apply(ctx, txn, skip[txn.MariaDB])
			r.setState(StateIdle)
			if err != nil {
				cancelPipe()
				<-recvErr
				return Result{Position: r.currentPosition(), Applied: r.applied.Load()}, stopError(err, txn)
			}
			r.committed(txn)
			relay.Purge(r.currentPosition())
			if r.untilReached() {
				return finish("until reached")
			}
		}
	}
}

// stopError adds to a permanent apply error how to get past it.
func stopError(err error, txn *binlog.Transaction) error {
	var ae *target.ApplyError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w\nreplication stopped before %s; fix the cause and run again, or skip this transaction with --skip-gtid %s", err, txn.GTID(), txn.GTID())
	}
	return err
}

func (r *Replica) committed(txn *binlog.Transaction) {
	r.mu.Lock()
	r.position.Advance(txn.MariaDB)
	r.lastSource = txn.SourceTime
	r.mu.Unlock()
	crashPoint(r.applied.Add(1))
}

func (r *Replica) currentPosition() gtid.MariaDBPosition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.position.Clone()
}

func (r *Replica) setState(s WorkerState) {
	r.mu.Lock()
	r.state = s
	r.mu.Unlock()
}

func (r *Replica) untilReached() bool {
	if r.cfg.Until == nil {
		return false
	}
	return r.currentPosition().Covers(*r.cfg.Until)
}

// reportProgress calls cfg.Progress every interval until the returned func is called.
func (r *Replica) reportProgress(relay *binlog.RelayLog) func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(r.cfg.ProgressEvery)
		defer tick.Stop()
		last, lastAt := r.applied.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n := r.applied.Load()
				p := Progress{Applied: n, PerSecond: float64(n-last) / now.Sub(lastAt).Seconds(), Received: relay.End()}
				last, lastAt = n, now
				r.mu.Lock()
				p.Position = r.position.Clone()
				p.WorkerState = r.state
				lastSource := r.lastSource
				r.mu.Unlock()
				p.Behind = behind(p.Received, p.Position)
				if p.Behind > 0 && !lastSource.IsZero() {
					p.LagSeconds = max(0, now.Sub(lastSource).Seconds())
				}
				r.cfg.Progress(p)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// behind counts the transactions in received that applied does not hold,
// from the sequence numbers of each domain.
func behind(received, applied gtid.MariaDBPosition) uint64 {
	var n uint64
	for _, d := range received.Domains() {
		r, _ := received.Get(d)
		a, ok := applied.Get(d)
		if !ok {
			n += r.Seq
		} else if r.Seq > a.Seq {
			n += r.Seq - a.Seq
		}
	}
	return n
}
