// statements.go reads the statements of each group as the decoder
// completes it (internal/statement): which tables a group of plain DML
// names, so that it may run on any apply session, and which names the
// source's sessions hold as temporary tables, so that a statement that may
// use one stays on the session that holds them.
//
// Invariant: FlagKnownStatements is set only when every statement of the
// group was read with certainty, in binlog order, with every temporary
// table created before it in the binlog known.
package binlog

import (
	"math"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/statement"
)

// StatementReader reads the statements of groups given to it in binlog
// order: the decoder's, and analyze's, which builds Transactions itself.
type StatementReader struct {
	analyzer  *statement.Analyzer
	temporary *statement.Temporary
	numbers   []statement.Number // reused from statement to statement
}

func NewStatementReader() *StatementReader {
	return &StatementReader{analyzer: statement.NewAnalyzer(), temporary: statement.NewTemporary()}
}

// SourceStarted forgets every temporary table: the source started, which
// ended all its sessions.
func (r *StatementReader) SourceStarted() { r.temporary = statement.NewTemporary() }

// Read follows the temporary tables txn creates and drops, and sets
// FlagKnownStatements and the tables its statements name when it may.
func (r *StatementReader) Read(txn *Transaction) {
	if txn.Flavor != FlavorMariaDB {
		return
	}
	known := txn.Has(FlagTransactional|FlagAllowParallel) && !txn.Has(FlagDDL) && !txn.Has(FlagStandalone) && !txn.OpaqueRows
	var writes []StatementWrites
	variables := map[string]bool{} // user variables an event has set so far
	statements := 0
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.XIDEvent, *replication.IntVarEvent,
			*replication.MariadbAnnotateRowsEvent:
		case *replication.GenericEvent:
			switch ev.Header.EventType {
			case replication.RAND_EVENT:
			case replication.USER_VAR_EVENT:
				v, err := DecodeUserVar(e.Data)
				if err != nil {
					known = false
					continue
				}
				variables[strings.ToLower(v.Name)] = true
			default:
				known = false
			}
		case *replication.QueryEvent:
			switch ControlStatement(e.Query) {
			case "BEGIN", "COMMIT":
				continue
			case "ROLLBACK":
				known = false
				continue
			}
			text := strings.TrimSpace(string(e.Query))
			if !txn.MayUseTemporary && !isXAStatement(text) &&
				(r.temporary.Mentions(text) || containsFold(text, "TEMPORARY")) {
				txn.MayUseTemporary = true
			}
			state, err := QuerySessionState(ev.Header, e)
			if err != nil || !state.HasSQLMode {
				// The state it runs under is not known: it may be about
				// temporary tables in a way that is not known either.
				r.temporary.Observe(state.PseudoThreadID, string(e.Schema), "CREATE TEMPORARY TABLE", 0)
				known = false
				continue
			}
			if !statement.IsDML(text) {
				r.temporary.Observe(state.PseudoThreadID, string(e.Schema), text, state.SQLMode)
				known = false
				continue
			}
			if !known {
				continue
			}
			statements++
			w, ok := r.read1(e, text, state, variables)
			if !ok {
				known = false
				continue
			}
			writes = append(writes, w)
		case *replication.ExecuteLoadQueryEvent:
			txn.MayUseTemporary = true // maybe into a temporary table
			known = false
		default:
			known = false
		}
	}
	if !known || statements == 0 {
		return
	}
	txn.Flags |= FlagKnownStatements
	txn.Statements = writes
	for _, w := range writes {
		for _, n := range w.Tables {
			txn.touch(n.Schema, n.Table)
		}
	}
}

// containsFold reports whether text holds word, an upper-case ASCII word,
// in any case, without copying text.
func containsFold(text, word string) bool {
	for i := 0; i+len(word) <= len(text); i++ {
		if text[i]&^0x20 == word[0] && strings.EqualFold(text[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// isXAStatement reports whether text is XA START, END, PREPARE, COMMIT or
// ROLLBACK.
func isXAStatement(text string) bool {
	return len(text) > 2 && strings.EqualFold(text[:2], "XA") && strings.ContainsRune(" \t\r\n", rune(text[2]))
}

// read1 reads one DML statement: the tables it names, with the default
// database filled in, and its rows when its text says them, when it may
// run on any apply session.
func (r *StatementReader) read1(e *replication.QueryEvent, text string, state SessionState, variables map[string]bool) (StatementWrites, bool) {
	var w StatementWrites
	if e.ErrorCode != 0 || !state.HasCharset {
		return w, false // a statement logged with an error must fail as it did: it stays on the statement session
	}
	if len(UnsafeKinds(text)) > 0 {
		return w, false // unsafe for statement-based replication: applied as MariaDB's replica would, alone
	}
	charset, _, ok := CollationByID(uint32(state.CharsetClient))
	if !ok || !lexableCharset(charset) {
		return w, false
	}
	dml, numbers, ok := r.analyzer.DMLNumbers(text, state.SQLMode, strings.HasPrefix(charset, "utf8"), r.numbers)
	r.numbers = numbers
	if !ok {
		return w, false
	}
	for _, v := range dml.Variables {
		if !variables[v] {
			return w, false // a user variable this group does not set: another session's
		}
	}
	db := string(e.Schema)
	w.Tables = make([]TableRef, 0, len(dml.Tables))
	for _, n := range dml.Tables {
		if n.Schema == "" {
			n.Schema = db
		}
		if n.Schema == "" || r.temporary.Holds(n.Schema, n.Table) {
			return w, false
		}
		w.Tables = append(w.Tables, TableRef{Schema: n.Schema, Table: n.Table})
	}
	if rows := dml.Rows; rows != nil && len(w.Tables) == 1 {
		w.Rows = rows
		w.Values = make([]int64, 0, len(rows.Literals)*len(rows.Columns))
		for _, literals := range rows.Literals {
			for _, n := range literals {
				v, ok := statement.Value(text, numbers, n, math.MaxInt64)
				if !ok {
					w.Values = append(w.Values, -1)
					continue
				}
				w.Values = append(w.Values, int64(v))
			}
		}
	}
	return w, true
}

// lexableCharset reports whether text in charset can be read byte by byte
// as ASCII: no byte of a multi-byte character is a quote or a backslash
// (big5, sjis, cp932, gbk and gb18030 have such bytes; ucs2, utf16 and
// utf32 are never a client's).
func lexableCharset(charset string) bool {
	switch charset {
	case "big5", "sjis", "cp932", "gbk", "gb18030", "ucs2", "utf16", "utf16le", "utf32":
		return false
	}
	return true
}
