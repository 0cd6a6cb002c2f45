// Package target executes Transactions on a MariaDB target, natively: row
// events are replayed with BINLOG statements, so every column type arrives
// exactly as the source wrote it, and statement events run under the session
// state the source recorded for them.
//
// A Session is one target connection. It remembers what it has already told
// the server (the format description, the session variables, the default
// database) so that a transaction usually costs one round trip; after any
// error it forgets all of it, since the server may have lost the session.
//
// session.go holds the connection, its state and its setup; execute.go what
// a worker asks of it for a job; events.go, rows.go and batch.go make a
// job's script; send.go sends it; each special case of real binlogs has a
// file named after it (docs/architecture.md lists them).
package target

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/dburl"
	"gapless/internal/galera"
	"gapless/internal/gtid"
	"gapless/internal/sqltext"
)

// Options say how transactions are written.
type Options struct {
	// KeepGTID writes each transaction on the target under the source's GTID
	// (domain, server id, sequence number), so the target's binlog can feed
	// further replicas as if it were the source.
	KeepGTID bool
	// WriteBinlog is false to keep the applied transactions out of the target's binlog.
	WriteBinlog bool
	// RowFormat makes the sessions log in ROW format, not MIXED, where
	// they write the target's binlog: the target's global binlog_format is
	// ROW, and its readers expect rows (rowformat.go).
	RowFormat bool
	// MaxStatement bounds one round trip in bytes (0: the target's max_allowed_packet less a margin).
	MaxStatement int
	// Server is the target's address and credentials.
	Server dburl.Config
	// Warn, when set, hears of changes gapless makes to the target's
	// configuration (a max_allowed_packet raised for a large row event).
	Warn func(msg string)
	// SlotLock, when set, is a named lock the connection takes as it opens
	// and holds while it lives (checkpoint.SlotLockName). Open fails with
	// ErrSlotHeld while another connection holds it.
	SlotLock string
	// DeferPositions lets the position of a group the target binlogs as
	// it executes wait (deferred.go): it takes KeepGTID and WriteBinlog,
	// and strict commit order, where a domain's position is the highest
	// of its rows.
	DeferPositions bool
	// BegunMark, when set, is the statement that records that a group
	// whose writes stay (PartsStay), or a DDL, begins (checkpoint.Store.BegunStatement):
	// it runs outside the binlog, committed, right before the group.
	BegunMark func(gtid.MariaDBGTID) string
	// Stream names the copies of temporary tables the session makes to
	// take them to a new connection (reopenKeeping); the run's --stream.
	Stream string
	// Connected, when set, hears the id of each connection the session
	// goes on to apply on (a new one, or one set aside before: see
	// toDomain and park), so that what interrupts the session's statements
	// interrupts that one.
	Connected func(id int64)
	// Awaiting, when set, hears when the session's connections wait for
	// a script's answers, and which.
	Awaiting *Awaiting
}

// ErrSlotHeld: another connection, one that outlived its applier or its
// worker's lost connection, still holds the session's slot lock. Lost
// counts it, so the connection is opened again once that one has ended.
var ErrSlotHeld = errors.New("an earlier connection of this worker slot is still open on the target")

// Session applies transactions over one target connection.
type Session struct {
	conn         *wire
	opts         Options
	maxStatement int

	format []byte               // format description the server holds for this session
	state  *binlog.SessionState // session variables the server holds; nil = unknown
	db     string               // default database of the session
	tail   []string             // statements that commit the transaction Execute left open
	// lastApart, while a script is made, is the number of the statement of
	// a group applied in parts that takes the source's GTID (statementsApart).
	lastApart int
	// mixedGroups counts the groups the session applied in MIXED on a
	// target whose format is ROW (rowformat.go), for its warnings.
	mixedGroups int
	// ran counts the statements of the last script run that succeeded.
	ran int
	// temporary is set once the session's connection has created a
	// temporary table; parked holds the XA branches prepared on such a
	// connection, each keeping it (temporary.go).
	temporary bool
	parked    []*parkedXA
	// domain is the GTID domain of the groups the connection applies
	// (KeepGTID), which its temporary tables pin it to; pinned holds the
	// connections set aside while the session applies on another: by
	// domain those holding temporary tables, and one holding none under
	// cleanConn (toDomain).
	domain uint32
	pinned map[uint32]*pinnedConn
	// starts is the binlog.Transaction.SourceStarts of the groups the
	// session's temporary tables were made by (sourceStarted).
	starts int
	// held are the temporary tables the source's sessions may hold in the
	// session's connections, by the statements it ran (kept.go).
	held map[heldKey]bool
	// lost are temporary tables source sessions hold that the target lost
	// (Lose).
	lost map[lostKey]bool
	// resting: the last script ended with restOutsideBinlog, so the session
	// is outside the binlog until the next one turns it on (run).
	resting bool
	// whole, while a group is run again, keeps it in one piece: its parts
	// could not go to gapless's own domain (statementsApart).
	whole   bool
	applier string // CURRENT_USER() of the session (invoker.go)
	// loads holds, while a group runs, the bytes of its LOAD DATA files
	// by the names its statements read them by (loaddata.go).
	loads map[string][]byte
	// prepared is a batch's script made while its job waited (prepare.go).
	prepared *preparedBatch
	// rest is what ExecuteAhead left of a batch's script for Continue, and
	// restTxn the batch's last transaction, which errors name.
	rest    []string
	restTxn *binlog.Transaction
	// unsettled is the position of the group just run, kept out of its
	// script, and deferred the positions waiting by GTID domain
	// (deferred.go).
	unsettled  *deferredPosition
	deferred   map[uint32]string
	deferredAt time.Time // since when deferred has held a position
	// cluster is the wsrep state of the connection's node, read as it
	// opened: Node{} on a lone server (galera.go).
	cluster galera.Node
}

// Open connects to the target and prepares the connection for applying.
func Open(ctx context.Context, opts Options) (*Session, error) {
	conn, err := dial(ctx, opts.Server)
	if err != nil {
		return nil, fmt.Errorf("target connection: %w", err)
	}
	conn.awaiting = opts.Awaiting
	s := &Session{conn: conn, opts: opts}
	if err := s.prepare(); err != nil {
		conn.close()
		return nil, err
	}
	return s, nil
}

func (s *Session) prepare() error {
	text, err := s.conn.queryString("SELECT @@max_allowed_packet")
	if err != nil {
		return fmt.Errorf("target: read max_allowed_packet: %w", err)
	}
	maxPacket, err := strconv.Atoi(text)
	if err != nil {
		return fmt.Errorf("target: max_allowed_packet %q: %w", text, err)
	}
	if s.applier, err = s.conn.queryString("SELECT CURRENT_USER()"); err != nil {
		return fmt.Errorf("target: read the apply user: %w", err)
	}
	if err := s.readCluster(); err != nil {
		return err
	}
	s.maxStatement = s.opts.MaxStatement
	if s.maxStatement <= 0 {
		s.maxStatement = maxPacket - 64<<10
	}
	logBin := 0
	if s.opts.WriteBinlog {
		logBin = 1
	}
	// autocommit first: on a target whose global autocommit is 0 the
	// session's reads would open transactions gapless never ends, and
	// sql_log_bin may not change inside one (1694). The source's groups
	// say where theirs begin and end.
	setup := fmt.Sprintf("SET @@session.autocommit=1, @@session.sql_log_bin=%d", logBin)
	// An ALTER of a system-versioned table ran on the source, so its
	// history was to be kept; MariaDB's replica applies it so too, whatever
	// the target's default (ERROR refuses it: 4119).
	setup += ", @@session.system_versioning_alter_history=KEEP"
	// A replica's thread is never timed out: a session of gapless idle
	// longer than the target's wait_timeout (a quiet source) would be cut,
	// and the source's temporary tables it holds with it.
	setup += ", @@session.wait_timeout=31536000"
	// Nor is it bound by max_statement_time, which would interrupt a
	// large statement or DDL of the source for good (1969).
	setup += ", @@session.max_statement_time=0"
	if s.opts.WriteBinlog {
		// The target would annotate the row events it logs with the text of
		// the statement that made them: here the BINLOG statement, the
		// whole transaction again in base64, which more than doubled what
		// the target wrote and cost a third of its CPU per transaction.
		setup += ", @@session.binlog_annotate_row_events=0"
		// MIXED: the source's statements are binlogged as statements, as
		// the source logged them, and row events as rows. ROW where the
		// target's global format is ROW: its readers expect rows. (In ROW
		// the target writes each statement's changes to a table that is
		// not transactional as a GTID group of its own: rowformat.go.)
		setup += ", @@session.binlog_format='" + s.opts.sessionFormat() + "'"
		// A statement on a non-transactional table inside a transaction
		// goes to the transaction's cache, as under the server's default:
		// with the option on (mtr sets it), the target logs such statements
		// as groups of their own, where the source kept one group.
		setup += ", @@session.binlog_direct_non_transactional_updates=0"
	}
	if s.opts.KeepGTID {
		setup += ", @@session.gtid_domain_id=@@global.gtid_domain_id, @@session.server_id=@@global.server_id"
	}
	// Statements of different source transactions run at once on different
	// sessions: under REPEATABLE READ their reads in DML are locking reads
	// with gap locks, so a later statement that runs early either waits for
	// an earlier one's rows or holds them and is broken by the watchdog,
	// never reads a range that an earlier one is still to change. The
	// target's default may be another level.
	isolation := "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
	if err := s.conn.exec([]string{setup, isolation}); err != nil {
		return privilegeHint(fmt.Errorf("target: prepare the apply session: %w", err))
	}
	if err := s.takeSlot(s.conn); err != nil {
		return err
	}
	s.connected()
	return nil
}

// connected tells Options.Connected of the session's connection.
func (s *Session) connected() {
	if s.opts.Connected != nil {
		s.opts.Connected(s.conn.connectionID())
	}
}

// takeSlot makes c hold the session's slot lock (Options.SlotLock). The
// session's connection before c has let it go (dropSlot), or is an
// earlier one that lives on in the server: ErrSlotHeld.
func (s *Session) takeSlot(c *wire) error {
	if s.opts.SlotLock == "" {
		return nil
	}
	got, err := c.queryString("SELECT GET_LOCK(" + sqltext.Literal(s.opts.SlotLock) + ", 0)")
	if err == nil && got != "1" {
		err = fmt.Errorf("%w (lock %s)", ErrSlotHeld, s.opts.SlotLock)
	}
	if err != nil {
		return fmt.Errorf("target: take the worker's lock: %w", err)
	}
	return nil
}

// dropSlot lets c's slot lock go, for the session's next connection: c is
// closed, or keeps only a prepared XA branch, which commits nothing by
// itself.
func (s *Session) dropSlot(c *wire) {
	if s.opts.SlotLock != "" {
		_, _ = c.queryString("SELECT RELEASE_LOCK(" + sqltext.Literal(s.opts.SlotLock) + ")")
	}
}

// Close closes the connection. It belongs to the session alone, so the
// source's session variables it holds (sql_log_bin, server_id, sql_mode, a
// fixed timestamp, ...) end with it.
func (s *Session) Close() error {
	for _, p := range s.parked {
		p.conn.close()
	}
	s.parked = nil
	for d, p := range s.pinned {
		s.endPinned(p)
		delete(s.pinned, d)
	}
	s.endConn(s.conn)
	return nil
}

// ConnectionID is the target's id of the session's connection.
func (s *Session) ConnectionID() int64 { return s.conn.connectionID() }

// Forget drops what the session believes the server holds; the next
// transaction sets everything again.
func (s *Session) Forget() {
	s.format = nil
	s.state = nil
	s.db = ""
}

// dial opens another connection of the session's.
func (s *Session) dial() (*wire, error) {
	conn, err := dial(context.Background(), s.opts.Server)
	if err == nil {
		conn.awaiting = s.opts.Awaiting
	}
	return conn, err
}

// reopen gives up the connection for a new one, forgetting its state.
func (s *Session) reopen() error {
	s.dropSlot(s.conn)
	s.endConn(s.conn)
	s.Forget()
	conn, err := s.dial()
	if err != nil {
		return err
	}
	s.conn = conn
	return s.prepare()
}

// sqlMode is the session's sql_mode, if known.
func (s *Session) sqlMode() (uint64, bool) {
	if s.state == nil || !s.state.HasSQLMode {
		return 0, false
	}
	return uint64(s.state.SQLMode), true
}

// HoldsTemporary reports whether the session's connections may hold
// temporary tables of the source's sessions, which end with them.
func (s *Session) HoldsTemporary() bool { return len(s.held) > 0 }

// gtidStatements make the target write the next transaction under g. The
// sequence number is set on its own, after the domain and server id: the
// server checks it (gtid_strict_mode) against the session's domain as it is
// when the SET statement starts.
func gtidStatements(g gtid.MariaDBGTID) []string {
	return []string{
		fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=%d", g.Domain, g.Server),
		fmt.Sprintf("SET @@session.gtid_seq_no=%d", g.Seq),
	}
}
