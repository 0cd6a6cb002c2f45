// rows.go turns row events into BINLOG statements, as mariadb-binlog does:
// every column type arrives exactly as the source wrote it. rowBatcher
// gathers table maps and row events into statements no larger than a round
// trip, and never cuts one statement's row events where the target would
// binlog the pieces as GTID groups of their own.
package target

import (
	"encoding/base64"
	"slices"
	"unsafe"
)

// rowBatcher starts a batcher whose BINLOG statements, in base64 (4 bytes
// for 3) with the statement's own text, fit in one packet.
func (s *Session) rowBatcher() rowBatcher {
	return rowBatcher{limit: (min(s.maxStatement, roundTrip) - 1024) * 3 / 4, s: s}
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
	s        *Session
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
			stmts = append(b.s.binlogClient(stmts), binlogStatement(done))
		}
		b.pending = append(b.pending[:0], b.stmtMaps...) // done is encoded already
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
		// The room is kept for the next statement: pending holds the
		// maps themselves, never this slice.
		b.stmtMaps, b.stmtRows = b.stmtMaps[:0], 0
		if b.maps >= maxTableMaps {
			stmts = b.flush(stmts)
		}
	}
	return stmts
}

func (b *rowBatcher) flush(stmts []string) []string {
	if len(b.pending) > 0 {
		stmts = append(b.s.binlogClient(stmts), binlogStatement(b.pending))
	}
	// The rooms are kept: a statement holds its events' encoding, not them.
	b.pending, b.stmtMaps, b.size, b.stmtRows, b.maps = b.pending[:0], b.stmtMaps[:0], 0, 0, 0
	return stmts
}

// binlogCharset is the character_set_client BINLOG statements are read
// in. The server's lexer reads a string literal a byte at a time, and under
// a multi-byte character set (utf8mb4, the connection's own) it also asks
// the character set about every byte: that was 11% of the target's CPU on
// W1. Under a single-byte one the same statement costs it about half (the
// note on issue 47). Base64 is ASCII, which reads the same in either.
const binlogCharset = "latin1"

// binlogClient adds, before a BINLOG statement, the SET of binlogCharset
// when the connection may read statements in another character set. The
// session then no longer knows its client character set: the source's next
// statement sets its own again (binlog.SessionState.Statements), and what
// gapless writes itself is ASCII or sets utf8mb4 first (utf8Client).
func (s *Session) binlogClient(stmts []string) []string {
	if s == nil || s.conn == nil || s.conn.singleByteClient {
		return stmts
	}
	s.conn.singleByteClient = true
	s.forgetCharset()
	return append(stmts, "SET @@session.character_set_client="+binlogCharset)
}

// utf8ClientStatement has the session read statements in utf8mb4, the
// connection's own character set.
const utf8ClientStatement = "SET @@session.character_set_client=utf8mb4"

// utf8Client adds, before a statement of gapless's own with names that are
// not ASCII (UTF-8, as the binlog gives them), the SET that makes the
// session read it in utf8mb4: the session may be reading statements in
// binlogCharset or in the source's last client character set.
func (s *Session) utf8Client(stmts []string, stmt string) []string {
	if isASCII(stmt) {
		return append(stmts, stmt)
	}
	if s.conn != nil {
		s.conn.singleByteClient = false
	}
	s.forgetCharset()
	return append(stmts, utf8ClientStatement, stmt)
}

// utf8ClientNow sets utf8mb4 on the connection at once when a name of a
// statement of gapless's own, run outside a script, is not ASCII: the
// connection may be reading statements in binlogCharset (utf8Client does
// the same within a script).
func (s *Session) utf8ClientNow(names ...string) error {
	if !slices.ContainsFunc(names, func(n string) bool { return !isASCII(n) }) {
		return nil
	}
	if err := s.conn.exec([]string{utf8ClientStatement}); err != nil {
		return err
	}
	s.conn.singleByteClient = false
	s.forgetCharset()
	return nil
}

// forgetCharset marks the session's client character set unknown, so that
// the source's next statement sets its own. The state is replaced, not
// changed: a script made ahead from the state before (Prepare) is then
// made again.
func (s *Session) forgetCharset() {
	if s.state != nil && s.state.HasCharset {
		copied := *s.state
		copied.HasCharset = false
		s.state = &copied
	}
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
