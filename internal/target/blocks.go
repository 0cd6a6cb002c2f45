// blocks.go runs the source's statements of a batch as compound statements
// (BEGIN NOT ATOMIC ... END): the target answers a statement with a packet
// of its own, sent at once, and a batch of sysbench's statement
// transactions (MariaDB's default binlog_format=MIXED) is five statements
// a transaction. A compound statement of many is answered once: the target
// spends a fifth less CPU on the batch (a send and a command's dispatch per
// statement), which on a target that runs one batch at a time is the
// replica's speed.
//
// Inside a compound statement each statement runs, and is binlogged in
// MIXED format, as it would alone: its own query event, with the
// timestamp and pseudo thread id set before it, as rows where unsafe. What
// differs is when it is parsed: all of a compound statement at once, under
// the session's sql_mode, character set and default database as they are
// then. So a block holds only what cannot change those and runs the same
// inside a stored program: the source's INSERT, UPDATE, DELETE and REPLACE
// statements (but one that answers rows: RETURNING) and the SET TIMESTAMP
// and pseudo_thread_id before them.
// Anything else (USE, the other SET statements, a row event's BINLOG, a
// statement the source logged with an error) stays between blocks, and a
// statement whose auto-increment value, RAND seeds or user variables are set
// just before it stays outside with them. Under sql_mode=ORACLE, or one
// not known, BEGIN opens another kind of block: there are none.
package target

import (
	"strconv"
	"strings"
)

const (
	// sqlModeOracle is MODE_ORACLE of sql_mode.
	sqlModeOracle = 1 << 9
	// maxBlock bounds a compound statement's text.
	maxBlock = 1 << 20
	// minBlock is the fewest statements worth a compound statement.
	minBlock = 2
)

// inBlocks returns stmts, a part of a batch's script, with the runs of
// statements that may share a compound statement joined into one. mode is
// the session's sql_mode before stmts, known says whether it is.
func (s *Session) inBlocks(stmts []string, mode uint64, known bool) []string {
	out := stmts[:0:0]
	var run []string // statements of the block being gathered
	size := 0
	flush := func() {
		if len(run) >= minBlock {
			out = append(out, "BEGIN NOT ATOMIC "+strings.Join(run, ";\n")+";\nEND")
		} else {
			out = append(out, run...)
		}
		run, size = run[:0:0], 0
	}
	limit := min(maxBlock, s.maxStatement/2)
	context := false // the statement before set up the next one's context
	for _, stmt := range stmts {
		kind := blockKind(stmt)
		switch {
		case kind == setsSQLMode:
			mode, known = sqlModeSet(stmt)
		case kind == setsContext:
			flush()
			out = append(out, stmt)
			context = true
			continue
		}
		if kind != runsInBlock || context || !known || mode&sqlModeOracle != 0 {
			flush()
			out = append(out, stmt)
			context = false
			continue
		}
		if size+len(stmt)+2 > limit {
			flush()
		}
		run = append(run, stmt)
		size += len(stmt) + 2
	}
	flush()
	return out
}

// What a statement of a batch's script is to a compound statement.
const (
	outsideBlocks = iota // a statement that stays between blocks
	runsInBlock          // a statement a block may hold
	setsSQLMode          // SET @@session.sql_mode, which stays between blocks
	setsContext          // INSERT_ID, RAND seeds or a user variable for the next statement
)

func blockKind(stmt string) int {
	switch {
	case strings.HasPrefix(stmt, "SET TIMESTAMP="), strings.HasPrefix(stmt, "SET @@session.pseudo_thread_id="):
		return runsInBlock
	case strings.HasPrefix(stmt, "SET @@session.sql_mode="):
		return setsSQLMode
	case strings.HasPrefix(stmt, "SET INSERT_ID="), strings.HasPrefix(stmt, "SET LAST_INSERT_ID="),
		strings.HasPrefix(stmt, "SET @@RAND_SEED1="), strings.HasPrefix(stmt, "SET @`"):
		return setsContext
	case !isDML(stmt):
		return outsideBlocks
	case endsTerminated(stmt):
		// A statement logged with its own terminator would leave an
		// empty statement in the block.
		return outsideBlocks
	case containsFold([]byte(stmt), "RETURNING"):
		// INSERT, REPLACE or DELETE ... RETURNING answers rows, which
		// inside a block would come as results of their own.
		return outsideBlocks
	}
	return runsInBlock
}

// isDML reports whether stmt is an INSERT, UPDATE, DELETE or REPLACE.
func isDML(stmt string) bool {
	for _, word := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if startsWithWord(stmt, word) {
			return true
		}
	}
	return false
}

// sqlModeSet is the sql_mode a SET @@session.sql_mode=N statement sets.
func sqlModeSet(stmt string) (uint64, bool) {
	mode, err := strconv.ParseUint(strings.TrimPrefix(stmt, "SET @@session.sql_mode="), 10, 64)
	return mode, err == nil
}
