// kept.go keeps the temporary tables of the source's sessions from one run
// of gapless to the next (checkpoint/temporary.go says why): the session
// notes the names the source's statements may leave held (noteHeld), at
// the run's end copies those the target holds into gapless's schema
// (SaveTemporary), and the next run's statement session makes them again
// before it applies anything (RestoreTemporary).
//
// The server lists no session's temporary tables (not before MariaDB
// 11.2), so the names come from the statements, and the server says which
// of them it holds: SHOW CREATE TABLE under the server id and
// pseudo_thread_id the table was made under, which name it (a temporary
// table is the session's own under those two), answers CREATE TEMPORARY
// TABLE for one. A name noted wrongly costs one question; one missed (a
// statement not read) leaves that table to end with the run, as before:
// the next statement reading it stops the run (1146), never applies
// without it.
//
// A table lost all the same (gapless killed, the connection cut) is known
// to the session (Lose), so that a CREATE TEMPORARY TABLE IF NOT EXISTS,
// which would make it again empty where the source's session kept its
// rows, stops the run instead (remakesLost).
package target

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/sqltext"
	"gapless/internal/statement"
)

// heldKey is a temporary table a source session may hold: the domain of
// its session's connection, the server id and pseudo_thread_id it was made
// under, and its name as the statement wrote it.
type heldKey struct {
	domain, server, thread uint32
	db, name               string
}

func (k heldKey) String() string { return quoteName(k.db) + "." + quoteName(k.name) }

// noteHeld follows text, a statement of the source run by session thread
// with default database db, for the temporary tables it may leave held or
// drop.
func (s *Session) noteHeld(domain, server, thread uint32, db, text string, sqlMode uint64) {
	verb := func(w string) bool { return startsWithWord(text, w) }
	switch {
	case (verb("CREATE") || verb("DROP")) && containsFold([]byte(text), "TEMPORARY"):
	case (verb("ALTER") || verb("RENAME")) && len(s.held) > 0:
	default:
		return
	}
	held, dropped := statement.TemporaryNames(text, sqlMode)
	for _, n := range dropped {
		delete(s.held, heldKey{domain, server, thread, orDefault(n.Schema, db), n.Table})
	}
	for _, n := range held {
		if orDefault(n.Schema, db) == "" {
			continue // no database: the source's statement named no table so
		}
		if s.held == nil {
			s.held = map[heldKey]bool{}
		}
		s.held[heldKey{domain, server, thread, orDefault(n.Schema, db), n.Table}] = true
	}
}

// orDefault is a statement's schema for a name, db when it writes none.
func orDefault(schema, db string) string {
	if schema != "" {
		return schema
	}
	return db
}

// lostKey is a temporary table a source session holds that the target
// lost (Lose): its session and name, in lower case.
type lostKey struct {
	thread   uint32
	db, name string
}

// Held returns the temporary tables the source's sessions may hold in the
// session's connections, and those the target lost before (Lose) that no
// statement since has made or dropped: what a source session may hold
// that a new connection lacks.
func (s *Session) Held() []binlog.HeldTemporary {
	var held []binlog.HeldTemporary
	for k := range s.held {
		held = append(held, binlog.HeldTemporary{Thread: k.thread, Schema: k.db, Table: k.name})
	}
	for k := range s.lost {
		held = append(held, binlog.HeldTemporary{Thread: k.thread, Schema: k.db, Table: k.name})
	}
	return held
}

// Lose tells the session of temporary tables source sessions hold that the
// target lost with a connection (a connection cut, gapless killed), but
// those it holds (made again by RestoreTemporary). A statement that would
// make one again, empty, where the source's session kept its rows (CREATE
// TEMPORARY TABLE IF NOT EXISTS) then stops the run instead of diverging
// (remakesLost).
func (s *Session) Lose(lost []binlog.HeldTemporary) {
	for _, h := range lost {
		k := lostKey{h.Thread, strings.ToLower(h.Schema), strings.ToLower(h.Table)}
		if s.holds(k) {
			continue
		}
		if s.lost == nil {
			s.lost = map[lostKey]bool{}
		}
		s.lost[k] = true
	}
}

// SourceStarts is the binlog.Transaction.SourceStarts of the groups the
// session applied last; a session that takes over from one whose
// connection ended goes on from it (GoOnFrom), so that a start of the
// source before it is not taken for one that ended the sessions it lost.
func (s *Session) SourceStarts() int { return s.starts }

// GoOnFrom makes the session go on from one whose connection ended, whose
// groups came after starts starts of the source.
func (s *Session) GoOnFrom(starts int) { s.starts = starts }

// Lacks is how many temporary tables the source's sessions hold that the
// target lost (Lose), as far as the session knows.
func (s *Session) Lacks() int { return len(s.lost) }

func (s *Session) holds(k lostKey) bool {
	for h := range s.held {
		if h.thread == k.thread && strings.EqualFold(h.db, k.db) && strings.EqualFold(h.name, k.name) {
			return true
		}
	}
	return false
}

// ifNotExists matches the IF NOT EXISTS of a CREATE.
var ifNotExists = regexp.MustCompile(`(?i)\bIF\s+NOT\s+EXISTS\b`)

// remakesLost stops text, a statement of source session thread with
// default database db, when it would make again a temporary table the
// target lost that the source's session still holds; a statement that
// makes or drops one for good ends what the session knows of it.
func (s *Session) remakesLost(thread uint32, db, text string, sqlMode uint64) error {
	if len(s.lost) == 0 || !containsFold([]byte(text), "TEMPORARY") {
		return nil
	}
	made, dropped := statement.TemporaryNames(text, sqlMode)
	for _, n := range dropped {
		delete(s.lost, lostKey{thread, strings.ToLower(orDefault(n.Schema, db)), strings.ToLower(n.Table)})
	}
	for _, n := range made {
		k := lostKey{thread, strings.ToLower(orDefault(n.Schema, db)), strings.ToLower(n.Table)}
		if !s.lost[k] {
			continue
		}
		if ifNotExists.MatchString(text) {
			return fmt.Errorf("the source's session %d held the temporary table %s.%s, which the target lost with gapless's connection that held it (gapless killed, or the connection cut): "+
				"this statement would make it again, empty, where the source's session kept its rows, and the target would differ (MariaDB's replica goes on so after its server restarts); "+
				"rebuild the target, or skip this transaction knowing the target then lacks what the source read from that table", thread, quoteName(orDefault(n.Schema, db)), quoteName(n.Table))
		}
		delete(s.lost, k)
	}
	return nil
}

// keptMode is the sql_mode the copies are made and read back under: the
// default, and a 0 in an AUTO_INCREMENT column stays a 0.
const keptMode = "'NO_AUTO_VALUE_ON_ZERO,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION'"

// tableEngine reads the engine a SHOW CREATE TABLE names.
var tableEngine = regexp.MustCompile(`\) ENGINE=(\w+)`)

// SaveTemporary copies the temporary tables the source's sessions hold in
// the session's connections into gapless's schema, for the next run of
// stream (RestoreTemporary), outside the target's binlog. It returns the
// tables kept, and those that could not be (a connection lost, one kept
// by a prepared XA branch, a copy refused), with why; either way the
// session's connections are left as they are, to be closed.
func (s *Session) SaveTemporary(stream string) (kept []string, lost []string) {
	copies, lost := s.copyHeld(stream, nil)
	for _, k := range copies {
		kept = append(kept, heldKey{k.Domain, k.Server, k.Thread, k.DB, k.Name}.String())
	}
	s.Forget()
	return kept, lost
}

// copyHeld copies the temporary tables held on the session's connections,
// or on only when it is not nil, as SaveTemporary says, and returns the
// copies.
func (s *Session) copyHeld(stream string, only *wire) (copies []ckpt.KeptTemporary, lost []string) {
	if len(s.held) == 0 {
		return nil, nil
	}
	keys := slices.SortedFunc(maps.Keys(s.held), func(a, b heldKey) int {
		return cmp.Or(cmp.Compare(a.domain, b.domain), cmp.Compare(a.server, b.server), cmp.Compare(a.thread, b.thread),
			strings.Compare(a.db, b.db), strings.Compare(a.name, b.name))
	})
	own := ""
	ready := map[*wire]bool{}
	for i, k := range keys {
		c := s.connOf(k.domain)
		if only != nil && c != only {
			continue
		}
		if c == nil {
			lost = append(lost, k.String()+" (its connection is gone, or keeps a prepared XA transaction)")
			continue
		}
		if !ready[c] {
			if err := c.exec([]string{"ROLLBACK", "SET @@session.sql_log_bin=0, @@session.sql_mode=" + keptMode}); err != nil {
				lost = append(lost, k.String()+": "+err.Error())
				continue
			}
			if own == "" {
				var err error
				if own, err = c.queryString("SELECT @@global.server_id"); err != nil {
					lost = append(lost, k.String()+": "+err.Error())
					continue
				}
			}
			ready[c] = true
		}
		definition, server, err := heldDefinition(c, k, own)
		switch {
		case err != nil:
			lost = append(lost, k.String()+": "+err.Error())
			continue
		case definition == "":
			continue // not held
		}
		copyName := ckpt.CopyName(stream, i)
		if err := copyTemporary(c, k, server, definition, stream, copyName); err != nil {
			_ = c.exec([]string{"DROP TABLE IF EXISTS " + ckpt.Schema + "." + quoteName(copyName)})
			lost = append(lost, k.String()+": "+err.Error())
			continue
		}
		copies = append(copies, ckpt.KeptTemporary{Copy: copyName, Domain: k.domain, Server: server, Thread: k.thread, DB: k.db, Name: k.name, Definition: definition})
	}
	return copies, lost
}

// reopenKeeping replaces the session's connection by a new one (reopen)
// and takes the temporary tables of the source's sessions that the old
// one holds along: copied into gapless's schema and made again on the new
// one, as from one run to the next. A table that cannot be is lost (Lose),
// and the run goes on without it, as after a cut connection.
func (s *Session) reopenKeeping() error {
	copies, failed := s.copyHeld(s.opts.Stream, s.conn)
	if err := s.reopen(); err != nil {
		return err
	}
	if len(copies) == 0 && len(failed) == 0 {
		return nil
	}
	restored, lost, err := s.RestoreTemporary(s.opts.Stream, copies)
	if err != nil {
		return err
	}
	lost = append(failed, lost...)
	if len(lost) > 0 {
		var gone []binlog.HeldTemporary
		for k := range s.held {
			if !slices.Contains(restored, k.String()) && s.connOf(k.domain) == s.conn {
				delete(s.held, k)
				gone = append(gone, binlog.HeldTemporary{Thread: k.thread, Schema: k.db, Table: k.name})
			}
		}
		s.Lose(gone)
		if s.opts.Warn != nil {
			s.opts.Warn("temporary tables of the source's sessions could not be taken to the new connection and are lost; a statement of the source that reads one will stop the run: " + strings.Join(lost, "; "))
		}
	}
	return nil
}

// connOf is the connection where the temporary tables of domain live, or
// nil.
func (s *Session) connOf(domain uint32) *wire {
	switch {
	case !s.opts.KeepGTID:
		return s.conn // one connection for all
	case s.temporary && s.domain == domain:
		return s.conn
	case s.pinned[domain] != nil:
		return s.pinned[domain].conn
	}
	return nil
}

// heldDefinition asks c whether it holds k as a temporary table, under the
// server id the group had or the target's own (own: a group applied in
// parts, or the target's binlog not kept): its SHOW CREATE TABLE and that
// server id, or "" when it does not.
func heldDefinition(c *wire, k heldKey, own string) (string, uint32, error) {
	for _, server := range []string{strconv.FormatUint(uint64(k.server), 10), own} {
		if err := c.exec([]string{"SET @@session.server_id=" + server + ", @@session.pseudo_thread_id=" + strconv.FormatUint(uint64(k.thread), 10)}); err != nil {
			return "", 0, err
		}
		rows, err := c.queryRows("SHOW CREATE TABLE " + k.String())
		if code, _ := errorCode(err); code == 1146 || code == 1049 {
			continue
		}
		if err != nil {
			return "", 0, err
		}
		if len(rows) == 1 && len(rows[0]) == 2 && strings.HasPrefix(rows[0][1], "CREATE TEMPORARY TABLE") {
			id, _ := strconv.ParseUint(server, 10, 32)
			return rows[0][1], uint32(id), nil
		}
		// A base table of that name: the session holds no temporary one
		// under these ids.
	}
	return "", 0, nil
}

// copyTemporary copies k, held on c under the ids set, into copyName with
// its row in gapless.temporary.
func copyTemporary(c *wire, k heldKey, server uint32, definition, stream, copyName string) error {
	columns, err := storedColumns(c, k.String())
	if err != nil {
		return err
	}
	target := ckpt.Schema + "." + quoteName(copyName)
	stmts := []string{
		"DROP TABLE IF EXISTS " + target,
		"CREATE TABLE " + target + " LIKE " + k.String(),
	}
	if m := tableEngine.FindStringSubmatch(definition); m != nil && strings.EqualFold(m[1], "MEMORY") {
		// Its rows must outlive a restart of the target.
		stmts = append(stmts, "ALTER TABLE "+target+" ENGINE=InnoDB")
	}
	stmts = append(stmts,
		"INSERT INTO "+target+" ("+columns+") SELECT "+columns+" FROM "+k.String(),
		fmt.Sprintf("INSERT INTO %s.%s (stream, copy, domain_id, server_id, thread_id, db, name, definition, saved_at) VALUES (%s, %s, %d, %d, %d, %s, %s, %s, UTC_TIMESTAMP(6))",
			ckpt.Schema, ckpt.TemporaryTable, sqltext.Literal(stream), sqltext.Literal(copyName), k.domain, server, k.thread,
			sqltext.Literal(k.db), sqltext.Literal(k.name), sqltext.Literal(definition)))
	return c.exec(stmts)
}

// storedColumns lists the columns of table a row is written with: every
// one, invisible ones too (SELECT * leaves them out), but those the server
// computes.
func storedColumns(c *wire, table string) (string, error) {
	rows, err := c.queryRows("SHOW COLUMNS FROM " + table)
	if err != nil {
		return "", err
	}
	var names []string
	for _, r := range rows {
		if len(r) >= 6 && !strings.Contains(strings.ToUpper(r[5]), "GENERATED") {
			names = append(names, quoteName(r[0]))
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("SHOW COLUMNS FROM %s lists no column it can copy", table)
	}
	return strings.Join(names, ", "), nil
}

// RestoreTemporary makes again, in the session, the temporary tables a
// run before kept (SaveTemporary), each on the connection of its domain
// under the ids it was made under, outside the target's binlog, and drops
// their copies: restored or not, a copy is never made again later. It
// returns the tables restored and those that could not be, with why.
func (s *Session) RestoreTemporary(stream string, kept []ckpt.KeptTemporary) (restored []string, lost []string, err error) {
	for _, k := range kept {
		key := heldKey{k.Domain, k.Server, k.Thread, k.DB, k.Name}
		if err := s.takeDomain(k.Domain); err != nil {
			return restored, lost, err
		}
		copyName := ckpt.Schema + "." + quoteName(k.Copy)
		set := "SET @@session.sql_log_bin=0, @@session.sql_mode=" + keptMode + fmt.Sprintf(", @@session.server_id=%d, @@session.pseudo_thread_id=%d", k.Server, k.Thread)
		if s.opts.KeepGTID {
			// The domain its groups come in: a session holding temporary
			// tables may not change it while it binlogs (1953).
			set += fmt.Sprintf(", @@session.gtid_domain_id=%d", k.Domain)
		}
		err := s.conn.exec([]string{"ROLLBACK", set})
		if err == nil {
			err = s.utf8ClientNow(k.DB, k.Name, k.Definition)
		}
		var columns string
		if err == nil {
			columns, err = storedColumns(s.conn, copyName)
		}
		if err == nil {
			err = s.conn.exec([]string{"USE " + quoteName(k.DB), k.Definition,
				"INSERT INTO " + key.String() + " (" + columns + ") SELECT " + columns + " FROM " + copyName})
		}
		if err != nil {
			_ = s.conn.exec([]string{"DROP TEMPORARY TABLE IF EXISTS " + key.String()})
			lost = append(lost, key.String()+": "+err.Error())
		} else {
			restored = append(restored, key.String())
			if s.held == nil {
				s.held = map[heldKey]bool{}
			}
			s.held[key] = true
		}
		if err := s.conn.exec([]string{"DROP TABLE IF EXISTS " + copyName,
			"DELETE FROM " + ckpt.Schema + "." + ckpt.TemporaryTable + " WHERE stream = " + sqltext.Literal(stream) + " AND copy = " + sqltext.Literal(k.Copy)}); err != nil {
			return restored, lost, fmt.Errorf("target: drop the copy %s of the temporary table %s: %w", copyName, key, err)
		}
	}
	// As between groups: out of the binlog when the session rests there
	// (toRest), else as prepare set it; every variable set again.
	rest := []string{restStatement}
	if s.opts.WriteBinlog && !s.opts.KeepGTID {
		rest = append(rest, binlogAgain)
	}
	if err := s.conn.exec(rest); err != nil {
		return restored, lost, err
	}
	s.resting = s.holdsTemporary() && s.opts.KeepGTID
	s.Forget()
	return restored, lost, nil
}

// takeDomain makes the session's connection the one of domain's temporary
// tables: the one it is on when that holds none yet, else a new one, the
// other set aside as toDomain does.
func (s *Session) takeDomain(domain uint32) error {
	switch {
	case !s.temporary, !s.opts.KeepGTID:
		s.temporary, s.domain = true, domain
		return nil
	case s.domain == domain:
		return nil
	}
	conn, err := s.dial()
	if err != nil {
		return err
	}
	// Set aside at rest, as after a group, its variables to be set again.
	if err := s.conn.exec([]string{restOutsideBinlog}); err != nil {
		conn.close()
		return err
	}
	s.resting = s.holdsTemporary()
	s.Forget()
	s.setAside(s.domain)
	s.conn, s.format, s.state, s.db, s.resting = conn, nil, nil, "", false
	s.temporary, s.domain = true, domain
	return s.prepare()
}
