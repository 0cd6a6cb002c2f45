// events.go makes the script of one source group: its row events as BINLOG
// statements (rows.go), its queries under the session state the source
// recorded for them, and the checkpoint row where the group's shape says
// (groups.go). body runs the group up to its commit, tail commits it.
//
// Each special case of a statement plugs in here by a call named after it:
// temporary tables (temporary.go, kept.go), LOAD DATA (loaddata.go), the
// invoker of account statements (invoker.go), events disabled on the
// target (eventstatus.go), groups applied in parts (parts.go), XA (xa.go).
package target

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/statement"
)

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
	case s.rowsApart(txn):
		// The DDL goes in gapless's own domain; the source's GTID waits
		// for the rows (events).
		body = append(body, ownDomainStatement)
	case apart > 0:
		// The first part goes in gapless's own domain, as the source's
		// server; the source's GTID waits for the last (events).
		body = append(body, ownDomainAs(txn.MariaDB.Server))
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
	body, tail = s.inMixed(txn, shape, apart, body, tail)
	return body, tail, nil
}

// events adds the statements of txn's events to body: row events as BINLOG
// statements, queries under their session state. ended says whether the
// group's own commit (XID or COMMIT) is in tail.
func (s *Session) events(txn *binlog.Transaction, body []string, tail *[]string, begun bool, begin func()) ([]string, bool, error) {
	g := s.newEventScript(txn, body, tail, begun, begin)
	for _, ev := range txn.Events {
		if err := g.add(ev); err != nil {
			return nil, false, err
		}
	}
	return g.rows.flush(g.body), g.ended, nil
}

// eventScript is the script of one group's events while events makes it.
type eventScript struct {
	s     *Session
	txn   *binlog.Transaction
	body  []string
	tail  *[]string // the group's own commit goes here
	rows  rowBatcher
	begun bool   // the target transaction the group's BEGIN stands for is open
	begin func() // opens it (script's begin)
	// ended: the group's own commit (XID, COMMIT or ROLLBACK) is in tail.
	ended bool
	// context are the statements setting up the next query: INSERT_ID,
	// RAND seeds, user variables.
	context []string
	// apart: a DDL with rows after it, applied in parts (rowsApart);
	// ddlRan says its DDL is in body, rowsBegun that the rows' own
	// transaction, under the source's GTID, is.
	apart, ddlRan, rowsBegun bool
	// statements counts the queries added so far (Session.lastApart).
	statements   int
	noSavepoints bool // savepointsLeftOut
	// xa: the group was begun by XA START, which its GTID event stands for.
	xa bool
}

func (s *Session) newEventScript(txn *binlog.Transaction, body []string, tail *[]string, begun bool, begin func()) *eventScript {
	rows := s.rowBatcher()
	rows.whole = !txn.Has(binlog.FlagTransactional) && s.opts.KeepGTID && s.opts.WriteBinlog
	flags2, _ := txn.GTIDFlags()
	return &eventScript{
		s: s, txn: txn, body: body, tail: tail, rows: rows, begun: begun, begin: begin,
		apart:        s.rowsApart(txn),
		noSavepoints: savepointsLeftOut(txn),
		xa:           flags2&(gtidPreparedXA|gtidCompletedXA) != 0,
	}
}

// failed names the group in an error met making its script.
func (g *eventScript) failed(err error) error {
	return fmt.Errorf("%s: %w", g.txn, err)
}

// add adds the statements of one event.
func (g *eventScript) add(ev binlog.Event) error {
	data := ev.Data
	switch e := data.(type) {
	case *replication.BeginLoadQueryEvent:
		if err := g.s.addLoadBlock(e.FileID, e.BlockData, true); err != nil {
			return g.failed(err)
		}
		return nil
	case *replication.ExecuteLoadQueryEvent:
		q, err := g.s.loadQuery(ev, g.txn.Format)
		if err != nil {
			return g.failed(err)
		}
		data = q
	}
	switch e := data.(type) {
	case *replication.TableMapEvent:
		if g.apart && g.ddlRan && !g.rowsBegun {
			g.rowsBegun = true
			g.body = append(g.body, gtidStatements(g.txn.MariaDB)...)
			g.body = append(g.body, beginStatement)
		}
		g.body = g.rows.addTableMap(g.body, ev.Raw)
	case *replication.RowsEvent:
		g.body = g.rows.addRows(g.body, ev.Raw, e.Flags&replication.RowsEventStmtEndFlag != 0)
	case *SequenceValue:
		g.body = g.rows.flush(g.body)
		g.body = g.s.utf8Client(g.body, e.Statement())
	case *replication.XIDEvent:
		g.body = g.rows.flush(g.body)
		*g.tail = append(*g.tail, "COMMIT")
		g.ended = true
	case *replication.IntVarEvent:
		g.context = append(g.context, binlog.IntVar{Kind: byte(e.Type), Value: e.Value}.Statement())
	case *replication.QueryEvent:
		return g.query(ev, e)
	case *replication.GenericEvent:
		return g.generic(ev, e)
	case *replication.MariadbAnnotateRowsEvent, *replication.RowsQueryEvent:
		// informational: the statement text behind the row events that follow
	default:
		if ev.Header.EventType == replication.XA_PREPARE_LOG_EVENT {
			return nil
		}
		return unsupportedEvent(ev)
	}
	return nil
}

// generic adds an event the binlog library leaves undecoded: RAND seeds and
// user variables for the next query, and LOAD DATA's blocks.
func (g *eventScript) generic(ev binlog.Event, e *replication.GenericEvent) error {
	switch ev.Header.EventType {
	case replication.RAND_EVENT:
		seeds, err := binlog.DecodeRand(e.Data)
		if err != nil {
			return g.failed(err)
		}
		g.context = append(g.context, seeds.Statement())
	case replication.USER_VAR_EVENT:
		v, err := binlog.DecodeUserVar(e.Data)
		if err != nil {
			return g.failed(err)
		}
		g.context = append(g.context, v.Statement())
	case replication.APPEND_BLOCK_EVENT:
		fileID, block, err := appendBlock(ev, g.txn.Format)
		if err == nil {
			err = g.s.addLoadBlock(fileID, block, false)
		}
		if err != nil {
			return g.failed(err)
		}
	case replication.DELETE_FILE_EVENT:
		// A LOAD DATA that failed on the source after its file was
		// sent: the file is dropped, and nothing runs.
		fileID, err := deletedFile(ev, g.txn.Format)
		if err != nil {
			return g.failed(err)
		}
		delete(g.s.loads, loadFileName(fileID))
	case replication.XA_PREPARE_LOG_EVENT:
		// the XA PREPARE that xaPrepareScript adds
	default:
		return unsupportedEvent(ev)
	}
	return nil
}

// query adds a statement of the source under the session state it ran in.
func (g *eventScript) query(ev binlog.Event, e *replication.QueryEvent) error {
	s, txn := g.s, g.txn
	g.body = g.rows.flush(g.body)
	text := withoutGTIDAssignments(queryStatement(e.Query))
	s.noteTemporary(text)
	if g.control(text) {
		return nil
	}
	state, err := binlog.QuerySessionState(ev.Header, e)
	if err != nil {
		return g.failed(err)
	}
	if err := s.remakesLost(state.PseudoThreadID, string(e.Schema), text, state.SQLMode); err != nil {
		return g.failed(err)
	}
	s.noteHeld(txn.MariaDB.Domain, txn.MariaDB.Server, state.PseudoThreadID, string(e.Schema), text, state.SQLMode)
	// autocommit is left as the session has it: the source clears the
	// bit inside transactions, and setting it would commit ours.
	state.Flags2Mask = formatFlags2(txn.Format) &^ binlog.Flags2NotAutocommit
	g.use(ev, e, text)
	if !state.HasCharset && s.conn != nil && s.conn.singleByteClient {
		// An event without a character set is read in the
		// connection's own (utf8mb4), never in binlogCharset.
		g.body = append(g.body, utf8ClientStatement)
		s.conn.singleByteClient = false
	}
	if state.HasCharset && s.conn != nil {
		s.conn.singleByteClient = false // Statements sets it: binlogClient cleared the session's
	}
	g.body = append(g.body, state.Statements(s.state)...)
	s.state = &state
	g.body = append(g.body, g.context...)
	g.context = g.context[:0]
	// A DDL the source logged with an error runs as it was: its
	// error is expected (DROP VIEW v1, missing: 4092).
	if g.statements++; g.statements == s.lastApart {
		g.body = append(g.body, gtidStatements(txn.MariaDB)...)
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
	case g.begun && g.statements == 1 && !g.xa && statementCount(txn) > 1:
		g.body = append(g.body, transactionalTemporary(text, stmt)...)
	case !g.begun && e.ErrorCode == 0 && s.opts.KeepGTID && s.opts.WriteBinlog:
		g.body = append(g.body, temporaryDropInParts(text, stmt, state.SQLMode)...)
	default:
		g.body = append(g.body, stmt)
	}
	if err := g.accounts(text, roles, e, &state); err != nil {
		return g.failed(err)
	}
	g.ddlRan = txn.Has(binlog.FlagDDL)
	return nil
}

// control handles the statements that begin or end the group's
// transaction, and savepoints left out (savepointsLeftOut): it reports
// whether text was one of them.
func (g *eventScript) control(text string) bool {
	switch {
	case strings.EqualFold(text, "COMMIT"):
		*g.tail = append(*g.tail, "COMMIT")
		g.ended = true
	case strings.EqualFold(text, "ROLLBACK"):
		*g.tail = append(*g.tail, "ROLLBACK")
		g.ended = true
	case strings.EqualFold(text, "BEGIN"):
		if !g.begun {
			g.begin()
			g.begun = true
		}
	case g.noSavepoints && setsSavepoint(text):
	default:
		return false
	}
	return true
}

// use makes the query's database the session's default one, first: USE
// resets collation_database, which the query's state sets.
func (g *eventScript) use(ev binlog.Event, e *replication.QueryEvent, text string) {
	s := g.s
	db := string(e.Schema)
	if db == "" || db == s.db || (ev.Header.Flags&replication.LOG_EVENT_SUPPRESS_USE_F != 0 && !altersCurrentDatabase(text)) {
		return
	}
	// A database name is in UTF-8 (utf8Client).
	g.body = s.utf8Client(g.body, "USE "+quoteName(db))
	s.db = db
	if s.state != nil {
		s.state.HasCollationDatabase = false
	}
}

// accounts adds, after an account statement that succeeded on the source,
// what makes its effect on the target the source's (invoker.go): the
// admin of the roles it made, its grantor, a routine's grant.
func (g *eventScript) accounts(text string, roles []string, e *replication.QueryEvent, state *binlog.SessionState) error {
	s := g.s
	if len(roles) > 0 && e.ErrorCode == 0 {
		admin, err := s.adminOf(roles)
		if err != nil {
			return err
		}
		g.body = append(g.body, admin...)
	}
	g.body = append(g.body, s.grantorOf(text, state)...)
	if e.ErrorCode == 0 {
		g.body = append(g.body, s.routineGrant(text, string(e.Schema), state)...)
	}
	return nil
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
// would swallow the separator of the statement that follows it. A DDL that
// succeeded on the source runs as MariaDB's replica runs it under
// slave_ddl_exec_mode=IDEMPOTENT, its default (idempotentDDL).
func sourceStatement(text string, ddl bool) string {
	text = withoutTrailer(text)
	if strings.Contains(text, "#") || strings.Contains(text, "--") {
		text += "\n"
	}
	if ddl {
		text = idempotentDDL(text)
	}
	return text
}

// idempotentDDL is a DDL that succeeded on the source, written so that the
// target reaches the source's state whether or not it held the objects the
// source held, as MariaDB's replica does in its idempotent DDL mode:
//
//   - a DROP runs with sql_if_exists: the source logs DROP TABLE a, b with
//     error code 0 after dropping the ones that existed;
//   - CREATE TABLE and CREATE SEQUENCE without IF NOT EXISTS become CREATE
//     OR REPLACE: a source that lost a table without logging a DROP (its
//     files removed, then FLUSH TABLES) logs the CREATE of another
//     definition, which the target's copy would refuse with 1050;
//   - CREATE DATABASE becomes CREATE DATABASE IF NOT EXISTS.
//
// A temporary table is left as written: the target's sessions hold the
// source's temporary tables themselves (temporary.go), so one that exists
// already is the source's own. A text with a comment amid the words read
// here (mysqldump's CREATE TABLE /*!32312 IF NOT EXISTS*/) is left as
// written too.
func idempotentDDL(text string) string {
	if startsWithWord(text, "DROP") {
		return "SET STATEMENT sql_if_exists=1 FOR " + text
	}
	tokens := sqlTokens(text)
	if len(tokens) < 3 || !strings.EqualFold(tokens[0].text, "CREATE") {
		return text
	}
	if strings.Contains(text[tokens[0].start:tokens[2].end], "/*") {
		return text
	}
	kind, next := strings.ToUpper(tokens[1].text), tokens[2]
	ifNotExists := len(tokens) > 4 && strings.EqualFold(next.text, "IF") &&
		strings.EqualFold(tokens[3].text, "NOT") && strings.EqualFold(tokens[4].text, "EXISTS")
	switch {
	case ifNotExists:
		return text
	case kind == "TABLE" || kind == "SEQUENCE":
		at := tokens[0].end
		return text[:at] + " OR REPLACE" + text[at:]
	case kind == "DATABASE" || kind == "SCHEMA":
		at := tokens[1].end
		return text[:at] + " IF NOT EXISTS" + text[at:]
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

// formatFlags2 is which flags2 bits the server that wrote the format description sets.
func formatFlags2(format binlog.Event) uint32 {
	if fde, ok := format.Data.(*replication.FormatDescriptionEvent); ok {
		return binlog.Flags2WrittenBy(fde.ServerVersion)
	}
	return binlog.DefaultFlags2Mask
}
