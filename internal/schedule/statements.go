// statements.go gives a statement whose text says which rows it writes
// (statement.Rows) the row keys a row event for the same rows would carry,
// and its table shared; any other statement takes every table it names
// whole, exclusively. A key one hash too few lets two transactions run at
// once that must not, and the replica diverges: so a statement takes row
// keys only when every rule below holds, and the table whole otherwise.
//
// The table (from the target's catalog):
//   - has a primary key, and takes part in no foreign key;
//   - has every column of every unique key an integer column that the
//     server never fills by itself on UPDATE (TableInfo.Columns: not
//     generated, not a row start or end); triggers, views and other engines
//     are ruled out before (target.Engines clears FlagKnownStatements).
//
// The statement (its text names one table, statement.Rows):
//   - UPDATE ... WHERE pk = n AND ...: it sets no column of any unique key,
//     so the row keeps its keys, and the one row it may write is the
//     primary key's: that key alone. (A row event would carry the row's
//     other unique keys too; any other transaction writing one of those
//     values writes this very row, or waits for one that does.)
//   - DELETE ... WHERE pk = n AND ...: only when the primary key is the
//     table's only unique key (the row's other unique values, freed, are
//     not in the text).
//   - INSERT (columns) VALUES ...: every row gives every column of every
//     unique key as a plain number: each of those keys.
//   - REPLACE: as INSERT, when the primary key is the only unique key (a
//     row it replaces on another unique key has a primary key the text
//     does not say).
//
// Values are numbers from 1 up to the column's signed maximum: a 0 for an
// AUTO_INCREMENT column asks the server for the next value, a value out of
// range is cut to the range, and the row decoder reads a large unsigned
// value of a column without signedness metadata as a negative one (another
// hash). Within that range a number hashes as the row decoder's value of an
// integer column does, whatever its width and sign (keyHash).
package schedule

import (
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/statement"
)

// statementKeys takes what a group of statements writes: row keys for the
// statements whose rows are known, every other table it names (its row
// events' tables among them) whole.
func (p *Writeset) statementKeys(gi int64, txn *binlog.Transaction, deps Deps) (Deps, error) {
	p.pending = p.pending[:0]
	keyed := map[uint64]bool{} // tables whose every statement took row keys
	whole := map[uint64]bool{}
	for _, s := range txn.Statements {
		if s.Rows == nil || len(s.Tables) != 1 {
			for _, t := range s.Tables {
				whole[tableResource(t.Schema, t.Table)] = true
			}
			continue
		}
		t := s.Tables[0]
		info, err := p.catalog.Table(t.Schema, t.Table)
		if err != nil {
			return deps, err
		}
		res := tableResource(t.Schema, t.Table)
		if before := len(p.pending); !p.rowStatement(s, t, info) {
			p.pending = p.pending[:before]
			whole[res] = true
			continue
		}
		keyed[res] = true
	}
	for _, ev := range txn.Events {
		if rows, ok := ev.Data.(*replication.RowsEvent); ok && rows.Table != nil {
			whole[tableResource(string(rows.Table.Schema), string(rows.Table.Table))] = true
		}
	}
	for _, t := range txn.Tables {
		info, err := p.catalog.Table(t.Schema, t.Table)
		if err != nil {
			return deps, err
		}
		if info == nil || info.ForeignKeys {
			// Unknown here (it was known when the applier looked): taken
			// with the foreign-key tables too, to be safe.
			deps = p.ledger.take(gi, fkResource, true, deps)
		}
		res := tableResource(t.Schema, t.Table)
		// A table no statement took row keys on (one the statements do
		// not list), or one a row event of the group writes, is taken
		// whole, as before row keys.
		exclusive := whole[res] || !keyed[res]
		deps = p.ledger.take(gi, res, exclusive, deps)
		if exclusive {
			p.statementTables++
		} else {
			p.statementRows++
		}
	}
	for _, h := range p.pending {
		deps = p.ledger.take(gi, h, true, deps)
	}
	return deps, nil
}

// rowStatement appends to p.pending the row keys of one statement whose
// rows its text says; false when the rules of the file do not all hold.
func (p *Writeset) rowStatement(s binlog.StatementWrites, t binlog.TableRef, info *TableInfo) bool {
	if info == nil || info.ForeignKeys || len(info.Keys) == 0 || info.Keys[0].Name != "PRIMARY" || len(info.Columns) == 0 {
		return false
	}
	for _, key := range info.Keys {
		for _, col := range key.Columns {
			if col >= len(info.Columns) || info.Columns[col].IntegerBits == 0 || !info.Columns[col].Plain {
				return false
			}
		}
	}
	rows := s.Rows
	// position[c]: the table's column named rows.Columns[c].
	position := make([]int, len(rows.Columns))
	for c, name := range rows.Columns {
		if position[c] = columnAt(info, name); position[c] < 0 {
			return false
		}
	}
	keys := info.Keys
	switch rows.Kind {
	case statement.RowsUpdate:
		for _, name := range rows.Assigned {
			col := columnAt(info, name)
			if col < 0 || inAnyKey(info, col) {
				return false
			}
		}
		keys = keys[:1]
	case statement.RowsDelete, statement.RowsReplace:
		if len(keys) != 1 {
			return false
		}
	case statement.RowsInsert:
	default:
		return false
	}
	if len(s.Values) != len(rows.Literals)*len(rows.Columns) || len(rows.Literals) == 0 {
		return false
	}
	p.prefixes = keyPrefixes(p.prefixes[:0], t.Schema, t.Table, &TableInfo{Keys: keys})
	for r := range rows.Literals {
		values := s.Values[r*len(rows.Columns) : (r+1)*len(rows.Columns)]
		p.row = p.row[:0]
		for range info.Columns {
			p.row = append(p.row, nil)
		}
		for c, v := range values {
			col := position[c]
			// Only integer columns hold a number here (the keys' are all
			// integers); another column's value stays unknown.
			if bits := info.Columns[col].IntegerBits; bits == 0 || v < 1 || v > maxSigned(bits) {
				continue
			}
			p.row[col] = v
		}
		for k, key := range keys {
			h, state := keyHash(p.prefixes[k], key, p.row, nil)
			if state != keyOK {
				return false // a key column without a plain number
			}
			p.pending = append(p.pending, h)
		}
	}
	return true
}

// columnAt returns the position of the column named name (lower case), or -1.
func columnAt(info *TableInfo, name string) int {
	for i, c := range info.Columns {
		if c.Name == name {
			return i
		}
	}
	// Names are compared as lower case both ways; a name the server takes
	// for the same by some wider folding is not found, and refused.
	lower := strings.ToLower(name)
	for i, c := range info.Columns {
		if c.Name == lower {
			return i
		}
	}
	return -1
}

func inAnyKey(info *TableInfo, col int) bool {
	for _, key := range info.Keys {
		if contains(key.Columns, col) {
			return true
		}
	}
	return false
}

func maxSigned(bits int) int64 {
	return 1<<(bits-1) - 1
}

// StatementTables reports how many times a table named by a group of
// statements was taken with row keys (rows) and whole (tables).
func (p *Writeset) StatementTables() (rows, tables uint64) {
	return p.statementRows, p.statementTables
}
