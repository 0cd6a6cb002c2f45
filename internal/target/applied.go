// applied.go tells whether the target already holds a group applied alone
// (a DDL, a write to a table that is not transactional, an XA PREPARE),
// which is on the target before its position: after a crash or a lost
// round trip between the two, it must not run a second time. It also makes
// the target's engine agree with its binlog about such a group
// (EndBinlogged).
package target

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/statement"
)

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
	} else if script = s.sequencesAgain(txn); script == nil {
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
		if s.utf8ClientNow(name) != nil {
			return nil, ""
		}
		if r, err := s.conn.c.Execute("SELECT COUNT(*) FROM " + name); err == nil {
			r.Close()
			return nil, "" // the sequence has its row (or another table has its name)
		} else if code, _ := errorCode(err); code != errRecordNotFound {
			return nil, ""
		}
		script := s.utf8Client(nil, "DROP SEQUENCE IF EXISTS "+name)
		if db != "" {
			script = s.utf8Client(script, "USE "+quoteName(db))
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
func (s *Session) sequencesAgain(txn *binlog.Transaction) []string {
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
			script = s.utf8Client(script, e.Statement())
		}
	}
	flush()
	return script
}
