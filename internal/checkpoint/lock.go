// lock.go keeps one applier per stream and target: a named lock held on a
// connection of its own for as long as the applier runs. The server frees it
// when that connection ends, so a killed applier never leaves it behind.
package checkpoint

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

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

// LockName is the named lock the applier of a stream holds on the target.
func LockName(stream string) string { return "gapless." + stream }

// AcquireLock takes the stream's lock or says who holds it.
func AcquireLock(ctx context.Context, db *sql.DB, stream string) (*Lock, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	name := LockName(stream)
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
	if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", LockName(stream)).Scan(&id); err != nil || !id.Valid {
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
	// The target may still be coming back (a Galera cluster forming a new
	// primary component answers 1205 or 1047 for a moment): transient
	// errors are tried again for up to ensurePatience.
	deadline := time.Now().Add(ensurePatience)
	for wait := 100 * time.Millisecond; ; wait = min(wait*2, 2*time.Second) {
		again, err := AcquireLock(ctx, l.db, l.stream)
		if err == nil {
			l.conn = again.conn
			return nil
		}
		if !transientLockError(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// ensurePatience bounds how long Ensure tries again after transient errors.
const ensurePatience = 30 * time.Second

// transientLockError reports whether taking the lock failed for a reason
// that passes: a lock wait or deadlock, a node not yet in the primary
// component, a connection that went away.
func transientLockError(err error) bool {
	switch mysqlCode(err) {
	case 1205, 1213, 1047, 1053, 1927, 2006, 2013:
		return true
	case 0:
		return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || isNetError(err)
	}
	return false
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
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

// MaxSlots bounds the worker slots of a stream (replicate's --workers).
const MaxSlots = 256

// SlotLockName is the named lock a worker's connection holds for as long as
// it lives (target.Options.SlotLock). Its connection may outlive the
// applier: one killed with a COMMIT in flight leaves it on the server until
// that COMMIT has ended. A connection that holds a slot lock of a stream
// whose lock this applier holds is such an orphan, and the position read
// before it has ended may lack its transaction.
func SlotLockName(stream string, slot int) string {
	name := fmt.Sprintf("gapless.%s#%d", stream, slot)
	if len(name) > 64 { // the server's limit for a lock name
		sum := sha256.Sum256([]byte(stream))
		name = fmt.Sprintf("gapless.%x#%d", sum[:16], slot)
	}
	return name
}

// orphanPatience is how long an orphan connection may take to end by
// itself (its COMMIT, or the server noticing it is gone) before it is
// killed; orphanLimit how long it may take in all.
const (
	orphanPatience = 5 * time.Second
	orphanLimit    = 30 * time.Second
)

// SettleSlots waits until no connection holds the slot locks [from, to) of
// the stream, killing one that is still there after orphanPatience. The
// caller holds the stream's lock, so no other applier's worker can.
func SettleSlots(ctx context.Context, db *sql.DB, stream string, from, to int, warn func(string)) error {
	began, killed := time.Now(), map[int64]bool{}
	for {
		orphans, err := slotHolders(ctx, db, stream, from, to)
		if err != nil {
			return err
		}
		if len(orphans) == 0 {
			return nil
		}
		waited := time.Since(began)
		if waited > orphanLimit {
			return fmt.Errorf("connections %v of an earlier applier of stream %q are still open on the target after %s, and may still commit: end them (KILL CONNECTION id) and run again", orphans, stream, orphanLimit)
		}
		if waited > orphanPatience {
			for _, id := range orphans {
				if killed[id] {
					continue
				}
				killed[id] = true
				warn(fmt.Sprintf("connection %d of an earlier applier of stream %q is still open on the target after %s; killing it (what it had not committed rolls back)", id, stream, orphanPatience))
				if err := kill(ctx, db, id); err != nil {
					return fmt.Errorf("connection %d of an earlier applier of stream %q is still open on the target, and may still commit; killing it: %w; end it (KILL CONNECTION %d) and run again", id, stream, err, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// EndSlots ends, on the server of db, every connection that holds a worker
// slot lock of the stream, and waits until none is left: a node of a
// cluster that this run's connections left, one of which may still commit
// what the run then applies again on another node. It returns the
// connections ended.
func EndSlots(ctx context.Context, db *sql.DB, stream string) ([]int64, error) {
	killed := map[int64]bool{}
	var ended []int64
	for {
		holders, err := slotHolders(ctx, db, stream, 0, MaxSlots)
		if err != nil {
			return ended, err
		}
		if len(holders) == 0 {
			return ended, nil
		}
		for _, id := range holders {
			if killed[id] {
				continue
			}
			killed[id] = true
			ended = append(ended, id)
			if err := kill(ctx, db, id); err != nil {
				return ended, fmt.Errorf("target: end connection %d of stream %q: %w", id, stream, err)
			}
		}
		select {
		case <-ctx.Done():
			return ended, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// slotHolders are the connections that hold the slot locks [from, to) of
// the stream on the server of db.
func slotHolders(ctx context.Context, db *sql.DB, stream string, from, to int) ([]int64, error) {
	names := make([]any, 0, to-from)
	calls := make([]string, 0, to-from)
	for slot := from; slot < to; slot++ {
		names = append(names, SlotLockName(stream, slot))
		calls = append(calls, "IS_USED_LOCK(?)")
	}
	held := make([]sql.NullInt64, len(names))
	dest := make([]any, len(names))
	for i := range held {
		dest[i] = &held[i]
	}
	if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(calls, ", "), names...).Scan(dest...); err != nil {
		return nil, fmt.Errorf("target: read the worker locks of stream %q: %w", stream, err)
	}
	var holders []int64
	for _, h := range held {
		if h.Valid {
			holders = append(holders, h.Int64)
		}
	}
	return holders, nil
}

// kill ends connection id; one already gone (1094) is no error.
func kill(ctx context.Context, db *sql.DB, id int64) error {
	if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && mysqlCode(err) != 1094 {
		return err
	}
	return nil
}
