// stops.go keeps gapless.stops: why a stream's last run ended on an error
// (the transaction it failed at and the error as the run printed it), so
// that `gapless status` can show it after the process is gone. One row per
// stream, written when a run stops on an error and removed when the next
// run starts. Like gapless.workers it is status, not position: the table
// and its rows are written outside the target's binlog, and a replica of
// the target has neither.
package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

const createStops = `CREATE TABLE IF NOT EXISTS ` + Schema + `.stops (
  stream     VARCHAR(64)  NOT NULL,
  gtid       VARCHAR(256) NOT NULL DEFAULT '' COMMENT 'the transaction the run failed at, when one',
  position   TEXT         NOT NULL COMMENT 'gap-less position when the run stopped',
  error      TEXT         NOT NULL COMMENT 'the error the run ended with',
  stopped_at DATETIME(6)  NOT NULL COMMENT 'UTC',
  PRIMARY KEY (stream)
) ENGINE=InnoDB COMMENT='gapless: why the last run of a stream stopped on an error; outside the binlog'`

// Stop is why a stream's last run ended on an error.
type Stop struct {
	GTID      string // the transaction it failed at; "" when none is to blame
	Position  string // the gap-less position it stopped at
	Error     string
	StoppedAt time.Time
}

// RecordStop keeps why the run stopped, outside the target's binlog.
func (s *Store) RecordStop(ctx context.Context, st Stop) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer Discard(conn)
	for _, stmt := range []string{"SET @@session.sql_log_bin=0", createStops} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("target: record the stop in %s.stops: %w", Schema, err)
		}
	}
	_, err = conn.ExecContext(ctx, "REPLACE INTO "+Schema+".stops (stream, gtid, position, error, stopped_at) VALUES (?, ?, ?, ?, ?)",
		s.stream, st.GTID, st.Position, st.Error, st.StoppedAt.UTC().Format(timeLayout))
	if err != nil {
		return fmt.Errorf("target: record the stop in %s.stops: %w", Schema, err)
	}
	return nil
}

// ClearStop forgets the stream's last stop: a run has started again.
func (s *Store) ClearStop(ctx context.Context) error {
	return clearStop(ctx, s.db, s.stream)
}

func clearStop(ctx context.Context, db *sql.DB, stream string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer Discard(conn)
	if _, err := conn.ExecContext(ctx, "SET @@session.sql_log_bin=0"); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "DELETE FROM "+Schema+".stops WHERE stream = ?", stream); err != nil {
		if code := mysqlCode(err); code == 1146 || code == 1049 {
			return nil
		}
		return fmt.Errorf("target: clear %s.stops: %w", Schema, err)
	}
	return nil
}

// LastStop is why the stream's last run stopped on an error; ok is false
// when it did not (or a run has started since).
func (s *Store) LastStop(ctx context.Context) (st Stop, ok bool, err error) {
	var at string
	err = s.db.QueryRowContext(ctx, "SELECT gtid, position, error, stopped_at FROM "+Schema+".stops WHERE stream = ?", s.stream).
		Scan(&st.GTID, &st.Position, &st.Error, &at)
	if err == sql.ErrNoRows {
		return Stop{}, false, nil
	}
	if err != nil {
		if code := mysqlCode(err); code == 1146 || code == 1049 {
			return Stop{}, false, nil
		}
		return Stop{}, false, fmt.Errorf("target: read %s.stops: %w", Schema, err)
	}
	st.StoppedAt, _ = time.Parse(timeLayout, padMicros(at))
	return st, true, nil
}
