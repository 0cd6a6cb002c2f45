// reset.go clears a stream's position, for an operator who re-seeded the
// target from a backup: the rows of the stream in gapless.checkpoint,
// gapless.workers and gapless.begun go, and the source's temporary tables
// kept for the next run, so that the next run starts from --start-position
// (or the target's @@gtid_slave_pos).
//
// Invariant: a position is never removed under a running applier. Reset
// takes the stream's own lock for the deletion, so an applier that starts
// meanwhile waits for nothing and finds either the old position or none.
package checkpoint

import (
	"context"
	"database/sql"
	"fmt"

	"gapless/internal/gtid"
)

// Removed is what Reset deleted.
type Removed struct {
	Position   gtid.MariaDBPosition // the stream's gap-less position before the reset
	Extra      int                  // transactions applied past a gap (causal order)
	Rows       int                  // rows of gapless.checkpoint
	WorkerRows int                  // rows of gapless.workers
	Temporary  int                  // temporary tables of the source's sessions kept for the next run
}

// Existing reads the stream's position on the target without creating
// anything; found is false when the target holds no row of the stream (or
// no gapless schema).
func Existing(ctx context.Context, db *sql.DB, stream string) (a Applied, found bool, err error) {
	streams, err := Streams(ctx, db)
	if err != nil {
		return Applied{}, false, err
	}
	for _, s := range streams {
		if s == stream {
			a, err := ForStream(db, stream).Applied(ctx)
			return a, err == nil, err
		}
	}
	return Applied{}, false, nil
}

// Reset deletes the stream's position and worker rows, outside the target's
// binlog; it refuses, naming the holder, while an applier runs the stream.
func Reset(ctx context.Context, db *sql.DB, stream string) (Removed, error) {
	lock, err := AcquireLock(ctx, db, stream)
	if err != nil {
		return Removed{}, err
	}
	defer lock.Release()
	applied, found, err := Existing(ctx, db, stream)
	if err != nil || !found {
		return Removed{}, err
	}
	removed := Removed{Position: applied.Position, Extra: len(applied.Extra)}
	conn, err := db.Conn(ctx)
	if err != nil {
		return Removed{}, fmt.Errorf("target: %w", err)
	}
	defer Discard(conn)
	// The position is the target's own state, not the source's history: it
	// stays out of the target's binlog, as Seed's rows do.
	if _, err := conn.ExecContext(ctx, "SET @@session.sql_log_bin=0"); err != nil {
		return Removed{}, fmt.Errorf("target: %w", err)
	}
	res, err := conn.ExecContext(ctx, "DELETE FROM "+Schema+".checkpoint WHERE stream = ?", stream)
	if err != nil {
		return Removed{}, fmt.Errorf("target: clear %s.checkpoint: %w", Schema, err)
	}
	n, _ := res.RowsAffected()
	removed.Rows = int(n)
	res, err = conn.ExecContext(ctx, "DELETE FROM "+Schema+".workers WHERE stream = ?", stream)
	if err != nil && mysqlCode(err) != 1146 {
		return Removed{}, fmt.Errorf("target: clear %s.workers: %w", Schema, err)
	}
	if err == nil {
		n, _ = res.RowsAffected()
		removed.WorkerRows = int(n)
	}
	if err := clearBegun(ctx, conn, stream); err != nil {
		return Removed{}, err
	}
	if removed.Temporary, err = clearTemporaries(ctx, conn, db, stream); err != nil {
		return Removed{}, err
	}
	if err := clearStop(ctx, db, stream); err != nil {
		return Removed{}, err
	}
	return removed, nil
}
