// Package verify compares the replicated tables of a source and a target
// server and reports, per table, whether their rows are the same.
//
// Invariant: a table is reported "equal" only when its checksums match on
// both sides or, when they do not, a full row-by-row comparison found no
// difference; every other outcome names the table as differing.
package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Table statuses.
const (
	StatusEqual     = "equal"
	StatusDifferent = "different"
	StatusMissing   = "missing" // on the source, not on the target
	StatusExtra     = "extra"   // on the target, not on the source
)

// DefaultChunkRows is the number of rows read per query when comparing rows.
const DefaultChunkRows = 10000

// Workers is how many tables are compared at once.
const Workers = 4

// SkippedSchemas are never compared unless named in Options.Databases.
var SkippedSchemas = []string{"mysql", "information_schema", "performance_schema", "sys", "gapless"}

// Options tune Compare.
type Options struct {
	Databases []string     // schemas to compare; empty = all except SkippedSchemas
	ChunkRows int          // rows per query when comparing rows; 0 = DefaultChunkRows
	Progress  func(string) // optional; called with one line at a time, never concurrently
}

// TableResult is the outcome for one table.
type TableResult struct {
	Schema, Table string
	Status        string
	// SourceRows and TargetRows are set when rows were compared or counted,
	// which is always the case for StatusDifferent.
	SourceRows, TargetRows int64
	Detail                 string
	// onTarget is the table as the target names it, when that differs in
	// case (a server that folds names: lower_case_table_names).
	onTarget tableName
}

// Name is schema.table.
func (t TableResult) Name() string { return t.Schema + "." + t.Table }

// Report holds one result per table, ordered by schema and table name.
type Report struct {
	Tables []TableResult
	// Elsewhere are the target's databases the source does not have at
	// all, when no Databases were named: on a target shared by several
	// streams, another source's. They are reported apart and are not
	// differences; naming them in Options.Databases compares them.
	Elsewhere []OtherDatabase
	// Absent are the source's databases the target does not have at all,
	// when no Databases were named: their tables are missing (differences),
	// and a stream that filters them out (--do-db, --ignore-db) is the
	// likely reason.
	Absent []OtherDatabase
}

// OtherDatabase is a database of the target that the source does not have,
// with how many tables it holds.
type OtherDatabase struct {
	Schema string
	Tables int
}

// Equal reports whether every table is equal on both sides.
func (r Report) Equal() bool {
	for _, t := range r.Tables {
		if t.Status != StatusEqual {
			return false
		}
	}
	return true
}

// Differing lists the tables that are not equal.
func (r Report) Differing() []TableResult {
	var out []TableResult
	for _, t := range r.Tables {
		if t.Status != StatusEqual {
			out = append(out, t)
		}
	}
	return out
}

// Compare compares every base table of the selected schemas between source
// and target. Each of the Workers holds one connection of each pool at a
// time, so one pool passed as both sides needs room for two per worker.
// Connections must return column values as text (no parseTime).
func Compare(ctx context.Context, source, target *sql.DB, opts Options) (Report, error) {
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	progress := func(string) {}
	if opts.Progress != nil {
		var mu sync.Mutex
		progress = func(line string) {
			mu.Lock()
			defer mu.Unlock()
			opts.Progress(line)
		}
	}

	if len(opts.Databases) > 0 {
		if err := checkDatabasesExist(ctx, source, target, opts.Databases); err != nil {
			return Report{}, err
		}
	}
	sourceTables, err := listTables(ctx, source, opts.Databases)
	if err != nil {
		return Report{}, fmt.Errorf("source: listing tables: %w", err)
	}
	targetTables, err := listTables(ctx, target, opts.Databases)
	if err != nil {
		return Report{}, fmt.Errorf("target: listing tables: %w", err)
	}

	fold, err := foldsNames(ctx, source, target)
	if err != nil {
		return Report{}, err
	}
	report, err := pairTables(ctx, source, target, sourceTables, targetTables, fold, len(opts.Databases) == 0)
	if err != nil {
		return Report{}, err
	}
	c := &comparer{source: source, target: target, chunkRows: opts.ChunkRows, progress: progress, foldNames: fold}
	if err := c.compareAll(ctx, report.Tables); err != nil {
		return Report{}, err
	}
	return report, nil
}

// pairTables lists every table of either side in the report, in order: a
// source's table with the target's of the same name (compared ignoring
// case where fold says the servers do), missing or extra where the other
// side lacks it. With allDatabases (none named), a target's table in a
// database the source lacks is another stream's (Report.Elsewhere), and a
// source's in a database the target lacks is filtered out of this one
// (Report.Absent).
func pairTables(ctx context.Context, source, target *sql.DB, sourceTables, targetTables map[tableName]bool, fold, allDatabases bool) (Report, error) {
	key := func(n tableName) tableName {
		if fold {
			return tableName{strings.ToLower(n.schema), strings.ToLower(n.table)}
		}
		return n
	}
	onTarget := make(map[tableName]tableName, len(targetTables))
	for name := range targetTables {
		onTarget[key(name)] = name
	}
	var sourceSchemas, targetSchemas map[string]bool
	if allDatabases {
		var err error
		fold := func(n string) string { return key(tableName{schema: n}).schema }
		if sourceSchemas, err = schemaSet(ctx, source, fold); err != nil {
			return Report{}, fmt.Errorf("source: listing databases: %w", err)
		}
		if targetSchemas, err = schemaSet(ctx, target, fold); err != nil {
			return Report{}, fmt.Errorf("target: listing databases: %w", err)
		}
	}
	onSource := make(map[tableName]bool, len(sourceTables))
	elsewhere := map[string]int{}
	var report Report
	absent := map[string]int{}
	for name := range sourceTables {
		onSource[key(name)] = true
		r := TableResult{Schema: name.schema, Table: name.table}
		if t, ok := onTarget[key(name)]; !ok {
			r.Status = StatusMissing
			if allDatabases && !targetSchemas[key(name).schema] {
				absent[name.schema]++
			}
		} else if t != name {
			r.onTarget = t
		}
		report.Tables = append(report.Tables, r)
	}
	for name := range targetTables {
		switch {
		case onSource[key(name)]:
		case allDatabases && !sourceSchemas[key(name).schema]:
			elsewhere[name.schema]++
		default:
			report.Tables = append(report.Tables, TableResult{Schema: name.schema, Table: name.table, Status: StatusExtra})
		}
	}
	report.Elsewhere, report.Absent = otherDatabases(elsewhere), otherDatabases(absent)
	sort.Slice(report.Tables, func(i, j int) bool {
		a, b := report.Tables[i], report.Tables[j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		return a.Table < b.Table
	})
	return report, nil
}

// otherDatabases lists the tables counted by database, by name.
func otherDatabases(tables map[string]int) []OtherDatabase {
	var out []OtherDatabase
	for schema, n := range tables {
		out = append(out, OtherDatabase{Schema: schema, Tables: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Schema < out[j].Schema })
	return out
}

// compareAll compares, Workers at a time, the tables on both sides (those
// without a status yet), and stops at the first error.
func (c *comparer) compareAll(ctx context.Context, tables []TableResult) error {
	var onBoth []int
	for i, t := range tables {
		if t.Status == "" {
			onBoth = append(onBoth, i)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(Workers, len(onBoth)) {
		wg.Go(func() {
			for i := range jobs {
				t := &tables[i]
				if err := c.compareTable(ctx, t); err != nil {
					cancel(fmt.Errorf("comparing %s: %w", t.Name(), err))
				}
			}
		})
	}
feed:
	for _, i := range onBoth {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}

// foldsNames reports whether either server folds table names to lower case
// (lower_case_table_names 1 or 2): a source's Shop.Orders is then shop.orders
// on a target that does, as MariaDB's replica makes it.
func foldsNames(ctx context.Context, source, target *sql.DB) (bool, error) {
	for side, db := range map[string]*sql.DB{"source": source, "target": target} {
		var lower int
		if err := db.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lower); err != nil {
			return false, fmt.Errorf("%s: reading lower_case_table_names: %w", side, err)
		}
		if lower != 0 {
			return true, nil
		}
	}
	return false, nil
}

type tableName struct{ schema, table string }

func (n tableName) String() string { return n.schema + "." + n.table }

func listTables(ctx context.Context, db *sql.DB, databases []string) (map[tableName]bool, error) {
	query := "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES" +
		" WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED', 'SEQUENCE')"
	var args []any
	if len(databases) > 0 {
		query += " AND TABLE_SCHEMA IN (" + placeholders(len(databases)) + ")"
		for _, d := range databases {
			args = append(args, d)
		}
	} else {
		query += " AND TABLE_SCHEMA NOT IN (" + placeholders(len(SkippedSchemas)) + ")"
		for _, d := range SkippedSchemas {
			args = append(args, d)
		}
	}
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tables := map[tableName]bool{}
	for rows.Next() {
		var n tableName
		if err := rows.Scan(&n.schema, &n.table); err != nil {
			return nil, err
		}
		tables[n] = true
	}
	return tables, rows.Err()
}

func checkDatabasesExist(ctx context.Context, source, target *sql.DB, databases []string) error {
	onSource, err := existingSchemas(ctx, source, databases)
	if err != nil {
		return fmt.Errorf("source: listing databases: %w", err)
	}
	onTarget, err := existingSchemas(ctx, target, databases)
	if err != nil {
		return fmt.Errorf("target: listing databases: %w", err)
	}
	var unknown []string
	for _, d := range databases {
		if !onSource[d] && !onTarget[d] {
			unknown = append(unknown, d)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("database %s exists on neither source nor target", strings.Join(unknown, ", "))
	}
	return nil
}

func existingSchemas(ctx context.Context, db *sql.DB, names []string) (map[string]bool, error) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := db.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ("+placeholders(len(names))+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		found[n] = true
	}
	return found, rows.Err()
}

// schemaSet is the databases of db but the SkippedSchemas, as fold names them.
func schemaSet(ctx context.Context, db *sql.DB, fold func(string) string) (map[string]bool, error) {
	names, err := allSchemas(ctx, db)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[fold(n)] = true
	}
	return set, nil
}

// allSchemas lists the databases of db but the SkippedSchemas.
func allSchemas(ctx context.Context, db *sql.DB) ([]string, error) {
	args := make([]any, len(SkippedSchemas))
	for i, n := range SkippedSchemas {
		args[i] = n
	}
	rows, err := db.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ("+placeholders(len(SkippedSchemas))+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}
