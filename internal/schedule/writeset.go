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
//   - a table without a usable key, a row image that lacks a key's columns
//     (binlog_row_image not FULL), or rows gapless could not decode (the
//     transaction's OpaqueRows: a column type the row decoder does not
//     know): the whole table, exclusively;
//   - tables with foreign keys (either side): one resource shared by all of
//     them, exclusively, since a child row and its parent have different keys;
//   - statements the decoder could read (binlog.FlagKnownStatements: plain
//     DML naming its tables): the row keys of the rows the text says it
//     writes, with its table shared, where statements.go can tell them
//     for certain; otherwise every table it names, whole, exclusively. Such
//     a statement may touch any row of its table, so it conflicts with
//     every row key of the table (each row change takes its table shared)
//     and with every other statement on it;
//   - DDL and other statement-format transactions: a barrier.
package schedule

import (
	"fmt"
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
	// Columns in table order, for statements whose rows their text says
	// (statements.go); empty when not known.
	Columns []Column
}

// Column is what statements.go needs to know of a column.
type Column struct {
	Name string // lower case
	// IntegerBits is 8, 16, 24, 32 or 64 for TINYINT to BIGINT, signed or
	// not; 0 for any other type.
	IntegerBits int
	// Plain: a stored column the server never fills by itself on UPDATE
	// (not generated, not a row start or end, no ON UPDATE).
	Plain bool
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
	prefixes []uint64 // per key of the table at hand, the hash of database, table and index
	// statement keys: see statements.go
	statementRows, statementTables uint64
	pending                        []uint64
	row                            []interface{}
	// a row event's images read for their keys (imageKeys): the key
	// columns, the values read, the columns an image lacks
	want    []bool
	values  []binlog.Value
	skipped []int
	// names are the database and table names met, each once (name), and
	// hashes their tables' hashes (tableHashes).
	names  map[string]string
	hashes map[tableName]*tableHashes
	// tables is, by table map, what rowKeys needs of its table (tableOf),
	// while the catalog's answers stand: generation counts the barriers,
	// after each of which the catalog reads its tables again.
	tables     map[*replication.TableMapEvent]*mappedTable
	generation uint64
	// The statements of the row transaction Admit took last, what each
	// added to its dependencies, and the resources each took (Steps).
	steps Steps
}

// Steps are the statements of a row transaction, what each waits for and
// what each takes: statement k is Events[Statements[k].From:Statements[k].To]
// (the events before the first, BEGIN, and after the last, XID, are
// none's), waits for Deps[:All] (a barrier's, every statement's) and for
// Deps[Statements[k-1].DepsEnd:Statements[k].DepsEnd] (from All for the
// first), and takes Taken[Statements[k-1].TakenEnd:Statements[k].TakenEnd].
// A resource the transaction took before adds nothing to Deps again, but is
// listed in Taken again: a statement that meets one before it (Meets)
// waits for what that one waits for. Deps are not sorted.
type Steps struct {
	Deps       Deps
	All        int
	Taken      []Taken
	Statements []Statement
}

// DepsOf is what statement k added to Deps: with Deps[:All], what it
// waits for.
func (s *Steps) DepsOf(k int) Deps {
	from := s.All
	if k > 0 {
		from = s.Statements[k-1].DepsEnd
	}
	return s.Deps[from:s.Statements[k].DepsEnd]
}

// TakenOf is what statement k takes.
func (s *Steps) TakenOf(k int) []Taken {
	from := 0
	if k > 0 {
		from = s.Statements[k-1].TakenEnd
	}
	return s.Taken[from:s.Statements[k].TakenEnd]
}

// Statement is one statement of a row transaction (Steps).
type Statement struct {
	From, To          int
	DepsEnd, TakenEnd int
}

// Taken is a resource a statement takes, and whether exclusively. Two
// statements whose resources meet (the same one, either exclusively) must
// run in their order.
type Taken struct {
	Resource  uint64
	Exclusive bool
}

// Meets reports whether a resource of a meets one of b.
func Meets(a, b []Taken) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Resource == y.Resource && (x.Exclusive || y.Exclusive) {
				return true
			}
		}
	}
	return false
}

// take records that the statement at hand takes r, and takes it in the
// ledger.
func (p *Writeset) take(gi int64, r uint64, exclusive bool, deps Deps) Deps {
	if len(p.steps.Taken) <= maxStepsTaken {
		p.steps.Taken = append(p.steps.Taken, Taken{r, exclusive})
	}
	return p.ledger.take(gi, r, exclusive, deps)
}

// maxStepsTaken bounds the resources Steps lists for one transaction: a
// larger one has no Steps (it runs ahead whole or not at all), so that
// telling its statements apart (Meets, over the statements that wait)
// costs little and keeps little.
const maxStepsTaken = 512

func NewWriteset(c Catalog) *Writeset { return &Writeset{catalog: c, ledger: newLedger()} }

// KeysSeen counts the row keys taken so far.
func (p *Writeset) KeysSeen() uint64 { return p.keysSeen }
func (p *Writeset) Name() string     { return "writeset" }
func (p *Writeset) Barrier() bool    { return p.barrier }
func (p *Writeset) Committed(gi int64) {
	p.ledger.release(gi)
}

var fkResource = nameHash("foreign-keys")

func (p *Writeset) Admit(gi int64, txn *binlog.Transaction) (Deps, error) {
	p.barrier = isBarrier(txn)
	p.steps.Statements = p.steps.Statements[:0]
	deps := p.ledger.admit(gi, p.barrier, nil)
	if p.barrier {
		p.catalog.Invalidate()
		p.generation++
		return tidy(deps), nil
	}
	if txn.Has(binlog.FlagKnownStatements) {
		deps, err := p.statementKeys(gi, txn, deps)
		return tidy(deps), err
	}
	var err error
	p.steps.Taken, p.steps.All = p.steps.Taken[:0], len(deps)
	from := 0 // the first statement begins after BEGIN
	for from < len(txn.Events) {
		if _, ok := txn.Events[from].Data.(*replication.QueryEvent); !ok {
			break
		}
		from++
	}
	for i := range txn.Events {
		if ev, ok := txn.Events[i].Data.(*replication.RowsEvent); ok {
			if deps, err = p.rowKeys(gi, &txn.Events[i], txn.OpaqueRows, deps); err != nil {
				return nil, err
			}
			if ev.Flags&replication.RowsEventStmtEndFlag != 0 {
				p.steps.Statements = append(p.steps.Statements, Statement{From: from, To: i + 1, DepsEnd: len(deps), TakenEnd: len(p.steps.Taken)})
				from = i + 1
			}
		}
	}
	if n := len(p.steps.Statements); n > 0 && (len(deps) > p.steps.Statements[n-1].DepsEnd || len(p.steps.Taken) > p.steps.Statements[n-1].TakenEnd) || len(p.steps.Taken) > maxStepsTaken {
		// Row events after the last statement's end (the group is not
		// whole), or too many resources: its statements are not told
		// apart.
		p.steps.Statements = p.steps.Statements[:0]
	}
	p.steps.Deps = append(p.steps.Deps[:0], deps...)
	return tidy(deps), nil
}

// Steps are the statements of the row transaction Admit took last; nil for
// a transaction of statements or a barrier, and valid until the next
// Admit.
func (p *Writeset) Steps() *Steps {
	if len(p.steps.Statements) == 0 {
		return nil
	}
	return &p.steps
}

// tableResource is a whole table. Names are folded: a statement may spell
// a table in another case than the row events do (the target's
// lower_case_table_names decides whether they are one), and two tables
// taken for one only cost parallelism.
func tableResource(schema, table string) uint64 {
	return nameHash("table", strings.ToLower(schema), strings.ToLower(table))
}

// rowKeys takes the resources one row event writes. opaque says its
// transaction's row values are not all known: its tables are then taken whole.
func (p *Writeset) rowKeys(gi int64, event *binlog.Event, opaque bool, deps Deps) (Deps, error) {
	ev := event.Data.(*replication.RowsEvent)
	if ev.Table == nil {
		return deps, fmt.Errorf("row event without its table map")
	}
	t, err := p.tableOf(ev.Table)
	if err != nil {
		return deps, err
	}
	schema, table, info, hashes := t.schema, t.table, t.info, t.hashes
	tableRes := hashes.table
	if info != nil && info.ForeignKeys {
		deps = p.take(gi, fkResource, true, deps)
	}
	if info == nil || len(info.Keys) == 0 || opaque {
		return p.take(gi, tableRes, true, deps), nil
	}
	deps = p.take(gi, tableRes, false, deps)
	p.prefixes = append(p.prefixes[:0], hashes.prefixes...)
	if event.RowsPending() {
		if deps, ok := p.imageKeys(gi, event, info, schema, table, tableRes, deps); ok {
			return deps, nil
		}
		if event.DecodeRows() != nil {
			// Cannot be: the relay reader walked the images. Their keys
			// unknown, the table is taken whole.
			return p.take(gi, tableRes, true, deps), nil
		}
	}
	for i, row := range ev.Rows {
		var skipped []int
		if i < len(ev.SkippedColumns) {
			skipped = ev.SkippedColumns[i]
		}
		for k, key := range info.Keys {
			h, state := keyHash(p.prefixes[k], key, row, skipped)
			if state == keyNull {
				continue // a unique key with a NULL part constrains nothing
			}
			if state == keyMissing {
				p.warnOnce(fmt.Sprintf("%s.%s: a row image lacks key columns (is binlog_row_image FULL on the source?); such tables are applied one transaction at a time", schema, table))
				return p.take(gi, tableRes, true, deps), nil
			}
			deps = p.take(gi, h, true, deps)
			p.keysSeen++
		}
	}
	return deps, nil
}

// imageKeys takes the row keys of a row event whose rows are pending,
// reading the key columns alone (binlog.Event.EachImage); the same keys as
// rowKeys takes from decoded rows. ok is false when a key column has a type
// EachImage does not read: the rows are then decoded.
func (p *Writeset) imageKeys(gi int64, event *binlog.Event, info *TableInfo, schema, table string, tableRes uint64, deps Deps) (_ Deps, ok bool) {
	ev := event.Data.(*replication.RowsEvent)
	columns := int(ev.ColumnCount)
	p.want = append(p.want[:0], make([]bool, columns)...)
	for _, key := range info.Keys {
		for _, col := range key.Columns {
			if col < columns {
				p.want[col] = true
			}
		}
	}
	if cap(p.values) < columns {
		p.values = make([]binlog.Value, columns)
	}
	missing := false
	ok = event.EachImage(p.want, p.values[:columns], p.skipped[:0], func(row []binlog.Value, skipped []int) bool {
		for k, key := range info.Keys {
			h, state := keyHashValues(p.prefixes[k], key, row, skipped)
			if state == keyNull {
				continue
			}
			if state == keyMissing {
				missing = true
				return false
			}
			deps = p.take(gi, h, true, deps)
			p.keysSeen++
		}
		return true
	})
	if ok && missing {
		p.warnOnce(fmt.Sprintf("%s.%s: a row image lacks key columns (is binlog_row_image FULL on the source?); such tables are applied one transaction at a time", schema, table))
		return p.take(gi, tableRes, true, deps), true
	}
	return deps, ok
}

// keyHashValues is keyHash over a row image read by EachImage: the same
// hash for the same values (go-mysql's integers and strings).
func keyHashValues(prefix uint64, key UniqueKey, row []binlog.Value, skipped []int) (uint64, int) {
	h := prefix
	for i, col := range key.Columns {
		if col >= len(row) || contains(skipped, col) {
			return 0, keyMissing
		}
		v := row[col]
		if v.Kind == binlog.ValueNull {
			return 0, keyNull
		}
		h = fnvByte(h, 1)
		switch {
		case v.Kind == binlog.ValueInt:
			h = fnvUint64(h, uint64(v.Int))
		case !key.Fold[i] && !key.Pad[i] && key.Prefix[i] == 0:
			h = fnvBytes(h, v.Bytes)
		default:
			h = fnvString(h, Comparable(string(v.Bytes), key.Fold[i], key.Pad[i], key.Prefix[i]))
		}
	}
	return h, keyOK
}

// name is a database or table name of a table map as a string, made once:
// a row event's names would otherwise cost two strings each.
func (p *Writeset) name(b []byte) string {
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	if p.names == nil || len(p.names) >= maxNames {
		p.names = make(map[string]string)
	}
	s := string(b)
	p.names[s] = s
	return s
}

// mappedTable is a row event's table as rowKeys needs it: its names, the
// catalog's answer for it, and their hashes.
type mappedTable struct {
	schema, table string
	info          *TableInfo
	hashes        *tableHashes
	generation    uint64 // Writeset.generation when made
}

// tableOf returns the table of tm, made once per table map and barrier:
// the relay reader hands out one table map per table while its map stays
// the same, and nothing changes a table map once decoded, so the names,
// the catalog's look-up and the hashes are not paid per row event.
func (p *Writeset) tableOf(tm *replication.TableMapEvent) (*mappedTable, error) {
	if t, ok := p.tables[tm]; ok && t.generation == p.generation {
		return t, nil
	}
	schema, table := p.name(tm.Schema), p.name(tm.Table)
	info, err := p.catalog.Table(schema, table)
	if err != nil {
		return nil, err
	}
	if p.tables == nil || len(p.tables) >= maxNames {
		p.tables = make(map[*replication.TableMapEvent]*mappedTable)
	}
	t := &mappedTable{schema: schema, table: table, info: info, hashes: p.tableHashes(schema, table, info), generation: p.generation}
	p.tables[tm] = t
	return t, nil
}

// maxNames bounds the names kept (Writeset.name), the tables whose
// hashes are kept (tableHashes), and the table maps (tableOf).
const maxNames = 4096

// tableHashes are the hashes of a table's resource and of its keys'
// prefixes (tableResource, keyPrefixes), made once per table and the
// catalog's answer for it.
type tableHashes struct {
	info     *TableInfo // the catalog's answer they were made from
	table    uint64
	prefixes []uint64
}

type tableName struct{ schema, table string }

// tableHashes returns the hashes of schema.table, made again when the
// catalog gives another answer for it (after a DDL).
func (p *Writeset) tableHashes(schema, table string, info *TableInfo) *tableHashes {
	name := tableName{schema, table}
	if h, ok := p.hashes[name]; ok && h.info == info {
		return h
	}
	if p.hashes == nil || len(p.hashes) >= maxNames {
		p.hashes = make(map[tableName]*tableHashes)
	}
	h := &tableHashes{info: info, table: tableResource(schema, table)}
	if info != nil {
		h.prefixes = keyPrefixes(nil, schema, table, info)
	}
	p.hashes[name] = h
	return h
}

// keyPrefixes appends, per key of a table, the hash of its database, table
// and index, names folded as tableResource folds them: a statement may
// spell a table in another case than the row events do.
func keyPrefixes(prefixes []uint64, schema, table string, info *TableInfo) []uint64 {
	schema, table = strings.ToLower(schema), strings.ToLower(table)
	for _, key := range info.Keys {
		h := fnvString(fnvByte(fnvString(fnvByte(fnvString(fnvOffset, schema), 0), table), 0), key.Name)
		prefixes = append(prefixes, h)
	}
	return prefixes
}

const (
	keyOK = iota
	keyNull
	keyMissing
)

func (p *Writeset) warnOnce(msg string) {
	if !p.warned && p.Warn != nil {
		p.Warn(msg)
	}
	p.warned = true
}

// keyHash hashes one key of one row image, starting from prefix (the hash
// of database, table and index); state tells a NULL or a missing column.
func keyHash(prefix uint64, key UniqueKey, row []interface{}, skipped []int) (uint64, int) {
	h := prefix
	for i, col := range key.Columns {
		if col >= len(row) || contains(skipped, col) {
			return 0, keyMissing
		}
		if row[col] == nil {
			return 0, keyNull
		}
		h = fnvByte(h, 1)
		switch v := row[col].(type) {
		case string:
			h = fnvString(h, Comparable(v, key.Fold[i], key.Pad[i], key.Prefix[i]))
		case []byte:
			h = fnvString(h, Comparable(string(v), key.Fold[i], key.Pad[i], key.Prefix[i]))
		case int8, int16, int32, int64, int:
			h = fnvUint64(h, uint64(toInt64(v)))
		case uint8, uint16, uint32, uint64, uint:
			h = fnvUint64(h, toUint64(v))
		case float32:
			h = fnvUint64(h, math.Float64bits(float64(v)))
		case float64:
			h = fnvUint64(h, math.Float64bits(v))
		default:
			h = fnvString(h, fmt.Sprint(v))
		}
	}
	return h, keyOK
}

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, s []byte) uint64 {
	for _, c := range s {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvUint64(h, v uint64) uint64 {
	for range 8 {
		h = fnvByte(h, byte(v))
		v >>= 8
	}
	return h
}

// Comparable reduces a string to what the index compares. Folding is
// deliberately coarse (lower case, accents dropped): two strings the index
// tells apart may hash alike, which only costs parallelism, never safety.
func Comparable(v string, fold, pad bool, prefix int) string {
	// An index prefix counts characters, or bytes for binary columns. Folded
	// strings are cut after folding, in characters, since folding changes
	// lengths; other strings are cut in bytes, never longer than in characters.
	if fold {
		v = foldString(v)
		if prefix > 0 {
			if r := []rune(v); len(r) > prefix {
				v = string(r[:prefix])
			}
		}
	} else if prefix > 0 && len(v) > prefix {
		v = v[:prefix]
	}
	if pad {
		v = strings.TrimRight(v, " ")
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
