// Package target executes Transactions on a MariaDB target, natively: row
// events are replayed with BINLOG statements, so every column type arrives
// exactly as the source wrote it, and statement events run under the session
// state the source recorded for them.
//
// A Session is one target connection. It remembers what it has already told
// the server (the format description, the session variables, the default
// database) so that a transaction usually costs one round trip; after any
// error it forgets all of it, since the server may have lost the session.
package target

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/dburl"
	"gapless/internal/gtid"
)

// Options say how transactions are written.
type Options struct {
	// KeepGTID writes each transaction on the target under the source's GTID
	// (domain, server id, sequence number), so the target's binlog can feed
	// further replicas as if it were the source.
	KeepGTID bool
	// WriteBinlog is false to keep the applied transactions out of the target's binlog.
	WriteBinlog bool
	// MaxStatement bounds one round trip in bytes (0: the target's max_allowed_packet less a margin).
	MaxStatement int
	// Server is the target's address and credentials.
	Server dburl.Config
}

// Session applies transactions over one target connection.
type Session struct {
	conn         *wire
	opts         Options
	maxStatement int

	format []byte               // format description the server holds for this session
	state  *binlog.SessionState // session variables the server holds; nil = unknown
	db     string               // default database of the session
	tail   []string             // statements that commit the transaction Execute left open
}

// Open connects to the target and prepares the connection for applying.
func Open(ctx context.Context, opts Options) (*Session, error) {
	conn, err := dial(ctx, opts.Server)
	if err != nil {
		return nil, fmt.Errorf("target connection: %w", err)
	}
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
	s.maxStatement = s.opts.MaxStatement
	if s.maxStatement <= 0 {
		s.maxStatement = maxPacket - 64<<10
	}
	logBin := 0
	if s.opts.WriteBinlog {
		logBin = 1
	}
	setup := fmt.Sprintf("SET @@session.sql_log_bin=%d", logBin)
	if s.opts.WriteBinlog {
		// The target would annotate the row events it logs with the text of
		// the statement that made them: here the BINLOG statement, the
		// whole transaction again in base64, which more than doubled what
		// the target wrote and cost a third of its CPU per transaction.
		setup += ", @@session.binlog_annotate_row_events=0"
	}
	if s.opts.KeepGTID {
		setup += ", @@session.gtid_domain_id=@@global.gtid_domain_id, @@session.server_id=@@global.server_id"
	}
	if err := s.conn.exec([]string{setup}); err != nil {
		return privilegeHint(fmt.Errorf("target: prepare the apply session: %w", err))
	}
	return nil
}

// privilegeHint names what the apply user lacks when the target says access denied.
func privilegeHint(err error) error {
	if code, _ := errorCode(err); code == 1227 || code == 1044 || code == 1142 {
		return fmt.Errorf("%w (the target user needs SUPER, BINLOG REPLAY and the data privileges; e.g. GRANT ALL ON *.* TO the apply user)", err)
	}
	return err
}

// Close closes the connection. It belongs to the session alone, so the
// source's session variables it holds (sql_log_bin, server_id, sql_mode, a
// fixed timestamp, ...) end with it.
func (s *Session) Close() error {
	s.conn.close()
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

// Apply executes and commits txns (one, or a batch of Batchable ones), the
// checkpoint statement included, in one round trip. On error the target
// transaction is rolled back.
func (s *Session) Apply(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, checkpoint, true)
}

// Execute runs txns (one, or a batch of Batchable ones) up to their commit,
// the checkpoint statement included, and leaves the target transaction open
// for Commit. A standalone statement (DDL) commits on its own here; its
// checkpoint waits for Commit.
func (s *Session) Execute(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, checkpoint, false)
}

func (s *Session) execute(txns []*binlog.Transaction, checkpoint string, commit bool) error {
	first := txns[0]
	// The server reads row events by the format description it was given
	// last; a new one goes first, in the same round trip.
	var format []string
	if !bytes.Equal(s.format, first.Format.Raw) {
		if len(first.Format.Raw) == 0 {
			return fmt.Errorf("%s has no format description event before it", first)
		}
		s.format = nil
		format = []string{binlogStatement([][]byte{first.Format.Raw})}
	}
	var body, tail []string
	var err error
	if len(txns) == 1 {
		body, tail, err = s.script(first, checkpoint)
	} else {
		body, tail, err = s.batchScript(txns, checkpoint)
	}
	if err != nil {
		return err
	}
	script := append(format, body...)
	if commit {
		script = append(script, tail...)
	} else {
		s.tail = tail
	}
	if err := s.run(script); err != nil {
		s.Rollback(context.Background())
		if format != nil {
			err = privilegeHint(err)
		}
		return newApplyError(txns[len(txns)-1], err)
	}
	s.format = first.Format.Raw
	return nil
}

// Batchable reports whether txn may share a target transaction with its
// neighbours: a MariaDB transaction of row events on transactional tables only.
func Batchable(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagStandalone) ||
		!txn.Has(binlog.FlagTransactional|binlog.FlagAllowParallel) || len(txn.Events) == 0 {
		return false
	}
	for _, ev := range txn.Events {
		switch ev.Data.(type) {
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.MariadbAnnotateRowsEvent, *replication.XIDEvent:
		default:
			return false
		}
	}
	_, ok := txn.Events[len(txn.Events)-1].Data.(*replication.XIDEvent)
	return ok
}

// batchScript applies Batchable transactions as one target transaction,
// under the GTID of the last: the target shows the state after the last, a
// state the source had.
func (s *Session) batchScript(txns []*binlog.Transaction, checkpoint string) (body, tail []string, err error) {
	last := txns[len(txns)-1]
	if s.opts.KeepGTID {
		body = append(body, gtidStatement(last.MariaDB))
	}
	body = append(body, "BEGIN", checkpoint)
	rows := s.rowBatcher()
	for _, txn := range txns {
		if !Batchable(txn) {
			return nil, nil, fmt.Errorf("%s cannot be applied in a batch", txn)
		}
		for _, ev := range txn.Events {
			switch e := ev.Data.(type) {
			case *replication.TableMapEvent:
				body = rows.addTableMap(body, ev.Raw)
			case *replication.RowsEvent:
				body = rows.addRows(body, ev.Raw, e.Flags&replication.RowsEventStmtEndFlag != 0)
			}
		}
	}
	body = rows.flush(body)
	return body, []string{"COMMIT"}, nil
}

// Commit ends the transaction Execute left open.
func (s *Session) Commit(ctx context.Context, txn *binlog.Transaction) error {
	tail := s.tail
	s.tail = nil
	if err := s.run(tail); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	return nil
}

// Rollback abandons the open transaction, if any, and forgets the session state.
func (s *Session) Rollback(ctx context.Context) {
	s.tail = nil
	s.Forget()
	s.conn.exec([]string{"ROLLBACK"})
}

// run sends the statements in as few round trips as max_allowed_packet allows.
func (s *Session) run(script []string) error {
	from, size := 0, 0
	for i, stmt := range script {
		if len(stmt) > s.maxStatement {
			return fmt.Errorf("a statement of %d bytes exceeds the target's max_allowed_packet; raise it", len(stmt))
		}
		if i > from && size+len(stmt)+2 > s.maxStatement {
			if err := s.conn.exec(script[from:i]); err != nil {
				return err
			}
			from, size = i, 0
		}
		size += len(stmt) + 2
	}
	return s.conn.exec(script[from:])
}

// script lists the statements that apply txn: body runs it up to its
// commit, tail commits it. The checkpoint goes right after BEGIN, so it is
// part of the transaction however the group ends; a group that ends in
// ROLLBACK (it wrote a non-transactional table) and a standalone statement
// get their checkpoint in a transaction of their own.
func (s *Session) script(txn *binlog.Transaction, checkpoint string) (body, tail []string, err error) {
	if s.opts.KeepGTID && txn.Flavor == binlog.FlavorMariaDB {
		body = append(body, gtidStatement(txn.MariaDB))
	}
	rolledBack := endsInRollback(txn)
	begin := func() {
		body = append(body, "BEGIN")
		if !rolledBack {
			body = append(body, checkpoint)
		}
	}
	// A MariaDB GTID event stands for BEGIN unless the group is a standalone statement.
	begun := txn.Flavor == binlog.FlavorMariaDB && !txn.Has(binlog.FlagStandalone)
	if begun {
		begin()
	}
	rows := s.rowBatcher()
	var context []string // statements setting up the next query: INSERT_ID, RAND seeds, user variables
	ended := false
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent:
			body = rows.addTableMap(body, ev.Raw)
		case *replication.RowsEvent:
			body = rows.addRows(body, ev.Raw, e.Flags&replication.RowsEventStmtEndFlag != 0)
		case *replication.XIDEvent:
			body = rows.flush(body)
			tail = append(tail, "COMMIT")
			ended = true
		case *replication.IntVarEvent:
			context = append(context, binlog.IntVar{Kind: byte(e.Type), Value: e.Value}.Statement())
		case *replication.QueryEvent:
			body = rows.flush(body)
			text := strings.TrimSpace(string(e.Query))
			switch {
			case strings.EqualFold(text, "COMMIT"):
				tail = append(tail, "COMMIT")
				ended = true
				continue
			case strings.EqualFold(text, "ROLLBACK"):
				tail = append(tail, "ROLLBACK")
				tail = append(tail, s.ownTransaction(checkpoint)...)
				ended = true
				continue
			case strings.EqualFold(text, "BEGIN"):
				if !begun {
					begin()
					begun = true
				}
				continue
			}
			state, err := binlog.QuerySessionState(ev.Header, e)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", txn, err)
			}
			// autocommit is left as the session has it: the source clears the
			// bit inside transactions, and setting it would commit ours.
			state.Flags2Mask = formatFlags2(txn.Format) &^ binlog.Flags2NotAutocommit
			// USE first: it resets collation_database, which the state sets.
			if db := string(e.Schema); db != "" && db != s.db && ev.Header.Flags&replication.LOG_EVENT_SUPPRESS_USE_F == 0 {
				body = append(body, "USE "+quoteName(db))
				s.db = db
				if s.state != nil {
					s.state.HasCollationDatabase = false
				}
			}
			body = append(body, state.Statements(s.state)...)
			s.state = &state
			body = append(body, context...)
			context = context[:0]
			body = append(body, text)
		case *replication.GenericEvent:
			switch ev.Header.EventType {
			case replication.RAND_EVENT:
				seeds, err := binlog.DecodeRand(e.Data)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", txn, err)
				}
				context = append(context, seeds.Statement())
			case replication.USER_VAR_EVENT:
				v, err := binlog.DecodeUserVar(e.Data)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", txn, err)
				}
				context = append(context, v.Statement())
			default:
				return nil, nil, fmt.Errorf("%s: %s events are not supported", txn, ev.Header.EventType)
			}
		case *replication.MariadbAnnotateRowsEvent, *replication.RowsQueryEvent:
			// informational: the statement text behind the row events that follow
		default:
			return nil, nil, fmt.Errorf("%s: %s events are not supported", txn, ev.Header.EventType)
		}
	}
	body = rows.flush(body)
	if !ended {
		// A standalone statement (DDL) commits on its own; its position follows.
		tail = append(tail, s.ownTransaction(checkpoint)...)
	}
	return body, tail, nil
}

// endsInRollback reports whether the group ends with a ROLLBACK query.
func endsInRollback(txn *binlog.Transaction) bool {
	if n := len(txn.Events); n > 0 {
		if q, ok := txn.Events[n-1].Data.(*replication.QueryEvent); ok {
			return strings.EqualFold(strings.TrimSpace(string(q.Query)), "ROLLBACK")
		}
	}
	return false
}

// ownTransaction writes a checkpoint in a target transaction of its own,
// after a statement that committed by itself (DDL) or for a skipped
// transaction. It stays out of the target's binlog: binlogged, it would take
// the next sequence number of the source's domain.
func (s *Session) ownTransaction(checkpoint string) []string {
	stmts := []string{"BEGIN", checkpoint, "COMMIT"}
	if s.opts.WriteBinlog {
		stmts = append(append([]string{"SET @@session.sql_log_bin=0"}, stmts...), "SET @@session.sql_log_bin=1")
	}
	return stmts
}

// gtidStatement makes the target write the next transaction under g.
func gtidStatement(g gtid.MariaDBGTID) string {
	return fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=%d", g.Domain, g.Server, g.Seq)
}

// rowBatcher starts a batcher whose BINLOG statements, in base64 (4 bytes
// for 3) with the statement's own text, fit in one packet.
func (s *Session) rowBatcher() rowBatcher {
	return rowBatcher{limit: (s.maxStatement - 1024) * 3 / 4}
}

// rowBatcher gathers table map and row events into BINLOG statements no
// larger than limit raw bytes. A statement's events are cut only between row
// events, and the next BINLOG statement repeats the statement's table maps.
type rowBatcher struct {
	limit    int
	pending  [][]byte
	size     int
	stmtMaps [][]byte // table maps of the statement in progress
	stmtRows int      // its row events in pending
	maps     int      // table maps of the finished statements in pending
}

// maxTableMaps bounds the table maps in one BINLOG statement. The server's
// cost per statement end grows with the table maps the BINLOG statement has
// seen so far, so a long one is quadratic: 128 sysbench transactions in one
// statement cost the target four times the CPU per transaction of 32 (see
// the note on issue 3).
const maxTableMaps = 12

func (b *rowBatcher) addTableMap(stmts []string, raw []byte) []string {
	b.stmtMaps = append(b.stmtMaps, raw)
	b.pending = append(b.pending, raw)
	b.size += len(raw)
	return stmts
}

func (b *rowBatcher) addRows(stmts []string, raw []byte, stmtEnd bool) []string {
	if b.size+len(raw) > b.limit && b.size > 0 {
		done := b.pending
		if b.stmtRows == 0 {
			done = b.pending[:len(b.pending)-len(b.stmtMaps)]
		}
		if len(done) > 0 {
			stmts = append(stmts, binlogStatement(done))
		}
		b.pending = append([][]byte(nil), b.stmtMaps...)
		b.size = 0
		for _, tm := range b.stmtMaps {
			b.size += len(tm)
		}
	}
	b.pending = append(b.pending, raw)
	b.size += len(raw)
	b.stmtRows++
	if stmtEnd {
		b.maps += len(b.stmtMaps)
		b.stmtMaps, b.stmtRows = nil, 0
		if b.maps >= maxTableMaps {
			stmts = b.flush(stmts)
		}
	}
	return stmts
}

func (b *rowBatcher) flush(stmts []string) []string {
	if len(b.pending) > 0 {
		stmts = append(stmts, binlogStatement(b.pending))
	}
	b.pending, b.stmtMaps, b.size, b.stmtRows, b.maps = nil, nil, 0, 0, 0
	return stmts
}

// binlogStatement wraps raw events in one BINLOG statement.
func binlogStatement(events [][]byte) string {
	n := 0
	for _, ev := range events {
		n += len(ev)
	}
	raw := make([]byte, 0, n)
	for _, ev := range events {
		raw = append(raw, ev...)
	}
	var b strings.Builder
	b.Grow(base64.StdEncoding.EncodedLen(n) + 10)
	b.WriteString("BINLOG '")
	b.WriteString(base64.StdEncoding.EncodeToString(raw))
	b.WriteString("'")
	return b.String()
}

// formatFlags2 is which flags2 bits the server that wrote the format description sets.
func formatFlags2(format binlog.Event) uint32 {
	if fde, ok := format.Data.(*replication.FormatDescriptionEvent); ok {
		return binlog.Flags2WrittenBy(fde.ServerVersion)
	}
	return binlog.DefaultFlags2Mask
}

func quoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// InBinlog reports whether the target's binlog already holds txn under its
// source GTID: a DDL commits on its own, before its checkpoint, so after a
// crash between the two this is how its second execution is avoided.
func (s *Session) InBinlog(ctx context.Context, txn *binlog.Transaction) (bool, error) {
	if !s.opts.KeepGTID || txn.Flavor != binlog.FlavorMariaDB {
		return false, nil
	}
	text, err := s.conn.queryString("SELECT @@global.gtid_binlog_pos")
	if err != nil {
		return false, newApplyError(txn, err)
	}
	pos, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return false, fmt.Errorf("target @@gtid_binlog_pos: %w", err)
	}
	return pos.Contains(txn.MariaDB), nil
}

// Skip records txn as applied without applying it: only its position is written.
func (s *Session) Skip(ctx context.Context, txn *binlog.Transaction, checkpoint string) error {
	if err := s.run(s.ownTransaction(checkpoint)); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	return nil
}
