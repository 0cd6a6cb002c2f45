// groups.go says how each shape of source event group is written on the
// target, and above all where its checkpoint row goes.
//
// The rule that keeps the target's binlog equal to the source's history: one
// source event group is exactly one GTID group in the target's binlog, under
// the source's GTID, and gapless's own writes never take a GTID of their own.
// The checkpoint row can share the group only when the group is one
// transaction the source flagged transactional, ending in an XID (or a
// COMMIT, when it changed no InnoDB row): then the row commits with the
// data, inside that group. In every other shape the target binlogs the data as it
// executes, not at COMMIT (a DDL, a write to MyISAM, Aria, MEMORY or a
// SEQUENCE, CREATE USER and GRANT, an XA PREPARE), so a checkpoint inside
// would end up in a second GTID group, or in none; there the checkpoint
// follows in a target transaction of its own, outside the binlog, and a
// crash between the two is caught by AppliedAlone before the group runs
// again.
package target

import (
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/statement"
)

// Bits of a MariaDB GTID event that go-mysql leaves undecoded.
const (
	gtidPreparedXA    = 0x40 // flags2: the group is an XA transaction's first phase (XA PREPARE)
	gtidCompletedXA   = 0x80 // flags2: the group is XA COMMIT or XA ROLLBACK
	gtidTransactional = 0x04 // flags2: every table the group wrote is transactional on the source
	extraMultiEngine  = 0x01 // flags_extra: an engine count follows
	extraStartAlter   = 0x02 // flags_extra: START ALTER of binlog_alter_two_phase
	extraCommitAlter  = 0x04 // flags_extra: COMMIT ALTER; the ALTER runs now
	extraRollAlter    = 0x08 // flags_extra: ROLLBACK ALTER; the ALTER never happened
)

// groupShape is how a source event group maps onto target transactions.
type groupShape uint8

const (
	// shapeTransaction: one transaction of transactional tables (the source
	// flagged it so) ending in an XID or COMMIT; its checkpoint row goes
	// inside it.
	shapeTransaction groupShape = iota
	// shapeAlone: the target binlogs it as it executes (DDL, non-transactional
	// writes, XA COMMIT / ROLLBACK, a group that ends in ROLLBACK); its
	// checkpoint follows outside the binlog.
	shapeAlone
	// shapeXAPrepare: XA START ... XA END, XA PREPARE. The prepared
	// transaction outlives the connection, which must then be given up.
	shapeXAPrepare
	// shapePositionOnly: nothing runs on the target, only the position
	// moves: START ALTER (the ALTER runs at its COMMIT ALTER, as MariaDB's
	// own serial replica does) and ROLLBACK ALTER.
	shapePositionOnly
)

// shapeOf says how txn is written on the target.
func shapeOf(txn *binlog.Transaction) groupShape {
	if txn.Flavor != binlog.FlavorMariaDB {
		return shapeAlone
	}
	flags2, extra := txn.GTIDFlags()
	switch {
	case extra&(extraStartAlter|extraRollAlter) != 0:
		return shapePositionOnly
	case flags2&gtidPreparedXA != 0 && endsInXAPrepare(txn):
		return shapeXAPrepare
	case txn.Has(binlog.FlagStandalone) || txn.Has(binlog.FlagDDL) || !txn.Has(binlog.FlagTransactional) || flags2&gtidCompletedXA != 0:
		// A DDL commits what came before it: CREATE TABLE ... SELECT is
		// one group of a DDL and rows, which a position written first would
		// leave in a GTID group of its own.
		return shapeAlone
	}
	if n := len(txn.Events); n > 0 {
		switch e := txn.Events[n-1].Data.(type) {
		case *replication.XIDEvent:
			return shapeTransaction
		case *replication.QueryEvent:
			// A transactional group ends in a COMMIT query when it changed
			// no InnoDB row (a DELETE that matched nothing): its position
			// still goes inside, so the target binlogs its GTID.
			if strings.EqualFold(strings.TrimSpace(string(e.Query)), "COMMIT") {
				return shapeTransaction
			}
		}
	}
	return shapeAlone
}

// routineTemporaryDDL reports whether txn is a group of several DML or
// SELECT statements, logged as statements and not transactional, that the
// source flagged DDL: a stored function or trigger its statements call made
// or dropped a temporary table (main.sp in STATEMENT format: SELECT f() FROM
// t, f dropping and creating a temporary MyISAM table, is logged as one
// SELECT f() for each of t's rows, in one group). The target runs each of
// them as a statement of its own, and with nothing transactional before it
// in the transaction it binlogs each one's writes to the temporary table as
// a GTID group of its own. So such a group's transaction opens with
// ckpt.OpenTransactionCache: after a transactional statement, the target
// keeps statements on non-transactional tables in the transaction's cache,
// and the group is one GTID group there. (Its position stays guarded, as a
// statement logged as rows would still go apart.)
func routineTemporaryDDL(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || !txn.Has(binlog.FlagDDL) || txn.Has(binlog.FlagStandalone) ||
		txn.Has(binlog.FlagTransactional) || completesXA(txn) || len(txn.Events) == 0 {
		return false
	}
	n := 0
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.QueryEvent:
			text := queryStatement(e.Query)
			switch {
			case binlog.ControlStatement(e.Query) != "":
			case e.ErrorCode == 0 && (statement.IsDML(text) || startsWithWord(text, "SELECT") || startsWithWord(text, "DO")):
				n++
			default:
				return false
			}
		case *replication.IntVarEvent:
		case *replication.GenericEvent:
			if t := ev.Header.EventType; t != replication.RAND_EVENT && t != replication.USER_VAR_EVENT {
				return false
			}
		default:
			return false
		}
	}
	last, ok := txn.Events[len(txn.Events)-1].Data.(*replication.QueryEvent)
	return n > 1 && ok && strings.EqualFold(queryStatement(last.Query), "COMMIT")
}

// onlyDroppedLoads reports whether txn holds nothing to run: the files of
// LOAD DATA statements that failed on the source, each dropped again
// (DELETE_FILE), between BEGIN and COMMIT. The target would binlog no
// group for it; ckpt.OpenTransactionCache gives it one, under the source's
// GTID, as every other group of the source has on the target.
func onlyDroppedLoads(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagStandalone) || len(txn.Events) == 0 {
		return false
	}
	dropped := false
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.BeginLoadQueryEvent:
		case *replication.QueryEvent:
			if binlog.ControlStatement(e.Query) == "" {
				return false
			}
		case *replication.GenericEvent:
			switch ev.Header.EventType {
			case replication.APPEND_BLOCK_EVENT:
			case replication.DELETE_FILE_EVENT:
				dropped = true
			default:
				return false
			}
		default:
			return false
		}
	}
	last, ok := txn.Events[len(txn.Events)-1].Data.(*replication.QueryEvent)
	return dropped && ok && strings.EqualFold(queryStatement(last.Query), "COMMIT")
}

// savepointsLeftOut reports whether txn's SAVEPOINT and RELEASE SAVEPOINT
// statements are left out on the target: the source flagged the group
// transactional, but a table it writes is not transactional on the target
// (Engines.Mark). There a savepoint protects nothing, and it would make the
// target binlog the group's non-transactional writes and the rest (the
// savepoints, the COMMIT) as two GTID groups. A group with a ROLLBACK TO
// SAVEPOINT keeps them all: the source undid changes there that the
// target may not be able to, and it runs as it was logged.
func savepointsLeftOut(txn *binlog.Transaction) bool {
	if txn.Flavor != binlog.FlavorMariaDB || txn.Has(binlog.FlagTransactional) {
		return false
	}
	if flags2, _ := txn.GTIDFlags(); flags2&gtidTransactional == 0 {
		return false
	}
	for _, ev := range txn.Events {
		if q, ok := ev.Data.(*replication.QueryEvent); ok && startsWithWord(strings.TrimSpace(string(q.Query)), "ROLLBACK") {
			return false
		}
	}
	return true
}

// setsSavepoint reports whether text is a SAVEPOINT or RELEASE SAVEPOINT.
func setsSavepoint(text string) bool {
	return startsWithWord(text, "SAVEPOINT") || startsWithWord(text, "RELEASE")
}

// AppliesAlone reports whether txn is written to the target before its
// checkpoint row, so that after a crash it may be on the target though its
// position is not: AppliedAlone must be asked before it runs again.
func AppliesAlone(txn *binlog.Transaction) bool {
	s := shapeOf(txn)
	return s == shapeAlone || s == shapeXAPrepare
}

// Marked reports whether txn's round trip first commits that it begins
// (Options.BegunMark): a group whose writes stay (PartsStay), or a DDL,
// whose recovery on the target after a crash amid it only the mark tells
// from a client's write (Session.AppliedAlone). Not the XA COMMIT or XA
// ROLLBACK of a branch prepared on the session's connection: nothing else
// may run there before it, and it is no DDL the target recovers.
func Marked(txn *binlog.Transaction) bool {
	return PartsStay(txn) || txn.Has(binlog.FlagDDL) && endsXA(txn) == (xid{})
}

// PartsStay reports whether txn, should it fail amid its statements, may
// leave on the target what the statements before the failing one wrote:
// a group of several statements (a run of row events is one) that the
// source did not flag transactional, or whose tables are not transactional
// on the target (Engines). Rolling it back does not undo those writes, so
// once it has begun it does not run again (nor does MariaDB's replica
// retry a transaction that changed a table that is not transactional).
// So is a CREATE TABLE ... SELECT logged as rows: the table is made, and
// committed, before its rows are written.
func PartsStay(txn *binlog.Transaction) bool {
	if ddlWithRows(txn) {
		return true
	}
	if txn.Has(binlog.FlagTransactional) || txn.Has(binlog.FlagDDL) || txn.Has(binlog.FlagStandalone) {
		return false
	}
	n := 0
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.RowsEvent:
			if e.Flags&replication.RowsEventStmtEndFlag != 0 {
				n++
			}
		case *replication.ExecuteLoadQueryEvent:
			n++
		case *replication.QueryEvent:
			text := strings.TrimSpace(string(e.Query))
			if binlog.ControlStatement(e.Query) == "" && !setsSavepoint(text) && !startsWithWord(text, "ROLLBACK") && !startsWithWord(text, "XA") {
				n++
			}
		}
	}
	return n > 1
}

// FollowsAlone reports whether txn, a group applied alone, may run on the
// worker that applied the group before it, right after it, without the
// coordinator in between (a run of them is one job): a group the source
// did not flag transactional (a write to MyISAM or Aria), which every
// policy but domain runs as a barrier anyway. Not a DDL (later groups'
// engines are known only once it has run, and it may last long), a
// statement standing alone (CREATE USER, GRANT), nor an XA phase (XA
// PREPARE gives up the connection).
func FollowsAlone(txn *binlog.Transaction) bool {
	return txn.Flavor == binlog.FlavorMariaDB && !txn.Has(binlog.FlagTransactional) && !txn.Has(binlog.FlagDDL) &&
		!txn.Has(binlog.FlagStandalone) && shapeOf(txn) == shapeAlone && !completesXA(txn)
}

// Joiner returns what a transaction must be to join the job txn begins:
// Batchable after a batchable one (one target transaction), FollowsAlone
// after a group that does (a run applied one after another); nil when
// txn's job holds it alone.
func Joiner(txn *binlog.Transaction) func(*binlog.Transaction) bool {
	switch {
	case Batchable(txn):
		return Batchable
	case FollowsAlone(txn):
		return FollowsAlone
	}
	return nil
}

// NeedsStatementSession reports whether txn runs source statements (not
// only row events), which must all run on one target session, the
// statement session: a temporary table lives in the session that created
// it, and the source logs what a later statement does with it as a
// statement of its own, in another event group. (MariaDB's own replica
// keeps every source session's temporary tables in its one SQL thread.)
//
// A group the decoder could read (binlog.FlagKnownStatements: plain DML on
// tables it names, none of them temporary) and that the target confirmed
// (Engines.Mark) needs no particular session.
func NeedsStatementSession(txn *binlog.Transaction) bool {
	if txn.Has(binlog.FlagKnownStatements) {
		return false
	}
	if shapeOf(txn) == shapeXAPrepare {
		// An XA transaction of statements that use no temporary table
		// runs on any session: prepared on the statement session, its
		// branch would keep the connection that holds the temporary
		// tables (temporary.go), which could then not turn logging off
		// before it ends.
		return txn.MayUseTemporary
	}
	if ddlWithRows(txn) {
		// CREATE TABLE ... SELECT logged as rows: its statement names no
		// temporary table (the SELECT is gone), and it switches GTID
		// domains, which a session holding temporary tables may not.
		return false
	}
	return runsStatements(txn, false)
}

// runsStatements reports whether txn runs a statement of the source's
// (BEGIN, COMMIT and ROLLBACK aside, and XA statements with xaAside) or
// LOAD DATA, which may load into a temporary table.
func runsStatements(txn *binlog.Transaction, xaAside bool) bool {
	if !txn.MayHoldQueries() {
		return false
	}
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.ExecuteLoadQueryEvent:
			return true
		case *replication.QueryEvent:
			switch binlog.ControlStatement(e.Query) {
			case "BEGIN", "COMMIT", "ROLLBACK":
			default:
				if !xaAside || !startsWithWord(strings.TrimSpace(string(e.Query)), "XA") {
					return true
				}
			}
		}
	}
	return false
}

// HasStatements reports whether txn runs source statements other than
// BEGIN, COMMIT and ROLLBACK.
func HasStatements(txn *binlog.Transaction) bool {
	if !txn.MayHoldQueries() {
		return false
	}
	for _, ev := range txn.Events {
		if q, ok := ev.Data.(*replication.QueryEvent); ok {
			switch binlog.ControlStatement(q.Query) {
			case "BEGIN", "COMMIT", "ROLLBACK":
			default:
				return true
			}
		}
	}
	return false
}

// ddlWithRows reports whether txn is a DDL group with row events after its
// statement (CREATE TABLE ... SELECT logged as rows).
//
// Only a CREATE TABLE that is not temporary counts: a group the source
// flags DDL for a temporary table made inside it (an XA transaction that
// creates one, then writes rows) is no such statement, and must run where
// its temporary tables live.
func ddlWithRows(txn *binlog.Transaction) bool {
	if !txn.Has(binlog.FlagDDL) {
		return false
	}
	seen := false
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.QueryEvent:
			if text := strings.TrimSpace(string(e.Query)); !strings.EqualFold(text, "BEGIN") && !strings.EqualFold(text, "COMMIT") {
				if !seen && (!startsWithWord(text, "CREATE") || createsTemporary.MatchString(statement.PastComments(text))) {
					return false
				}
				seen = true
			}
		case *replication.TableMapEvent:
			if seen {
				return true
			}
		}
	}
	return false
}
