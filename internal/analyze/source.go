// source.go reads a live source's binlog with a binlog dump, as the
// receiver does, from a GTID position (--from) or from the binlog file that
// holds the start of the last DURATION (--last), up to the end the source
// reported when the analysis began.
//
// Invariant: the dump stops at a group boundary (the source's end position
// is one), so the analysis sees whole transactions only, and never waits for
// transactions the source has not written yet.
package analyze

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/dburl"
	"gapless/internal/target"
)

// SourceConfig says which part of a live source's binlog to analyze.
type SourceConfig struct {
	URL string
	// From is a GTID position: the transactions after it are analyzed.
	From string
	// Last analyzes the transactions written in the last Last (when From is empty).
	Last time.Duration
	// ServerID is the replica server id the dump presents; 0 picks a random one.
	ServerID uint32
}

// Source analyzes part of a live source's binlog.
func Source(ctx context.Context, cfg SourceConfig, opts Options) (*Report, error) {
	if (cfg.From == "") == (cfg.Last <= 0) {
		return nil, errors.New("give exactly one of --from POSITION and --last DURATION with --source")
	}
	db, conn, err := dburl.Open(cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer db.Close()
	if _, err := conn.TLS(); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	server, _, err := binlog.ServerFlavor(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", conn.Addr(), err)
	}
	flavor := mysql.MySQLFlavor
	if server == binlog.FlavorMariaDB {
		flavor = mysql.MariaDBFlavor
	}
	end, err := binlogEnd(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", conn.Addr(), err)
	}
	if cfg.ServerID == 0 {
		cfg.ServerID = 1<<31 + rand.Uint32N(1<<30)
	}
	dump := &dumpSource{cfg: cfg, conn: conn, flavor: flavor, end: end}
	if cfg.From != "" {
		set, err := mysql.ParseGTIDSet(flavor, cfg.From)
		if err != nil {
			return nil, fmt.Errorf("--from %q is not a %s GTID position: %w", cfg.From, flavor, err)
		}
		if err := dump.startGTID(set); err != nil {
			return nil, err
		}
	} else {
		opts.Since = time.Now().Add(-cfg.Last)
		file, err := dump.firstFileSince(ctx, db, opts.Since)
		if err != nil {
			return nil, err
		}
		if err := dump.startFile(file); err != nil {
			return nil, err
		}
	}
	report, err := run(ctx, dump, opts)
	if err != nil {
		return nil, err
	}
	report.Input = fmt.Sprintf("source %s, binlog up to %s:%d", conn.Redacted(), end.Name, end.Pos)
	if cfg.From != "" {
		report.Input += ", after " + cfg.From
	} else {
		report.Input += fmt.Sprintf(", the last %s", cfg.Last)
	}
	return report, nil
}

// binlogEnd is where the source's binlog ends now.
func binlogEnd(ctx context.Context, db *sql.DB) (mysql.Position, error) {
	rows, err := target.QueryRows(ctx, db, "SHOW MASTER STATUS")
	if err != nil {
		return mysql.Position{}, fmt.Errorf("SHOW MASTER STATUS (the user needs BINLOG MONITOR, or REPLICATION CLIENT on MySQL): %w", err)
	}
	if len(rows) == 0 || rows[0]["File"] == "" {
		return mysql.Position{}, errors.New("the source has no binlog: start it with log_bin")
	}
	var pos uint32
	if _, err := fmt.Sscan(rows[0]["Position"], &pos); err != nil {
		return mysql.Position{}, fmt.Errorf("SHOW MASTER STATUS gave position %q", rows[0]["Position"])
	}
	return mysql.Position{Name: rows[0]["File"], Pos: pos}, nil
}

// dumpSource is an eventSource over a binlog dump.
type dumpSource struct {
	cfg      SourceConfig
	conn     dburl.Config
	flavor   string
	end      mysql.Position
	syncer   *replication.BinlogSyncer
	streamer *replication.BinlogStreamer
	file     string
	done     bool
}

func (d *dumpSource) newSyncer() *replication.BinlogSyncer {
	tlsConfig, _ := d.conn.TLS() // checked when the source was opened
	return replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:         d.cfg.ServerID,
		Flavor:           d.flavor,
		Host:             d.conn.Host,
		Port:             uint16(d.conn.Port),
		User:             d.conn.User,
		Password:         d.conn.Password,
		RawModeEnabled:   true,
		HeartbeatPeriod:  time.Second,
		ReadTimeout:      30 * time.Second,
		DisableRetrySync: true,
		TLSConfig:        tlsConfig,
		Dialer:           (&net.Dialer{Timeout: d.conn.ConnectTimeout()}).DialContext,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

func (d *dumpSource) startGTID(set mysql.GTIDSet) error {
	d.syncer = d.newSyncer()
	s, err := d.syncer.StartSyncGTID(set)
	if err != nil {
		return fmt.Errorf("binlog dump from %s on %s (the user needs REPLICATION SLAVE): %w", set, d.conn.Addr(), err)
	}
	d.streamer = s
	return nil
}

func (d *dumpSource) startFile(file string) error {
	d.syncer = d.newSyncer()
	s, err := d.syncer.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		return fmt.Errorf("binlog dump from %s on %s (the user needs REPLICATION SLAVE): %w", file, d.conn.Addr(), err)
	}
	d.streamer, d.file = s, file
	return nil
}

// firstFileSince is the newest binlog file created at or before since: every
// transaction written after since is in it or in a later file.
func (d *dumpSource) firstFileSince(ctx context.Context, db *sql.DB, since time.Time) (string, error) {
	rows, err := target.QueryRows(ctx, db, "SHOW BINARY LOGS")
	if err != nil {
		return "", fmt.Errorf("SHOW BINARY LOGS on %s: %w", d.conn.Addr(), err)
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("source %s lists no binlog files", d.conn.Addr())
	}
	for i := len(rows) - 1; i > 0; i-- {
		created, err := d.fileCreated(ctx, rows[i]["Log_name"])
		if err != nil {
			return "", err
		}
		if !created.After(since) {
			return rows[i]["Log_name"], nil
		}
	}
	return rows[0]["Log_name"], nil
}

// fileCreated reads the timestamp of a binlog file's format description event.
func (d *dumpSource) fileCreated(ctx context.Context, file string) (time.Time, error) {
	syncer := d.newSyncer()
	defer syncer.Close()
	s, err := syncer.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		return time.Time{}, fmt.Errorf("binlog dump of %s on %s (the user needs REPLICATION SLAVE): %w", file, d.conn.Addr(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		ev, err := s.GetEvent(ctx)
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the start of %s on %s: %w", file, d.conn.Addr(), err)
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT && ev.Header.Timestamp != 0 {
			return time.Unix(int64(ev.Header.Timestamp), 0), nil
		}
		if binlog.IsGTIDEvent(ev.Header.EventType) {
			return time.Unix(int64(ev.Header.Timestamp), 0), nil
		}
	}
}

func (d *dumpSource) next(ctx context.Context) (rawEvent, error) {
	for {
		if d.done {
			return rawEvent{}, io.EOF
		}
		ev, err := d.streamer.GetEvent(ctx)
		if err != nil {
			return rawEvent{}, fmt.Errorf("binlog dump from %s: %w", d.conn.Addr(), err)
		}
		t := ev.Header.EventType
		if t == replication.ROTATE_EVENT {
			if r, ok := ev.Event.(*replication.RotateEvent); ok {
				d.file = string(r.NextLogName)
			}
			if binlogAfter(d.file, d.end.Name) {
				d.done = true
			}
			continue
		}
		if t == replication.HEARTBEAT_EVENT || t == replication.HEARTBEAT_LOG_EVENT_V2 {
			// The source is idle at LogPos: past the end, nothing more will come.
			if d.file == d.end.Name && ev.Header.LogPos >= d.end.Pos {
				d.done = true
			}
			continue
		}
		raw := rawEvent{data: ev.RawData, file: d.file, pos: max(0, int64(ev.Header.LogPos)-int64(ev.Header.EventSize))}
		if d.file == d.end.Name && ev.Header.LogPos >= d.end.Pos {
			d.done = true
		}
		return raw, nil
	}
}

func (d *dumpSource) close() {
	if d.syncer != nil {
		d.syncer.Close()
	}
}

// binlogAfter reports whether binlog file a comes after b (same base name, numbered suffix).
func binlogAfter(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
