// Package filter decides which parts of a transaction reach the target, as
// MariaDB's replicate-do-db, replicate-ignore-db and
// replicate-wild-ignore-table options do: row events by the database and
// table they change, statements by the default database they ran in. A
// transaction with nothing left to apply is still a step of the stream: the
// coordinator advances the position over it without touching the target.
package filter

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"regexp"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// Rules are the filters of a run; the zero value keeps everything.
type Rules struct {
	DoDB        []string // when set, only these databases
	IgnoreDB    []string
	IgnoreTable []*regexp.Regexp // db.table wild patterns
	patterns    []string
}

// AddIgnoreTable adds a wild pattern like db.% or db.t%; % matches any run
// of characters and _ any one, as in LIKE.
func (r *Rules) AddIgnoreTable(pattern string) error {
	if !strings.Contains(pattern, ".") {
		return fmt.Errorf("--ignore-table %q: want db.table, with %% and _ as wildcards (e.g. db.%%)", pattern)
	}
	var b strings.Builder
	b.WriteString("^")
	for _, c := range pattern {
		switch c {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return fmt.Errorf("--ignore-table %q: %w", pattern, err)
	}
	r.IgnoreTable = append(r.IgnoreTable, re)
	r.patterns = append(r.patterns, pattern)
	return nil
}

// Empty reports whether the rules keep everything.
func (r *Rules) Empty() bool {
	return r == nil || len(r.DoDB) == 0 && len(r.IgnoreDB) == 0 && len(r.IgnoreTable) == 0
}

// KeepDB reports whether statements run in db are applied.
func (r *Rules) KeepDB(db string) bool {
	if len(r.DoDB) > 0 {
		return slices.Contains(r.DoDB, db)
	}
	return !slices.Contains(r.IgnoreDB, db)
}

// KeepTable reports whether row changes of db.table are applied.
func (r *Rules) KeepTable(db, table string) bool {
	if !r.KeepDB(db) {
		return false
	}
	name := db + "." + table
	for _, re := range r.IgnoreTable {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

// Apply returns the transaction as the target should see it, and false when
// nothing of it is left to apply. txn itself is not changed.
func (r *Rules) Apply(txn *binlog.Transaction) (*binlog.Transaction, bool) {
	if r.Empty() {
		return txn, true
	}
	checksum := hasChecksum(txn.Format.Raw)
	kept := make([]binlog.Event, 0, len(txn.Events))
	dropTable := map[uint64]bool{}
	changed, work := false, false
	lastRows := -1 // index in kept of the last kept row event of the statement in progress
	for _, ev := range txn.Events {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent:
			if !r.KeepTable(string(e.Schema), string(e.Table)) {
				dropTable[e.TableID] = true
				changed = true
				continue
			}
		case *replication.RowsEvent:
			end := e.Flags&replication.RowsEventStmtEndFlag != 0
			if dropTable[e.TableID] {
				changed = true
				if end && lastRows >= 0 {
					// The statement's end travelled on a dropped event: move it to the last kept one.
					kept[lastRows] = withStmtEnd(kept[lastRows], checksum)
				}
				if end {
					lastRows = -1
					clear(dropTable)
				}
				continue
			}
			work = true
			lastRows = len(kept)
			if end {
				lastRows = -1
				clear(dropTable)
			}
		case *replication.ExecuteLoadQueryEvent:
			// LOAD DATA logged as a statement: kept or dropped as a
			// statement, by its default database. (The file's bytes before
			// it stay; without it, nothing reads them.)
			el, err := binlog.DecodeExecuteLoad(ev, txn.Format)
			if err == nil && !r.keepStatement(string(el.Query.Schema), string(el.Query.Query)) {
				changed = true
				continue
			}
			work = true
		case *replication.QueryEvent:
			if binlog.ControlStatement(e.Query) == "" {
				if !r.keepStatement(string(e.Schema), string(e.Query)) {
					changed = true
					continue
				}
				work = true
			}
		}
		kept = append(kept, ev)
	}
	if !work {
		return nil, false
	}
	if !changed {
		return txn, true
	}
	out := *txn
	out.Events = kept
	out.Tables = slices.DeleteFunc(slices.Clone(txn.Tables), func(t binlog.TableRef) bool { return !r.KeepTable(t.Schema, t.Table) })
	// The tables left no longer list every table its statements name (a
	// kept statement may write a table the rules drop): it runs on the
	// statement session, alone.
	out.Flags &^= binlog.FlagKnownStatements
	return &out, true
}

// ddlTable finds the table a DDL statement names: CREATE/ALTER/DROP/TRUNCATE
// TABLE, CREATE INDEX ... ON, RENAME TABLE.
var ddlTable = regexp.MustCompile("(?is)^\\s*(?:(?:CREATE|ALTER|DROP|TRUNCATE|RENAME)\\s+(?:OR\\s+REPLACE\\s+)?(?:TEMPORARY\\s+)?TABLE|TRUNCATE|CREATE\\s+(?:UNIQUE\\s+|FULLTEXT\\s+|SPATIAL\\s+)?INDEX\\s+\\S+\\s+ON)\\s+(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?((?:`[^`]+`|[\\w$]+)(?:\\s*\\.\\s*(?:`[^`]+`|[\\w$]+))?)")

// keepStatement applies the database rules by the statement's default
// database, and the table rules to the table a DDL statement names.
func (r *Rules) keepStatement(db, query string) bool {
	if !r.KeepDB(db) {
		return false
	}
	m := ddlTable.FindStringSubmatch(query)
	if m == nil || len(r.IgnoreTable) == 0 && len(r.DoDB) == 0 && len(r.IgnoreDB) == 0 {
		return true
	}
	parts := strings.SplitN(m[1], ".", 2)
	table := unquote(parts[0])
	if len(parts) == 2 {
		db, table = unquote(parts[0]), unquote(parts[1])
	}
	return r.KeepTable(db, table)
}

func unquote(name string) string {
	return strings.Trim(strings.TrimSpace(name), "`")
}

// withStmtEnd returns a copy of a row event with the statement-end flag set.
func withStmtEnd(ev binlog.Event, checksum bool) binlog.Event {
	const flagsAt = replication.EventHeaderSize + 6 // after the 6-byte table id
	raw := slices.Clone(ev.Raw)
	flags := binary.LittleEndian.Uint16(raw[flagsAt:]) | replication.RowsEventStmtEndFlag
	binary.LittleEndian.PutUint16(raw[flagsAt:], flags)
	if checksum {
		n := len(raw) - replication.BinlogChecksumLength
		binary.LittleEndian.PutUint32(raw[n:], crc32.ChecksumIEEE(raw[:n]))
	}
	out := ev
	out.Raw = raw
	if rows, ok := ev.Data.(*replication.RowsEvent); ok {
		copied := *rows
		copied.Flags = flags
		out.Data = &copied
	}
	return out
}

func hasChecksum(format []byte) bool {
	n := len(format)
	return n > replication.BinlogChecksumLength && format[n-replication.BinlogChecksumLength-1] == replication.BINLOG_CHECKSUM_ALG_CRC32
}
