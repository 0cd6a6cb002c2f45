// probe.go measures what reading the target's own data costs, for
// --calibrate: the scratch sample's rows are always in the buffer pool,
// but a replica whose data is far larger than its pool waits for a page
// read at most row changes, and many connections then overlap their
// reads (an IO-bound target runs more batches at once than its cores).
//
// The probe reads, never writes: bodies of point lookups by primary key,
// at random values between the smallest and largest key, on the target's
// largest InnoDB tables that have a one-column integer primary key,
// each table drawn in proportion to its size. It times them from one
// connection, then from several at once, and the same bodies on the
// scratch database's one-page table, which stays cached, as the reference. What a lookup on
// the data costs beyond a cached one is each row change's page read.
//
// Example: if 32 lookups on the data take 3.2 ms and 32 on the scratch
// table 0.2 ms, a row change costs 94µs more than the sample says; if
// 8 connections do 3.5 times the lookups a second of one, the reads of
// row changes overlap 2.25 at once from 8 workers (half of the 2.5 extra:
// each page they read is also written back, dirty), and the model's
// capacity moves toward 2.25 with the share of the row cost that is
// reading.
//
// Invariant: the probe only runs SELECTs, on tables the calibration user
// can read; a target without such tables (or without the privilege) is
// probed on nothing, and the model is the scratch sample's alone.
package analyze

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// probeTable is one table the probe reads: its key's range and its share
// of the data.
type probeTable struct {
	name, key string // quoted schema.table, quoted column
	lo, hi    int64
	bytes     int64
}

const (
	probeTablesMax = 64 // the largest tables probed
	probeLookups   = calibrateRows
)

// probeTables lists the tables the probe reads, largest first, with their
// key ranges; skip is the scratch database.
func probeTables(ctx context.Context, db *sql.DB, skip string) ([]probeTable, error) {
	rows, err := db.QueryContext(ctx, `
SELECT t.TABLE_SCHEMA, t.TABLE_NAME, MIN(k.COLUMN_NAME), COALESCE(t.DATA_LENGTH, 0)
FROM information_schema.TABLES t
JOIN information_schema.KEY_COLUMN_USAGE k
  ON k.TABLE_SCHEMA = t.TABLE_SCHEMA AND k.TABLE_NAME = t.TABLE_NAME AND k.CONSTRAINT_NAME = 'PRIMARY'
JOIN information_schema.COLUMNS c
  ON c.TABLE_SCHEMA = k.TABLE_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME AND c.COLUMN_NAME = k.COLUMN_NAME
WHERE t.ENGINE = 'InnoDB' AND t.TABLE_TYPE = 'BASE TABLE'
  AND t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys', 'gapless', ?)
  AND c.DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int', 'bigint')
GROUP BY t.TABLE_SCHEMA, t.TABLE_NAME, t.DATA_LENGTH
HAVING COUNT(*) = 1
ORDER BY 4 DESC
LIMIT ?`, skip, probeTablesMax)
	if err != nil {
		return nil, err
	}
	var tables []probeTable
	for rows.Next() {
		var schema, table, key string
		var bytes int64
		if err := rows.Scan(&schema, &table, &key, &bytes); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, probeTable{name: quoteIdent(schema) + "." + quoteIdent(table), key: quoteIdent(key), bytes: max(bytes, 1)})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	kept := tables[:0]
	for _, t := range tables {
		var lo, hi sql.NullInt64
		q := fmt.Sprintf("SELECT MIN(%s), MAX(%s) FROM %s", t.key, t.key, t.name)
		if err := db.QueryRowContext(ctx, q).Scan(&lo, &hi); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue // not readable by this user: not probed
		}
		if lo.Valid && hi.Valid && hi.Int64 > lo.Int64 {
			t.lo, t.hi = lo.Int64, hi.Int64
			kept = append(kept, t)
		}
	}
	return kept, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// lookups is a body of point lookups, the tables drawn by size.
func lookups(tables []probeTable, total int64) string {
	var b strings.Builder
	for i := range probeLookups {
		pick := rand.Int64N(total)
		t := tables[len(tables)-1]
		for _, c := range tables {
			if pick < c.bytes {
				t = c
				break
			}
			pick -= c.bytes
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "SELECT * FROM %s WHERE %s = %d", t.name, t.key, t.lo+rand.Int64N(t.hi-t.lo+1))
	}
	return b.String()
}

// probe is one calibration's reads of the target's data.
type probe struct {
	db     *sql.DB
	tables []probeTable
	total  int64
	cached []probeTable // the scratch database's one-page table, for the reference
}

// body runs one body of lookups on conn and returns its duration in µs.
func (p *probe) body(ctx context.Context, conn *sql.Conn, tables []probeTable, total int64) (float64, error) {
	q := lookups(tables, total)
	t0 := time.Now()
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("probe of the target's tables: %w", err)
	}
	for {
		for rows.Next() {
		}
		if !rows.NextResultSet() {
			break
		}
	}
	err = errors.Join(rows.Err(), rows.Close())
	if err != nil {
		return 0, fmt.Errorf("probe of the target's tables: %w", err)
	}
	return float64(time.Since(t0)) / float64(time.Microsecond), nil
}

// serial returns the median body on the data and on the cached tables,
// interleaved, from one connection.
func (p *probe) serial(ctx context.Context, n int) (data, cached float64, err error) {
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	var ds, cs []float64
	for range n {
		d, err := p.body(ctx, conn, p.tables, p.total)
		if err != nil {
			return 0, 0, err
		}
		c, err := p.body(ctx, conn, p.cached, int64(len(p.cached)))
		if err != nil {
			return 0, 0, err
		}
		ds, cs = append(ds, d), append(cs, c)
	}
	return median(ds), median(cs), nil
}

// rate is how many bodies on the data a second connections run together,
// each running n.
func (p *probe) rate(ctx context.Context, connections, n int) (float64, error) {
	return concurrentRate(ctx, p.db, connections, n, nil, func(_ int, conn *sql.Conn) error {
		for range n {
			if _, err := p.body(ctx, conn, p.tables, p.total); err != nil {
				return err
			}
		}
		return nil
	})
}
