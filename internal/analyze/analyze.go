// Package analyze answers "how parallel is this binlog, and why does my
// replica lag": it reads binlog files or a live source, replays gapless's
// own scheduling (the real schedule.Policy for each policy, a model clock for
// the target's costs) at several worker counts, and explains what keeps
// transactions from running at the same time.
//
// The work is a pipeline: one reader cuts events into transactions in
// order; a pool decodes row images and prices each transaction; one stage
// keeps the in-order statistics; and each policy runs in its own goroutine
// over the same read-only transactions.
//
// Invariant: every stage sees the transactions in source order, each once.
package analyze

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"gapless/internal/binlog"
)

// DefaultWorkers are the worker counts simulated.
var DefaultWorkers = []int{1, 2, 4, 8, 16, 32}

// DefaultPolicies are the policies simulated (serial is the baseline).
var DefaultPolicies = []string{"commit-id", "writeset", "schema", "domain"}

// DefaultBatch is gapless replicate's --batch default. 128 rather than 32:
// on durable targets a commit is an fsync, and side by side (make bench's
// W1 and W2, 3 runs) 128 caught up in 1.0 and 0.9 s where 32 took 1.4 and
// 1.2 s. 256 rather than 128 once answers no longer cost a wake-up each:
// 2-9% more transactions a second on W1, W2 and W1M, durable targets with
// the binlog on and off (bench/results/2026-11-24-batch-256.md), and on
// non-durable ones. Batches also end at 4 MiB, which bounds how long a stop
// waits. 1024 rather than 256: when each batch shares a row with the one
// before, its commit (an fsync on a durable target) is on the chain, and
// fewer batches are fewer links (W1 and W2 --scale 5, 3 runs side by side:
// 4.6 and 5.3 s against 4.9 and 6.0 s; W11F, whose batches end at 4 MiB
// first, 1.5% slower; bench/results/2026-11-30-batch-1024.md).
const DefaultBatch = 1024

// Options configure an analysis.
type Options struct {
	Workers  []int
	Policies []string
	Cost     CostModel
	// Batch is the most consecutive transactions a worker applies in one
	// target transaction, as replicate's --batch (0: DefaultBatch; 1: none).
	Batch int
	// SchemaFrom is a server holding the tables, for their unique and
	// foreign keys; nil uses the table maps' primary key metadata.
	SchemaFrom *sql.DB
	// ReferenceWorkers is the worker count whose simulation explains
	// which transactions held others back (default 16, gapless's default).
	ReferenceWorkers int
	// Since drops transactions the source wrote before it (zero: none).
	Since time.Time
	// From drops the transactions this GTID position contains, and Until
	// those it does not contain ("": no bound); MariaDB positions or MySQL
	// GTID sets.
	From, Until string

	keep txnRange
}

// Check reports what is wrong with the options, before an analysis (or a
// calibration) is started with them.
func (o Options) Check() error { return o.defaults() }

func (o *Options) defaults() error {
	if len(o.Workers) == 0 {
		o.Workers = DefaultWorkers
	}
	o.Workers = slices.Clone(o.Workers)
	slices.Sort(o.Workers)
	o.Workers = slices.Compact(o.Workers)
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	if o.Batch < 1 || o.Batch > 10000 {
		return fmt.Errorf("batch %d: want 1 to 10000 transactions", o.Batch)
	}
	if o.Workers[0] < 1 || ringSize(o.Workers[len(o.Workers)-1], o.Batch) > maxRing {
		return fmt.Errorf("worker counts must be between 1 and %d with batches of %d, got %v", maxRing/2/o.Batch, o.Batch, o.Workers)
	}
	if len(o.Policies) == 0 {
		o.Policies = DefaultPolicies
	}
	if o.Cost == (CostModel{}) {
		o.Cost = DefaultCostModel
	}
	if o.Cost.Commit < 0 || o.Cost.Txn < 0 || o.Cost.Row < 0 || o.Cost.KiB < 0 {
		return fmt.Errorf("cost model constants must not be negative: %s", o.Cost)
	}
	if o.Cost.Capacity != 0 && o.Cost.Capacity < 1 {
		return fmt.Errorf("target capacity %g: want at least 1 (one transaction at full speed), or 0 for unlimited", o.Cost.Capacity)
	}
	if o.Cost.Commit+o.Cost.Txn+o.Cost.Row+o.Cost.KiB <= 0 {
		return errors.New("cost model is all zero: every transaction would cost nothing")
	}
	var err error
	if o.keep.from, err = parsePosition("--from", o.From); err != nil {
		return err
	}
	if o.keep.until, err = parsePosition("--until", o.Until); err != nil {
		return err
	}
	if o.ReferenceWorkers == 0 {
		o.ReferenceWorkers = 16
	}
	if !slices.Contains(o.Workers, o.ReferenceWorkers) {
		o.ReferenceWorkers = o.Workers[len(o.Workers)-1]
	}
	return nil
}

// Files analyzes binlog or relay log files, in the order given.
func Files(ctx context.Context, paths []string, opts Options) (*Report, error) {
	if len(paths) == 0 {
		return nil, errors.New("no binlog files to analyze")
	}
	src := newFileSource(paths)
	report, err := run(ctx, src, opts)
	if err != nil {
		return nil, err
	}
	report.Input = fmt.Sprintf("%d file(s): %s .. %s", len(paths), paths[0], paths[len(paths)-1])
	report.SkippedFiles = src.skipped
	report.Torn = src.torn
	if report.Transactions == 0 && len(src.skipped) == len(paths) {
		return nil, fmt.Errorf("none of the %d file(s) is a binlog file (no binlog magic header)", len(paths))
	}
	return report, nil
}

// batch is a run of consecutive groups moving through the pipeline.
type batch struct {
	groups []*rawGroup
	bytes  int
	txns   []*txnInfo
	done   chan struct{}
	err    error
}

// A batch ends at batchSize groups or batchBytes bytes, whichever comes
// first: the bytes bound the memory in flight when transactions are large.
const (
	batchSize  = 256
	batchBytes = 1 << 20
)

// analyzer is the in-order part of an analysis: the statistics and one
// run per policy.
type analyzer struct {
	opts      Options
	keySource KeySource
	needRows  bool
	stats     *statistics
	runs      []*policyRun
	gi        int64
	// statements reads statement groups in binlog order (number).
	statements *binlog.StatementReader
}

func newAnalyzer(opts Options) (*analyzer, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	a := &analyzer{opts: opts, keySource: KeysFromTableMap, statements: binlog.NewStatementReader()}
	var server *serverCatalog
	if opts.SchemaFrom != nil {
		a.keySource, server = KeysFromServer, newServerCatalog(opts.SchemaFrom)
	}
	a.needRows = opts.Cost.Row > 0 || slices.Contains(opts.Policies, "writeset")
	for _, name := range opts.Policies {
		r, err := newPolicyRun(name, &keyLookup{source: a.keySource, server: server}, a.opts)
		if err != nil {
			return nil, err
		}
		a.runs = append(a.runs, r)
	}
	a.stats = newStatistics(&keyLookup{source: a.keySource, server: server})
	return a, nil
}

// prepare derives what the in-order stages need of a decoded transaction;
// it may run on any goroutine.
func (a *analyzer) prepare(t *txnInfo, keys tableKeyCache) {
	if a.keySource == KeysFromTableMap {
		t.tableKeys = keys.keysOf(t.txn)
	}
	t.barrier = barrierOf(t)
	t.execCost, t.commit = a.opts.Cost.costs(t.rows, t.txn.Size)
}

// number gives the next group index and adds the transaction to the statistics.
func (a *analyzer) number(t *txnInfo) {
	// In binlog order, as the applier's decoder reads them: which
	// statement groups may run beside others (the target's part of that
	// choice, engines and triggers, is not modelled).
	a.statements.Read(t.txn)
	t.barrier = barrierOf(t)
	a.gi++
	t.gi = a.gi
	a.stats.add(t)
}

// add runs one prepared transaction through everything, on this goroutine.
func (a *analyzer) add(t *txnInfo) error {
	a.number(t)
	for _, r := range a.runs {
		if err := r.admit(t); err != nil {
			return err
		}
	}
	return nil
}

// report ends the analysis.
func (a *analyzer) report(cut *groupCutter) *Report {
	report := a.stats.report(cut, a.opts, a.keySource)
	report.RowsDecoded = a.needRows
	if cut.open != nil {
		report.IncompleteGroups = 1
	}
	for _, r := range a.runs {
		r.finish()
		report.addPolicy(r, a.opts)
		// Every policy cuts the same batches: one worker applies them in the same time.
		report.TotalCostMS = r.sims[0].serial / 1000
	}
	report.Advice = advise(report)
	return report
}

// run drives the pipeline over src: the reader cuts events into batches of
// groups, the decode pool decodes and prices them, the in-order stage numbers
// their transactions and feeds every policy, and the report is made once all
// of them have stopped.
func run(ctx context.Context, src eventSource, opts Options) (*Report, error) {
	a, err := newAnalyzer(opts)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer src.close()

	cutter := &groupCutter{}
	toDecode := make(chan *batch, 4)
	ordered := make(chan *batch, 4)
	var readErr error
	go func() {
		// readErr is written before the closes, so it may be read once
		// toDecode is drained.
		defer close(toDecode)
		defer close(ordered)
		readErr = readBatches(ctx, src, cutter, ordered, toDecode)
	}()
	decoders := a.startDecoders(toDecode)
	feeds, policies := a.startPolicies(cancel)

	orderErr := a.feedInOrder(ctx, cancel, ordered, feeds)

	// Stopping: the policies finish what they were fed, the cancel stops
	// the reader, and draining toDecode lets the decode pool end.
	for _, feed := range feeds {
		close(feed)
	}
	policies.Wait()
	cancel()
	for range toDecode {
	}
	decoders.Wait()

	if err := a.firstError(orderErr, readErr); err != nil {
		return nil, err
	}
	report := a.report(cutter)
	report.Elapsed = time.Since(started).Seconds()
	if report.Elapsed > 0 {
		report.MBPerSecond = float64(report.Bytes) / 1e6 / report.Elapsed
	}
	return report, nil
}

// readBatches is the reader stage: it cuts src's events into groups and
// hands them on in batches, each to ordered before toDecode, so that the
// in-order stage holds the batches in source order. It returns nil when
// the analysis was cancelled while it handed a batch on; the groups read
// before an error are still handed on.
func readBatches(ctx context.Context, src eventSource, cutter *groupCutter, ordered, toDecode chan<- *batch) error {
	b := &batch{done: make(chan struct{})}
	var readErr error
	for {
		raw, err := src.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		g, err := cutter.add(raw)
		if err != nil {
			readErr = err
			break
		}
		if g == nil {
			continue
		}
		b.groups = append(b.groups, g)
		for _, ev := range g.events {
			b.bytes += len(ev.data)
		}
		if len(b.groups) == batchSize || b.bytes >= batchBytes {
			if !handOn(ctx, b, ordered, toDecode) {
				return nil
			}
			b = &batch{done: make(chan struct{})}
		}
	}
	if len(b.groups) > 0 {
		handOn(ctx, b, ordered, toDecode)
	}
	return readErr
}

// handOn gives b to the in-order stage, then to the decode pool; false
// when the analysis was cancelled first.
func handOn(ctx context.Context, b *batch, ordered, toDecode chan<- *batch) bool {
	select {
	case ordered <- b:
	case <-ctx.Done():
		return false
	}
	select {
	case toDecode <- b:
	case <-ctx.Done():
		return false
	}
	return true
}

// startDecoders starts the decode pool, a goroutine per processor, which
// ends once toDecode is closed and drained.
func (a *analyzer) startDecoders(toDecode <-chan *batch) *sync.WaitGroup {
	var pool sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		pool.Add(1)
		go func() {
			defer pool.Done()
			dec := newDecoder(a.needRows)
			for b := range toDecode {
				a.decodeBatch(dec, b)
			}
		}()
	}
	return &pool
}

// decodeBatch turns b's groups into the prepared transactions the options
// keep (events, row images, keys from table maps, costs) and closes b.done.
// The first error ends the batch: b.err holds it, b.txns what came before.
func (a *analyzer) decodeBatch(dec *decoder, b *batch) {
	b.txns = make([]*txnInfo, 0, len(b.groups))
	for _, g := range b.groups {
		t, err := dec.transaction(g)
		if err != nil {
			b.err = err
			break
		}
		if !a.opts.Since.IsZero() && t.txn.SourceTime.Before(a.opts.Since) || !a.opts.keep.keeps(t.txn) {
			continue
		}
		a.prepare(t, dec.keys)
		b.txns = append(b.txns, t)
	}
	b.groups = nil
	close(b.done)
}

// startPolicies starts a goroutine per policy run, fed batches in order
// through its own channel. A run's first error is kept in its err and
// cancels the analysis; the run then only drains its feed.
func (a *analyzer) startPolicies(cancel context.CancelFunc) ([]chan *batch, *sync.WaitGroup) {
	feeds := make([]chan *batch, len(a.runs))
	var policies sync.WaitGroup
	for i, r := range a.runs {
		feeds[i] = make(chan *batch, 2)
		policies.Add(1)
		go func() {
			defer policies.Done()
			for b := range feeds[i] {
				if r.err != nil {
					continue
				}
				for _, t := range b.txns {
					if err := r.admit(t); err != nil {
						r.err = err
						cancel()
						break
					}
				}
			}
		}()
	}
	return feeds, &policies
}

// feedInOrder is the in-order stage: it waits for each batch to be
// decoded, numbers its transactions into the statistics, and feeds it to
// every policy. It stops at the end of ordered, at a cancel, or at a
// batch's decode error, which it returns after cancelling the analysis.
func (a *analyzer) feedInOrder(ctx context.Context, cancel context.CancelFunc, ordered <-chan *batch, feeds []chan *batch) error {
	for b := range ordered {
		select {
		case <-b.done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return nil
		}
		if b.err != nil {
			cancel()
			return b.err
		}
		for _, t := range b.txns {
			a.number(t)
		}
		for _, feed := range feeds {
			feed <- b
		}
	}
	return nil
}

// firstError is the error an analysis ends with: the in-order stage's, then
// the reader's, then the first failed policy run's.
func (a *analyzer) firstError(orderErr, readErr error) error {
	for _, err := range []error{orderErr, readErr} {
		if err != nil {
			return err
		}
	}
	for _, r := range a.runs {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

func workersKey(w int) string { return strconv.Itoa(w) }
