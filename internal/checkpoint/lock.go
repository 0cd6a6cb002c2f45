// lock.go keeps one applier per stream and target: a named lock held on a
// connection of its own for as long as the applier runs. The server frees it
// when that connection ends, so a killed applier never leaves it behind.
package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/go-sql-driver/mysql"
)

// Lock is the held single-writer lock of a stream.
type Lock struct {
	db     *sql.DB
	stream string
	name   string

	mu   sync.Mutex
	conn *sql.Conn
}

func lockName(stream string) string { return "gapless." + stream }

// AcquireLock takes the stream's lock or says who holds it.
func AcquireLock(ctx context.Context, db *sql.DB, stream string) (*Lock, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	name := lockName(stream)
	var got sql.NullInt64
	// A few seconds of patience: the lock of an applier killed a moment ago
	// stays held until the server has noticed its connection is gone.
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 3)", name).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("target: take the lock of stream %q: %w", stream, err)
	}
	if got.Int64 == 1 {
		return &Lock{db: db, stream: stream, name: name, conn: conn}, nil
	}
	conn.Close()
	holder := Holder(ctx, db, stream)
	if holder == "" {
		holder = "another session"
	}
	return nil, fmt.Errorf("another gapless is already applying stream %q to this target (%s); stop it first, or give this one another --stream", stream, holder)
}

// Holder describes the connection that holds the stream's lock, or "" when none does.
func Holder(ctx context.Context, db *sql.DB, stream string) string {
	var id sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", lockName(stream)).Scan(&id); err != nil || !id.Valid {
		return ""
	}
	var user, host string
	err := db.QueryRowContext(ctx, "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?", id.Int64).Scan(&user, &host)
	if err != nil {
		return fmt.Sprintf("connection %d", id.Int64)
	}
	return fmt.Sprintf("connection %d of user %s from %s", id.Int64, user, host)
}

// Ensure checks that the lock is still held, and takes it again when its
// connection died with a target restart; it fails, naming the holder, when
// another applier took it meanwhile.
func (l *Lock) Ensure(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var mine sql.NullInt64
	if l.conn != nil && l.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", l.name).Scan(&mine) == nil && mine.Int64 == 1 {
		return nil
	}
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
	again, err := AcquireLock(ctx, l.db, l.stream)
	if err != nil {
		return err
	}
	l.conn = again.conn
	return nil
}

// Release frees the lock.
func (l *Lock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	l.conn.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", l.name)
	l.conn.Close()
	l.conn = nil
}

func mysqlCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
