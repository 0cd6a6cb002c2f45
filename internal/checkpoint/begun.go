// begun.go keeps gapless.begun: per stream and GTID domain, the last group
// whose writes stay on the target as its statements run (target.PartsStay)
// that a run began. Such a group cannot be run again once part of it may
// have run, and a crash amid it leaves no other trace (its position is not
// written, and without the target's binlog nothing else shows it). So the
// row is written, and committed, before the group's first statement runs
// (BegunStatement, in the group's own round trip);
// a later run that is about to run that same group finds it and stops
// instead. A row outlives the group it names, harmlessly: the group is
// below the position once applied, and the next such group replaces it.
// A DDL is marked too, though it does not stay in part: after a crash amid
// it, the target's DDL recovery logs what it did under the target's own
// server id, which only the mark tells from a client's write on the target.
//
// Like gapless.stops, the table and its rows are the target's own state,
// written outside the target's binlog.
package checkpoint

import (
	"context"
	"database/sql"
	"fmt"

	"gapless/internal/gtid"
	"gapless/internal/sqltext"
)

const createBegun = `CREATE TABLE IF NOT EXISTS ` + Schema + `.begun (
  stream    VARCHAR(64)  NOT NULL,
  domain_id INT UNSIGNED NOT NULL,
  gtid      VARCHAR(256) NOT NULL COMMENT 'the group whose writes stay that a run began',
  began_at  DATETIME(6)  NOT NULL COMMENT 'UTC',
  PRIMARY KEY (stream, domain_id)
) ENGINE=InnoDB COMMENT='gapless: the last group whose writes stay on the target, per domain, that a run began; outside the binlog'`

// BegunStatement is the statement that records that g is about to run.
// The session runs it outside the target's binlog, in autocommit, in the
// round trip that begins g, before g's first statement.
func (s *Store) BegunStatement(g gtid.MariaDBGTID) string {
	return fmt.Sprintf("REPLACE INTO %s.begun (stream, domain_id, gtid, began_at) VALUES (%s, %d, %s, UTC_TIMESTAMP(6))",
		Schema, sqltext.Literal(s.stream), g.Domain, sqltext.Literal(g.String()))
}

// createBegunTable makes gapless.begun, outside the target's binlog, on conn.
func createBegunTable(ctx context.Context, conn *sql.Conn) error {
	for _, stmt := range []string{"SET @@session.sql_log_bin=0", createBegun} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("target: create %s.begun: %w", Schema, err)
		}
	}
	return nil
}

// Begun returns, per domain, the last group whose writes stay that a run
// of the stream began.
func (s *Store) Begun(ctx context.Context) (map[uint32]gtid.MariaDBGTID, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT gtid FROM "+Schema+".begun WHERE stream = ?", s.stream)
	if code := mysqlCode(err); code == 1146 || code == 1049 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("target: read %s.begun: %w", Schema, err)
	}
	defer rows.Close()
	begun := map[uint32]gtid.MariaDBGTID{}
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, fmt.Errorf("target: read %s.begun: %w", Schema, err)
		}
		g, err := gtid.ParseMariaDBGTID(text)
		if err != nil {
			return nil, fmt.Errorf("target: %s.begun holds %q: %w", Schema, text, err)
		}
		begun[g.Domain] = g
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("target: read %s.begun: %w", Schema, err)
	}
	return begun, nil
}

// clearBegun forgets the stream's begun groups (Reset).
func clearBegun(ctx context.Context, conn *sql.Conn, stream string) error {
	_, err := conn.ExecContext(ctx, "DELETE FROM "+Schema+".begun WHERE stream = ?", stream)
	if code := mysqlCode(err); err != nil && code != 1146 {
		return fmt.Errorf("target: clear %s.begun: %w", Schema, err)
	}
	return nil
}
