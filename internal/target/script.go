// script.go owns the two ways a target script departs from "one statement,
// one OK": statements the source logged with an error, which must fail on
// the target with that same error, and BINLOG statements larger than the
// target's max_allowed_packet, which go in fragments.
package target

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// expectedMark opens a statement that carries the error the source logged
// with it: the mark, the error number, the mark again, then the SQL;
// toleratedMark one that may answer the error it carries, or succeed. No SQL
// statement starts with either byte; run removes the mark before sending.
const (
	expectedMark  = "\x00"
	toleratedMark = "\x01"
)

// guardMark opens a position statement made by checkpoint.Guarded: should
// it change no row, its group was not one GTID group in the target's
// binlog, and run fails with errNotOneGroup.
const guardMark = "\x02"

// oneGroupMark opens a checkpoint.OneGroupCheck statement: should it fail
// with errSubqueryRows, its group was not one GTID group in the target's
// binlog, and run fails with errNotOneGroup.
const oneGroupMark = "\x03"

// errSubqueryRows is ER_SUBQUERY_NO_1_ROW, OneGroupCheck's failure.
const errSubqueryRows = 1242

// errNotOneGroup: a group the target binlogged as it executed did not take
// exactly its own GTID there. The second part would hold the sequence
// number of the source's next transaction, which would then be taken for
// applied: the run stops instead, its position not written.
var errNotOneGroup = errors.New(splitGroup + ", which gapless cannot yet keep as one; it is applied, but its position is not written: " +
	"report it as a gapless bug with the source's binlog of this transaction, and to go on, rebuild the target (then gapless reset), " +
	"or replicate with --no-target-binlog and --skip-gtid of this transaction (it is on the target already)")

// splitGroup opens errNotOneGroup's text, which gapless.stops keeps.
const splitGroup = "the target wrote this transaction to its binlog as more than one GTID group"

// SplitGroupStop reports whether a run's error, as gapless.stops keeps it,
// is errNotOneGroup: the run stopped at a group that is on the target, past
// the position, and whose second GTID group in the target's binlog took the
// sequence number of the source's next transaction of its domain.
func SplitGroupStop(text string) bool {
	return strings.Contains(text, splitGroup)
}

// errXARollback is XA_RBROLLBACK.
const errXARollback = 1402

// errGTIDInTransaction: "Cannot modify @@session.gtid_domain_id or
// @@session.gtid_seq_no inside a transaction", also said of a session that
// holds temporary tables.
const errGTIDInTransaction = 1953

// expecting marks stmt with the error the source logged for it (0: none).
// A statement that changed something before it failed on the source (a
// multi-row INSERT into MyISAM that meets a duplicate key halfway, a CREATE
// OR REPLACE that dropped the old table) is logged with its error code, and
// a replica must run it and get that same error, as MariaDB's replica does.
func expecting(code uint16, stmt string) string {
	if code == 0 {
		return stmt
	}
	return expectedMark + strconv.Itoa(int(code)) + expectedMark + stmt
}

// anyServerError, as tolerating's code, lets a statement fail with any error
// of the server's (not a lost connection): for the best-effort statements
// that set the target's privilege tables as the source's (invoker.go), which
// a source whose own privilege tables were damaged or renamed (mysql-test
// does so) also left as they were.
const anyServerError uint16 = 0xFFFF

// tolerating marks stmt as one that may fail with code without harm.
func tolerating(code uint16, stmt string) string {
	return toleratedMark + strconv.Itoa(int(code)) + toleratedMark + stmt
}

// splitExpected undoes expecting and tolerating: the error the statement
// must answer, the one it may answer, and its SQL.
func splitExpected(stmt string) (expect, tolerate uint16, text string) {
	for {
		mark := stmt[:min(1, len(stmt))]
		if mark != expectedMark && mark != toleratedMark {
			return expect, tolerate, stmt
		}
		rest := stmt[1:]
		end := strings.Index(rest, mark)
		if end < 0 {
			return expect, tolerate, stmt
		}
		code, err := strconv.Atoi(rest[:end])
		if err != nil {
			return expect, tolerate, stmt
		}
		if mark == expectedMark {
			expect = uint16(code)
		} else {
			tolerate = uint16(code)
		}
		stmt = rest[end+1:]
	}
}

// checkExpected compares what the target answered with the error the
// source logged: the same error is success; anything else, no error
// included, means the target is not where the source was. A tolerated
// error is success too.
func checkExpected(err error, expect, tolerate uint16) error {
	if err != nil && tolerate != 0 {
		if code, ok := errorCode(err); ok && (code == tolerate || tolerate == anyServerError) {
			return nil
		}
	}
	if expect == 0 {
		return err
	}
	if err == nil {
		return fmt.Errorf("the source logged this statement with error %d, and the target ran it without an error: the target differs from the source", expect)
	}
	code, ok := errorCode(err)
	if !ok {
		return err // the connection failed
	}
	if code == expect {
		return nil
	}
	return fmt.Errorf("the source logged this statement with error %d, and the target answered another: %w", expect, err)
}

// Names of the user variables that hold a fragmented BINLOG statement, as
// the server's BINLOG @a, @b syntax takes them.
const (
	fragment0 = "@gapless_binlog_fragment_0"
	fragment1 = "@gapless_binlog_fragment_1"
)

// fragmentOverhead is the text around a fragment in its SET statement.
const fragmentOverhead = len("SET ") + len(fragment0) + len("=''")

// fragmentable reports whether stmt is a BINLOG statement that fits the
// target in two fragments of at most limit bytes each.
func fragmentable(stmt string, limit int) bool {
	return strings.HasPrefix(stmt, "BINLOG '") && (len(stmt)+1)/2+fragmentOverhead <= limit
}

// runFragmented runs a BINLOG statement larger than max_allowed_packet as
// the server allows: its base64 text in two user variables, each set in a
// round trip of its own, then BINLOG of the two.
func (s *Session) runFragmented(stmt string) error {
	if !fragmentable(stmt, s.maxStatement) {
		return fmt.Errorf("a statement of %d bytes exceeds the target's max_allowed_packet (%d bytes) even in two fragments; raise it on the target (SET GLOBAL max_allowed_packet), or grant the apply user the privilege to do so", len(stmt), s.maxStatement+64<<10)
	}
	text := stmt[len("BINLOG '") : len(stmt)-1]
	half := len(text) / 2
	for _, set := range []string{
		"SET " + fragment0 + "='" + text[:half] + "'",
		"SET " + fragment1 + "='" + text[half:] + "'",
		"BINLOG " + fragment0 + ", " + fragment1,
	} {
		if err := s.conn.exec([]string{set}); err != nil {
			return err
		}
	}
	return s.conn.exec([]string{"SET " + fragment0 + "=NULL, " + fragment1 + "=NULL"})
}

// maxPacket is the most gapless asks of the target's max_allowed_packet:
// the limit MariaDB's own replica has (slave_max_allowed_packet's default).
const maxPacket = 1 << 30

// makeRoom raises the target's max_allowed_packet when a statement of the
// script fits neither one packet nor two fragments: the only way such a
// row event reaches the target. The new value holds for new connections,
// so the session reconnects (reopened), taking along the temporary tables
// of the source's sessions its connection holds, and the script, made for
// the old connection's state, must be made again; it runs between
// transactions, before the script starts one.
func (s *Session) makeRoom(parts ...[]string) (reopened bool, err error) {
	need, largest := 0, 0
	for _, part := range parts {
		for _, stmt := range part {
			_, _, text := splitExpected(stmt)
			if len(text) <= s.maxStatement || fragmentable(text, s.maxStatement) {
				continue
			}
			largest = max(largest, len(text))
			if strings.HasPrefix(text, "BINLOG '") {
				need = max(need, (len(text)+1)/2+fragmentOverhead)
			} else {
				need = max(need, len(text))
			}
		}
	}
	if need == 0 {
		return false, nil
	}
	// Room for the packet's own header and the margin prepare keeps, in whole MiB.
	need = (need + 128<<10 + 1<<20 - 1) / (1 << 20) * (1 << 20)
	if need > maxPacket {
		return false, fmt.Errorf("a statement of %d bytes is larger than any target can take (max_allowed_packet is at most 1 GiB)", largest)
	}
	have := s.maxStatement + 64<<10
	if err := s.conn.exec([]string{fmt.Sprintf("SET GLOBAL max_allowed_packet=%d", need)}); err != nil {
		reason := err.Error()
		if code, ok := errorCode(err); ok && (code == 1227 || code == 1044) {
			reason = "the apply user may not change it"
		}
		return false, fmt.Errorf("a statement of %d bytes exceeds the target's max_allowed_packet (%d bytes), and raising it failed (%s); raise it on the target: SET GLOBAL max_allowed_packet=%d", largest, have, reason, need)
	}
	if s.opts.Warn != nil {
		s.opts.Warn(fmt.Sprintf("raised the target's max_allowed_packet from %d to %d bytes for %d bytes of row events in one statement (MariaDB's own replica allows 1 GiB)", have, need, largest*3/4))
	}
	return true, s.reopenKeeping()
}

// endsTerminated reports whether text, a statement of the source, ends in
// its own terminator, perhaps followed by comments ("...; -- why"): joined
// to the next statement with another, it would leave an empty statement
// between them, a syntax error. Unsure (a ';' inside a literal, a comment
// that holds one), it says yes: such a statement then only ends its round
// trip, or stays out of a compound statement.
func endsTerminated(text string) bool {
	// Most statements hold no ';' at all (a BINLOG statement's base64
	// never does): the forward search, vectorized, says so many times
	// faster than the backward one.
	if strings.IndexByte(text, ';') < 0 {
		return false
	}
	i := strings.LastIndexByte(text, ';')
	return i >= 0 && onlyComments(text[i+1:])
}

// onlyComments reports whether rest holds nothing but blanks and comments
// (or a comment left open, to be safe).
func onlyComments(rest string) bool {
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		switch {
		case rest == "":
			return true
		case strings.HasPrefix(rest, "#"), strings.HasPrefix(rest, "--"):
			end := strings.IndexByte(rest, '\n')
			if end < 0 {
				return true
			}
			rest = rest[end+1:]
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest[2:], "*/")
			if end < 0 {
				return true
			}
			rest = rest[2+end+2:]
		default:
			return false
		}
	}
}

// withoutTrailer returns text without a terminator that only blanks and
// comments follow: a client that keeps comments sends "UPDATE t SET a = 1;
// -- why", the source runs and logs it so, and MariaDB's replica parses it
// alone as the source did. In a packet of several statements the server
// would take what follows the ';' for a statement of its own and answer it
// too. The text is read twice, with and without backslash escapes in
// literals (the sql_mode decides), and cut only where both readings agree;
// not at all when it is not UTF-8 (a multi-byte character set may hide a
// quote or a backslash in a character's second byte) or holds another
// statement after the ';' (a stored program's body).
func withoutTrailer(text string) string {
	if !strings.Contains(text, ";") || !utf8.ValidString(text) {
		return text
	}
	cut, ok := terminatorAt(text, true)
	if other, sure := terminatorAt(text, false); !ok || !sure || other != cut || cut < 0 {
		return text
	}
	return strings.TrimRight(text[:cut], " \t\r\n")
}

// terminatorAt returns where text's terminator is, when only blanks and
// comments follow it (-1: none); ok is false when the text does not read
// to its end (an open literal or comment) or goes on after a ';'.
func terminatorAt(text string, backslash bool) (at int, ok bool) {
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == '\'' || c == '"' || c == '`':
			end, closed := quotedEnd(text, i, backslash && c != '`')
			if !closed {
				return -1, false
			}
			i = end
		case c == '#' || strings.HasPrefix(text[i:], "-- ") || strings.HasPrefix(text[i:], "--\t") || strings.HasPrefix(text[i:], "--\n") || text[i:] == "--":
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				return -1, true
			}
			i += end + 1
		case strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return -1, false
			}
			i += 2 + end + 2
		case c == ';':
			if onlyComments(text[i+1:]) {
				return i, true
			}
			return -1, false
		default:
			i++
		}
	}
	return -1, true
}

// quotedEnd returns the end, past its closing quote, of the literal or
// quoted name that opens at text[i]: a doubled quote stands for one, and
// with backslash a backslash escapes the byte after it.
func quotedEnd(text string, i int, backslash bool) (int, bool) {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch {
		case text[j] == '\\' && backslash:
			j++
		case text[j] == q && j+1 < len(text) && text[j+1] == q:
			j++
		case text[j] == q:
			return j + 1, true
		}
	}
	return 0, false
}
