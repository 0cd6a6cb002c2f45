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
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/galera"
	"gapless/internal/gtid"
	"gapless/internal/sqltext"
	"gapless/internal/statement"
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
		// The source's statements are binlogged as statements, as the
		// source logged them (MIXED keeps that and logs row events as
		// rows): in ROW format the target would write each statement's
		// changes to a non-transactional table as a GTID group of its own,
		// where the source has one group for them all.
		setup += ", @@session.binlog_format='MIXED'"
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

// privilegeHint names what the apply user lacks when the target says access denied.
func privilegeHint(err error) error {
	if code, _ := errorCode(err); code == 1227 || code == 1044 || code == 1142 {
		return &hinted{err, "the target user needs SUPER, BINLOG REPLAY and the data privileges; e.g. GRANT ALL ON *.* TO the apply user"}
	}
	return err
}

// errReadOnly is ER_OPTION_PREVENTS_STATEMENT, which a read-only target
// answers a user without READ_ONLY ADMIN (read_only set during a run: a
// run that starts on such a target is refused before anything is applied).
const errReadOnly = 1290

// readOnlyHint says what to do when the target refuses to write.
func readOnlyHint(err error) error {
	if code, _ := errorCode(err); code == errReadOnly && strings.Contains(err.Error(), "read-only") {
		return &hinted{err, "the target is read-only: GRANT READ_ONLY ADMIN ON *.* TO the apply user, or SET GLOBAL read_only=OFF"}
	}
	return err
}

// explain adds to err, the target's refusal of txn, what the user needs
// to know to act on it (the hints below).
func (s *Session) explain(err error, txn *binlog.Transaction) error {
	err = readOnlyHint(err)
	err = s.missingTableHint(err, txn)
	err = s.rowsDifferHint(err, txn)
	err = outOfOrderHint(err, txn)
	err = roomHint(err)
	err = clusterHint(err)
	if s.loads != nil {
		err = localInfileHint(err)
	}
	return err
}

// missingTableHint says, of a statement that names a table the target
// lacks (1146), what may have happened that no replica can undo: the table
// was a temporary table of the source's session, lost with gapless's
// connection to the target that held it (a crash of gapless, the target
// restarted, the connection cut); a run that ends kept them for the next
// (kept.go). When the session knows the statement's source session held
// that table as the target lost it (Lose), it says so outright. (Row
// events never name a temporary table.)
func (s *Session) missingTableHint(err error, txn *binlog.Transaction) error {
	if code, _ := errorCode(err); code != 1146 || len(txn.RowEvents()) > 0 {
		return err
	}
	const cannot = "what the statement read from it cannot be applied, so rebuild the target, or skip the transaction knowing its changes are lost"
	if k, ok := s.lostMissing(err, txn); ok {
		return &hinted{err, fmt.Sprintf("the source's session %d held the temporary table %s.%s, which the target lost with gapless's connection that held it (gapless killed, or the connection cut); %s",
			k.thread, quoteName(k.db), quoteName(k.name), cannot)}
	}
	return &hinted{err, "if it was a temporary table of the source's session, it was lost: gapless keeps the source's temporary tables from one run to the next when a run ends, " +
		"but not when gapless was killed or crashed, the target restarted, or gapless's connection holding them was cut (as a replica's end with its server); " + cannot}
}

// missingName reads the table of a 1146 error: Table 'db.name' doesn't exist.
var missingName = regexp.MustCompile(`Table '(.*)' doesn't exist`)

// lostMissing finds the table a 1146 error names among those the target
// lost of the source sessions whose statements txn holds.
func (s *Session) lostMissing(err error, txn *binlog.Transaction) (lostKey, bool) {
	m := missingName.FindStringSubmatch(err.Error())
	if m == nil || len(s.lost) == 0 {
		return lostKey{}, false
	}
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		for k := range s.lost {
			if k.thread == q.SlaveProxyID && strings.EqualFold(k.db+"."+k.name, m[1]) {
				return k, true
			}
		}
	}
	return lostKey{}, false
}

// roomHint says what to do when the target has no room for a group: a
// table it will not grow (1114: a MEMORY table at its max_heap_table_size,
// a tablespace at its size limit, a full disk) or a full disk (errno 28 in
// a file error). Room made, the group applies; skipping it would lose it.
func roomHint(err error) error {
	code, _ := errorCode(err)
	msg := err.Error()
	switch {
	case code == 1114:
		return &hinted{err, "the target will not grow the table: a MEMORY table at the target's max_heap_table_size (fixed when the table was created; raise it, then ALTER TABLE ... ENGINE=MEMORY on the target), " +
			"an InnoDB tablespace at its size limit, or a full disk on the target; make room there and run again (a table that is not transactional, as MEMORY, keeps the rows written before the error: compare it with `gapless verify`); skipping the transaction would lose it"}
	case strings.Contains(msg, "Errcode: 28") || strings.Contains(msg, "errno: 28") || strings.Contains(msg, "No space left on device"):
		return &hinted{err, "the target's disk is full (its datadir, tmpdir or binlog folder): free space there and run again: nothing of this transaction is applied, and skipping it would lose it"}
	}
	return err
}

// errGTIDOutOfOrder is ER_GTID_STRICT_OUT_OF_ORDER: the target, in
// gtid_strict_mode, would binlog a GTID at or below its domain's last.
const errGTIDOutOfOrder = 1950

// existingGTID names the GTID the target's binlog holds in a 1950.
var existingGTID = regexp.MustCompile(`existing GTID (\d+)-(\d+)-(\d+)`)

// outOfOrderHint says, of a group the target refuses to binlog because its
// binlog already holds a GTID at or past it in its domain (1950), that
// something besides gapless wrote that domain on the target: most often a
// client's write on the target itself, binlogged in the target's
// gtid_domain_id, which is the source's when both are 0. Skipping the
// group would lose it and mend nothing.
func outOfOrderHint(err error, txn *binlog.Transaction) error {
	if code, _ := errorCode(err); code != errGTIDOutOfOrder {
		return err
	}
	existing := "a GTID"
	if m := existingGTID.FindStringSubmatch(err.Error()); m != nil {
		existing = m[1] + "-" + m[2] + "-" + m[3]
		if existing == txn.MariaDB.String() {
			// Under the source's own server id and this very number: no
			// client of the target's writes that (enddrop.go).
			return &hinted{err, "the target's binlog holds this transaction's own GTID, though gapless has not applied it: most likely as the DROP TEMPORARY TABLE the target logged when gapless's connection holding the source's temporary tables ended amid it (gapless killed, the connection cut, or the target shut down; SHOW BINLOG EVENTS on the target shows it); " +
				"the transaction is not on the target: rebuild the target, or apply it by hand outside the target's binlog (SET sql_log_bin=0) and replicate with --skip-gtid " + existing}
		}
	}
	return &hinted{err, "the target's binlog already holds " + existing + ", at or past this transaction in its GTID domain, and gapless did not write it: " +
		"something else wrote the domain on the target, " + foreignWritesAdvice + "; skipping this transaction would lose its changes and mend nothing"}
}

// foreignWritesAdvice says what writes a GTID domain of the stream on the
// target besides gapless, and what to do.
const foreignWritesAdvice = "most often a client's write on the target itself (binlogged in the target's @@gtid_domain_id, the source's domain when both are 0; its server id is then the target's). " +
	"Keep such writes out of the stream's domain (SET GLOBAL gtid_domain_id on the target to one the source does not use, or SET SESSION sql_log_bin=0 for them), " +
	"compare the tables with `gapless verify`, and to go on either SET GLOBAL gtid_strict_mode=OFF on the target (its binlog then holds both GTIDs, which replicas of the target in strict mode refuse too) or re-seed the target"

// recordNotFound names the table of a 1032 (Can't find record in 'NAME').
var recordNotFound = regexp.MustCompile(`Can't find record in '([^']+)'`)

// rowsDifferHint says, of a row event the target's rows refuse (1032: the
// row to change is not there; 1062: the row to add is there already), that
// the target's rows differ from the source's there, the usual causes, and
// what skipping leaves. Where the row not found is a SEQUENCE's, it names
// the cause no client is behind: a target that crashed right after a
// CREATE SEQUENCE, which MariaDB answers before the sequence's row is
// durable, recovers the sequence without its row.
func (s *Session) rowsDifferHint(err error, txn *binlog.Transaction) error {
	code, _ := errorCode(err)
	if (code != 1032 && code != 1062) || len(txn.RowEvents()) == 0 {
		return err
	}
	if m := recordNotFound.FindStringSubmatch(err.Error()); code == 1032 && m != nil {
		for _, t := range txn.Tables {
			if !strings.EqualFold(t.Table, m[1]) || !s.isSequence(t.Schema, t.Table) {
				continue
			}
			return &hinted{err, fmt.Sprintf("the sequence %s.%s has no row on the target: a target that crashed right after its CREATE SEQUENCE (MariaDB answers that before the row is on disk) recovers it so; "+
				"on the target, with SET SESSION sql_log_bin=0, DROP SEQUENCE it and create it again as SHOW CREATE SEQUENCE shows it on the source, at the value it had at this point (SETVAL), then run again", t.Schema, t.Table)}
		}
	}
	return &hinted{err, "the target's rows differ from the source's here: a client wrote the table on the target, or the target was not seeded at the position gapless started from; " +
		"compare with `gapless verify`, and mend the rows on the target (outside its binlog) or re-seed it; skipping the transaction leaves them different"}
}

// isSequence reports whether the target holds schema.table as a SEQUENCE.
func (s *Session) isSequence(schema, table string) bool {
	r, err := s.conn.c.Execute("SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table)
	if err != nil {
		return false
	}
	defer r.Close()
	kind, _ := r.GetString(0, 0)
	return r.RowNumber() > 0 && kind == "SEQUENCE"
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

// Apply executes and commits txns (one, or a batch of Batchable ones), the
// checkpoint statement included, in one round trip. On error the target
// transaction is rolled back.
func (s *Session) Apply(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, nil, checkpoint, true)
}

// Execute runs txns (one, or a batch of Batchable ones) up to their commit,
// the checkpoint statement included, and leaves the target transaction open
// for Commit. A standalone statement (DDL) commits on its own here; its
// checkpoint waits for Commit.
func (s *Session) Execute(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, nil, checkpoint, false)
}

// ExecuteAhead begins a batch of Batchable transactions (in source order)
// and runs, of its transactions, only those ahead marks, in their order;
// Continue runs the others, in theirs, and commits. The batch runs on the
// target in that order, which changes nothing of its result when no
// transaction marked ahead shares a row with one before it that is not
// (Split). The target transaction stays open, its locks held.
func (s *Session) ExecuteAhead(ctx context.Context, txns []*binlog.Transaction, ahead []bool, checkpoint string) error {
	return s.execute(txns, ahead, checkpoint, false)
}

// Continue runs the rest of the batch ExecuteAhead began and, when commit
// is true, commits it in the same round trip; otherwise the transaction
// stays open for Commit.
func (s *Session) Continue(ctx context.Context, commit bool) error {
	script, txn := s.rest, s.restTxn
	s.rest, s.restTxn = nil, nil
	if txn == nil {
		return errors.New("target: Continue without a batch begun ahead")
	}
	if commit {
		script = append(script, s.tail...)
	}
	if err := s.run(script); err != nil {
		s.Rollback(context.Background())
		return newApplyError(txn, err)
	}
	if commit {
		s.tail = nil
		s.committed(txn)
	}
	return nil
}

func (s *Session) execute(txns []*binlog.Transaction, ahead []bool, checkpoint string, commit bool) error {
	first := txns[0]
	s.loads = nil
	if err := s.sourceStarted(first); err != nil {
		return newApplyError(first, err)
	}
	resumed, err := s.unpark(txns)
	if err != nil {
		return newApplyError(first, err)
	}
	if !resumed {
		// (A resumed branch ends on its own connection, where it is.)
		if err := s.toDomain(txns); err != nil {
			return newApplyError(first, err)
		}
	}
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
	if len(txns) == 1 {
		body, tail, err = s.script(first, checkpoint)
	} else if p := s.takePrepared(txns, ahead); p != nil {
		body, tail = p.body, p.tail
		body[p.checkpointAt] = checkpoint
	} else {
		body, tail, err = s.batchScript(txns, ahead, checkpoint)
	}
	if err != nil {
		return newApplyError(txns[len(txns)-1], err)
	}
	if reopened, err := s.makeRoom(body, tail); err != nil {
		return newApplyError(txns[len(txns)-1], err)
	} else if reopened {
		// A new connection knows nothing of the old one's state: build again.
		return s.execute(txns, ahead, checkpoint, commit)
	}
	script := append(format, body...)
	if ahead != nil {
		at := slices.Index(script, aheadMark)
		if at < 0 {
			return newApplyError(txns[len(txns)-1], errors.New("a gapless bug: a batch begun ahead has no place to stop"))
		}
		s.rest, s.restTxn = slices.Clone(script[at+1:]), txns[len(txns)-1]
		script, commit = script[:at], false
	}
	if resumed {
		script = resumedScript(script, first.MariaDB)
	}
	xaPrepare := len(txns) == 1 && shapeOf(first) == shapeXAPrepare
	park := xaPrepare && s.temporary
	s.unsettled = nil
	switch {
	case s.defersPosition(txns):
		if tail, err = s.deferPosition(tail, checkpoint, first); err != nil {
			return newApplyError(first, err)
		}
	case len(txns) == 1 && s.GuardsPosition(first):
		// A group the target binlogs as it executes must be one GTID
		// group there: its position is written only if so.
		if tail, err = guardPosition(tail, checkpoint, first.MariaDB); err != nil {
			return newApplyError(first, err)
		}
	}
	switch {
	case xaPrepare:
		// The prepared XA transaction holds this connection until it ends:
		// the position goes in on a new one; checkOneGroup checks it.
		s.tail = tail
	case commit && !crashBeforePosition(first):
		script = append(script, tail...)
	default:
		s.tail = tail
	}
	if s.holdsTemporary() && s.opts.KeepGTID {
		switch {
		case park:
			// A prepared XA branch holds the session in its transaction,
			// where sql_log_bin cannot change.
			script = append(script, restStatement)
		case s.tail == nil:
			script = append(script, restOutsideBinlog)
		default:
			s.tail = append(s.tail, restOutsideBinlog)
		}
	}
	if err := s.run(script); err != nil {
		if xaPrepare {
			s.endUnprepared(first, script)
		}
		s.Rollback(context.Background())
		if errors.Is(err, errDomainPinned) && !s.whole {
			// The group's first part was to go to gapless's own domain,
			// which a session holding temporary tables may not switch to;
			// nothing of it ran. It runs whole instead (statementsApart).
			s.whole = true
			defer func() { s.whole = false }()
			return s.execute(txns, ahead, checkpoint, commit)
		}
		if format != nil {
			err = privilegeHint(err)
		}
		return newApplyError(txns[len(txns)-1], s.explain(err, txns[len(txns)-1]))
	}
	s.format = first.Format.Raw
	if park {
		// The branch keeps its connection, and the temporary tables there,
		// until the group that ends it (temporary.go).
		if err := s.park(first); err != nil {
			return newApplyError(first, err)
		}
	} else if xaPrepare {
		prepared := s.conn.connectionID()
		if err := s.reopen(); err != nil {
			return newApplyError(first, err)
		}
		if err := s.awaitEnded(prepared); err != nil {
			return newApplyError(first, err)
		}
	}
	if xaPrepare && s.opts.KeepGTID && s.opts.WriteBinlog {
		if err := s.checkOneGroup(first); err != nil {
			s.Rollback(context.Background())
			return newApplyError(first, err)
		}
	}
	if commit && s.tail != nil {
		return s.Commit(context.Background(), first)
	}
	if commit {
		s.committed(first)
	}
	return nil
}

// GuardsPosition reports whether txn, applied alone, has its position
// written by a guarded statement (guardPosition): once it committed, the
// target's binlog held no GTID of its domain past it.
func (s *Session) GuardsPosition(txn *binlog.Transaction) bool {
	return s.opts.KeepGTID && s.opts.WriteBinlog && shapeOf(txn) == shapeAlone
}

// guardPosition replaces the position statement in tail with one that
// writes the position only when the target's binlog holds no GTID of g's
// domain past g (checkpoint.Guarded): that is, when the group just run
// did not take a sequence number beyond its own there. It runs in the same
// round trip as the group.
func guardPosition(tail []string, checkpoint string, g gtid.MariaDBGTID) ([]string, error) {
	for i, stmt := range tail {
		if stmt != checkpoint {
			continue
		}
		guarded, ok := ckpt.Guarded(stmt, g)
		if !ok {
			return nil, fmt.Errorf("gapless bug: the position statement cannot be guarded: %s", stmt)
		}
		tail[i] = guardMark + guarded
		return tail, nil
	}
	return nil, fmt.Errorf("gapless bug: the position statement of %s is missing from its script", g)
}

// checkOneGroup makes sure a group the target binlogged as it executed
// took exactly its own GTID there. Should the target have split it into
// two GTID groups, the second would hold the sequence number of the
// source's next transaction, which would then be taken for applied: the
// run stops here instead, before the position passes it. (Such a group
// runs alone: nothing else writes the target's binlog meanwhile.)
func (s *Session) checkOneGroup(txn *binlog.Transaction) error {
	text, err := s.conn.queryString("SELECT @@global.gtid_binlog_pos")
	if err != nil {
		return err
	}
	pos, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return fmt.Errorf("target @@gtid_binlog_pos: %w", err)
	}
	if last, ok := pos.Get(txn.MariaDB.Domain); ok && last.Seq > txn.MariaDB.Seq {
		return fmt.Errorf("%w (the target's binlog now ends at %s)", errNotOneGroup, last)
	}
	return nil
}

// reopen gives up the connection for a new one, forgetting its state.
func (s *Session) reopen() error {
	s.dropSlot(s.conn)
	s.endConn(s.conn)
	s.Forget()
	conn, err := dial(context.Background(), s.opts.Server)
	if err != nil {
		return err
	}
	s.conn = conn
	return s.prepare()
}

// Batchable reports whether txn may share a target transaction with its
// neighbours: a MariaDB transaction on transactional tables only that ends
// in an XID, of row events or of statements (each statement runs under its
// own session state inside the batch, as it would alone), none of which
// searches a full-text index.
func Batchable(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagStandalone) || txn.Has(binlog.FlagDDL) ||
		!txn.Has(binlog.FlagTransactional|binlog.FlagAllowParallel) || len(txn.Events) == 0 {
		return false
	}
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.QueryEvent:
			if mayMatchFulltext(e.Query) {
				return false
			}
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.MariadbAnnotateRowsEvent,
			*replication.XIDEvent, *replication.IntVarEvent:
		case *replication.GenericEvent:
			if t := ev.Header.EventType; t != replication.RAND_EVENT && t != replication.USER_VAR_EVENT {
				return false
			}
		default:
			return false
		}
	}
	return shapeOf(txn) == shapeTransaction
}

// mayMatchFulltext reports whether a statement may search a full-text
// index (MATCH ... AGAINST). InnoDB shows a full-text index the changes of
// committed transactions only, so such a statement batched behind earlier
// source transactions would not see their rows, and would silently find
// what the source did not: it starts a target transaction of its own. The
// word is looked for anywhere in the text; a false match costs one batch.
func mayMatchFulltext(query []byte) bool {
	return containsFold(query, "against")
}

// containsFold reports whether text holds word, of ASCII letters, in any
// case, anywhere.
func containsFold(text []byte, word string) bool {
	lowerC, upperC := word[0]|0x20, word[0]&^0x20
	// The next place word's first letter starts, in lower and in upper
	// case, found by IndexByte (far faster than a loop over bytes), each
	// searched again only once passed: -1 when there is none.
	next := func(c byte, from int) int {
		if j := bytes.IndexByte(text[from:], c); j >= 0 {
			return from + j
		}
		return -1
	}
	lower, upper := next(lowerC, 0), next(upperC, 0)
	for {
		i := lower
		if i < 0 || upper >= 0 && upper < i {
			i = upper
		}
		if i < 0 || i+len(word) > len(text) {
			return false
		}
		if bytes.EqualFold(text[i:i+len(word)], []byte(word)) {
			return true
		}
		if i == lower {
			lower = next(lowerC, i+1)
		} else {
			upper = next(upperC, i+1)
		}
	}
}

// batchScript applies Batchable transactions as one target transaction,
// under the GTID of the last: the target shows the state after the last, a
// state the source had. Row events of consecutive transactions share BINLOG
// statements; a transaction of statements runs them under their session
// state, as it would alone.
//
// With ahead (ExecuteAhead), the transactions it marks run first and the
// others after aheadMark, each part in source order.
func (s *Session) batchScript(txns []*binlog.Transaction, ahead []bool, checkpoint string) (body, tail []string, err error) {
	last := txns[len(txns)-1]
	if s.opts.KeepGTID {
		body = append(body, gtidStatements(last.MariaDB)...)
	}
	body = append(body, beginStatement, checkpoint)
	blocksFrom, statements := len(body), false
	mode, known := s.sqlMode()
	rows := s.rowBatcher()
	run, split := txns, -1
	if ahead != nil {
		run = make([]*binlog.Transaction, 0, len(txns))
		for i, txn := range txns {
			if ahead[i] {
				run = append(run, txn)
			}
		}
		split = len(run)
		for i, txn := range txns {
			if !ahead[i] {
				run = append(run, txn)
			}
		}
	}
	for i, txn := range run {
		if i == split {
			body = rows.flush(body)
			body = append(body, aheadMark)
		}
		if !Batchable(txn) {
			return nil, nil, fmt.Errorf("%s cannot be applied in a batch", txn)
		}
		if HasStatements(txn) {
			statements = true
			body = rows.flush(body)
			var own []string // its COMMIT: the batch has one of its own
			if body, _, err = s.events(txn, body, &own, true, func() {}); err != nil {
				return nil, nil, err
			}
			continue
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
	if statements {
		// Row events alone make BINLOG statements, which no block holds.
		body = append(body[:blocksFrom], s.inBlocks(body[blocksFrom:], mode, known)...)
	}
	return body, []string{"COMMIT"}, nil
}

// sqlMode is the session's sql_mode, if known.
func (s *Session) sqlMode() (uint64, bool) {
	if s.state == nil || !s.state.HasSQLMode {
		return 0, false
	}
	return uint64(s.state.SQLMode), true
}

// Commit ends the transaction Execute left open.
func (s *Session) Commit(ctx context.Context, txn *binlog.Transaction) error {
	tail := s.tail
	s.tail = nil
	crashPoint(txn)
	if err := s.run(tail); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	s.committed(txn)
	return nil
}

// Rollback abandons the open transaction, if any, and forgets the session state.
func (s *Session) Rollback(ctx context.Context) {
	s.tail = nil
	s.unsettled = nil
	s.rest, s.restTxn = nil, nil
	s.Forget()
	if !s.opts.WriteBinlog {
		s.conn.exec([]string{"ROLLBACK"})
		return
	}
	if s.holdsTemporary() && s.opts.KeepGTID {
		// Between groups, as after one (toRest).
		if s.conn.exec([]string{"ROLLBACK", restOutsideBinlog}) == nil {
			s.resting = true
		}
		return
	}
	// A script that failed amid statements run outside the binlog
	// (outsideBinlog) left the session so: what runs next is binlogged.
	if s.conn.exec([]string{"ROLLBACK", binlogAgain}) == nil {
		s.resting = false
	}
}

// HoldsTemporary reports whether the session's connections may hold
// temporary tables of the source's sessions, which end with them.
func (s *Session) HoldsTemporary() bool { return len(s.held) > 0 }

// run sends the statements in as few round trips as max_allowed_packet
// allows. A statement the source logged with an error ends its round trip,
// and must fail with that same error (see expecting).
func (s *Session) run(script []string) error {
	if len(script) == 0 {
		return s.send(script)
	}
	resting := s.resting
	s.resting = false
	if resting {
		// The session rests outside the binlog (restOutsideBinlog): the
		// round trip turns it on again first, and that answer is not the
		// script's.
		script = append([]string{binlogAgain}, script...)
	}
	err := s.send(script)
	if resting {
		s.ran = max(s.ran-1, 0)
	}
	s.resting = err == nil && script[len(script)-1] == restOutsideBinlog
	return err
}

// send is run without the rest.
func (s *Session) send(script []string) error {
	s.conn.files = s.loads
	s.ran = 0
	var packet []string
	size := 0
	guard := -1      // the packet's guarded position statement
	var checks []int // the packet's OneGroupChecks
	send := func(expect, tolerate uint16) error {
		err := checkExpected(s.conn.exec(packet), expect, tolerate)
		if err == nil {
			s.ran += len(packet)
		} else {
			s.ran += len(s.conn.affected)
		}
		if err == nil && guard >= 0 {
			switch {
			case guard >= len(s.conn.affected):
				err = errors.New("the position statement did not run") // nothing after an error runs
			case s.conn.affected[guard] == 0:
				err = errNotOneGroup
			}
		}
		if code, _ := errorCode(err); code == errSubqueryRows && slices.Contains(checks, len(s.conn.affected)) {
			err = errNotOneGroup
		}
		packet, size, guard, checks = packet[:0], 0, -1, checks[:0]
		return err
	}
	for _, stmt := range script {
		guarded := strings.HasPrefix(stmt, guardMark)
		if guarded {
			stmt = stmt[len(guardMark):]
		}
		checked := strings.HasPrefix(stmt, oneGroupMark)
		if checked {
			stmt = stmt[len(oneGroupMark):]
		}
		expect, tolerate, text := splitExpected(stmt)
		if len(text) > s.maxStatement {
			if len(packet) > 0 {
				if err := send(0, 0); err != nil {
					return err
				}
			}
			if err := s.runFragmented(text); err != nil {
				return err
			}
			s.ran++
			continue
		}
		if len(packet) > 0 && size+len(text)+2 > min(s.maxStatement, roundTrip) {
			if err := send(0, 0); err != nil {
				return err
			}
		}
		if guarded {
			guard = len(packet)
		}
		if checked {
			checks = append(checks, len(packet))
		}
		packet = append(packet, text)
		size += len(text) + 2
		if text == ownDomainStatement && s.temporary {
			// It may be refused (temporary tables pin the session's
			// domain): it ends its packet, so that nothing after it has run
			// when it is.
			if err := send(0, 0); err != nil {
				if code, _ := errorCode(err); code == errGTIDInTransaction {
					return fmt.Errorf("%w: %w", errDomainPinned, err)
				}
				return err
			}
			continue
		}
		// A statement logged with its own terminator (a stored program
		// under sql_mode=ORACLE: "... AS SELECT 1;", or a client's
		// "...; -- why") would leave an empty statement before the next
		// one of the packet, a syntax error.
		if expect != 0 || tolerate != 0 || endsTerminated(text) {
			if err := send(expect, tolerate); err != nil {
				return err
			}
		}
	}
	if len(packet) > 0 {
		return send(0, 0)
	}
	return nil
}

// script lists the statements that apply txn: body runs it up to its
// commit, tail commits it. Where the checkpoint goes depends on the group's
// shape (groups.go): right after the transaction's start when the group is
// one transaction ending in an XID, so it is part of it however the group
// ends; in a transaction of its own, outside the binlog, for everything the
// target binlogs as it executes.
func (s *Session) script(txn *binlog.Transaction, checkpoint string) (body, tail []string, err error) {
	shape := shapeOf(txn)
	switch {
	case shape == shapePositionOnly:
		return nil, s.ownTransaction(checkpoint), nil
	case shape == shapeXAPrepare:
		return s.xaPrepareScript(txn, checkpoint)
	}
	if s.opts.KeepGTID && s.opts.WriteBinlog && !s.whole {
		if statements := nonTransactionalRowStatements(txn); len(statements) > 1 {
			return s.rowStatementsScript(txn, statements), s.ownTransaction(checkpoint), nil
		}
	}
	apart := s.statementsApart(txn, shape)
	s.lastApart = apart
	defer func() { s.lastApart = 0 }()
	if s.opts.BegunMark != nil && txn.Flavor == binlog.FlavorMariaDB && Marked(txn) {
		// In autocommit, before anything of the group: committed first.
		// (A DDL's mark tells its recovery on the target from a client's
		// write: AppliedAlone.)
		body = s.outsideBinlog(s.opts.BegunMark(txn.MariaDB))
	}
	switch {
	case s.rowsApart(txn), apart > 0:
		// The first part goes in gapless's own domain; the source's GTID
		// waits for the last (events).
		body = append(body, ownDomainStatement)
	case s.opts.KeepGTID && txn.Flavor == binlog.FlavorMariaDB:
		body = append(body, gtidStatements(txn.MariaDB)...)
	}
	inside := shape == shapeTransaction
	begin := func() {
		body = append(body, beginStatement)
		if inside {
			body = append(body, checkpoint)
		}
		if s.opts.KeepGTID && s.opts.WriteBinlog && (routineTemporaryDDL(txn) || onlyDroppedLoads(txn)) {
			body = append(body, ckpt.OpenTransactionCache)
		}
	}
	// A MariaDB GTID event stands for BEGIN unless the group is a standalone statement.
	begun := txn.Flavor == binlog.FlavorMariaDB && !txn.Has(binlog.FlagStandalone)
	if begun && apart == 0 && !s.autocommitStatement(txn, shape) {
		begin()
	}
	body, ended, err := s.events(txn, body, &tail, begun, begin)
	if err != nil {
		return nil, nil, err
	}
	if !ended || !inside {
		// A standalone statement (DDL) commits on its own, and a group the
		// target binlogs as it executes leaves its position out of the
		// binlog: the position follows.
		tail = append(tail, s.ownTransaction(checkpoint)...)
	}
	if txn.Has(binlog.FlagDDL) {
		// A DDL may have dropped the session's default database.
		s.db = ""
	}
	return body, tail, nil
}

// rowStatement is one statement of a group of row events: its table maps
// and row events, up to one with the statement-end flag, or a sequence's
// new value.
type rowStatement struct {
	events   [][]byte
	sequence *SequenceValue
}

// text is the statement the target runs for it.
func (r rowStatement) text() string {
	if r.sequence != nil {
		return r.sequence.Statement()
	}
	return binlogStatement(r.events)
}

// nonTransactionalRowStatements returns the row statements of a group of
// row events only that is not transactional (as the source flagged it, or
// because a table is not transactional on the target: Engines), or nil for
// any other group.
func nonTransactionalRowStatements(txn *binlog.Transaction) []rowStatement {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagTransactional) || txn.Has(binlog.FlagDDL) || txn.Has(binlog.FlagStandalone) {
		return nil
	}
	var statements []rowStatement
	var current [][]byte
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent:
			current = append(current, ev.Raw)
		case *replication.RowsEvent:
			current = append(current, ev.Raw)
			if e.Flags&replication.RowsEventStmtEndFlag != 0 {
				statements = append(statements, rowStatement{events: current})
				current = nil
			}
		case *SequenceValue:
			if len(current) > 0 {
				return nil
			}
			statements = append(statements, rowStatement{sequence: e})
		case *replication.MariadbAnnotateRowsEvent, *replication.XIDEvent:
		case *replication.QueryEvent:
			text := strings.TrimSpace(string(e.Query))
			if !strings.EqualFold(text, "BEGIN") && !strings.EqualFold(text, "COMMIT") && !(setsSavepoint(text) && savepointsLeftOut(txn)) {
				return nil
			}
		default:
			return nil
		}
	}
	if len(current) > 0 {
		return nil
	}
	return statements
}

// rowStatementsScript applies a group of several row statements on tables
// that are not transactional (INSERT DELAYED writes one such group for many
// clients' rows). The target binlogs each of them as a GTID group of its
// own as it executes, so all but the last go in gapless's own GTID domain,
// outside any transaction, and the last one under the source's GTID: the
// source's domain gets one group, and only once all of it is applied.
func (s *Session) rowStatementsScript(txn *binlog.Transaction, statements []rowStatement) []string {
	body := []string{ownDomainStatement}
	for _, st := range statements[:len(statements)-1] {
		body = append(body, st.text())
	}
	body = append(body, gtidStatements(txn.MariaDB)...)
	return append(body, statements[len(statements)-1].text())
}

// xaPrepareScript applies the first phase of an XA transaction: XA START,
// its events, XA END and XA PREPARE. The prepared transaction stays on the
// target after the connection ends (MariaDB 10.5 and later) and waits for
// the group holding its XA COMMIT or XA ROLLBACK, which any session may run;
// this session's connection is given up right after it (see execute).
func (s *Session) xaPrepareScript(txn *binlog.Transaction, checkpoint string) (body, tail []string, err error) {
	start, prepare, err := xaStatements(txn)
	if err != nil {
		return nil, nil, err
	}
	if s.opts.KeepGTID {
		body = append(body, gtidStatements(txn.MariaDB)...)
	}
	body = append(body, start)
	body, _, err = s.events(txn, body, &tail, true, func() {})
	if err != nil {
		return nil, nil, err
	}
	body = append(body, prepare)
	return body, s.ownTransaction(checkpoint), nil
}

// endUnprepared ends the XA branch of txn that script, which failed, began
// and did not prepare (a lock wait timed out, a deadlock, the watchdog):
// ROLLBACK does not end one, and the connection could run nothing else
// while it is open (1953 on the retry's first statement, 1399). A branch
// that was prepared stays, as on the source.
func (s *Session) endUnprepared(txn *binlog.Transaction, script []string) {
	start, prepare, err := xaStatements(txn)
	if err != nil {
		return
	}
	if at := slices.Index(script, prepare); at >= 0 && s.ran > at {
		return
	}
	x := strings.TrimPrefix(start, "XA START ")
	// One at a time: XA END fails when the branch is idle already.
	_ = s.conn.exec([]string{"XA END " + x})
	_ = s.conn.exec([]string{"XA ROLLBACK " + x})
}

// events adds the statements of txn's events to body: row events as BINLOG
// statements, queries under their session state. ended says whether the
// group's own commit (XID or COMMIT) is in tail.
func (s *Session) events(txn *binlog.Transaction, body []string, tail *[]string, begun bool, begin func()) ([]string, bool, error) {
	rows := s.rowBatcher()
	rows.whole = !txn.Has(binlog.FlagTransactional) && s.opts.KeepGTID && s.opts.WriteBinlog
	var context []string // statements setting up the next query: INSERT_ID, RAND seeds, user variables
	ended := false
	apart, ddlRan, rowsBegun, statements := s.rowsApart(txn), false, false, 0
	noSavepoints := savepointsLeftOut(txn)
	flags2, _ := gtidFlags(txn)
	xa := flags2&(gtidPreparedXA|gtidCompletedXA) != 0 // begun by XA START, which its GTID event stands for
	for _, ev := range txn.Events {
		data := ev.Data
		switch e := data.(type) {
		case *replication.BeginLoadQueryEvent:
			if err := s.addLoadBlock(e.FileID, e.BlockData, true); err != nil {
				return nil, false, fmt.Errorf("%s: %w", txn, err)
			}
			continue
		case *replication.ExecuteLoadQueryEvent:
			q, err := s.loadQuery(ev, txn.Format)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", txn, err)
			}
			data = q
		}
		switch e := data.(type) {
		case *replication.TableMapEvent:
			if apart && ddlRan && !rowsBegun {
				rowsBegun = true
				body = append(body, gtidStatements(txn.MariaDB)...)
				body = append(body, beginStatement)
			}
			body = rows.addTableMap(body, ev.Raw)
		case *replication.RowsEvent:
			body = rows.addRows(body, ev.Raw, e.Flags&replication.RowsEventStmtEndFlag != 0)
		case *SequenceValue:
			body = rows.flush(body)
			body = append(body, e.Statement())
		case *replication.XIDEvent:
			body = rows.flush(body)
			*tail = append(*tail, "COMMIT")
			ended = true
		case *replication.IntVarEvent:
			context = append(context, binlog.IntVar{Kind: byte(e.Type), Value: e.Value}.Statement())
		case *replication.QueryEvent:
			body = rows.flush(body)
			text := withoutGTIDAssignments(queryStatement(e.Query))
			s.noteTemporary(text)
			switch {
			case strings.EqualFold(text, "COMMIT"):
				*tail = append(*tail, "COMMIT")
				ended = true
				continue
			case strings.EqualFold(text, "ROLLBACK"):
				*tail = append(*tail, "ROLLBACK")
				ended = true
				continue
			case strings.EqualFold(text, "BEGIN"):
				if !begun {
					begin()
					begun = true
				}
				continue
			case noSavepoints && setsSavepoint(text):
				continue
			}
			state, err := binlog.QuerySessionState(ev.Header, e)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", txn, err)
			}
			if err := s.remakesLost(state.PseudoThreadID, string(e.Schema), text, state.SQLMode); err != nil {
				return nil, false, fmt.Errorf("%s: %w", txn, err)
			}
			s.noteHeld(txn.MariaDB.Domain, txn.MariaDB.Server, state.PseudoThreadID, string(e.Schema), text, state.SQLMode)
			// autocommit is left as the session has it: the source clears the
			// bit inside transactions, and setting it would commit ours.
			state.Flags2Mask = formatFlags2(txn.Format) &^ binlog.Flags2NotAutocommit
			// USE first: it resets collation_database, which the state sets.
			if db := string(e.Schema); db != "" && db != s.db && (ev.Header.Flags&replication.LOG_EVENT_SUPPRESS_USE_F == 0 || altersCurrentDatabase(text)) {
				if !isASCII(db) {
					// A database name is in UTF-8; the session may be
					// reading statements in the source's last client
					// character set (koi8r, cp1251, ...).
					body = append(body, "SET @@session.character_set_client=utf8mb4")
					if s.state != nil {
						s.state.HasCharset = false
					}
				}
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
			// A DDL the source logged with an error runs as it was: its
			// error is expected (DROP VIEW v1, missing: 4092).
			if statements++; statements == s.lastApart {
				body = append(body, gtidStatements(txn.MariaDB)...)
			}
			text, roles := asInvoker(text, &state)
			if txn.Has(binlog.FlagDDL) && e.ErrorCode == 0 {
				text = disabledOnTarget(text, &state)
			}
			stmt := expecting(e.ErrorCode, sourceStatement(s.withSourceAutoIncrement(text, &state, txn.Has(binlog.FlagDDL)), txn.Has(binlog.FlagDDL) && e.ErrorCode == 0))
			if completesXA(txn) {
				// A branch that changed nothing on the target was not kept
				// as it was prepared: ending it answers XA_RBROLLBACK,
				// and there is nothing to end. (A branch with changes, once
				// prepared, ends only by this statement.)
				stmt = tolerating(errXARollback, stmt)
			}
			switch {
			case begun && statements == 1 && !xa && statementCount(txn) > 1:
				body = append(body, transactionalTemporary(text, stmt)...)
			case !begun && e.ErrorCode == 0 && s.opts.KeepGTID && s.opts.WriteBinlog:
				body = append(body, temporaryDropInParts(text, stmt, state.SQLMode)...)
			default:
				body = append(body, stmt)
			}
			if len(roles) > 0 && e.ErrorCode == 0 {
				admin, err := s.adminOf(roles)
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", txn, err)
				}
				body = append(body, admin...)
			}
			body = append(body, s.grantorOf(text, &state)...)
			if e.ErrorCode == 0 {
				body = append(body, s.routineGrant(text, string(e.Schema), &state)...)
			}
			ddlRan = txn.Has(binlog.FlagDDL)
		case *replication.GenericEvent:
			switch ev.Header.EventType {
			case replication.RAND_EVENT:
				seeds, err := binlog.DecodeRand(e.Data)
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", txn, err)
				}
				context = append(context, seeds.Statement())
			case replication.USER_VAR_EVENT:
				v, err := binlog.DecodeUserVar(e.Data)
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", txn, err)
				}
				context = append(context, v.Statement())
			case replication.APPEND_BLOCK_EVENT:
				fileID, block, err := appendBlock(ev, txn.Format)
				if err == nil {
					err = s.addLoadBlock(fileID, block, false)
				}
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", txn, err)
				}
			case replication.DELETE_FILE_EVENT:
				// A LOAD DATA that failed on the source after its file was
				// sent: the file is dropped, and nothing runs.
				fileID, err := deletedFile(ev, txn.Format)
				if err != nil {
					return nil, false, fmt.Errorf("%s: %w", txn, err)
				}
				delete(s.loads, loadFileName(fileID))
			case replication.XA_PREPARE_LOG_EVENT:
				// the XA PREPARE that xaPrepareScript adds
			default:
				return nil, false, unsupportedEvent(ev)
			}
		case *replication.MariadbAnnotateRowsEvent, *replication.RowsQueryEvent:
			// informational: the statement text behind the row events that follow
		default:
			if ev.Header.EventType == replication.XA_PREPARE_LOG_EVENT {
				continue
			}
			return nil, false, unsupportedEvent(ev)
		}
	}
	return rows.flush(body), ended, nil
}

// errDomainPinned: the session could not switch to gapless's own domain,
// as it holds temporary tables; nothing after the switch ran.
var errDomainPinned = errors.New("the session's temporary tables keep it in its GTID domain")

// ownDomainStatement puts what the session binlogs next in gapless's own
// GTID domain, under a sequence number the server gives: one set for a
// group of the source's that logged nothing (statements on temporary
// tables only) would still be set, and gapless's own domain may be further
// on (1950, found by the random load at GAPLESS_RANDOM_SCALE=10).
var ownDomainStatement = fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=@@global.server_id, @@session.gtid_seq_no=0", ckpt.OwnDomain)

// rowsApart reports whether txn is a DDL group with rows after its
// statement (CREATE TABLE ... SELECT logged as rows), to be applied in two
// parts on a target that binlogs the source's GTIDs. The source wrote one
// group, but the target commits the DDL on its own, and its rows would take
// the source's next sequence number. So the DDL goes in gapless's own
// domain and the rows, in a transaction, under the source's GTID: the
// source's domain gets one group, once all of it is applied.
func (s *Session) rowsApart(txn *binlog.Transaction) bool {
	return s.opts.KeepGTID && s.opts.WriteBinlog && !s.whole && ddlWithRows(txn)
}

// statementsApart returns how many statements a group of statements that
// is not transactional holds, when there are several and the target binlogs
// the source's GTIDs, or 0. Each statement's changes to a table that is not
// transactional are binlogged by the target as a GTID group of their own,
// where the source has one group for them all (it does so for a CALL, or
// after a transactional change); so all but the last go in gapless's own
// domain, outside any transaction, and the last under the source's GTID.
// A session holding temporary tables may not leave the domain it made them
// in (1953): there the group runs again whole (s.whole), in the source's
// transaction, and checkOneGroup stops the run should the target still
// split it (the group may touch only transactional tables; the flag says
// only that some table is not).
func (s *Session) statementsApart(txn *binlog.Transaction, shape groupShape) int {
	if n, _ := s.nonTransactionalStatements(txn, shape); n >= 2 {
		return n
	}
	return 0
}

// autocommitStatement reports whether txn is one DML statement that is not
// transactional on the target, which then runs in autocommit, not inside
// the transaction the source's GTID stands for, on a target that binlogs
// the source's GTIDs. A statement that writes a non-transactional table
// and, through a trigger, a transactional one is unsafe to log as a
// statement inside a multi-statement transaction, so the target would log
// its rows instead, each engine's in a GTID group of its own; the source
// logged it as one statement, so it ran it outside such a transaction (or
// logged in STATEMENT format), and in autocommit the target logs it as one
// group too. (Should it still split, checkOneGroup stops the run.)
func (s *Session) autocommitStatement(txn *binlog.Transaction, shape groupShape) bool {
	n, text := s.nonTransactionalStatements(txn, shape)
	return n == 1 && statement.IsDML(text)
}

// nonTransactionalStatements counts the statements of a group of
// statements that is not transactional, on a target that binlogs the
// source's GTIDs, and returns the last; 0 for any other group, or one that
// needs its transaction (ROLLBACK, savepoints).
func (s *Session) nonTransactionalStatements(txn *binlog.Transaction, shape groupShape) (n int, last string) {
	if shape != shapeAlone || !s.opts.KeepGTID || !s.opts.WriteBinlog || txn.Flavor != binlog.FlavorMariaDB || s.whole ||
		txn.Has(binlog.FlagTransactional) || txn.Has(binlog.FlagDDL) || txn.Has(binlog.FlagStandalone) || completesXA(txn) {
		return 0, ""
	}
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent:
			return 0, ""
		case *replication.ExecuteLoadQueryEvent:
			n++
			last = "LOAD DATA"
		case *replication.QueryEvent:
			switch binlog.ControlStatement(e.Query) {
			case "BEGIN", "COMMIT":
			case "ROLLBACK":
				return 0, ""
			default:
				text := strings.TrimSpace(string(e.Query))
				if setsSavepoint(text) && savepointsLeftOut(txn) {
					continue
				}
				if setsSavepoint(text) || startsWithWord(text, "ROLLBACK") {
					return 0, "" // savepoints need the one transaction
				}
				n++
				last = text
			}
		}
	}
	return n, last
}

// unsupportedEvent is the error for an event gapless cannot apply.
func unsupportedEvent(ev binlog.Event) error {
	return fmt.Errorf("%s events cannot be applied by gapless (event at source position %d)", ev.Header.EventType, ev.Header.LogPos)
}

// queryStatement is the statement of a query event as the target runs it
// in a packet of several: without the NUL bytes a client may have sent at
// its end (mysqlslap counts its terminator in the length). The source's
// server ended the statement there; in a packet the NUL would end the
// whole packet's text before the next statement, a syntax error (1064).
func queryStatement(query []byte) string {
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(string(query)), "\x00"))
}

// beginStatement opens a target transaction. Not BEGIN: under
// sql_mode=ORACLE, which a source statement may leave on the session,
// BEGIN opens a PL/SQL block.
const beginStatement = "START TRANSACTION"

// sourceStatement is a statement of the source as the target runs it,
// without a terminator and comments after it (withoutTrailer). A
// text that ends in a "#" or "--" comment gets a line end, or the comment
// would swallow the separator of the statement that follows it. A DROP in
// a DDL group runs with sql_if_exists: the source logs DROP TABLE a, b with
// error code 0 after dropping the ones that existed, and MariaDB's replica
// applies DDL idempotently (slave_ddl_exec_mode=IDEMPOTENT, its default).
func sourceStatement(text string, ddl bool) string {
	text = withoutTrailer(text)
	if strings.Contains(text, "#") || strings.Contains(text, "--") {
		text += "\n"
	}
	if ddl && startsWithWord(text, "DROP") {
		text = "SET STATEMENT sql_if_exists=1 FOR " + text
	}
	return text
}

// altersCurrentDatabase reports whether text is an ALTER DATABASE without a
// name, which alters the session's default database. The source logs the
// statements on databases with LOG_EVENT_SUPPRESS_USE_F (they must not
// depend on the default database), and this one is the exception.
func altersCurrentDatabase(text string) bool {
	fields := strings.Fields(strings.ToUpper(statement.PastComments(text)))
	if len(fields) < 3 || fields[0] != "ALTER" || (fields[1] != "DATABASE" && fields[1] != "SCHEMA") {
		return false
	}
	switch strings.SplitN(fields[2], "=", 2)[0] {
	case "DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT":
		return true
	}
	return false
}

// startsWithWord reports whether text, past leading blanks and comments,
// starts with the keyword word.
func startsWithWord(text, word string) bool {
	for {
		text = statement.PastComments(text)
		if strings.HasPrefix(text, "/*!") {
			// an executable comment: /*!50001 DROP ...*/ keeps its version digits
			text = strings.TrimLeft(text[3:], "0123456789")
			continue
		}
		if len(text) < len(word) || !strings.EqualFold(text[:len(word)], word) {
			return false
		}
		return len(text) == len(word) || !isWordByte(text[len(word)])
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ownTransaction writes a checkpoint in a target transaction of its own,
// after a group the target binlogged as it executed, or for a skipped
// transaction. It stays out of the target's binlog: there it would take the
// next sequence number of the source's domain. Its row is one of the
// position rows no binlogged transaction ever writes (PositionInside), so
// a replica of the target never meets an update of a row it lacks.
func (s *Session) ownTransaction(checkpoint string) []string {
	return s.outsideBinlog(beginStatement, checkpoint, "COMMIT")
}

// outsideBinlog runs stmts with the session's binlog off, when it is on
// (WriteBinlog), and turns it on again after them.
func (s *Session) outsideBinlog(stmts ...string) []string {
	if !s.opts.WriteBinlog {
		return stmts
	}
	return append(append([]string{"SET @@session.sql_log_bin=0"}, stmts...), "SET @@session.sql_log_bin=1")
}

// PositionInside reports whether the position of a job of txns is written
// inside the target transaction that applies them (and so travels in the
// target's binlog with them), rather than after it in a transaction of its
// own, outside the binlog.
func PositionInside(txns []*binlog.Transaction) bool {
	return len(txns) > 1 || shapeOf(txns[0]) == shapeTransaction
}

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

// roundTrip bounds the statements of one round trip, and so a BINLOG
// statement, in bytes, whatever more the target's max_allowed_packet allows
// (a row event larger than it still goes, alone). The server takes a large
// BINLOG statement more slowly than the same events in pieces: three
// transactions of a million rows each (900 MB of row events) applied in
// 37 s in statements of up to 1 GiB, 27-31 s in statements of 1 to 64 MiB;
// and the script of one round trip is in memory twice, here and in the
// server.
const roundTrip = 16 << 20

// rowBatcher starts a batcher whose BINLOG statements, in base64 (4 bytes
// for 3) with the statement's own text, fit in one packet.
func (s *Session) rowBatcher() rowBatcher {
	return rowBatcher{limit: (min(s.maxStatement, roundTrip) - 1024) * 3 / 4}
}

// rowBatcher gathers table map and row events into BINLOG statements no
// larger than limit raw bytes. A statement's events are cut only between row
// events, and the next BINLOG statement repeats the statement's table maps;
// with whole, never: the target ends a statement on a table that is not
// transactional at the end of each BINLOG statement, and binlogs each piece
// as a GTID group of its own, which matters where it binlogs the source's
// GTIDs. A whole statement larger than a packet goes in fragments
// (runFragmented), up to two of 1 GiB.
type rowBatcher struct {
	limit    int
	whole    bool
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
	if b.size+len(raw) > b.limit && b.size > 0 && !(b.whole && b.stmtRows > 0) {
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

// binlogStatement wraps raw events in one BINLOG statement: the base64 of
// the events one after the other, encoded straight into the statement's
// only allocation.
func binlogStatement(events [][]byte) string {
	n := 0
	for _, ev := range events {
		n += len(ev)
	}
	const open = "BINLOG '"
	stmt := make([]byte, len(open), len(open)+base64.StdEncoding.EncodedLen(n)+1)
	copy(stmt, open)
	stmt = appendBase64(stmt, events)
	stmt = append(stmt, '\'')
	return unsafe.String(unsafe.SliceData(stmt), len(stmt))
}

// appendBase64 appends the base64 encoding of parts, taken as one run of
// bytes, to dst, which must have the room. Parts are encoded where they
// lie: only the up to two bytes that straddle two parts are copied.
func appendBase64(dst []byte, parts [][]byte) []byte {
	var carry [3]byte
	held := 0 // bytes of carry in use
	for _, p := range parts {
		if held > 0 {
			k := copy(carry[held:], p)
			held += k
			p = p[k:]
			if held < 3 {
				continue
			}
			dst = encodeBase64(dst, carry[:])
			held = 0
		}
		whole := len(p) / 3 * 3
		dst = encodeBase64(dst, p[:whole])
		held = copy(carry[:], p[whole:])
	}
	return encodeBase64(dst, carry[:held])
}

func encodeBase64(dst, src []byte) []byte {
	at := len(dst)
	dst = dst[:at+base64.StdEncoding.EncodedLen(len(src))]
	base64.StdEncoding.Encode(dst[at:], src)
	return dst
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

// AppliedAlone reports whether the target already holds txn, one that
// AppliesAlone: such a group is on the target before its checkpoint row, so
// after a crash between the two this is how its second execution is
// avoided. With the source's GTIDs kept, the target's binlog says; without
// them, an XA PREPARE group is known by its prepared XID (XA RECOVER), and
// other groups cannot be told (as with MariaDB's own replica, a crash there
// may apply a non-transactional write twice). first says txn is the first
// transaction of its domain this run applies: only then can the target hold
// it already (the run before ended between it and its position); a later
// one found there means the target split an earlier transaction into two
// GTID groups, the second under this transaction's GTID.
//
// resumed says, beyond first, that this run has not tried txn before: the
// run before may have applied several such groups past the position and
// ended before writing theirs (deferred.go). through is then set when the
// target's binlog holds the domain past txn, up to a GTID of txn's server:
// txn is one of those groups, and so is every transaction of the domain up
// to through, which the caller must check (only groups that apply alone
// may be among them). began says a try of txn, this run's or the run
// before's, started on the target (its begun mark).
func (s *Session) AppliedAlone(ctx context.Context, txn *binlog.Transaction, first, resumed, began bool) (applied bool, through gtid.MariaDBGTID, err error) {
	if txn.Flavor != binlog.FlavorMariaDB {
		return false, through, nil
	}
	if s.opts.KeepGTID {
		text, err := s.conn.queryString("SELECT @@global.gtid_binlog_pos")
		if err != nil {
			return false, through, newApplyError(txn, err)
		}
		pos, err := gtid.ParseMariaDBPosition(text)
		if err != nil {
			return false, through, fmt.Errorf("target @@gtid_binlog_pos: %w", err)
		}
		// Such a group runs alone (a barrier): when it is on the target,
		// nothing has been binlogged in its domain since, but the groups
		// of the run before whose positions waited.
		last, ok := pos.Get(txn.MariaDB.Domain)
		if ok && last.Seq >= txn.MariaDB.Seq && last.Server != txn.MariaDB.Server {
			if recovered, err := s.afterDDLRecovery(txn, last, began); err != nil || recovered {
				return recovered, through, err
			}
			// Something besides this stream wrote the domain last: what
			// the target holds of txn's server is its own entry in the
			// binlog's state.
			if last, ok, err = s.besideForeignWrite(txn, last); err != nil {
				return false, through, err
			}
		}
		switch {
		case !ok || last.Seq < txn.MariaDB.Seq:
			return false, through, nil
		case last == txn.MariaDB && first:
			if err := s.notEndDrop(txn, last); err != nil {
				return false, through, err
			}
			return true, through, s.EndBinlogged(ctx, txn)
		case resumed && last.Server == txn.MariaDB.Server:
			if err := s.notEndDrop(txn, last); err != nil {
				return false, through, err
			}
			return true, last, s.EndBinlogged(ctx, txn)
		case last == txn.MariaDB:
			return false, through, newApplyError(txn, fmt.Errorf("the target's binlog already holds %s though gapless has not applied it: the target wrote an earlier transaction of this run as two GTID groups (a table that is transactional on the source and not on the target, written by a statement?); applying or skipping could both be wrong, so gapless stops; report it as a gapless bug, and replicate with --no-target-binlog to go on", last))
		}
		return false, through, foreignWriteError(txn, last)
	}
	if x := endsXA(txn); x != (xid{}) && first {
		// An XA COMMIT or XA ROLLBACK tried before (a round trip lost, its
		// position not written, a run killed) is on the target once its
		// branch is no longer prepared there; running it again would
		// answer XAER_NOTA (found by the random load under causal order).
		// (A branch that changed nothing on the target was not kept as
		// it was prepared: there is nothing to end either.)
		prepared, err := s.xaPrepared(x)
		if err != nil {
			return false, through, newApplyError(txn, err)
		}
		return !prepared, through, nil
	}
	if shapeOf(txn) != shapeXAPrepare {
		return false, through, nil
	}
	start, _, err := xaStatements(txn)
	if err != nil {
		return false, through, err
	}
	x, ok := parseXID(strings.TrimPrefix(start, "XA START "))
	if !ok {
		return false, through, nil
	}
	prepared, err := s.xaPrepared(x)
	if err != nil {
		return false, through, newApplyError(txn, err)
	}
	return prepared, through, nil
}

// foreignWriteError stops txn, a group applied alone, when the target's
// binlog holds last, past it in its domain, written by something besides
// this stream.
func foreignWriteError(txn *binlog.Transaction, last gtid.MariaDBGTID) error {
	return newApplyError(txn, fmt.Errorf("the target's binlog already holds %s, past this transaction in its domain: something besides this stream writes GTID domain %d on the target, "+
		foreignWritesAdvice+"; applying or skipping could both be wrong, so gapless stops", last, txn.MariaDB.Domain))
}

// besideForeignWrite is AppliedAlone's look at a domain whose last GTID on
// the target, last, is past txn and another server's: a client's write on
// the target (an OPTIMIZE TABLE is binlogged too), or another writer of the
// domain (the target's DDL recovery is afterDDLRecovery's). The target's
// @@gtid_binlog_state keeps the last GTID of each server of a domain, so
// txn's server's entry says what the target holds of the stream; it
// returns that entry (ok false when the server has none). With
// gtid_strict_mode on, a group not there yet would be refused (1950): it
// stops here.
func (s *Session) besideForeignWrite(txn *binlog.Transaction, last gtid.MariaDBGTID) (gtid.MariaDBGTID, bool, error) {
	text, err := s.conn.queryString("SELECT CONCAT(@@global.gtid_strict_mode, ' ', @@global.gtid_binlog_state)")
	if err != nil {
		return last, true, newApplyError(txn, err)
	}
	strict, state, _ := strings.Cut(text, " ")
	var mine gtid.MariaDBGTID
	found := false
	for item := range strings.SplitSeq(state, ",") {
		g, err := gtid.ParseMariaDBGTID(strings.TrimSpace(item))
		if err != nil {
			return last, true, fmt.Errorf("target @@gtid_binlog_state %q: %w", state, err)
		}
		if g.Domain == txn.MariaDB.Domain && g.Server == txn.MariaDB.Server {
			mine, found = g, true
		}
	}
	if strict == "1" && (!found || mine.Seq < txn.MariaDB.Seq) {
		return last, true, foreignWriteError(txn, last)
	}
	return mine, found, nil
}

// awaitEnded waits, ten seconds at most, until the server has ended the
// connection id, one this session closed while it held a prepared XA
// branch. The server lets go of the branch (XA RECOVER lists it as soon as
// it is prepared) only when it ends the connection, just before dropping it
// from the process list; until then an XA COMMIT or XA ROLLBACK from
// another connection answers "unknown XID" (1397).
func (s *Session) awaitEnded(id int64) error {
	query := fmt.Sprintf("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %d", id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		r, err := s.conn.c.Execute(query)
		if err != nil {
			return connError(err)
		}
		live := r.RowNumber() > 0
		r.Close()
		if !live {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection %d, which prepared an XA branch, has not ended after 10 s: the branch stays attached to it", id)
		}
	}
}

// xaPrepared reports whether the target holds x prepared (XA RECOVER).
func (s *Session) xaPrepared(x xid) (bool, error) {
	r, err := s.conn.c.Execute("XA RECOVER")
	if err != nil {
		return false, connError(err)
	}
	defer r.Close()
	for i := 0; i < r.RowNumber(); i++ {
		format, _ := r.GetInt(i, 0)
		gtridLen, _ := r.GetInt(i, 1)
		data, _ := r.GetString(i, 3)
		if format == x.format && int(gtridLen) == len(x.gtrid) && data == x.gtrid+x.bqual {
			return true, nil
		}
	}
	return false, nil
}

// EndBinlogged makes the engine agree with the target's binlog about txn,
// a group gapless takes as applied because that binlog holds it, where
// MariaDB answers before the change's redo is on disk (defersPosition): a
// target killed after the statement and before the position's commit,
// which follows in the same round trip, recovers without the change, its
// binlog with it.
//
// An XA COMMIT or XA ROLLBACK whose branch is still prepared there ends it
// as txn did, outside the binlog: otherwise the branch's locks would hold
// every later group that needs them, each until its lock wait timeout
// (found by TestTargetKilledUnderRandomLoad). A group that writes
// sequences alone (SequencesOnly) is applied again outside the binlog: its
// row events carry each sequence's whole state, so that sets the values it
// set, lost or not.
func (s *Session) EndBinlogged(ctx context.Context, txn *binlog.Transaction) error {
	if !s.opts.KeepGTID {
		return nil
	}
	var script []string
	if x, stmt := xaEnding(txn); stmt != "" {
		prepared, err := s.xaPrepared(x)
		if err != nil {
			return newApplyError(txn, err)
		}
		if !prepared {
			return nil
		}
		if s.opts.Warn != nil {
			s.opts.Warn(fmt.Sprintf("%s is in the target's binlog, but its XA branch was still prepared there (the target crashed between the two?): ended it again outside the binlog: %s", txn.GTID(), stmt))
		}
		script = []string{stmt}
	} else if again, name := s.sequenceCreatedAgain(txn); again != nil {
		if s.opts.Warn != nil {
			s.opts.Warn(fmt.Sprintf("%s is in the target's binlog, but the sequence %s it created has no row there (the target crashed right after it?): created it again outside the binlog", txn.GTID(), name))
		}
		script = again
	} else if script = sequencesAgain(txn); script == nil {
		return nil
	}
	s.format = nil // a format description event may come first: the next group sends its own
	script = append(append([]string{"SET @gapless_sql_log_bin=@@session.sql_log_bin, @@session.sql_log_bin=0"}, script...),
		"SET @@session.sql_log_bin=@gapless_sql_log_bin")
	if err := s.conn.exec(script); err != nil {
		return newApplyError(txn, fmt.Errorf("make the target's engine agree with its binlog, which holds %s: %w", txn.GTID(), err))
	}
	return nil
}

// sequenceCreatedAgain returns the statements that create again the
// sequence txn, a CREATE SEQUENCE, created, and its name, when the target
// holds it without its row (EndBinlogged): MariaDB answers a CREATE
// SEQUENCE before the sequence's row is on disk, and a target killed then
// recovers the sequence without it, every use of it failing with 1032.
// Nil for any other group, or a sequence with its row.
func (s *Session) sequenceCreatedAgain(txn *binlog.Transaction) ([]string, string) {
	if !txn.Has(binlog.FlagDDL) {
		return nil, ""
	}
	for _, ev := range txn.Events {
		e, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		text := queryStatement(e.Query)
		state, err := binlog.QuerySessionState(ev.Header, e)
		if err != nil {
			return nil, ""
		}
		n, ok := statement.CreatedSequence(text, state.SQLMode)
		if !ok {
			continue
		}
		db := string(e.Schema)
		if n.Schema == "" {
			n.Schema = db
		}
		if n.Schema == "" {
			return nil, ""
		}
		name := quoteName(n.Schema) + "." + quoteName(n.Table)
		if r, err := s.conn.c.Execute("SELECT COUNT(*) FROM " + name); err == nil {
			r.Close()
			return nil, "" // the sequence has its row (or another table has its name)
		} else if code, _ := errorCode(err); code != errRecordNotFound {
			return nil, ""
		}
		script := []string{"DROP SEQUENCE IF EXISTS " + name}
		if db != "" {
			script = append(script, "USE "+quoteName(db))
			s.db = "" // the next group sets its own database
		}
		return append(script, sourceStatement(text, true)), n.Schema + "." + n.Table
	}
	return nil, ""
}

// errRecordNotFound is HA_ERR_KEY_NOT_FOUND as the server answers it
// (1032): what a sequence without its row answers every use with.
const errRecordNotFound = 1032

// sequencesAgain returns the statements that apply txn, a group that
// writes sequences alone, again (EndBinlogged), or nil for any other group.
func sequencesAgain(txn *binlog.Transaction) []string {
	if !txn.SequencesOnly || len(txn.Format.Raw) == 0 {
		return nil
	}
	script := []string{binlogStatement([][]byte{txn.Format.Raw})}
	var rows [][]byte
	flush := func() {
		if len(rows) > 0 {
			script = append(script, binlogStatement(rows))
			rows = nil
		}
	}
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent, *replication.RowsEvent:
			rows = append(rows, ev.Raw)
		case *SequenceValue:
			flush()
			script = append(script, e.Statement())
		}
	}
	flush()
	return script
}

// Skip records txn as applied without applying it: only its position is written.
func (s *Session) Skip(ctx context.Context, txn *binlog.Transaction, checkpoint string) error {
	if err := s.run(s.toRest(s.ownTransaction(checkpoint))); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	s.committed(txn)
	return nil
}
