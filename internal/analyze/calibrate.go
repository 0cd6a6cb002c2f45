// calibrate.go measures the cost model on a real target (--calibrate URL):
// it applies a sample of small transactions shaped like gapless's own (one
// round trip for BEGIN, a checkpoint row and the row changes, one for the
// COMMIT) in a scratch database, and derives
//
//   - Commit: the median COMMIT round trip of one-row transactions;
//   - Row: the extra body time of 32-row over one-row transactions, per row;
//     a row change is one statement by primary key, as the server applies a
//     row event's rows one at a time: in turn an update of an indexed
//     column, an update of a string, a delete and an insert;
//   - KiB: the extra body time of 32 rows of 1 KiB over 32 small rows, per
//     KiB of row images;
//   - Txn: what is left of a one-row body once its row and bytes are paid;
//   - Capacity: how many 32-row bodies the target runs at once at full
//     speed: the rate from Connections connections at once over the rate
//     from one (bodies ended with ROLLBACK, so that the target's commit
//     durability, which the serial Commit already pays, does not count);
//   - then what reading the target's own data adds (probe.go): each row
//     change pays the extra time of a lookup on the data over one on the
//     cached sample, and the capacity is the two capacities, the sample's
//     and the reads' (half of what the probe's overlap adds to one read at
//     a time: a page read for a change is also a page written back; see
//     writeBackOverlap), weighed by their shares of a 32-row body's time.
//
// Example: on a 2-core host, if one connection applies 1000 bodies a second
// and 8 connections at once 1400, the capacity is 1.4: 8 workers can make
// the target at most 1.4 times as fast as one.
//
// Invariant: the scratch database is dropped before Calibrate returns,
// whether the sample succeeded, failed or was interrupted; nothing else on
// the target is touched. The sample is written to the target's binlog, as
// the transactions gapless applies are.
package analyze

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"gapless/internal/dburl"
)

// CalibrateConfig says how big a sample to apply.
type CalibrateConfig struct {
	// Connections applying at once for the capacity (default 8).
	Connections int
	// Transactions of each serial shape (default 200); each capacity round
	// applies an eighth of it per connection at once, half of it from one.
	Transactions int
}

// Calibration is what a calibration measured, and the cost model it gives.
type Calibration struct {
	Target       string  `json:"target"`
	Version      string  `json:"version"`
	Transactions int     `json:"transactions"` // sample transactions applied in all
	Connections  int     `json:"connections"`
	Seconds      float64 `json:"seconds"`
	// Median per transaction, µs: a one-row body, a 32-row body, a 32-row
	// body of 1 KiB rows, and the COMMIT of a one-row transaction.
	OneRowUS     float64 `json:"one_row_body_us"`
	ManyRowsUS   float64 `json:"rows_32_body_us"`
	WideRowsUS   float64 `json:"rows_32_wide_body_us"`
	CommitUS     float64 `json:"commit_us"`
	SerialRate   float64 `json:"serial_bodies_per_second"`
	ParallelRate float64 `json:"parallel_bodies_per_second"`
	// Ratio is the median over the rounds of the parallel rate over the serial one.
	Ratio float64 `json:"parallel_over_serial"`
	// The probe of the target's own data (probe.go): how many tables it
	// read, the median body of 32 lookups on them and on the cached
	// sample, in µs, and the median ratio of their rates from Connections
	// connections and from one.
	ProbeTables   int       `json:"probe_tables"`
	ProbeUS       float64   `json:"probe_body_us,omitempty"`
	CachedProbeUS float64   `json:"cached_probe_body_us,omitempty"`
	ProbeRatio    float64   `json:"probe_parallel_over_serial,omitempty"`
	Cost          CostModel `json:"-"`
}

// Summary is one line for the text report.
func (c *Calibration) Summary() string {
	probe := "; no table of the target's own probed"
	if c.ProbeTables > 0 {
		probe = fmt.Sprintf("; 32 lookups on %d of the target's tables %.0fµs (cached %.0fµs), %.2f× as many a second from %d connections",
			c.ProbeTables, c.ProbeUS, c.CachedProbeUS, c.ProbeRatio, c.Connections)
	}
	return fmt.Sprintf("%d sample transactions in %.1f s; medians: 1-row body %.0fµs, 32-row body %.0fµs, 32 wide rows %.0fµs, COMMIT %.0fµs; 32-row bodies %.0f/s from 1 connection, %.0f/s from %d (median of %d rounds: %.2f×)%s: per row %.0fµs, capacity %.2f",
		c.Transactions, c.Seconds, c.OneRowUS, c.ManyRowsUS, c.WideRowsUS, c.CommitUS, c.SerialRate, c.ParallelRate, c.Connections, calibrateRounds, c.Ratio,
		probe, micros(c.Cost.Row), c.Cost.Capacity)
}

const (
	calibrateRows      = 32   // row changes of the many-row shape: a batch of small source transactions
	calibrateTableRows = 2000 // rows in each sample table
	smallPad           = 100  // bytes of a small row's pad column
	widePad            = 1024 // bytes of a wide row's pad column
	calibrateWarm      = 20   // transactions applied before measuring, per connection
	calibrateRounds    = 3    // serial and parallel phases, alternated
	calibrateLimit     = 2 * time.Minute
)

// Calibrate measures the cost model on the target at url.
func Calibrate(ctx context.Context, url string, cfg CalibrateConfig) (*Calibration, error) {
	if cfg.Connections <= 0 {
		cfg.Connections = 8
	}
	if cfg.Transactions <= 0 {
		cfg.Transactions = 200
	}
	// One round trip per body, as gapless sends its statements.
	db, conn, err := dburl.Open(url, map[string]string{"multiStatements": "true"})
	if err != nil {
		return nil, fmt.Errorf("--calibrate: %w", err)
	}
	defer db.Close()
	db.SetMaxIdleConns(cfg.Connections + 1)
	c := &Calibration{Target: conn.Redacted(), Connections: cfg.Connections}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&c.Version); err != nil {
		return nil, fmt.Errorf("--calibrate %s: %w", conn.Addr(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, calibrateLimit)
	defer cancel()
	began := time.Now()
	scratch := fmt.Sprintf("gapless_calibrate_%08x", rand.Uint32())
	s := &sample{db: db, schema: scratch, cfg: cfg}
	err = s.run(ctx, c)
	// Drop the scratch database even when ctx has ended.
	dropCtx, dropCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer dropCancel()
	if _, dropErr := db.ExecContext(dropCtx, "DROP DATABASE IF EXISTS "+scratch); dropErr != nil && s.created {
		err = errors.Join(err, fmt.Errorf("dropping the scratch database %s: %w (drop it by hand)", scratch, dropErr))
	}
	if err != nil {
		return nil, fmt.Errorf("--calibrate %s: %w", conn.Addr(), err)
	}
	c.Seconds = time.Since(began).Seconds()
	c.Transactions = s.applied
	return c, nil
}

// sample is one calibration's scratch database and counters.
type sample struct {
	db      *sql.DB
	schema  string
	cfg     CalibrateConfig
	applied int
	created bool // the scratch database exists: it must be dropped
	mu      sync.Mutex
}

func (s *sample) run(ctx context.Context, c *Calibration) error {
	setup := []string{
		"CREATE DATABASE " + s.schema,
		"CREATE TABLE " + s.schema + ".position (slot INT PRIMARY KEY, gtid VARCHAR(64) NOT NULL, at BIGINT NOT NULL) ENGINE=InnoDB",
	}
	for i := range s.cfg.Connections {
		setup = append(setup, fmt.Sprintf("INSERT INTO %s.position VALUES (%d, '', 0)", s.schema, i))
		setup = append(setup, fmt.Sprintf("CREATE TABLE %s.rows%d (id BIGINT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(%d) NOT NULL, KEY (k)) ENGINE=InnoDB", s.schema, i, widePad))
		for first := 1; first <= calibrateTableRows; first += 500 {
			var values []string
			for id := first; id < first+500 && id <= calibrateTableRows; id++ {
				values = append(values, fmt.Sprintf("(%d, %d, '%s')", id, id, strings.Repeat("x", smallPad)))
			}
			setup = append(setup, fmt.Sprintf("INSERT INTO %s.rows%d VALUES %s", s.schema, i, strings.Join(values, ", ")))
		}
	}
	for i, q := range setup {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			if len(q) > 120 {
				q = q[:120] + "..."
			}
			return fmt.Errorf("%s: %w (the user needs CREATE, DROP, INSERT, UPDATE and DELETE)", q, err)
		}
		s.created = s.created || i == 0
	}

	// Serial shapes, on one connection, interleaved so that noise spreads over all.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, _, err := s.apply(ctx, conn, 0, 1, smallPad, calibrateWarm, true); err != nil {
		return err
	}
	var one, many, wide, commits []float64
	for range 4 {
		n := s.cfg.Transactions / 4
		bodies, cs, err := s.apply(ctx, conn, 0, 1, smallPad, n, true)
		if err != nil {
			return err
		}
		one, commits = append(one, bodies...), append(commits, cs...)
		if bodies, _, err = s.apply(ctx, conn, 0, calibrateRows, smallPad, n, true); err != nil {
			return err
		}
		many = append(many, bodies...)
		if bodies, _, err = s.apply(ctx, conn, 0, calibrateRows, widePad, n, true); err != nil {
			return err
		}
		wide = append(wide, bodies...)
	}
	c.OneRowUS, c.ManyRowsUS, c.WideRowsUS, c.CommitUS = median(one), median(many), median(wide), median(commits)

	// Capacity: 32-row bodies from one connection, then from all at once,
	// in rounds; the median round's ratio counts, so that a burst of load
	// from elsewhere on the host sways one round only.
	var ratios, serial, parallel []float64
	for range calibrateRounds {
		one, err := s.rate(ctx, 1)
		if err != nil {
			return err
		}
		all, err := s.rate(ctx, s.cfg.Connections)
		if err != nil {
			return err
		}
		serial, parallel, ratios = append(serial, one), append(parallel, all), append(ratios, all/one)
	}
	c.SerialRate, c.ParallelRate, c.Ratio = median(serial), median(parallel), median(ratios)
	if err := s.probe(ctx, c); err != nil {
		return err
	}
	c.Cost = c.costModel()
	return nil
}

// probe reads the target's own tables (probe.go): a pass that warms the
// buffer pool, rounds from one connection and from all at once, then the
// timed pass from one.
func (s *sample) probe(ctx context.Context, c *Calibration) error {
	tables, err := probeTables(ctx, s.db, s.schema)
	if err != nil {
		return fmt.Errorf("listing the target's tables for the probe: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	p := &probe{db: s.db, tables: tables}
	for _, t := range tables {
		p.total += t.bytes
	}
	// The reference: the same lookups on one page that every body reads,
	// which stays in the smallest pool.
	p.cached = []probeTable{{name: s.schema + ".position", key: "slot", lo: 0, hi: int64(s.cfg.Connections - 1), bytes: 1}}
	// A first pass brings into the buffer pool what it can hold, as the
	// first minutes of an apply do: data that fits is then read from
	// memory, as it will be.
	n := max(10, s.cfg.Transactions/4)
	if _, _, err := p.serial(ctx, n); err != nil {
		return err
	}
	var ratios []float64
	for range calibrateRounds {
		one, err := p.rate(ctx, 1, n)
		if err != nil {
			return err
		}
		all, err := p.rate(ctx, s.cfg.Connections, max(2, n/4))
		if err != nil {
			return err
		}
		ratios = append(ratios, all/one)
	}
	if c.ProbeUS, c.CachedProbeUS, err = p.serial(ctx, n); err != nil {
		return err
	}
	c.ProbeTables, c.ProbeRatio = len(tables), median(ratios)
	return nil
}

// costModel derives the constants from the medians; a difference that
// noise made negative counts as nothing.
func (c *Calibration) costModel() CostModel {
	row := max(0, (c.ManyRowsUS-c.OneRowUS)/(calibrateRows-1))
	smallKiB, wideKiB := rowBytes(smallPad)/1024, rowBytes(widePad)/1024
	kib := max(0, (c.WideRowsUS-c.ManyRowsUS)/(calibrateRows*(wideKiB-smallKiB)))
	txn := max(0, c.OneRowUS-row-kib*smallKiB)
	capacity := min(float64(c.Connections), max(1, c.Ratio))
	us := func(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }
	m := CostModel{Commit: us(c.CommitUS), Txn: us(txn), Row: us(row), KiB: us(kib), Capacity: capacity}
	if c.ProbeTables > 0 {
		// A row change also reads its page: a body of 32 changes is the
		// sample's body and 32 of the probe's reads, which overlap half as
		// much more than one at a time as the probe's did from as many
		// connections (capacityAt). The rest of a body overlaps as the
		// sample's.
		read := max(0, (c.ProbeUS-c.CachedProbeUS)/probeLookups)
		body, reads := c.ManyRowsUS, calibrateRows*read
		if body+reads > 0 {
			m.ReadShare, m.BodyCapacity = reads/(body+reads), capacity
			m.ReadOverlap = min(float64(c.Connections), max(1, c.ProbeRatio))
			m.ReadConnections = c.Connections
			m.Capacity = m.capacityAt(c.Connections)
		}
		m.Row += us(read)
	}
	return m
}

// rowBytes is about what a sample row change takes in a row event: the
// pad, the two numbers and the row's header, in 1.5 images (an update has
// two, a delete and an insert one).
func rowBytes(pad int) float64 { return 1.5 * float64(pad+8+4+4) }

// apply runs n transactions of rows row changes each on conn, and returns
// each body's and each COMMIT's duration in µs. Without commit, each body
// ends with a ROLLBACK, timed with it.
func (s *sample) apply(ctx context.Context, conn *sql.Conn, slot, rows, pad, n int, commit bool) (bodies, commits []float64, err error) {
	table := fmt.Sprintf("%s.rows%d", s.schema, slot)
	var b strings.Builder
	for i := range n {
		b.Reset()
		fmt.Fprintf(&b, "BEGIN; UPDATE %s.position SET gtid = '0-1-%d', at = %d WHERE slot = %d", s.schema, i, time.Now().UnixNano(), slot)
		padding := strings.Repeat(string(rune('a'+i%26)), pad)
		id := 0
		for r := range rows {
			switch r % 4 {
			case 0:
				id = 1 + rand.IntN(calibrateTableRows)
				fmt.Fprintf(&b, "; UPDATE %s SET k = k + 1 WHERE id = %d", table, id)
			case 1:
				id = 1 + rand.IntN(calibrateTableRows)
				fmt.Fprintf(&b, "; UPDATE %s SET pad = '%s' WHERE id = %d", table, padding, id)
			case 2:
				id = 1 + rand.IntN(calibrateTableRows)
				fmt.Fprintf(&b, "; DELETE FROM %s WHERE id = %d", table, id)
			case 3:
				fmt.Fprintf(&b, "; INSERT INTO %s (id, k, pad) VALUES (%d, %d, '%s')", table, id, id, padding)
			}
		}
		if !commit {
			b.WriteString("; ROLLBACK")
		}
		t0 := time.Now()
		if _, err := conn.ExecContext(ctx, b.String()); err != nil {
			return nil, nil, fmt.Errorf("sample transaction: %w", err)
		}
		t1 := time.Now()
		bodies = append(bodies, float64(t1.Sub(t0))/float64(time.Microsecond))
		if commit {
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				return nil, nil, fmt.Errorf("sample transaction: COMMIT: %w", err)
			}
			commits = append(commits, float64(time.Since(t1))/float64(time.Microsecond))
		}
	}
	s.mu.Lock()
	s.applied += n
	s.mu.Unlock()
	return bodies, commits, nil
}

// rate is how many 32-row bodies a second connections connections apply
// together, each on its own table and connection.
func (s *sample) rate(ctx context.Context, connections int) (float64, error) {
	// As many bodies in all from one connection as from several, so that
	// each phase lasts long enough to time.
	n := max(10, s.cfg.Transactions/8)
	if connections == 1 {
		n *= 4
	}
	bodies := func(count int) func(int, *sql.Conn) error {
		return func(i int, conn *sql.Conn) error {
			_, _, err := s.apply(ctx, conn, i, calibrateRows, smallPad, count, false)
			return err
		}
	}
	return concurrentRate(ctx, s.db, connections, n, bodies(calibrateWarm/4), bodies(n))
}

// concurrentRate opens connections connections to db and readies each
// with ready (unless nil), untimed; then each runs its n bodies with run,
// all at once, and it returns the bodies a second of them all.
func concurrentRate(ctx context.Context, db *sql.DB, connections, n int, ready, run func(i int, conn *sql.Conn) error) (float64, error) {
	conns := make([]*sql.Conn, connections)
	for i := range conns {
		conn, err := db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conns[i] = conn
		if ready != nil {
			if err := ready(i, conn); err != nil {
				return 0, err
			}
		}
	}
	errs := make([]error, connections)
	var wg sync.WaitGroup
	began := time.Now()
	for i, conn := range conns {
		wg.Go(func() { errs[i] = run(i, conn) })
	}
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(n*connections) / elapsed, nil
}

func median(v []float64) float64 { return quantile(slices.Clone(v), 0.5) }
