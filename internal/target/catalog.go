// catalog.go reads the keys of the target's tables for the writeset policy.
// The target is at the same point of history as the applier, so its
// definitions are the ones the row events were written under; after a DDL
// (a barrier: nothing runs beside it) the cache is dropped and read again.
package target

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gapless/internal/schedule"
)

type tableName struct{ schema, table string }

// catalogPatience is how long a read of the catalog waits out a target that
// went away, or a lock (patiently).
const catalogPatience = 5 * time.Minute

// patiently runs read, a read of the target's catalog, again while it
// fails as a transaction may and then succeed (IsTransient): a target that
// went away (the workers wait for it too), or a lock wait timeout or
// deadlock, which a Galera node answers a read of information_schema
// while the cluster rolls back the transactions of a node that left it.
func patiently(read func() error) error {
	err := read()
	for wait, deadline := 100*time.Millisecond, time.Now().Add(catalogPatience); err != nil && IsTransient(err) && time.Now().Before(deadline); wait = min(2*wait, 5*time.Second) {
		time.Sleep(wait)
		err = read()
	}
	return err
}

// Catalog implements schedule.Catalog for the target, caching each table's keys.
type Catalog struct {
	db     *sql.DB
	tables map[tableName]*schedule.TableInfo
	// inForeignKey holds every table that takes part in a foreign key, as
	// child or parent; nil until read (foreignKeyTables).
	inForeignKey map[tableName]bool
}

// NewCatalog reads keys from db.
func NewCatalog(db *sql.DB) *Catalog {
	return &Catalog{db: db, tables: make(map[tableName]*schedule.TableInfo)}
}

func (c *Catalog) Invalidate() {
	clear(c.tables)
	c.inForeignKey = nil
}

func (c *Catalog) Table(schema, table string) (*schedule.TableInfo, error) {
	name := tableName{schema, table}
	if info, ok := c.tables[name]; ok {
		return info, nil
	}
	// A target restart or a lock wait is waited out (patiently); any
	// other error stops the run.
	var info *schedule.TableInfo
	err := patiently(func() (err error) {
		info, err = c.Read(schema, table)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the keys of %s.%s on the target: %w", schema, table, err)
	}
	c.tables[name] = info
	return info, nil
}

// Read reads one table's primary and unique keys from the server, whether it
// takes part in a foreign key, now and without caching them; nil when the
// table does not exist. Not safe for concurrent use.
func (c *Catalog) Read(schema, table string) (*schedule.TableInfo, error) {
	ctx := context.Background()
	info, err := readKeys(ctx, c.db, schema, table)
	if err != nil || info == nil {
		return info, err
	}
	if c.inForeignKey == nil {
		if c.inForeignKey, err = foreignKeyTables(ctx, c.db); err != nil {
			return nil, err
		}
	}
	info.ForeignKeys = c.inForeignKey[tableName{schema, table}]
	return info, nil
}

// foreignKeyTables lists every table that takes part in a foreign key. It
// reads InnoDB's dictionary, which costs well under a millisecond however
// many tables the server has. Where that is not readable (it takes the
// PROCESS privilege) or names a table in a form decodeFileName does not
// know, it asks information_schema.REFERENTIAL_CONSTRAINTS, which opens every
// table of the server: measured on MariaDB 10.11 with 2 000 tables, 1.1 s
// the first time and 74 ms after, at the start and after every DDL.
func foreignKeyTables(ctx context.Context, db *sql.DB) (map[tableName]bool, error) {
	if in, ok := dictionaryForeignKeyTables(ctx, db); ok {
		return in, nil
	}
	rows, err := db.QueryContext(ctx, `
		SELECT CONSTRAINT_SCHEMA, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME
		FROM information_schema.REFERENTIAL_CONSTRAINTS`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	in := map[tableName]bool{}
	for rows.Next() {
		var child, parent tableName
		if err := rows.Scan(&child.schema, &child.table, &parent.schema, &parent.table); err != nil {
			return nil, err
		}
		in[child], in[parent] = true, true
	}
	return in, rows.Err()
}

// dictionaryForeignKeyTables reads the tables of every foreign key from
// InnoDB's dictionary, where they are named "database/table" in the
// server's file-name encoding; ok is false when it cannot.
func dictionaryForeignKeyTables(ctx context.Context, db *sql.DB) (in map[tableName]bool, ok bool) {
	rows, err := db.QueryContext(ctx, "SELECT FOR_NAME, REF_NAME FROM information_schema.INNODB_SYS_FOREIGN")
	if err != nil {
		return nil, false
	}
	defer rows.Close()
	in = map[tableName]bool{}
	for rows.Next() {
		var child, parent string
		if rows.Scan(&child, &parent) != nil {
			return nil, false
		}
		for _, path := range []string{child, parent} {
			schema, table, found := strings.Cut(path, "/")
			schema, okSchema := decodeFileName(schema)
			table, okTable := decodeFileName(table)
			if !found || !okSchema || !okTable {
				return nil, false
			}
			in[tableName{schema, table}] = true
		}
	}
	return in, rows.Err() == nil
}

// decodeFileName turns a database or table name from the server's file-name
// encoding back into the name: a character other than ASCII letters,
// digits and underscore is "@" and four hex digits of its code point. A
// letter of some other alphabets has a shorter code ("@0G"); for those ok is
// false.
func decodeFileName(s string) (name string, ok bool) {
	if !strings.Contains(s, "@") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			b.WriteByte(s[i])
			continue
		}
		if i+5 > len(s) {
			return "", false
		}
		code, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
		if err != nil {
			return "", false
		}
		b.WriteRune(rune(code))
		i += 4
	}
	return b.String(), true
}

// readKeys reads a table's primary and unique keys; nil when the table does not exist.
func readKeys(ctx context.Context, db *sql.DB, schema, table string) (*schedule.TableInfo, error) {
	name := quoteName(schema) + "." + quoteName(table)
	columns, err := QueryRows(ctx, db, "SHOW FULL COLUMNS FROM "+name)
	if err != nil {
		if code, _ := errorCode(err); code == 1146 || code == 1049 {
			return nil, nil // not (yet) on the target
		}
		return nil, err
	}
	position := map[string]int{}
	collation := map[string]string{}
	info := &schedule.TableInfo{}
	for i, col := range columns {
		position[col["Field"]] = i
		collation[col["Field"]] = strings.ToLower(col["Collation"])
		info.Columns = append(info.Columns, schedule.Column{
			Name:        strings.ToLower(col["Field"]),
			IntegerBits: integerBits(col["Type"]),
			Plain:       plainColumn(col["Extra"]),
		})
	}
	indexes, err := QueryRows(ctx, db, "SHOW INDEX FROM "+name)
	if err != nil {
		return nil, err
	}
	var key *schedule.UniqueKey
	for _, ix := range indexes {
		if ix["Non_unique"] != "0" {
			continue
		}
		if key == nil || key.Name != ix["Key_name"] {
			info.Keys = append(info.Keys, schedule.UniqueKey{Name: ix["Key_name"]})
			key = &info.Keys[len(info.Keys)-1]
		}
		col := ix["Column_name"]
		if _, ok := position[col]; !ok {
			// A key over a column SHOW COLUMNS does not show (a hidden
			// one): statements on the table take it whole.
			info.Columns = nil
		}
		prefix, _ := strconv.Atoi(ix["Sub_part"])
		coll := collation[col]
		key.Columns = append(key.Columns, position[col])
		key.Fold = append(key.Fold, strings.Contains(coll, "_ci") || strings.Contains(coll, "_ai"))
		key.Pad = append(key.Pad, coll != "" && !strings.Contains(coll, "nopad"))
		key.Prefix = append(key.Prefix, prefix)
	}
	// The primary key first: it is the one a row image cannot lack.
	sort.SliceStable(info.Keys, func(i, j int) bool { return info.Keys[i].Name == "PRIMARY" && info.Keys[j].Name != "PRIMARY" })
	return info, nil
}

// integerBits returns the width of an integer column type as SHOW COLUMNS
// writes it ("int(10) unsigned"), 0 for any other type.
func integerBits(columnType string) int {
	name, _, _ := strings.Cut(strings.ToLower(columnType), "(")
	name, _, _ = strings.Cut(name, " ")
	switch name {
	case "tinyint":
		return 8
	case "smallint":
		return 16
	case "mediumint":
		return 24
	case "int", "integer":
		return 32
	case "bigint":
		return 64
	}
	return 0
}

// plainColumn reports whether a column, by SHOW COLUMNS' Extra, is one the
// server fills only from what a statement says: not generated, not a
// system-versioning row start or end, not set ON UPDATE. Anything Extra may
// say that is not known here counts as not plain.
func plainColumn(extra string) bool {
	for _, word := range strings.Fields(strings.ToLower(extra)) {
		if word != "auto_increment" && word != "invisible" {
			return false
		}
	}
	return true
}

// QueryRows runs a SHOW statement and returns its rows by column name.
func QueryRows(ctx context.Context, db *sql.DB, query string) ([]map[string]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for rows.Next() {
		values := make([]sql.NullString, len(names))
		ptrs := make([]any, len(names))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]string, len(names))
		for i, n := range names {
			row[n] = values[i].String
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
