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
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/statement"
)

// StatementReader reads the statements of groups given to it in binlog
// order: the decoder's, and analyze's, which builds Transactions itself.
type StatementReader struct {
	analyzer  *statement.Analyzer
	temporary *statement.Temporary
}

func NewStatementReader() *StatementReader {
	return &StatementReader{analyzer: statement.NewAnalyzer(), temporary: statement.NewTemporary()}
}

// Read follows the temporary tables txn creates and drops, and sets
// FlagKnownStatements and the tables its statements name when it may.
func (r *StatementReader) Read(txn *Transaction) {
	if txn.Flavor != FlavorMariaDB {
		return
	}
	known := txn.Has(FlagTransactional|FlagAllowParallel) && !txn.Has(FlagDDL) && !txn.Has(FlagStandalone) && !txn.OpaqueRows
	var named []statement.Name
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
			text := strings.TrimSpace(string(e.Query))
			switch strings.ToUpper(text) {
			case "BEGIN", "COMMIT":
				continue
			case "ROLLBACK":
				known = false
				continue
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
			dml, ok := r.read1(e, text, state, variables)
			if !ok {
				known = false
				continue
			}
			named = append(named, dml...)
		default:
			known = false
		}
	}
	if !known || statements == 0 {
		return
	}
	txn.Flags |= FlagKnownStatements
	for _, n := range named {
		txn.touch(n.Schema, n.Table)
	}
}

// read1 reads one DML statement: the tables it names, with the default
// database filled in, when it may run on any apply session.
func (r *StatementReader) read1(e *replication.QueryEvent, text string, state SessionState, variables map[string]bool) ([]statement.Name, bool) {
	if e.ErrorCode != 0 || !state.HasCharset {
		return nil, false // a statement logged with an error must fail as it did: it stays on the statement session
	}
	if len(UnsafeKinds(text)) > 0 {
		return nil, false // unsafe for statement-based replication: applied as MariaDB's replica would, alone
	}
	charset, _, ok := CollationByID(uint32(state.CharsetClient))
	if !ok || !lexableCharset(charset) {
		return nil, false
	}
	dml, ok := r.analyzer.DML(text, state.SQLMode, strings.HasPrefix(charset, "utf8"))
	if !ok {
		return nil, false
	}
	for _, v := range dml.Variables {
		if !variables[v] {
			return nil, false // a user variable this group does not set: another session's
		}
	}
	db := string(e.Schema)
	names := make([]statement.Name, 0, len(dml.Tables))
	for _, n := range dml.Tables {
		if n.Schema == "" {
			n.Schema = db
		}
		if n.Schema == "" || r.temporary.Holds(n.Schema, n.Table) {
			return nil, false
		}
		names = append(names, n)
	}
	return names, true
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
