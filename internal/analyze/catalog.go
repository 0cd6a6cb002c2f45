// catalog.go says which unique keys each table has, for the writeset policy
// and for the report: either read from a server holding the tables
// (--schema-from, the logic of internal/apply/catalog.go), or taken from the
// primary key metadata of the binlog's table map events
// (binlog_row_metadata=FULL).
//
// Invariant: a table whose keys are not known is reported as unknown (nil),
// never as keyless, and the writeset policy then takes the whole table,
// which is always safe.
package analyze

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/schedule"
	"gapless/internal/target"
)

// KeySource says where the unique keys came from.
type KeySource string

const (
	KeysFromServer   KeySource = "server"    // --schema-from
	KeysFromTableMap KeySource = "table-map" // primary keys in the table map metadata
	KeysNone         KeySource = "none"      // no server and no metadata: writeset works per table
)

// tableKeys is what one table map (or the server) says of a table.
type tableKeys struct {
	info *schedule.TableInfo // nil when unknown
	// known is true when the source could tell whether the table has keys.
	known bool
}

// hasPrimary reports whether the table is known to have a primary key.
func (k *tableKeys) hasPrimary() bool {
	if k == nil || k.info == nil {
		return false
	}
	for _, key := range k.info.Keys {
		if key.Name == "PRIMARY" {
			return true
		}
	}
	return false
}

// unknownKeys stands for every table whose keys are not known.
var unknownKeys = &tableKeys{}

// keysFromTableMap derives a table's primary key from the table map's
// optional metadata. String columns are folded and trimmed: two values the
// index tells apart may then meet, which costs parallelism, never safety.
func keysFromTableMap(tm *replication.TableMapEvent) *tableKeys {
	if len(tm.ColumnName) == 0 && len(tm.PrimaryKey) == 0 {
		return &tableKeys{} // binlog_row_metadata is not FULL
	}
	info := &schedule.TableInfo{}
	if len(tm.PrimaryKey) > 0 {
		key := schedule.UniqueKey{Name: "PRIMARY"}
		for i, col := range tm.PrimaryKey {
			text := tm.IsCharacterColumn(int(col))
			key.Columns = append(key.Columns, int(col))
			key.Fold = append(key.Fold, text)
			key.Pad = append(key.Pad, text)
			prefix := 0
			if i < len(tm.PrimaryKeyPrefix) {
				prefix = int(tm.PrimaryKeyPrefix[i])
			}
			key.Prefix = append(key.Prefix, prefix)
		}
		info.Keys = []schedule.UniqueKey{key}
	}
	return &tableKeys{info: info, known: true}
}

// tableKeyCache derives tables' keys from table maps, once per table as
// long as its table maps say the same; one per decode goroutine.
type tableKeyCache map[binlog.TableRef]cachedKeys

type cachedKeys struct {
	columns uint64
	primary []uint64
	prefix  []uint64
	names   int
	keys    *tableKeys
}

// keysOf returns the keys a transaction's table maps describe.
func (c tableKeyCache) keysOf(txn *binlog.Transaction) []tableKeysOf {
	var out []tableKeysOf
	for _, ev := range txn.Events {
		tm, ok := ev.Data.(*replication.TableMapEvent)
		if !ok {
			continue
		}
		ref := binlog.TableRef{Schema: string(tm.Schema), Table: string(tm.Table)}
		cached, ok := c[ref]
		if !ok || cached.columns != tm.ColumnCount || cached.names != len(tm.ColumnName) ||
			!slices.Equal(cached.primary, tm.PrimaryKey) || !slices.Equal(cached.prefix, tm.PrimaryKeyPrefix) {
			cached = cachedKeys{columns: tm.ColumnCount, primary: tm.PrimaryKey, prefix: tm.PrimaryKeyPrefix,
				names: len(tm.ColumnName), keys: keysFromTableMap(tm)}
			c[ref] = cached
		}
		out = append(out, tableKeysOf{ref: ref, keys: cached.keys})
	}
	return out
}

type tableKeysOf struct {
	ref  binlog.TableRef
	keys *tableKeys
}

// keyLookup answers "what keys does this table have" for the transaction
// being looked at; it implements schedule.Catalog for the writeset policy.
type keyLookup struct {
	source  KeySource
	server  *serverCatalog
	current *txnInfo
}

func (c *keyLookup) keys(schema, table string) (*tableKeys, error) {
	switch c.source {
	case KeysFromServer:
		return c.server.keys(schema, table)
	case KeysFromTableMap:
		if c.current != nil {
			for _, k := range c.current.tableKeys {
				if k.ref.Table == table && k.ref.Schema == schema {
					return k.keys, nil
				}
			}
		}
	}
	return unknownKeys, nil
}

func (c *keyLookup) Table(schema, table string) (*schedule.TableInfo, error) {
	k, err := c.keys(schema, table)
	if err != nil {
		return nil, err
	}
	return k.info, nil
}

// Invalidate does nothing: a server shows today's definitions whatever DDL
// the binlog holds, and table maps are read afresh for every transaction.
func (c *keyLookup) Invalidate() {}

// serverCatalog reads key definitions from information_schema; safe for
// concurrent use.
type serverCatalog struct {
	cat    *target.Catalog
	mu     sync.Mutex
	tables map[binlog.TableRef]*tableKeys
}

func newServerCatalog(db *sql.DB) *serverCatalog {
	return &serverCatalog{cat: target.NewCatalog(db), tables: make(map[binlog.TableRef]*tableKeys)}
}

func (c *serverCatalog) keys(schema, table string) (*tableKeys, error) {
	name := binlog.TableRef{Schema: schema, Table: table}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.tables[name]; ok {
		return k, nil
	}
	info, err := c.cat.Read(schema, table)
	if err != nil {
		return nil, fmt.Errorf("read the keys of %s.%s from --schema-from: %w", schema, table, err)
	}
	k := &tableKeys{info: info, known: info != nil}
	c.tables[name] = k
	return k, nil
}
