// text.go holds what reads or writes the text of a statement the target
// runs: the source's statement as the target runs it, names quoted, the
// statements that keep a transaction out of the target's binlog.
package target

import (
	"strings"

	"gapless/internal/binlog"
	"gapless/internal/statement"
)

// startsWithWord reports whether text, past leading blanks and comments,
// starts with the keyword word.
func startsWithWord(text, word string) bool {
	for {
		text = statement.PastComments(text)
		if strings.HasPrefix(text, "/*!") {
			// an executable comment: /*!50001 DROP ...*/ keeps its version digits
			text = strings.TrimLeft(text[3:], "0123456789")
			continue
		}
		if len(text) < len(word) || !strings.EqualFold(text[:len(word)], word) {
			return false
		}
		return len(text) == len(word) || !isWordByte(text[len(word)])
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func quoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// ownTransaction writes a checkpoint in a target transaction of its own,
// after a group the target binlogged as it executed, or for a skipped
// transaction. It stays out of the target's binlog: there it would take the
// next sequence number of the source's domain. Its row is one of the
// position rows no binlogged transaction ever writes (PositionInside), so
// a replica of the target never meets an update of a row it lacks.
func (s *Session) ownTransaction(checkpoint string) []string {
	return s.outsideBinlog(beginStatement, checkpoint, "COMMIT")
}

// outsideBinlog runs stmts with the session's binlog off, when it is on
// (WriteBinlog), and turns it on again after them.
func (s *Session) outsideBinlog(stmts ...string) []string {
	if !s.opts.WriteBinlog {
		return stmts
	}
	return append(append([]string{"SET @@session.sql_log_bin=0"}, stmts...), "SET @@session.sql_log_bin=1")
}

// PositionInside reports whether the position of a job of txns is written
// inside the target transaction that applies them (and so travels in the
// target's binlog with them), rather than after it in a transaction of its
// own, outside the binlog.
func PositionInside(txns []*binlog.Transaction) bool {
	return len(txns) > 1 || shapeOf(txns[0]) == shapeTransaction
}
