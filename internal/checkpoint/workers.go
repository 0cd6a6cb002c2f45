// workers.go keeps gapless.workers: what each worker of a running applier is
// doing, rewritten about once a second from a connection of its own, outside
// the target's binlog, so that `gapless status` can show it from the target
// alone. The table holds one row per stream and worker slot.
package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gapless/internal/sqltext"
)

// WorkerRow is one worker's report.
type WorkerRow struct {
	Slot      int
	State     string
	GTID      string
	Since     time.Time
	UpdatedAt time.Time
}

const timeLayout = "2006-01-02 15:04:05.000000"

// ReportWorkers replaces the stream's worker rows.
func (s *Store) ReportWorkers(ctx context.Context, conn *sql.Conn, rows []WorkerRow) error {
	now := time.Now().UTC().Format(timeLayout)
	var b strings.Builder
	fmt.Fprintf(&b, "REPLACE INTO %s.workers (stream, slot, state, gtid, since, updated_at) VALUES ", Schema)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %d, %s, %s, %s, %s)", sqltext.Literal(s.stream), r.Slot, sqltext.Literal(r.State), sqltext.Literal(r.GTID),
			sqltext.Literal(r.Since.UTC().Format(timeLayout)), sqltext.Literal(now))
	}
	stmts := []string{"SET @@session.sql_log_bin=0",
		fmt.Sprintf("DELETE FROM %s.workers WHERE stream = %s AND slot >= %d", Schema, sqltext.Literal(s.stream), len(rows))}
	if len(rows) > 0 {
		stmts = append(stmts, b.String())
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// Workers reads the stream's worker rows.
func (s *Store) Workers(ctx context.Context) ([]WorkerRow, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT slot, state, gtid, since, updated_at FROM "+Schema+".workers WHERE stream = ? ORDER BY slot", s.stream)
	if err != nil {
		if code := mysqlCode(err); code == 1146 || code == 1049 {
			return nil, nil
		}
		return nil, fmt.Errorf("target: read %s.workers: %w", Schema, err)
	}
	defer rows.Close()
	var out []WorkerRow
	for rows.Next() {
		var r WorkerRow
		var since, updated string
		if err := rows.Scan(&r.Slot, &r.State, &r.GTID, &since, &updated); err != nil {
			return nil, err
		}
		r.Since, _ = time.Parse(timeLayout, padMicros(since))
		r.UpdatedAt, _ = time.Parse(timeLayout, padMicros(updated))
		out = append(out, r)
	}
	return out, rows.Err()
}

func padMicros(s string) string {
	if i := strings.IndexByte(s, '.'); i < 0 {
		return s + ".000000"
	}
	return s
}
