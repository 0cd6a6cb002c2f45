// parts.go applies the groups that a target which binlogs the source's
// GTIDs would otherwise write as several GTID groups: a DDL with rows after
// it (CREATE TABLE ... SELECT), several statements or row statements on
// tables that are not transactional (a CALL, INSERT DELAYED).
//
// Invariant: the source's domain gets exactly one group, under the source's
// GTID, and only once all of the group is applied: every part but the last
// goes in gapless's own GTID domain (ownDomainStatement; parts of the
// source's statements as the source's server: ownDomainAs).
package target

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/statement"
)

// errDomainPinned: the session could not switch to gapless's own domain,
// as it holds temporary tables; nothing after the switch ran.
var errDomainPinned = errors.New("the session's temporary tables keep it in its GTID domain")

// ownDomainStatement puts what the session binlogs next in gapless's own
// GTID domain, under the target's server id and a sequence number the
// server gives: one set for a group of the source's that logged nothing
// (statements on temporary tables only) would still be set, and gapless's
// own domain may be further on (1950, found by the random load at
// GAPLESS_RANDOM_SCALE=10).
var ownDomainStatement = fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=@@global.server_id, @@session.gtid_seq_no=0", ckpt.OwnDomain)

// ownDomainAs is ownDomainStatement for the parts of a group of the
// source's statements (statementsApart): they keep the source's server id,
// as the group's last part does. The server files a session's temporary
// tables under its server_id and pseudo_thread_id, so under the target's
// server id a part would not find the temporary tables the source's
// session made before the group (1146), and one it made would be lost to
// the statements after it. (A target in MIXED refuses the switch while the
// session holds temporary tables it binlogged, and the group runs whole;
// one in ROW binlogs none and lets it through: rowformat.go.)
func ownDomainAs(server uint32) string {
	return fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=0", ckpt.OwnDomain, server)
}

// ownDomainSwitch is how both statements that switch to gapless's own
// domain begin.
var ownDomainSwitch = fmt.Sprintf("SET @@session.gtid_domain_id=%d, ", ckpt.OwnDomain)

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
// A session holding temporary tables it binlogged (in MIXED) may not leave
// the domain it made them in (1953): there the group runs again whole
// (s.whole), in the source's transaction, and checkOneGroup stops the run
// should the target still split it (the group may touch only
// transactional tables; the flag says only that some table is not).
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
		body = s.utf8Client(body, st.text())
	}
	body = append(body, gtidStatements(txn.MariaDB)...)
	return s.utf8Client(body, statements[len(statements)-1].text())
}
