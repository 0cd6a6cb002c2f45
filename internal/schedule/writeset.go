// writeset.go is the writeset policy: two transactions may overlap when no
// row key one writes is a row key the other writes, however the primary
// grouped them.
//
// A row key is the value of the primary key or of a unique key with no NULL
// part, in the before and in the after image of every row change, tagged with
// database, table and index. Values of case-insensitive collations are folded
// and trailing spaces dropped (PAD SPACE), so 'A' and 'a ' meet, as they do in
// the target's unique index.
//
// What the keys cannot see falls back to coarser resources:
//   - a table without a usable key, or a row image that lacks a key's
//     columns (binlog_row_image not FULL): the whole table, exclusively;
//   - tables with foreign keys (either side): one resource shared by all of
//     them, exclusively, since a child row and its parent have different keys;
//   - DDL and statement-format transactions: a barrier.
package schedule

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// UniqueKey is a primary or unique key of a table, by column position.
type UniqueKey struct {
	Name    string
	Columns []int // 0-based positions in the table
	// Per column, how the index compares strings: Fold for case- and
	// accent-insensitive collations, Pad for PAD SPACE ones (trailing spaces
	// ignored), Prefix > 0 for an index on the first Prefix characters.
	Fold   []bool
	Pad    []bool
	Prefix []int
}

// TableInfo is what the writeset policy needs to know of a table.
type TableInfo struct {
	Keys        []UniqueKey // primary key first; unique keys of NOT NULL or nullable columns
	ForeignKeys bool        // the table references or is referenced by a foreign key
}

// Catalog answers questions about the target's tables; a nil *TableInfo
// means the table is unknown (for example created later in the stream).
type Catalog interface {
	Table(schema, table string) (*TableInfo, error)
	// Invalidate forgets what it knows, after a DDL.
	Invalidate()
}

// Writeset is the writeset policy.
type Writeset struct {
	catalog Catalog
	ledger  *ledger
	barrier bool
	// Warn is called once when a row image lacks key columns.
	Warn     func(string)
	warned   bool
	keysSeen uint64
}

func NewWriteset(c Catalog) *Writeset { return &Writeset{catalog: c, ledger: newLedger()} }
func (p *Writeset) Name() string      { return "writeset" }
func (p *Writeset) Barrier() bool     { return p.barrier }
func (p *Writeset) Committed(gi int64) {
	p.ledger.release(gi)
}

var fkResource = nameHash("foreign-keys")

func (p *Writeset) Admit(gi int64, txn *binlog.Transaction) (Deps, error) {
	p.barrier = isBarrier(txn)
	deps := p.ledger.admit(gi, p.barrier, nil)
	if p.barrier {
		p.catalog.Invalidate()
		return tidy(deps), nil
	}
	var err error
	for _, rows := range txn.RowEvents() {
		if deps, err = p.rowKeys(gi, rows, deps); err != nil {
			return nil, err
		}
	}
	return tidy(deps), nil
}

func (p *Writeset) rowKeys(gi int64, ev *replication.RowsEvent, deps Deps) (Deps, error) {
	if ev.Table == nil {
		return deps, fmt.Errorf("row event without its table map")
	}
	schema, table := string(ev.Table.Schema), string(ev.Table.Table)
	tableRes := nameHash("table", schema, table)
	info, err := p.catalog.Table(schema, table)
	if err != nil {
		return deps, err
	}
	if info == nil || len(info.Keys) == 0 {
		return p.ledger.take(gi, tableRes, true, deps), nil
	}
	if info.ForeignKeys {
		deps = p.ledger.take(gi, fkResource, true, deps)
	}
	deps = p.ledger.take(gi, tableRes, false, deps)
	for i, row := range ev.Rows {
		var skipped []int
		if i < len(ev.SkippedColumns) {
			skipped = ev.SkippedColumns[i]
		}
		for _, key := range info.Keys {
			h, ok := keyHash(schema, table, key, row, skipped)
			if !ok {
				if isPrimary(key, info) {
					// The row image lacks the primary key: only the table is safe.
					p.warnOnce(fmt.Sprintf("%s.%s: a row image lacks key columns (is binlog_row_image FULL on the source?); such tables are applied one transaction at a time", schema, table))
					return p.ledger.take(gi, tableRes, true, deps), nil
				}
				continue // a unique key with a NULL part constrains nothing
			}
			deps = p.ledger.take(gi, h, true, deps)
			p.keysSeen++
		}
	}
	return deps, nil
}

func isPrimary(k UniqueKey, info *TableInfo) bool { return &info.Keys[0] == &k || k.Name == "PRIMARY" }

func (p *Writeset) warnOnce(msg string) {
	if !p.warned && p.Warn != nil {
		p.Warn(msg)
	}
	p.warned = true
}

// keyHash hashes one key of one row image; ok is false when a key column is
// NULL or missing from the image.
func keyHash(schema, table string, key UniqueKey, row []interface{}, skipped []int) (uint64, bool) {
	h := fnv.New64a()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(table))
	h.Write([]byte{0})
	h.Write([]byte(key.Name))
	var buf [8]byte
	for i, col := range key.Columns {
		if col >= len(row) || row[col] == nil || contains(skipped, col) {
			return 0, false
		}
		h.Write([]byte{1})
		switch v := row[col].(type) {
		case string:
			h.Write([]byte(comparable(v, key.Fold[i], key.Pad[i], key.Prefix[i])))
		case []byte:
			h.Write([]byte(comparable(string(v), key.Fold[i], key.Pad[i], key.Prefix[i])))
		case int8, int16, int32, int64, int:
			binary.LittleEndian.PutUint64(buf[:], uint64(toInt64(v)))
			h.Write(buf[:])
		case uint8, uint16, uint32, uint64, uint:
			binary.LittleEndian.PutUint64(buf[:], toUint64(v))
			h.Write(buf[:])
		case float32:
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(float64(v)))
			h.Write(buf[:])
		case float64:
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		default:
			fmt.Fprint(h, v)
		}
	}
	return h.Sum64(), true
}

// comparable reduces a string to what the index compares. Folding is
// deliberately coarse (lower case, accents dropped): two strings the index
// tells apart may hash alike, which only costs parallelism, never safety.
func comparable(v string, fold, pad bool, prefix int) string {
	if prefix > 0 {
		if r := []rune(v); len(r) > prefix {
			v = string(r[:prefix])
		}
	}
	if pad {
		v = strings.TrimRight(v, " ")
	}
	if fold {
		v = foldString(v)
	}
	return v
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func toInt64(v interface{}) int64 {
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}

func toUint64(v interface{}) uint64 {
	switch n := v.(type) {
	case uint8:
		return uint64(n)
	case uint16:
		return uint64(n)
	case uint32:
		return uint64(n)
	case uint64:
		return n
	case uint:
		return uint64(n)
	}
	return 0
}
