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
//   - a session whose temporary tables the target would binlog may not
//     change its GTID domain (the target refuses, 1953), and a source
//     session cannot either: so the connection holding them is set aside
//     (pinned) while the session applies groups of another domain, and
//     taken again for the next group of its own (toDomain);
//   - an XA transaction prepared on it keeps the connection (parked) until
//     its XA COMMIT or XA ROLLBACK, which runs there when it is the
//     session's next group: a prepared branch holds its connection, and
//     giving the connection up would take the temporary tables with it.
package target

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/statement"
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
	if !createsTemporaryTable.MatchString(statement.PastComments(text)) || namesEngine.MatchString(text) {
		return []string{stmt}
	}
	return []string{
		"SET @@session.default_tmp_storage_engine=InnoDB",
		stmt,
		"SET @@session.default_tmp_storage_engine=DEFAULT",
	}
}

// temporaryDropInParts returns the statements that run text, a group of
// its own, when it drops several temporary tables: the DROP TEMPORARY
// TABLE IF EXISTS a source session logs as it ends holding them. With
// tables of both kinds among them (InnoDB; MyISAM or Aria) the target
// would binlog it as two GTID groups, one per kind, the second under the
// source's next sequence number; and the session holding them may not
// switch to gapless's own domain for a first part (1953). So every table
// but the last is dropped outside the binlog, and the statement then logs
// the drop of the last one alone, under the source's GTID (or nothing,
// should the target not hold it). A replica of the target keeps the
// tables dropped outside the binlog until its applier ends.
func temporaryDropInParts(text, stmt string, sqlMode uint64) []string {
	names, ok := statement.DroppedTemporary(text, sqlMode)
	if !ok || len(names) < 2 {
		return []string{stmt}
	}
	first := make([]string, len(names)-1)
	for i, n := range names[:len(names)-1] {
		first[i] = quoteName(n.Table)
		if n.Schema != "" {
			first[i] = quoteName(n.Schema) + "." + first[i]
		}
	}
	return []string{
		"SET @@session.sql_log_bin=0",
		"DROP TEMPORARY TABLE IF EXISTS " + strings.Join(first, ", "),
		binlogAgain,
		stmt,
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
	domain uint32 // the domain its temporary tables pin it to
}

// pinnedConn is a connection of the session set aside, with what the
// session knew of it: one holding temporary tables of one GTID domain
// while the session applies another, or one holding none (cleanConn)
// while the session applies statements where temporary tables live. One
// holding temporary tables rests outside the binlog (toRest), so its end,
// however it comes, logs no drop.
type pinnedConn struct {
	conn    *wire
	format  []byte
	state   *binlog.SessionState
	db      string
	resting bool
}

// cleanConn is the key of Session.pinned for a connection that holds no
// temporary tables: gapless's own domain, where none is ever made.
const cleanConn = ckpt.OwnDomain

// connKey is the key the session's connection is set aside under.
func (s *Session) connKey() uint32 {
	if s.temporary {
		return s.domain
	}
	return cleanConn
}

// toDomain puts the session on a connection that may apply txns, of one
// GTID domain, under the source's GTID. A connection holding temporary
// tables may not change its domain, and a source session holding them
// cannot either: statements of a domain run where its temporary tables
// live (the connection set aside for it, or else the one the session is
// on unless that one holds another domain's), and groups that use none
// (usesTemporary: row events alone, XA transactions that name none) on
// one holding none, which may also go to gapless's own domain for a group
// applied in parts.
func (s *Session) toDomain(txns []*binlog.Transaction) error {
	d := txns[0].MariaDB.Domain
	if !s.opts.KeepGTID {
		return nil
	}
	want := d
	if !slices.ContainsFunc(txns, usesTemporary) {
		want = cleanConn
	}
	cur := s.connKey()
	switch {
	case want == cur,
		want != cleanConn && s.pinned[want] == nil && !s.temporary:
		s.domain = d
		return nil
	case want != cleanConn && s.pinned[want] == nil:
		want = cleanConn // a domain's first temporary tables go where none are
	}
	p := s.pinned[want]
	fresh := p == nil
	if fresh {
		conn, err := s.dial()
		if err != nil {
			return err
		}
		p = &pinnedConn{conn: conn}
	}
	delete(s.pinned, want)
	s.setAside(cur)
	s.conn, s.format, s.state, s.db, s.resting = p.conn, p.format, p.state, p.db, p.resting
	s.temporary, s.domain = want != cleanConn, d
	if fresh {
		return s.prepare()
	}
	if err := s.takeSlot(s.conn); err != nil {
		return err
	}
	s.connected()
	return nil
}

// sourceStarted ends the temporary tables of the source's sessions when txn
// comes after a start of the source the session has not met yet
// (binlog.Transaction.SourceStarts): the start ended those sessions, and
// their temporary tables, without a DROP TEMPORARY TABLE in the binlog, so
// a session of the same id after it that made one of the same name would
// otherwise find the old one, rows and all. MariaDB's replica drops its
// own then too. Every connection of the session that may hold some ends,
// outside the binlog. (One parked with a prepared XA branch keeps its
// tables until the branch ends: it cannot stop logging.)
func (s *Session) sourceStarted(txn *binlog.Transaction) error {
	if txn.SourceStarts == s.starts {
		return nil
	}
	s.starts = txn.SourceStarts
	s.held, s.lost = nil, nil
	for key, p := range s.pinned {
		if key != cleanConn {
			s.endPinned(p)
			delete(s.pinned, key)
		}
	}
	if !s.temporary {
		return nil
	}
	err := s.reopen()
	s.temporary = false
	return err
}

// usesTemporary reports whether txn may use a temporary table of a source
// session: whether it runs a statement of the source's or loads a file.
// Of an XA transaction, which its connection keeps once prepared (park),
// the statements must name one (binlog.Transaction.MayUseTemporary).
func usesTemporary(txn *binlog.Transaction) bool {
	if shapeOf(txn) == shapeXAPrepare {
		return txn.MayUseTemporary
	}
	return runsStatements(txn, true)
}

// setAside keeps the session's connection for its next group that needs
// it, under key.
func (s *Session) setAside(key uint32) {
	s.dropSlot(s.conn)
	if s.pinned == nil {
		s.pinned = map[uint32]*pinnedConn{}
	}
	if old := s.pinned[key]; old != nil {
		s.endPinned(old) // (one made after an XA branch was parked: see unpark)
	}
	s.pinned[key] = &pinnedConn{conn: s.conn, format: s.format, state: s.state, db: s.db, resting: s.resting}
}

// endPinned closes a connection set aside, out of the binlog first.
func (s *Session) endPinned(p *pinnedConn) {
	if s.opts.WriteBinlog {
		_ = p.conn.exec([]string{"ROLLBACK", "SET @@session.sql_log_bin=0"})
	}
	p.conn.close()
}

// holdsTemporary reports whether the session may hold temporary tables
// whose drop the target would log when the session ends.
func (s *Session) holdsTemporary() bool {
	return s.temporary && s.opts.WriteBinlog
}

// noteTemporary marks the session once it runs a statement that creates a
// temporary table.
func (s *Session) noteTemporary(text string) {
	if !s.temporary && startsWithWord(text, "CREATE") && createsTemporary.MatchString(statement.PastComments(text)) {
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

// Parked reports whether the session keeps an XA branch prepared on a
// connection that holds the source's temporary tables (park): ended now,
// that connection would log their drop in the source's domain.
func (s *Session) Parked() bool { return len(s.parked) > 0 }

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
	conn, err := s.dial()
	if err != nil {
		return err
	}
	s.dropSlot(s.conn)
	s.parked = append(s.parked, &parkedXA{conn: s.conn, xid: x, format: s.format, state: s.state, db: s.db, domain: s.domain})
	s.conn, s.temporary, s.resting = conn, false, false
	s.Forget()
	return s.prepare()
}

// unpark settles a parked branch before the session runs txns, when txns
// is the XA COMMIT or XA ROLLBACK that ends it: when the target's binlog
// will give it the source's GTID, the session goes back to the parked
// connection (resumed); otherwise the parked connection is let go, and the
// server keeps the prepared branch for whoever ends it. Other groups leave
// the branches parked: a parked connection cannot turn logging off, and
// the drop of its temporary tables that the target would log as it ends
// would take the next sequence number of its domain.
func (s *Session) unpark(txns []*binlog.Transaction) (resumed bool, err error) {
	if len(s.parked) == 0 || len(txns) != 1 {
		return false, nil
	}
	x := endsXA(txns[0])
	at := slices.IndexFunc(s.parked, func(p *parkedXA) bool { return p.xid == x })
	if at < 0 {
		return false, nil
	}
	p := s.parked[at]
	s.parked = slices.Delete(s.parked, at, at+1)
	if !s.opts.KeepGTID || txns[0].MariaDB.Domain == p.domain {
		fits, err := s.seqFits(p.conn, txns[0])
		if err != nil {
			p.conn.close()
			return false, err
		}
		if fits {
			if key := s.connKey(); s.opts.KeepGTID && key != p.domain {
				s.setAside(key) // it holds another domain's temporary tables, or none
			} else {
				s.dropSlot(s.conn)
				s.endConn(s.conn)
			}
			s.conn, s.format, s.state, s.db = p.conn, p.format, p.state, p.db
			s.temporary, s.domain, s.resting = true, p.domain, false
			if err := s.takeSlot(s.conn); err != nil {
				return true, err
			}
			s.connected()
			return true, nil
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
