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
			stmt := expecting(e.ErrorCode, sourceStatement(text, txn.Has(binlog.FlagDDL) && e.ErrorCode == 0))
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

// formatFlags2 is which flags2 bits the server that wrote the format description sets.
func formatFlags2(format binlog.Event) uint32 {
	if fde, ok := format.Data.(*replication.FormatDescriptionEvent); ok {
		return binlog.Flags2WrittenBy(fde.ServerVersion)
	}
	return binlog.DefaultFlags2Mask
}
