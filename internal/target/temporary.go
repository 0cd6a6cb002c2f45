// This file keeps the temporary tables of the source's sessions, which live
// in the statement session (see NeedsStatementSession), from writing the
// target's binlog when that session ends. A MariaDB session that holds
// temporary tables logs "DROP TEMPORARY TABLE IF EXISTS ..." when it ends,
// as a GTID group of its own domain and server id: of the source's domain,
// that group takes the sequence number of the source's next transaction,
// which the target then refuses (gtid_strict_mode) or, were the server id
// the source's too, gapless would take for applied. So:
//
//   - a session that ends on gapless's own terms (Close, reopen) turns
//     sql_log_bin off first: the drop is not logged;
//   - between groups the session rests outside the binlog, so a drop at
//     the end of a connection lost or killed there (gapless crashed) is not
//     logged, and under the target's own server id, so a drop the server
//     logs after a connection ends amid a group never looks like the
//     source's transaction (the next run stops on it instead of skipping);
//     every round trip on it turns the binlog on again first (Session.run);
//   - an XA transaction prepared on it keeps the connection (parked) until
//     its XA COMMIT or XA ROLLBACK, which runs there when it is the
//     session's next group: a prepared branch holds its connection, and
//     giving the connection up would take the temporary tables with it.
package target

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// createsTemporary matches a statement that creates a temporary table.
var createsTemporary = regexp.MustCompile(`(?i)^\s*CREATE\s+(OR\s+REPLACE\s+)?TEMPORARY\s`)

// createsTemporaryTable matches a CREATE TEMPORARY TABLE, and namesEngine
// a statement that may name its table's engine.
var (
	createsTemporaryTable = regexp.MustCompile(`(?i)^\s*CREATE\s+(OR\s+REPLACE\s+)?TEMPORARY\s+TABLE\s`)
	namesEngine           = regexp.MustCompile(`(?i)\bENGINE\b`)
)

// transactionalTemporary returns the statements that run text, the first
// of several statements of a group the source logged between BEGIN and
// COMMIT, so that a temporary table it creates is transactional on the
// target too. The source's engine for a temporary table that names none is
// its session's default, which the binlog does not carry. A client session
// logs such a CREATE, first in its transaction, with the statements after
// it only when the table is transactional; one of MyISAM or Aria it logs at
// once, as a BEGIN ... COMMIT group of its own, the CREATE alone. (Later in
// a transaction that wrote a transactional table, a MyISAM one joins the
// group too, and an XA transaction's CREATE is logged alone: there the
// target's default decides.) On a target whose default engine is not
// transactional the table would be MyISAM or Aria, and the target's binlog
// would then write the CREATE as a group of its own and the rest of the
// source's group under the next GTID. So the table is made InnoDB, for
// this statement only.
func transactionalTemporary(text, stmt string) []string {
	if !createsTemporaryTable.MatchString(text) || namesEngine.MatchString(text) {
		return []string{stmt}
	}
	return []string{
		"SET @@session.default_tmp_storage_engine=InnoDB",
		stmt,
		"SET @@session.default_tmp_storage_engine=DEFAULT",
	}
}

// restStatement puts the session under the target's own server id between
// groups (a session holding temporary tables may not change its domain),
// and restOutsideBinlog outside the binlog too, where no transaction is
// open; binlogAgain ends that rest (Session.run).
const (
	restStatement     = "SET @@session.server_id=@@global.server_id"
	restOutsideBinlog = restStatement + ", @@session.sql_log_bin=0"
	binlogAgain       = "SET @@session.sql_log_bin=1"
)

// toRest ends script, which leaves no transaction open, with the rest of
// a session that holds temporary tables.
func (s *Session) toRest(script []string) []string {
	if s.holdsTemporary() && s.opts.KeepGTID {
		return append(script, restOutsideBinlog)
	}
	return script
}

// parkedXA is the connection of an XA branch prepared on a session that
// holds temporary tables, with what the session knew of it.
type parkedXA struct {
	conn   *wire
	xid    xid
	format []byte
	state  *binlog.SessionState
	db     string
}

// holdsTemporary reports whether the session may hold temporary tables
// whose drop the target would log when the session ends.
func (s *Session) holdsTemporary() bool {
	return s.temporary && s.opts.WriteBinlog
}

// noteTemporary marks the session once it runs a statement that creates a
// temporary table.
func (s *Session) noteTemporary(text string) {
	if !s.temporary && len(text) > 6 && strings.EqualFold(text[:6], "CREATE") && createsTemporary.MatchString(text) {
		s.temporary = true
	}
}

// endConn closes a connection of the session; one that may hold temporary
// tables stops logging first, so their drop stays out of the binlog.
func (s *Session) endConn(c *wire) {
	if s.holdsTemporary() {
		_ = c.exec([]string{"ROLLBACK", "SET @@session.sql_log_bin=0"})
	}
	c.close()
}

// park keeps the connection that has just prepared txn's XA branch, and
// gives the session a new one for what comes next.
func (s *Session) park(txn *binlog.Transaction) error {
	start, _, err := xaStatements(txn)
	if err != nil {
		return err
	}
	x, ok := parseXID(strings.TrimPrefix(start, "XA START "))
	if !ok {
		return fmt.Errorf("%s: cannot read the XID of %q", txn, start)
	}
	conn, err := dial(context.Background(), s.opts.Server)
	if err != nil {
		return err
	}
	s.dropSlot(s.conn)
	s.parked = &parkedXA{conn: s.conn, xid: x, format: s.format, state: s.state, db: s.db}
	s.conn = conn
	s.Forget()
	return s.prepare()
}

// unpark settles a parked branch before the session runs txns: when txns
// is the XA COMMIT or XA ROLLBACK of that branch, and the target's binlog
// will give it the source's GTID, the session goes back to the parked
// connection (resumed); otherwise the parked connection is let go, and the
// server keeps the prepared branch for whoever ends it.
func (s *Session) unpark(txns []*binlog.Transaction) (resumed bool, err error) {
	p := s.parked
	if p == nil {
		return false, nil
	}
	s.parked = nil
	if len(txns) == 1 && endsXA(txns[0]) == p.xid {
		fits, err := s.seqFits(p.conn, txns[0])
		if err != nil {
			p.conn.close()
			return false, err
		}
		if fits {
			s.dropSlot(s.conn)
			s.endConn(s.conn)
			s.conn, s.format, s.state, s.db = p.conn, p.format, p.state, p.db
			return true, s.takeSlot(s.conn)
		}
	}
	// The branch's connection cannot turn logging off; it rests under the
	// target's server id, so a drop it logs is never taken for the source's.
	id := p.conn.connectionID()
	p.conn.close()
	return false, s.awaitEnded(id)
}

// seqFits reports whether the target's binlog would give txn, logged
// without a GTID of its own set (a prepared branch's session may not set
// one), the source's sequence number: the next in its domain.
func (s *Session) seqFits(c *wire, txn *binlog.Transaction) (bool, error) {
	if !s.opts.WriteBinlog || !s.opts.KeepGTID {
		return true, nil
	}
	text, err := c.queryString("SELECT @@global.gtid_binlog_pos")
	if err != nil {
		return false, err
	}
	pos, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return false, fmt.Errorf("target @@gtid_binlog_pos: %w", err)
	}
	last, ok := pos.Get(txn.MariaDB.Domain)
	return ok && last.Seq+1 == txn.MariaDB.Seq, nil
}

// endsXA returns the XID that txn, an XA COMMIT or XA ROLLBACK group, ends.
func endsXA(txn *binlog.Transaction) xid {
	if !completesXA(txn) {
		return xid{}
	}
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		text := strings.TrimSpace(string(q.Query))
		for _, verb := range []string{"XA COMMIT ", "XA ROLLBACK "} {
			if len(text) > len(verb) && strings.EqualFold(text[:len(verb)], verb) {
				if x, ok := parseXID(text[len(verb):]); ok {
					return x
				}
			}
		}
	}
	return xid{}
}

// resumedScript adapts the script of a group that ends the parked branch:
// a prepared branch's session may not set a GTID, so the group takes the
// next sequence number of the domain (seqFits) under the source's server id.
func resumedScript(script []string, g gtid.MariaDBGTID) []string {
	set := gtidStatements(g)
	out := make([]string, 0, len(script))
	for _, stmt := range script {
		switch stmt {
		case set[0]:
			out = append(out, fmt.Sprintf("SET @@session.server_id=%d", g.Server))
		case set[1]:
		default:
			out = append(out, stmt)
		}
	}
	return out
}

// statementCount is the number of statements of txn, BEGIN, COMMIT and
// ROLLBACK aside.
func statementCount(txn *binlog.Transaction) int {
	n := 0
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.ExecuteLoadQueryEvent:
			n++
		case *replication.QueryEvent:
			switch binlog.ControlStatement(e.Query) {
			case "BEGIN", "COMMIT", "ROLLBACK":
			default:
				n++
			}
		}
	}
	return n
}
