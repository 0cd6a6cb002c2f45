// report.go is what an analysis finds, as one value that the text, JSON and
// HTML outputs all print from.
//
// Invariant: PredictedSpeedup has one entry per simulated policy, each with
// one entry per simulated worker count, keyed by the count in decimal.
package analyze

import (
	"slices"
	"sort"
	"time"

	"gapless/internal/binlog"
)

// Report is the result of an analysis.
type Report struct {
	Input         string   `json:"input"`
	Flavor        string   `json:"flavor"`
	ServerVersion string   `json:"server_version"`
	SkippedFiles  []string `json:"skipped_files,omitempty"`
	Torn          string   `json:"torn,omitempty"`
	// IncompleteGroups is 1 when the input ended inside a transaction, which was left out.
	IncompleteGroups int `json:"incomplete_groups,omitempty"`

	Transactions int       `json:"transactions"`
	Bytes        int64     `json:"bytes"`
	Events       int64     `json:"events"`
	RowChanges   int64     `json:"row_changes"`
	RowsDecoded  bool      `json:"rows_decoded"`
	First        time.Time `json:"first_commit"`
	Last         time.Time `json:"last_commit"`
	Elapsed      float64   `json:"analysis_seconds"`
	MBPerSecond  float64   `json:"analysis_mb_per_second"`

	Keys     KeySource `json:"keys"`
	KeysNote string    `json:"keys_note"`

	CostModel        CostJSON                      `json:"cost_model"`
	Calibration      *Calibration                  `json:"calibration,omitempty"`
	Batch            int                           `json:"batch"`
	CommitOrder      string                        `json:"commit_order"`
	Workers          []int                         `json:"workers"`
	ReferenceWorkers int                           `json:"reference_workers"`
	PredictedSpeedup map[string]map[string]float64 `json:"predicted_speedup"`
	Policies         []PolicyResult                `json:"policies"`

	GroupCommit GroupCommit `json:"group_commit"`
	CommitRate  CommitRate  `json:"commit_rate"`

	Barriers          []Count          `json:"barriers"`
	BarrierExamples   []BarrierExample `json:"barrier_examples,omitempty"`
	Domains           []Count          `json:"domains"`
	Schemas           []Count          `json:"schemas"`
	Tables            []TableResult    `json:"tables"`
	TablesWithoutPK   []Count          `json:"tables_without_primary_key"`
	TablesKeysUnknown []Count          `json:"tables_keys_unknown,omitempty"`
	ForeignKeyTables  []Count          `json:"foreign_key_tables,omitempty"`
	PartialRowImages  int              `json:"transactions_with_partial_row_images"`

	Waits             *WritesetWaits `json:"writeset_waits,omitempty"`
	LargeTransactions []HeldBack     `json:"large_transactions"`
	TotalCostMS       float64        `json:"serial_apply_ms"`

	Advice []string `json:"advice"`
}

// CostJSON is the cost model in microseconds.
type CostJSON struct {
	CommitUS float64 `json:"commit_us"`
	TxnUS    float64 `json:"transaction_us"`
	RowUS    float64 `json:"row_us"`
	KiBUS    float64 `json:"kib_us"`
	// Capacity is the target's parallel capacity; 0: unlimited.
	Capacity float64 `json:"capacity"`
}

// PolicyResult is one policy's simulation.
type PolicyResult struct {
	Name    string             `json:"name"`
	Speedup map[string]float64 `json:"speedup"`
	// Best is the worker count giving 90% of the policy's best speedup with the fewest workers.
	BestWorkers int     `json:"best_workers"`
	BestSpeedup float64 `json:"best_speedup"`
	Longest     Chain   `json:"longest_chain"`
	// At the reference worker count: the share of worker time spent waiting
	// for dependencies, and waiting for the commit turn.
	DepWaitShare  float64    `json:"dependency_wait_share"`
	TurnWaitShare float64    `json:"commit_turn_wait_share"`
	HeldBack      []HeldBack `json:"held_back,omitempty"`
	Warning       string     `json:"warning,omitempty"`
}

// GroupBucket is one bar of the group size histogram.
type GroupBucket struct {
	Min          int `json:"min"`
	Max          int `json:"max"`
	Groups       int `json:"groups"`
	Transactions int `json:"transactions"`
}

// GroupCommit describes the groups the source committed together.
type GroupCommit struct {
	By        string        `json:"by"` // commit_id (MariaDB) or last_committed (MySQL)
	Groups    int           `json:"groups"`
	MeanSize  float64       `json:"mean_size"`
	Histogram []GroupBucket `json:"histogram"`
}

// CommitRate is how fast the source committed, from the events' timestamps.
type CommitRate struct {
	BusySeconds     int     `json:"busy_seconds"`
	MedianPerSecond float64 `json:"median_per_second"`
	PeakPerSecond   float64 `json:"p95_per_second"`
	// Writers is the median number of distinct connections committing in a
	// second; 0 when the binlog does not say (MariaDB row format).
	Writers float64 `json:"writers"`
}

// BarrierExample is one transaction that ran alone.
type BarrierExample struct {
	Kind      string `json:"kind"`
	GTID      string `json:"gtid"`
	Statement string `json:"statement,omitempty"`
}

// TableResult is one table's share of the stream.
type TableResult struct {
	Name         string `json:"name"`
	Transactions int    `json:"transactions"`
	Rows         int64  `json:"rows"`
	Keys         string `json:"keys"` // primary, unique, none, unknown
	ForeignKeys  bool   `json:"foreign_keys,omitempty"`
}

// WritesetWaits says why writeset transactions waited for earlier ones
// within the window of the most workers simulated.
type WritesetWaits struct {
	Transactions int     `json:"transactions"`
	AfterBarrier int     `json:"after_barrier"`
	ForeignKeys  int     `json:"foreign_keys"`
	ByTable      []Count `json:"by_table"`
	ByKey        []Count `json:"by_key"`
}

func (s *statistics) report(cut *groupCutter, opts Options, keys KeySource) *Report {
	s.closeRun()
	r := &Report{
		Flavor:           s.flavor.String(),
		Transactions:     s.transactions,
		Bytes:            s.bytes,
		Events:           cut.events,
		RowChanges:       s.rows,
		First:            s.first,
		Last:             s.last,
		Keys:             keys,
		CommitOrder:      "strict",
		Workers:          opts.Workers,
		ReferenceWorkers: opts.ReferenceWorkers,
		PredictedSpeedup: map[string]map[string]float64{},
		CostModel: CostJSON{
			CommitUS: micros(opts.Cost.Commit), TxnUS: micros(opts.Cost.Txn),
			RowUS: micros(opts.Cost.Row), KiBUS: micros(opts.Cost.KiB), Capacity: opts.Cost.Capacity,
		},
		Batch:             opts.Batch,
		PartialRowImages:  s.partialImages,
		LargeTransactions: s.large,
		TotalCostMS:       s.cost / 1000,
	}
	if cut.format != nil {
		r.ServerVersion = cut.format.version
		r.Flavor = cut.format.flavor.String()
	}
	r.GroupCommit = GroupCommit{By: "commit_id", Groups: s.groupRuns, Histogram: s.groups}
	if s.flavor == binlog.FlavorMySQL {
		r.GroupCommit.By = "last_committed"
	}
	if s.groupRuns > 0 {
		r.GroupCommit.MeanSize = float64(s.transactions) / float64(s.groupRuns)
	}
	r.CommitRate = s.commitRate()
	for k := barrierDDL; k < barrierKinds; k++ {
		if s.barriers[k] > 0 {
			r.Barriers = append(r.Barriers, Count{Name: barrierNames[k], Transactions: s.barriers[k], Note: shortBarrierName(k)})
		}
	}
	r.BarrierExamples = s.examples
	r.Domains = topCounts(s.domains, 20)
	r.Schemas = topCounts(s.schemas, 20)

	withoutPK, unknown, fks := map[string]int{}, map[string]int{}, map[string]int{}
	for ref, ts := range s.tables {
		tr := TableResult{Name: ref.String(), Transactions: ts.transactions, Rows: ts.rows, Keys: keysKind(ts.keys)}
		if ts.keys != nil && ts.keys.info != nil && ts.keys.info.ForeignKeys {
			tr.ForeignKeys = true
			fks[tr.Name] = ts.transactions
		}
		switch tr.Keys {
		case "none", "unique only":
			withoutPK[tr.Name] = ts.transactions
		case "unknown":
			unknown[tr.Name] = ts.transactions
		}
		r.Tables = append(r.Tables, tr)
	}
	sort.Slice(r.Tables, func(i, j int) bool {
		if r.Tables[i].Transactions != r.Tables[j].Transactions {
			return r.Tables[i].Transactions > r.Tables[j].Transactions
		}
		return r.Tables[i].Name < r.Tables[j].Name
	})
	r.TablesWithoutPK = topCounts(withoutPK, 50)
	r.TablesKeysUnknown = topCounts(unknown, 50)
	r.ForeignKeyTables = topCounts(fks, 50)
	if len(r.Tables) > 50 {
		r.Tables = r.Tables[:50]
	}
	r.KeysNote = keysNote(keys, len(s.tables), len(unknown))
	if keys == KeysFromTableMap && len(unknown) == len(s.tables) && len(s.tables) > 0 {
		r.Keys = KeysNone
	}
	return r
}

func keysKind(k *tableKeys) string {
	switch {
	case k == nil || !k.known:
		return "unknown"
	case k.hasPrimary():
		return "primary"
	case len(k.info.Keys) > 0:
		return "unique only"
	}
	return "none"
}

func keysNote(source KeySource, tables, unknown int) string {
	switch {
	case source == KeysFromServer:
		return "unique and foreign keys read from --schema-from (today's definitions, not those at the time of each transaction)"
	case unknown == tables && tables > 0:
		return "no key metadata in the table maps (binlog_row_metadata is not FULL) and no --schema-from: writeset worked per table, as for tables without a primary key"
	case unknown > 0:
		return "primary keys from the table maps' metadata; some tables had none (binlog_row_metadata not FULL when written) and were taken per table; unique and foreign keys unknown without --schema-from"
	}
	return "primary keys from the table maps' metadata (binlog_row_metadata=FULL); unique and foreign keys unknown without --schema-from"
}

func (s *statistics) commitRate() CommitRate {
	var counts, writers []float64
	for _, sec := range s.seconds {
		counts = append(counts, float64(sec.commits))
		if len(sec.writers) > 0 {
			writers = append(writers, float64(len(sec.writers)))
		}
	}
	rate := CommitRate{
		BusySeconds:     len(counts),
		MedianPerSecond: quantile(counts, 0.5),
		PeakPerSecond:   quantile(counts, 0.95),
	}
	// MariaDB row-format transactions carry no connection id (no BEGIN
	// query event): the number of writers is then unknown.
	if 2*s.threaded >= s.transactions {
		rate.Writers = quantile(writers, 0.5)
	}
	return rate
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[int(q*float64(len(v)-1)+0.5)]
}

// addPolicy records one policy's simulations.
func (r *Report) addPolicy(run *policyRun, opts Options) {
	res := PolicyResult{Name: run.name, Speedup: map[string]float64{}, Longest: run.longestChain(), Warning: run.warning}
	best := 0.0
	for _, s := range run.sims {
		sp := s.speedup()
		res.Speedup[workersKey(s.workers)] = sp
		best = max(best, sp)
		if s.workers == opts.ReferenceWorkers && s.lastCommit > 0 {
			busy := float64(s.workers) * s.lastCommit
			res.DepWaitShare = s.depWait / busy
			res.TurnWaitShare = s.turnWait / busy
			if s.blame != nil {
				res.HeldBack = r.large(s.blame.top)
			}
		}
	}
	for _, s := range run.sims {
		if sp := s.speedup(); sp >= 0.9*best {
			res.BestWorkers, res.BestSpeedup = s.workers, sp
			break
		}
	}
	r.PredictedSpeedup[run.name] = res.Speedup
	r.Policies = append(r.Policies, res)
	if run.waits != nil {
		w := run.waits
		keys := map[string]int{}
		for ref, n := range w.tables {
			keys[ref.String()] = n
		}
		r.Waits = &WritesetWaits{
			Transactions: w.transactions, AfterBarrier: w.afterBarrier, ForeignKeys: w.foreignKeys,
			ByTable: topCounts(keys, 10), ByKey: topCounts(w.keys, 10),
		}
		r.Waits.ByKey = slices.DeleteFunc(r.Waits.ByKey, func(c Count) bool { return c.Transactions < 2 })
		for i := range r.Waits.ByTable {
			for _, t := range r.Tables {
				if t.Name != r.Waits.ByTable[i].Name {
					continue
				}
				switch t.Keys {
				case "none":
					r.Waits.ByTable[i].Note = "no primary key: one transaction at a time"
				case "unknown":
					r.Waits.ByTable[i].Note = "keys unknown: one transaction at a time"
				}
			}
		}
	}
}

// largeFactor is how many times the mean cost a transaction must cost to
// count as large.
const largeFactor = 5

// large keeps the transactions that held others back by their size, not
// because they waited for dependencies themselves.
func (r *Report) large(held []HeldBack) []HeldBack {
	if r.Transactions == 0 {
		return nil
	}
	mean := r.TotalCostMS / float64(r.Transactions)
	var out []HeldBack
	for _, h := range held {
		if h.CostMS >= largeFactor*mean {
			out = append(out, h)
		}
	}
	return out
}

// policy returns the named policy's result, or nil.
func (r *Report) policy(name string) *PolicyResult {
	for i := range r.Policies {
		if r.Policies[i].Name == name {
			return &r.Policies[i]
		}
	}
	return nil
}
