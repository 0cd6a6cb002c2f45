// Package apply runs the replica: it wires receiver, relay log, decoder,
// coordinator and workers together and decides when to stop.
//
// The coordinator gives every transaction a group index in relay-log order,
// asks the policy what it depends on, and hands it to an idle worker; the
// worker waits for those dependencies itself, so a transaction that must wait
// never holds back an independent one behind it (up to --workers of them are
// in flight).
//
// Invariants:
//   - the position on the target is the truth: the run starts from it, and
//     the relay log is used only when it continues that position;
//   - strict commit order: transactions commit in group-index order, so the
//     target only shows states the source had; causal: a transaction commits
//     once its dependencies have, and the checkpoint rows record the gaps;
//   - a stop lets every transaction up to the highest one a worker has
//     started commit (the nearest gap-less point), and drops the rest.
//
// The stages, a file each (docs/architecture.md draws them): replica.go
// starts a run from the target's position; pipeline.go wires a session of
// the stages; decode.go hands the decoder's transactions on; coordinator.go
// schedules and batches them; worker.go keeps a worker's connection and
// job.go a job's life on it (alone.go: groups applied alone);
// commitlog.go orders the commits; position.go moves the gap-less position;
// stop.go stops.
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
	"gapless/internal/filter"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// CommitOrder says when a transaction may commit.
type CommitOrder string

const (
	Strict CommitOrder = "strict"
	Causal CommitOrder = "causal"
)

// Config is everything a replica run needs.
type Config struct {
	Stream   string
	Receiver binlog.ReceiverConfig
	Relay    binlog.RelayOptions
	Target   *sql.DB
	Session  target.Options
	Workers  int
	// BatchMax is how many consecutive transactions a worker may apply in
	// one target transaction (1: no batching).
	BatchMax int
	// BatchBytes bounds the source bytes of one batch (0: batchBytes); a
	// Galera target's writeset limit may ask for less (target.BatchLimits).
	BatchBytes  int
	Policy      string
	CommitOrder CommitOrder
	// Start is the position to start from when the target has none.
	Start *gtid.MariaDBPosition
	// Until stops the run, gap-less, once it is applied.
	Until *gtid.MariaDBPosition
	// Skip lists transactions to record as applied without applying them.
	Skip []gtid.MariaDBGTID
	// Filter says which databases and tables reach the target.
	Filter *filter.Rules
	// TargetServerID is the target's @@server_id: groups the target wrote
	// itself, come back through a source that replicates from it (a
	// ring), are passed, as MariaDB's replica passes its own server id's
	// (replicate_same_server_id=OFF). 0: none are.
	TargetServerID uint32
	// MaxQueued bounds the bytes of decoded transactions not yet committed.
	MaxQueued int64
	// Progress is called about once per ProgressEvery with the run's state.
	Progress      func(Progress)
	ProgressEvery time.Duration
	Logger        *slog.Logger
	// Observe, when set, is given the replica as soon as Run has made it, for
	// the status surfaces to read (Replica.Snapshot, observe.go).
	Observe func(*Replica)
}

// Progress is a snapshot of a run.
type Progress struct {
	Applied    int64                // transactions applied in this run
	Filtered   int64                // transactions passed without applying (filters)
	PerSecond  float64              // over the last interval
	Behind     uint64               // transactions received but not applied
	LagSeconds float64              // how long ago the source wrote the oldest transaction not applied (Replica.lagSeconds), 0 when caught up
	Position   gtid.MariaDBPosition // gap-less applied position
	Received   gtid.MariaDBPosition // end of the relay log
	Workers    []WorkerStatus
	// SourceConnected is false while the receiver is reconnecting.
	SourceConnected bool
	// SourceDownSince and TargetDownSince are when the source or the target
	// stopped answering, while they do not; zero while they answer.
	SourceDownSince, TargetDownSince time.Time
	// RelayFullSince is when the relay folder's filesystem became full,
	// while receiving waits for space; zero otherwise.
	RelayFullSince time.Time
	// TargetWait is what the target makes the workers wait for, nil when
	// it tells of nothing.
	TargetWait *TargetWait
	// TargetNode is the node the workers write to, where the target URL
	// names several (a Galera cluster), and TargetSwitches how many times
	// they moved to another; "" and 0 otherwise.
	TargetNode     string
	TargetSwitches int
}

// Result says where a run ended.
type Result struct {
	Position gtid.MariaDBPosition
	Applied  int64
	Filtered int64 // transactions the filters left nothing of
	Batches  int64 // target transactions the applied ones took
	// RolledBack counts the transactions of batches a stop rolled back
	// (they were executing still; the next run applies them).
	RolledBack int64
	// RanAhead counts the transactions that executed, whole or some of
	// their statements, before their batch's dependencies had
	// (worker.runAhead); RanAheadInPart those of them that ran only some.
	RanAhead, RanAheadInPart int64
	// StateTime is the time all workers spent in each state, summed.
	StateTime map[WorkerState]time.Duration
	Reason    string // "until reached", "stopped"
	// Statements counts, per worker slot, the transactions of source
	// statements it committed (slot 0 is the statement session).
	Statements map[int]int64
	// StatementRowKeys and StatementWholeTables count the tables groups of
	// statements named, taken by row keys or whole (Snapshot.StatementTables).
	StatementRowKeys, StatementWholeTables int64
}

// Replica is one run of gapless replicate.
type Replica struct {
	// applying: the run has begun to apply (Run's start-up is over).
	applying bool

	cfg   Config
	log   *slog.Logger
	store *checkpoint.Store
	// settled says whether a Galera node read from holds what its
	// cluster certified (settle.go); readApplied reads through it.
	settled settler
	// domainsApplied are the GTID domains this run has committed a
	// transaction of (see target.Session.AppliedAlone).
	domainsApplied sync.Map
	// guarded is the last group written with a guarded position
	// (target.Session.GuardsPosition): its GTID was then the last of its
	// domain in the target's binlog.
	guarded atomic.Pointer[guardedGroup]
	// through holds, by GTID domain, the last group the run before
	// applied without writing its position (target.Session.AppliedAlone).
	through sync.Map
	// begun holds, by GTID domain, the last group whose writes stay
	// (target.PartsStay) that a run before this one began
	// (checkpoint.Store.Begun); read at the start, never written.
	begun map[uint32]gtid.MariaDBGTID
	// failedBefore is the group the run before stopped on with an error of
	// the target's (failedBeforeErr, its text); zero when none
	// (noteFailedBefore). Read at the start, never written.
	failedBefore    gtid.MariaDBGTID
	failedBeforeErr string
	// kept are the temporary tables of the source's sessions a run before
	// kept for this one (checkpoint.KeptTemporary), until the statement
	// session makes them again; restored says it has (worker.connect).
	// Only the statement session's worker touches them once it runs.
	kept     []checkpoint.KeptTemporary
	restored bool
	// lost are the temporary tables source sessions hold that the target
	// lost (a connection of the statement session cut, the run before
	// killed), for the statement session (target.Session.Lose); lostN
	// counts their changes.
	lostMu sync.Mutex
	lost   []binlog.HeldTemporary
	lostN  atomic.Int64
	// endedBefore says the run before ended on its own terms
	// (checkpoint.Store.MarkRunning); once the first group is decoded,
	// what it lost is in lost.
	endedBefore bool
	lock        *checkpoint.Lock
	clog        *commitLog
	workers     []*worker
	applied     atomic.Int64
	filtered    atomic.Int64
	batches     atomic.Int64
	// rolledBack counts the transactions of batches a stop rolled back.
	rolledBack atomic.Int64
	// ranAhead counts the transactions run ahead of their batch's dependencies.
	ranAhead atomic.Int64
	// ranAheadInPart counts those of them that ran only some of their
	// statements ahead.
	ranAheadInPart atomic.Int64
	// statements counts the statement transactions each worker slot
	// committed (the coordinator's alone).
	statements map[int]int64
	// lastConflict is when the watchdog last broke a lock wait (Unix ns).
	lastConflict atomic.Int64
	// obs is what only the status surfaces read (observe.go).
	obs observed

	mu         sync.Mutex
	position   gtid.MariaDBPosition // gap-less applied position
	positionGI int64                // group index position stands at
	// ahead are the groups a run before applied past a gap (causal commit
	// order: checkpoint.Applied.Extra) that position has not passed yet.
	// Every position row lists them until it has: the row that recorded
	// one may be overwritten before then. The slice is replaced, never
	// changed, so gapless may hand it out.
	ahead      []gtid.MariaDBGTID
	lastSource time.Time
	receiver   *binlog.Receiver

	// ownSeen names the first group of the target's own in the log (ownGroup).
	ownSeen sync.Once
	// clock is the receiver whose measure of the source's clock the lag
	// and the positions' source times allow for (sourceTime).
	clock atomic.Pointer[binlog.Receiver]
	// targetWait is what the target makes the workers wait for, nil when
	// nothing (targetwait.go).
	targetWait atomic.Pointer[TargetWait]
	// targetDownSince is when the status reports first failed to reach the
	// target (Unix ns), 0 while they reach it.
	targetDownSince atomic.Int64
	// unsafeSeen holds the kinds of unsafe statements warned of (unsafe.go).
	unsafeSeen sync.Map
}

// Run replicates until ctx ends (a stop), Until is applied, or an error that
// retrying cannot mend.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Policy == "" {
		cfg.Policy = "writeset"
	}
	if cfg.CommitOrder == "" {
		cfg.CommitOrder = Strict
	}
	if cfg.CommitOrder != Strict && cfg.CommitOrder != Causal {
		return Result{}, fmt.Errorf("unknown commit order %q: want strict or causal", cfg.CommitOrder)
	}
	r := &Replica{cfg: cfg, log: cfg.Logger, statements: map[int]int64{}}
	if cfg.Observe != nil {
		cfg.Observe(r)
	}
	res, err := r.run(ctx)
	if err != nil && ctx.Err() != nil && !r.applying {
		// What the start-up was doing gave up on the stop, in whatever
		// words (context canceled, a connection the driver closed).
		err = fmt.Errorf("%w: %w", ErrStoppedWhileStarting, err)
	}
	return res, err
}

// ErrStoppedWhileStarting is the error of a run stopped (its ctx ended)
// before it began to apply: nothing was applied, and the next run starts
// from the target's position.
var ErrStoppedWhileStarting = errors.New("stopped while starting")

func (r *Replica) run(ctx context.Context) (res Result, err error) {
	if _, err := r.newPolicy(); err != nil {
		return Result{}, err
	}
	lock, err := checkpoint.AcquireLock(ctx, r.cfg.Target, r.cfg.Stream)
	if err != nil {
		return Result{}, err
	}
	defer lock.Release()
	r.lock = lock
	if err := r.openStore(ctx); err != nil {
		return Result{}, err
	}
	if err := r.readRunBefore(ctx); err != nil {
		return Result{}, err
	}
	defer func() {
		// Ended on its own terms: unless temporary tables were lost on
		// the way, which the next run must know of (from the binlog).
		if len(r.lostTemporary()) == 0 {
			if err := r.store.EndRunning(context.Background()); err != nil {
				r.log.Warn("could not record the run's end", "error", err)
			}
		}
	}()
	defer func() { r.recordStop(err) }()
	applied, err := r.startPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	r.position = applied.Position
	r.log.Info("starting", "stream", r.cfg.Stream, "position", applied.Position.String(), "applied past gaps", len(applied.Extra))
	if r.untilReached() {
		return Result{Position: r.position, Reason: "until reached"}, nil
	}
	relay, err := r.openRelay(applied)
	if err != nil {
		return Result{}, err
	}
	defer relay.Close()
	stopProgress := r.reportProgress(relay)
	defer stopProgress()
	stopReport := r.reportWorkers()
	defer stopReport()
	return r.sessions(ctx, relay)
}

// openStore opens the position table, once no connection of an earlier
// run is left: one killed with a COMMIT in flight may still commit, and
// the position is read after it.
func (r *Replica) openStore(ctx context.Context) (err error) {
	warn := func(msg string) { r.log.Warn(msg) }
	if err := checkpoint.SettleSlots(ctx, r.cfg.Target, r.cfg.Stream, 0, checkpoint.MaxSlots, warn); err != nil {
		return err
	}
	r.store, err = checkpoint.Open(ctx, r.cfg.Target, r.cfg.Stream, r.cfg.Session.WriteBinlog)
	return err
}

// readRunBefore reads what the run before left on the target for this one
// (how it ended, the groups it began, the temporary tables it kept), and
// marks this run as running.
func (r *Replica) readRunBefore(ctx context.Context) (err error) {
	if err := r.refuseAfterSplit(ctx); err != nil {
		return err
	}
	if err := r.noteFailedBefore(ctx); err != nil {
		return err
	}
	if err := r.store.ClearStop(ctx); err != nil {
		return err
	}
	if r.begun, err = r.store.Begun(ctx); err != nil {
		return err
	}
	r.restored = false
	if r.kept, err = r.store.KeptTemporaries(ctx); err != nil {
		return err
	}
	r.setLost(nil)
	r.endedBefore, err = r.store.MarkRunning(ctx)
	return err
}

// startPosition is where the run starts: the target's position, or, when
// the target has none, --start-position, seeded there.
func (r *Replica) startPosition(ctx context.Context) (checkpoint.Applied, error) {
	applied, err := r.readApplied(ctx)
	if err != nil {
		return applied, err
	}
	if applied.Position.IsEmpty() && len(applied.Extra) == 0 && r.cfg.Start != nil {
		if err := r.store.Seed(ctx, *r.cfg.Start); err != nil {
			return applied, err
		}
		applied.Position = r.cfg.Start.Clone()
	}
	return applied, nil
}

// openRelay opens the relay log, dropping what it holds past the target's
// position when it was fetched from another server than the source.
func (r *Replica) openRelay(applied checkpoint.Applied) (*binlog.RelayLog, error) {
	relay, err := binlog.OpenRelay(r.cfg.Relay)
	if err != nil {
		return nil, err
	}
	if previous, dropped, err := relay.SwitchSource(applied.Position); err != nil {
		relay.Close()
		return nil, err
	} else if dropped {
		r.log.Warn("the relay log was fetched from another server than the source: its transactions past the target's position are dropped and fetched from the source, which may not have them all (after a failover, what the old primary wrote last and the promoted replica never got is not applied)",
			"fetched from", previous, "source", r.cfg.Relay.Source, "target position", applied.Position.String())
		if len(applied.Extra) > 0 {
			r.log.Warn("the target holds groups of the old source applied past a gap (--commit-order causal), which the new source may never have written: compare the tables with `gapless verify` once it catches up",
				"groups", len(applied.Extra))
		}
	} else if previous != "" && previous != r.cfg.Relay.Source {
		r.log.Info("the source is another server than the one the relay log was fetched from; fetching from the target's position", "fetched from", previous, "source", r.cfg.Relay.Source)
	}
	return relay, nil
}
