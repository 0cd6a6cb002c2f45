// rowformat.go says in which binlog format the target logs what gapless
// applies: MIXED, or, on a target whose global binlog_format is ROW
// (Options.RowFormat), ROW, so that a reader of the target's binlog that
// takes only row events (a CDC tool) sees every change the source made,
// also those the source logged as statements.
//
// Invariant kept in ROW as in MIXED: one source group is one GTID group in
// the target's binlog. In ROW the target writes the rows of a statement on
// a table that is not transactional as a GTID group of its own, as the
// statement ends (MariaDB's replica keeps them in the transaction with a
// flag of its own thread, which no client session can set). So:
//
//   - a transaction of transactional tables, one statement alone, row
//     events, a DDL: the same shapes as in MIXED, logged as rows;
//   - several statements on tables that are not transactional: applied in
//     parts (parts.go), each part its own group, all but the last in
//     gapless's own domain, all as rows. The target lets a session that
//     holds temporary tables switch domain in ROW (it binlogs none of
//     them), and the parts keep the source's server id, so they find the
//     source's temporary tables (ownDomainAs);
//   - a group that must stay one transaction and writes a table that is
//     not transactional with more than one statement (savepoints, a
//     ROLLBACK, a group run whole: see mixedReason): applied in MIXED, with
//     a warning naming its GTID. Its statements reach the target's binlog
//     as statements, or as rows where MIXED logs rows; should the target
//     still split it, the one-group check stops the run (checkOneGroup).
//
// A session may switch from ROW to MIXED while it holds temporary tables
// (only a switch to STATEMENT is refused, 1559), and the session is back
// in ROW after the group, and after any rollback.
package target

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// The statements that take a session to MIXED for one group and back.
const (
	mixedForGroup = "SET @@session.binlog_format='MIXED'"
	rowsAgain     = "SET @@session.binlog_format='ROW'"
)

// mixedWarnings is how many groups applied in MIXED a session names in a
// warning of its own; past them, one warning in mixedWarnEvery.
const (
	mixedWarnings  = 10
	mixedWarnEvery = 1000
)

// sessionFormat is the binlog format apply sessions set.
func (o Options) sessionFormat() string {
	if o.RowFormat {
		return "ROW"
	}
	return "MIXED"
}

// inMixed wraps body and tail, txn's script, so that the group runs in
// MIXED on a session that logs rows, when mixedReason says it must.
func (s *Session) inMixed(txn *binlog.Transaction, shape groupShape, apart int, body, tail []string) ([]string, []string) {
	why := s.mixedReason(txn, shape, apart)
	if why == "" {
		return body, tail
	}
	s.mixedGroups++
	if s.opts.Warn != nil && (s.mixedGroups <= mixedWarnings || s.mixedGroups%mixedWarnEvery == 0) {
		s.opts.Warn(fmt.Sprintf("%s is applied with binlog_format=MIXED, though the target's is ROW: %s, and in ROW the target would log each such statement's rows as a GTID group of its own, where the source has one group; "+
			"the target's binlog holds this group's statements as the source logged them, or as rows where MIXED logs rows (%d such groups so far on this connection's worker)",
			txn.GTID(), why, s.mixedGroups))
	}
	return append([]string{mixedForGroup}, body...), append(tail, rowsAgain)
}

// mixedReason says why txn cannot be applied in ROW as one GTID group, or
// "" when it can (or the session logs in MIXED anyway): a group applied
// alone, neither a DDL nor a statement standing alone nor an XA phase,
// neither applied in parts (apart) nor one statement in autocommit, whose
// statements and row statements number more than one. Such a group needs
// its one transaction, and in ROW each of its writes to a table that is
// not transactional would leave it.
func (s *Session) mixedReason(txn *binlog.Transaction, shape groupShape, apart int) string {
	if !s.opts.RowFormat || !s.opts.WriteBinlog || txn.Flavor != binlog.FlavorMariaDB || shape != shapeAlone || apart > 0 ||
		txn.Has(binlog.FlagStandalone) || completesXA(txn) || (txn.Has(binlog.FlagDDL) && !routineTemporaryDDL(txn)) ||
		s.autocommitStatement(txn, shape) {
		return ""
	}
	statements, rowStatements := 0, 0
	rollback := false
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.RowsEvent:
			if e.Flags&replication.RowsEventStmtEndFlag != 0 {
				rowStatements++
			}
		case *replication.ExecuteLoadQueryEvent:
			statements++
		case *replication.QueryEvent:
			text := strings.TrimSpace(string(e.Query))
			switch binlog.ControlStatement(e.Query) {
			case "BEGIN", "COMMIT":
			case "ROLLBACK":
				rollback = true
			default:
				if setsSavepoint(text) && savepointsLeftOut(txn) {
					continue
				}
				statements++
			}
		}
	}
	switch {
	case statements == 0 || statements+rowStatements < 2:
		return ""
	case rollback:
		return "it ends in ROLLBACK after writing a table that is not transactional"
	case rowStatements > 0:
		return fmt.Sprintf("it holds %d statements and %d row statements, not all on transactional tables, in one transaction", statements, rowStatements)
	}
	return fmt.Sprintf("it holds %d statements, not all on transactional tables, that must run in one transaction", statements)
}
