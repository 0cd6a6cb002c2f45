// receiver.go attaches to the source as a replica and writes what it receives
// to the relay log, whole groups only. It resumes from the relay log's end
// after every disconnect, so a group is received once however often the
// connection drops; errors the source answers with (privileges, purged
// binlogs) end it, a lost connection only makes it reconnect.
package binlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// ReceiverConfig says where the source is and how to attach to it.
type ReceiverConfig struct {
	Host     string
	Port     uint16
	User     string
	Password string
	// ServerID is the replica server id gapless presents to the source; it
	// must differ from every server id in the topology.
	ServerID  uint32
	Heartbeat time.Duration // default 1 s
	Logger    *slog.Logger
}

// Receiver copies the source's binlog into a relay log.
type Receiver struct {
	cfg   ReceiverConfig
	relay *RelayLog

	received   atomic.Int64 // groups appended since start
	lastSource atomic.Int64 // unix seconds of the newest group received
	connected  atomic.Bool
}

// NewReceiver returns a receiver that appends to relay.
func NewReceiver(cfg ReceiverConfig, relay *RelayLog) *Receiver {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Receiver{cfg: cfg, relay: relay}
}

// Received is the number of groups received since start.
func (r *Receiver) Received() int64 { return r.received.Load() }

// Connected reports whether a binlog dump is running now.
func (r *Receiver) Connected() bool { return r.connected.Load() }

// SourceError is an error the source answered with; reconnecting will not help.
type SourceError struct {
	Code    uint16
	Message string
	Hint    string
}

func (e *SourceError) Error() string {
	msg := fmt.Sprintf("source refused the binlog dump: error %d: %s", e.Code, e.Message)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Run receives until ctx ends or the source refuses to serve; it returns nil when ctx ends.
func (r *Receiver) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		start := time.Now()
		err := r.session(ctx)
		r.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		var se *SourceError
		if errors.As(err, &se) {
			return err
		}
		if time.Since(start) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		r.cfg.Logger.Warn("source connection lost; reconnecting", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// session runs one binlog dump, from the relay log's end, until it fails.
func (r *Receiver) session(ctx context.Context) error {
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:            r.cfg.ServerID,
		Flavor:              mysql.MariaDBFlavor,
		Host:                r.cfg.Host,
		Port:                r.cfg.Port,
		User:                r.cfg.User,
		Password:            r.cfg.Password,
		HeartbeatPeriod:     r.cfg.Heartbeat,
		ReadTimeout:         5*r.cfg.Heartbeat + 5*time.Second,
		DisableRetrySync:    true,
		VerifyChecksum:      true,
		RowsEventDecodeFunc: func(*replication.RowsEvent, []byte) error { return nil },
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer syncer.Close()

	from := r.relay.End()
	set, err := mysql.ParseMariadbGTIDSet(from.String())
	if err != nil {
		return fmt.Errorf("start position %q: %w", from.String(), err)
	}
	streamer, err := syncer.StartSyncGTID(set)
	if err != nil {
		return classifySourceError(err, from)
	}
	var (
		format  []byte
		groups  groupTracker
		pending [][]byte
		current gtid.MariaDBGTID
	)
	for {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			return classifySourceError(err, from)
		}
		r.connected.Store(true)
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			if format == nil || !sameFormat(format, ev.RawData) {
				if groups.open() {
					return errors.New("format description event inside a group")
				}
				format = ev.RawData
				if err := r.relay.BeginSession(format); err != nil {
					return &SourceError{Message: err.Error()}
				}
			}
			continue
		}
		cut, err := groups.add(ev)
		if err != nil {
			return err
		}
		switch cut {
		case cutControl:
			continue
		case cutInside:
			if g, ok := ev.Event.(*replication.MariadbGTIDEvent); ok {
				current = mariaDBGTID(g)
				pending = pending[:0]
			}
			pending = append(pending, ev.RawData)
		case cutComplete:
			pending = append(pending, ev.RawData)
			if err := r.relay.Append(pending, current); err != nil {
				return &SourceError{Message: err.Error()}
			}
			pending = pending[:0]
			r.received.Add(1)
			r.lastSource.Store(int64(ev.Header.Timestamp))
		}
	}
}

// sameFormat compares two format description events, ignoring the header
// (timestamp, position) and the checksum.
func sameFormat(a, b []byte) bool {
	if len(a) != len(b) || len(a) < eventHeaderSize+checksumSize {
		return false
	}
	return bytes.Equal(a[eventHeaderSize:len(a)-checksumSize], b[eventHeaderSize:len(b)-checksumSize])
}

// classifySourceError turns errors the source answered with into a
// SourceError with a hint; anything else (network) stays retryable.
func classifySourceError(err error, from gtid.MariaDBPosition) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return err
	}
	se := &SourceError{Code: me.Code, Message: me.Message}
	switch me.Code {
	case mysql.ER_ACCESS_DENIED_ERROR, 1698:
		se.Hint = "check the user and password in --source"
	case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR, mysql.ER_TABLEACCESS_DENIED_ERROR:
		se.Hint = "the source user needs the REPLICATION SLAVE privilege (GRANT REPLICATION SLAVE ON *.* TO ...)"
	case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		if strings.Contains(strings.ToLower(me.Message), "purged") || strings.Contains(me.Message, "GTID") {
			se.Hint = fmt.Sprintf("the target's position is %q; the source no longer has the binlogs after it, so the target must be re-seeded from a backup of the source", from.String())
		}
	case mysql.ER_NO_BINARY_LOGGING:
		se.Hint = "enable log_bin on the source"
	}
	return se
}
