// temporary.go keeps gapless.temporary: the temporary tables the source's
// sessions held when a run of a stream ended, so that the next run has
// them. A source session's temporary table lives in gapless's connection
// to the target that applies its statements, and ends with it; a source
// session that keeps it across the end of a run (a stop, --until) and then
// reads it would stop the next run for good (1146), where MariaDB's
// replica keeps its temporary tables across STOP SLAVE and START SLAVE.
// So at its end a run copies each into a table of gapless's schema (named
// by Copy) with a row here, and the next run makes them again, as they
// were, in the session that applies the source's statements, before it
// applies anything; it drops the copies as it does (target.Session's
// SaveTemporary and RestoreTemporary).
//
// Invariant: a row and its copy stand for the temporary table at the
// stream's position. They never outlive the next run's start: a copy
// restored, or one that cannot be, is dropped then, so stale rows are never
// made again after more of the binlog was applied. Reset drops them too.
// Like gapless.begun, the table, its rows and the copies are the target's
// own state, written outside the target's binlog.
package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"hash/crc32"
)

const createTemporary = `CREATE TABLE IF NOT EXISTS ` + Schema + `.temporary (
  stream      VARCHAR(64)  NOT NULL,
  copy        VARCHAR(64)  NOT NULL COMMENT 'the table of this schema that holds its rows',
  domain_id   INT UNSIGNED NOT NULL COMMENT 'the GTID domain of the session that held it',
  server_id   INT UNSIGNED NOT NULL,
  thread_id   INT UNSIGNED NOT NULL COMMENT 'the source session (pseudo_thread_id)',
  db          VARCHAR(64)  NOT NULL,
  name        VARCHAR(64)  NOT NULL,
  definition  MEDIUMTEXT   NOT NULL COMMENT 'SHOW CREATE TABLE of the temporary table',
  saved_at    DATETIME(6)  NOT NULL COMMENT 'UTC',
  PRIMARY KEY (stream, copy)
) ENGINE=InnoDB COMMENT='gapless: temporary tables of the source''s sessions kept from one run to the next; outside the binlog'`

// TemporaryTable is the name of the table, in Schema.
const TemporaryTable = "temporary"

// runningMark is the copy name of a row that says a run of the stream is
// under way: one found at a run's start says the run before ended without
// keeping its temporary tables (killed), which the source's sessions may
// still hold (MarkRunning).
const runningMark = "#running"

// KeptTemporary is a temporary table of a source session kept for the
// next run.
type KeptTemporary struct {
	Copy           string // its copy, a table of Schema
	Domain         uint32
	Server, Thread uint32 // the server id and pseudo_thread_id it was made under
	DB, Name       string
	Definition     string // SHOW CREATE TABLE of it
}

// CopyName names the i-th copy a run of stream keeps.
func CopyName(stream string, i int) string {
	return fmt.Sprintf("temporary_%08x_%d", crc32.ChecksumIEEE([]byte(stream)), i)
}

// createTemporaryTable makes gapless.temporary, outside the target's binlog, on conn.
func createTemporaryTable(ctx context.Context, conn *sql.Conn) error {
	for _, stmt := range []string{"SET @@session.sql_log_bin=0", createTemporary} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("target: create %s.%s: %w", Schema, TemporaryTable, err)
		}
	}
	return nil
}

// KeptTemporaries returns the temporary tables a run before kept for this
// one.
func (s *Store) KeptTemporaries(ctx context.Context) ([]KeptTemporary, error) {
	return keptTemporaries(ctx, s.db, s.stream)
}

func keptTemporaries(ctx context.Context, db *sql.DB, stream string) ([]KeptTemporary, error) {
	rows, err := db.QueryContext(ctx, "SELECT copy, domain_id, server_id, thread_id, db, name, definition FROM "+Schema+"."+TemporaryTable+" WHERE stream = ? AND copy <> ? ORDER BY domain_id, copy", stream, runningMark)
	if code := mysqlCode(err); code == 1146 || code == 1049 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("target: read %s.%s: %w", Schema, TemporaryTable, err)
	}
	defer rows.Close()
	var kept []KeptTemporary
	for rows.Next() {
		var k KeptTemporary
		if err := rows.Scan(&k.Copy, &k.Domain, &k.Server, &k.Thread, &k.DB, &k.Name, &k.Definition); err != nil {
			return nil, fmt.Errorf("target: read %s.%s: %w", Schema, TemporaryTable, err)
		}
		kept = append(kept, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("target: read %s.%s: %w", Schema, TemporaryTable, err)
	}
	return kept, nil
}

// MarkRunning records that a run of the stream is under way, until
// EndRunning; ended says whether the run before ended so (false: it was
// killed, or its host or the target went down, and the temporary tables
// its statement session held are lost).
func (s *Store) MarkRunning(ctx context.Context) (ended bool, err error) {
	n, err := s.writeRunningMark(ctx, "INSERT IGNORE INTO "+Schema+"."+TemporaryTable+" (stream, copy, domain_id, server_id, thread_id, db, name, definition, saved_at) VALUES (?, ?, 0, 0, 0, '', '', '', UTC_TIMESTAMP(6))")
	return n == 1, err
}

// writeRunningMark runs stmt, whose two parameters are the stream and the
// running mark's copy name, outside the target's binlog, and returns the
// rows it changed.
func (s *Store) writeRunningMark(ctx context.Context, stmt string) (int64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("target: %w", err)
	}
	defer Discard(conn)
	if _, err := conn.ExecContext(ctx, "SET @@session.sql_log_bin=0"); err != nil {
		return 0, fmt.Errorf("target: %w", err)
	}
	res, err := conn.ExecContext(ctx, stmt, s.stream, runningMark)
	if err != nil {
		return 0, fmt.Errorf("target: write %s.%s: %w", Schema, TemporaryTable, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// EndRunning removes MarkRunning's record, as a run ends on its own terms.
func (s *Store) EndRunning(ctx context.Context) error {
	_, err := s.writeRunningMark(ctx, "DELETE FROM "+Schema+"."+TemporaryTable+" WHERE stream = ? AND copy = ?")
	return err
}

// clearTemporaries drops the copies a run of stream kept, and their rows,
// on conn, outside the binlog.
func clearTemporaries(ctx context.Context, conn *sql.Conn, db *sql.DB, stream string) (int, error) {
	kept, err := keptTemporaries(ctx, db, stream)
	if err != nil {
		return 0, err
	}
	for _, k := range kept {
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+Schema+".`"+k.Copy+"`"); err != nil {
			return 0, fmt.Errorf("target: drop %s.%s: %w", Schema, k.Copy, err)
		}
	}
	_, err = conn.ExecContext(ctx, "DELETE FROM "+Schema+"."+TemporaryTable+" WHERE stream = ?", stream)
	if code := mysqlCode(err); err != nil && code != 1146 {
		return 0, fmt.Errorf("target: clear %s.%s: %w", Schema, TemporaryTable, err)
	}
	return len(kept), nil
}

// Settle writes the stream's running mark again (MarkRunning's row, which
// must exist), a write the target's cluster orders after everything its
// node received before: on a Galera node it returns once every writeset
// certified before it, by any node, a dead one included, is delivered
// there or dropped by all. A position read after it is the cluster's. A
// causal read (wsrep_sync_wait) alone is not enough: the node answers it
// from what it has delivered, and the last writeset of a node that just
// died is delivered only when the others have agreed on its death.
func (s *Store) Settle(ctx context.Context) error {
	_, err := s.writeRunningMark(ctx, "UPDATE "+Schema+"."+TemporaryTable+" SET saved_at = UTC_TIMESTAMP(6) WHERE stream = ? AND copy = ?")
	return err
}
