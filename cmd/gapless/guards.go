// guards.go refuses the replicate runs that would harm the servers or
// another applier before anything is written: a target that is the source
// itself, a --server-id that is the source's own, a relay folder another
// gapless uses. It also keeps the relay folder private (0700, files 0600):
// the segments hold every row the source writes.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// serverIdentity names a server: its @@server_uuid where it has one
// (MySQL), else @@server_id, @@port and @@hostname (MariaDB has no uuid).
type serverIdentity struct {
	uuid     string
	serverID uint32
	port     int
	hostname string
}

func (s serverIdentity) String() string {
	if s.uuid != "" {
		return "server_uuid " + s.uuid
	}
	return fmt.Sprintf("server_id %d, port %d on host %s", s.serverID, s.port, s.hostname)
}

func (s serverIdentity) same(o serverIdentity) bool {
	if s.uuid != "" || o.uuid != "" {
		return s.uuid == o.uuid
	}
	return s.serverID == o.serverID && s.port == o.port && s.hostname == o.hostname
}

func readServerIdentity(ctx context.Context, db *sql.DB) (serverIdentity, error) {
	var id serverIdentity
	err := db.QueryRowContext(ctx, "SELECT @@server_uuid").Scan(&id.uuid)
	var me *mysqldriver.MySQLError
	if err != nil && !(errors.As(err, &me) && me.Number == 1193) { // 1193: unknown system variable
		return id, err
	}
	err = db.QueryRowContext(ctx, "SELECT @@server_id, @@port, @@hostname").Scan(&id.serverID, &id.port, &id.hostname)
	return id, err
}

// checkServers refuses a target that is the source, and a replica server id
// that is the source's own (the source would take the dump for its own
// replication loop, and MariaDB's replicas of it would skip the events).
// It returns the source's identity, which the relay log records, and the
// target's.
func checkServers(ctx context.Context, source, target *sql.DB, serverID uint32) (src, tgt serverIdentity, err error) {
	src, err = readServerIdentity(ctx, source)
	if err != nil {
		return src, tgt, fmt.Errorf("source: read its identity: %w", err)
	}
	tgt, err = readServerIdentity(ctx, target)
	if err != nil {
		return src, tgt, fmt.Errorf("target: read its identity: %w", err)
	}
	if src.same(tgt) {
		return src, tgt, fmt.Errorf("--target names the source itself (%s): gapless would write its schema and the source's own transactions into the primary; give the replica's URL", src)
	}
	if serverID != 0 && serverID == src.serverID {
		return src, tgt, fmt.Errorf("--server-id %d is the source's own @@server_id; choose another, or leave --server-id out", serverID)
	}
	return src, tgt, nil
}

// checkTargetReplica refuses a target whose own MariaDB replica runs from
// the source: it would apply the source's transactions beside gapless (a
// replica switched to gapless without STOP SLAVE). A connection from
// another server (multi-source) is left alone. A user that may not read
// the replica's status is not refused for that.
func checkTargetReplica(ctx context.Context, target *sql.DB, src serverIdentity, srcHost string, srcPort int) error {
	rows, err := target.QueryContext(ctx, "SHOW ALL SLAVES STATUS")
	if err != nil {
		return nil
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil
	}
	column := make(map[string]int, len(cols))
	for i, c := range cols {
		column[strings.ToLower(c)] = i
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	field := func(name string) string {
		if i, ok := column[strings.ToLower(name)]; ok {
			return vals[i].String
		}
		return ""
	}
	for rows.Next() {
		if rows.Scan(ptrs...) != nil {
			return nil
		}
		running := field("Slave_SQL_Running") == "Yes" || field("Slave_IO_Running") == "Yes"
		fromSource := field("Master_Server_Id") == strconv.FormatUint(uint64(src.serverID), 10) ||
			(field("Master_Port") == strconv.Itoa(srcPort) && strings.EqualFold(field("Master_Host"), srcHost))
		if running && fromSource {
			conn, named := "its default connection", ""
			if name := field("Connection_name"); name != "" {
				conn, named = "connection '"+name+"'", " '"+name+"'"
			}
			return fmt.Errorf("the target's own replica runs from the source (%s, from %s:%s, Slave_SQL_Running %s): it would apply the source's transactions beside gapless; on the target, STOP SLAVE%s (and RESET SLAVE%s ALL once gapless takes over for good), then run again",
				conn, field("Master_Host"), field("Master_Port"), field("Slave_SQL_Running"), named, named)
		}
	}
	return nil
}

// relayLockName is the lock file in the relay folder.
const relayLockName = "gapless.lock"

// relayLock is held for the whole run: a second gapless on the same relay
// folder (another --stream, say) would purge and rewrite the first one's
// segments. The lock is an flock, so it goes with the process however that
// ends; the file's content (the holder's pid and stream) is for the message.
type relayLock struct{ file *os.File }

// lockRelayDir creates the relay folder 0700 (or tightens it), and takes its lock.
func lockRelayDir(dir, stream string) (*relayLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("relay directory %s cannot be created: %v; choose another --relay-dir", dir, err)
	}
	if info, err := os.Stat(dir); err == nil && info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, info.Mode().Perm()&0o700); err != nil {
			return nil, fmt.Errorf("relay directory %s is readable by other users and cannot be made private: %v", dir, err)
		}
		fmt.Fprintf(os.Stderr, "note: relay directory %s was readable by other users; now 0700 (it holds the source's rows)\n", dir)
	}
	path := filepath.Join(dir, relayLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("relay directory %s is not writable: %v; choose another --relay-dir", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("relay directory %s is in use by %s; give this run a --relay-dir of its own (each stream needs one)", dir, who)
	}
	f.Truncate(0)
	f.WriteAt([]byte("gapless pid "+strconv.Itoa(os.Getpid())+" (stream \""+stream+"\")\n"), 0)
	return &relayLock{file: f}, nil
}

// openRelayDir takes the relay folder for the run, before anything is
// written to the target. Relay segments hold every row of the source: the
// files the relay log creates (in internal/binlog) are kept to their owner
// by the umask.
func openRelayDir(dir, stream string) (*relayLock, error) {
	syscall.Umask(0o077)
	lock, err := lockRelayDir(dir, stream)
	if err != nil {
		return nil, err
	}
	if err := checkRelayDir(dir); err != nil {
		lock.release()
		return nil, err
	}
	return lock, nil
}

// checkRelayDir refuses a relay directory that cannot be created or written,
// before anything is written to the target.
func checkRelayDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("relay directory %s cannot be created: %v; choose another --relay-dir", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".gapless-write-test-")
	if err != nil {
		return fmt.Errorf("relay directory %s is not writable: %v; choose another --relay-dir", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// release frees the lock; the file stays (removing it would race with a
// process that opened it and waits to lock it).
func (l *relayLock) release() {
	syscall.Flock(int(l.file.Fd()), syscall.LOCK_UN)
	l.file.Close()
}
