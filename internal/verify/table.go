// This file owns the comparison of one table that exists on both sides. Each
// side is read through a connection of its own inside a consistent snapshot,
// and every connection goes back to its pool with the session settings it
// came with, or is discarded.
package verify

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"strings"
	"time"
)

const releaseTimeout = 10 * time.Second

type comparer struct {
	source, target *sql.DB
	chunkRows      int
	progress       func(string)
	// foldNames: a server folds table names to lower case
	// (lower_case_table_names), so names match whatever their case.
	foldNames bool
}

// quotedToken is a string literal or a backquoted name in SHOW CREATE
// TABLE's output (a literal first, so that a backquote inside one is not
// taken for a name's).
var quotedToken = regexp.MustCompile("'(?:[^'\\\\]|\\\\.|'')*'|`(?:[^`]|``)*`")

// lowerIdentifiers lowers the case of every backquoted name in a
// definition (the table's, its columns', its keys' and the tables its
// foreign keys name), leaving literals as they are.
func lowerIdentifiers(def string) string {
	return quotedToken.ReplaceAllStringFunc(def, func(tok string) string {
		if tok[0] == '`' {
			return strings.ToLower(tok)
		}
		return tok
	})
}

// compareTable settles one table: equal checksums make it equal; otherwise
// its definitions are compared, then its rows. It holds one connection of
// each pool, each inside its own snapshot, until the table is settled.
func (c *comparer) compareTable(ctx context.Context, t *TableResult) error {
	name := tableName{t.Schema, t.Table}
	onTarget := t.onTarget
	if onTarget == (tableName{}) {
		onTarget = name
	}
	src, err := openSnapshot(ctx, c.source, "source")
	if err != nil {
		return err
	}
	defer src.release()
	tgt, err := openSnapshot(ctx, c.target, "target")
	if err != nil {
		return err
	}
	defer tgt.release()
	p := tableSides{name: name, onTarget: onTarget, src: src, tgt: tgt}

	if equal, err := c.checksumsEqual(ctx, p, t); err != nil || equal {
		return err
	}
	srcDef, tgtDef, err := p.readDefinitions(ctx)
	if err != nil {
		return err
	}
	if !c.sameDefinition(srcDef.create, tgtDef.create) {
		return c.compareDifferentDefinitions(ctx, p, t, srcDef.shape, tgtDef.shape)
	}
	return c.compareRowsBehindChecksums(ctx, p, t, srcDef.shape, tgtDef.shape)
}

// tableSides is one table as each side names it, with the snapshot each
// side is read through.
type tableSides struct {
	name, onTarget tableName
	src, tgt       *snapshot
}

// tableDefinition is a table's SHOW CREATE TABLE, as snapshot.definition
// gives it, and its columns and primary key.
type tableDefinition struct {
	create string
	shape  tableShape
}

// checksumsEqual reports whether both sides' checksums are known and equal,
// and then marks t equal.
func (c *comparer) checksumsEqual(ctx context.Context, p tableSides, t *TableResult) (bool, error) {
	c.progress(fmt.Sprintf("%s: checksumming", p.name))
	srcSum, err := p.src.checksum(ctx, p.name)
	if err != nil {
		return false, err
	}
	tgtSum, err := p.tgt.checksum(ctx, p.onTarget)
	if err != nil {
		return false, err
	}
	if srcSum.Valid && tgtSum.Valid && srcSum.String == tgtSum.String {
		t.Status = StatusEqual
		c.progress(fmt.Sprintf("%s: equal (checksum %s)", p.name, srcSum.String))
		return true, nil
	}
	return false, nil
}

// readDefinitions reads both sides' SHOW CREATE TABLE, then both sides'
// columns and keys.
func (p tableSides) readDefinitions(ctx context.Context) (source, target tableDefinition, err error) {
	if source.create, err = p.src.definition(ctx, p.name); err != nil {
		return source, target, err
	}
	if target.create, err = p.tgt.definition(ctx, p.onTarget); err != nil {
		return source, target, err
	}
	if source.shape, err = p.src.shape(ctx, p.name); err != nil {
		return source, target, err
	}
	if target.shape, err = p.tgt.shape(ctx, p.onTarget); err != nil {
		return source, target, err
	}
	return source, target, nil
}

// sameDefinition compares two definitions; names differ in case only where
// a server folds them.
func (c *comparer) sameDefinition(source, target string) bool {
	if c.foldNames {
		source, target = lowerIdentifiers(source), lowerIdentifiers(target)
	}
	return source == target
}

// compareDifferentDefinitions marks t different and says how: by the
// columns only one side has, with each side's row count, or else by the
// first row that differs (or that all rows match).
func (c *comparer) compareDifferentDefinitions(ctx context.Context, p tableSides, t *TableResult, srcShape, tgtShape tableShape) error {
	t.Status = StatusDifferent
	t.Detail = "definition differs"
	aligned, mismatch := alignColumns(srcShape, tgtShape)
	if mismatch != "" {
		t.Detail += " (" + mismatch + ")"
		var err error
		if t.SourceRows, err = p.src.countRows(ctx, p.name); err != nil {
			return err
		}
		t.TargetRows, err = p.tgt.countRows(ctx, p.onTarget)
		return err
	}
	c.progress(fmt.Sprintf("%s: definition differs, comparing rows", p.name))
	first, err := c.compareAlignedRows(ctx, p, t, srcShape, aligned)
	if err != nil {
		return err
	}
	if first == "" {
		t.Detail += "; rows match"
	} else {
		t.Detail += "; " + first
	}
	return nil
}

// compareRowsBehindChecksums settles a table whose definitions match but
// whose checksums differ (or are unknown) by its rows: equal when every row
// matches, which a difference in storage format alone allows.
func (c *comparer) compareRowsBehindChecksums(ctx context.Context, p tableSides, t *TableResult, srcShape, tgtShape tableShape) error {
	c.progress(fmt.Sprintf("%s: checksums differ, comparing rows", p.name))
	aligned, _ := alignColumns(srcShape, tgtShape)
	first, err := c.compareAlignedRows(ctx, p, t, srcShape, aligned)
	if err != nil {
		return err
	}
	if first == "" {
		t.Status = StatusEqual
		t.Detail = fmt.Sprintf("checksums differ but all %d rows match", t.SourceRows)
	} else {
		t.Status = StatusDifferent
		t.Detail = first
	}
	return nil
}

// compareAlignedRows compares the rows of both sides, the target's columns
// aligned with the source's, records each side's row count in t and returns
// the first difference ("" when every row matches).
func (c *comparer) compareAlignedRows(ctx context.Context, p tableSides, t *TableResult, srcShape, aligned tableShape) (string, error) {
	diff, err := c.compareRows(ctx, p.name, p.onTarget, p.src, p.tgt, srcShape, aligned)
	if err != nil {
		return "", err
	}
	t.SourceRows, t.TargetRows = diff.sourceRows, diff.targetRows
	return diff.first, nil
}

// snapshot is one side's connection inside a consistent-snapshot transaction.
type snapshot struct {
	side string // "source" or "target"
	conn *sql.Conn
	// resultsCharset is the character set column values arrive in; "" when
	// the server sends them in each column's own character set.
	resultsCharset string
	savedTimeZone  string
	broken         bool
}

func openSnapshot(ctx context.Context, db *sql.DB, side string) (*snapshot, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: getting a connection: %w", side, err)
	}
	s := &snapshot{side: side, conn: conn}
	var charset sql.NullString
	err = conn.QueryRowContext(ctx, "SELECT @@session.time_zone, @@session.character_set_results").Scan(&s.savedTimeZone, &charset)
	if err != nil {
		s.broken = true
		s.release()
		return nil, s.errorf("reading session settings: %w", err)
	}
	if charset.String != "binary" {
		s.resultsCharset = charset.String
	}
	for _, stmt := range []string{
		"SET SESSION time_zone = '+00:00'",
		"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"START TRANSACTION WITH CONSISTENT SNAPSHOT",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			s.broken = true
			s.release()
			return nil, s.errorf("%s: %w", stmt, err)
		}
	}
	return s, nil
}

// release ends the transaction and restores the session, or discards the
// connection when that is not possible.
func (s *snapshot) release() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if !s.broken {
		if _, err := s.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			s.broken = true
		}
	}
	if !s.broken {
		_, err := s.conn.ExecContext(ctx, "SET SESSION time_zone = ?", s.savedTimeZone)
		s.broken = err != nil
	}
	if s.broken {
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = s.conn.Close()
}

func (s *snapshot) errorf(format string, args ...any) error {
	return fmt.Errorf(s.side+": "+format, args...)
}

func (s *snapshot) checksum(ctx context.Context, name tableName) (sql.NullString, error) {
	var table string
	var sum sql.NullString
	err := s.conn.QueryRowContext(ctx, "CHECKSUM TABLE "+quoteName(name)+" EXTENDED").Scan(&table, &sum)
	if err != nil {
		return sum, s.errorf("CHECKSUM TABLE %s: %w", name, err)
	}
	return sum, nil
}

var autoIncrementOption = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// oldTemporalFormat is how SHOW CREATE TABLE marks a TIME, DATETIME or
// TIMESTAMP column stored in MariaDB's pre-10.1 format: a table made under
// mysql56_temporal_format=OFF, which is a server setting the binlog does not
// carry, so a replica makes the column in the current format. The values
// are the same; only their storage differs.
var oldTemporalFormat = regexp.MustCompile(` /\* mariadb-5\.3 \*/`)

// definition is SHOW CREATE TABLE without the AUTO_INCREMENT counter and the
// old temporal format marks, which legitimately differ between servers
// holding the same rows (the rows are compared one by one when the
// checksums, which see the storage format, differ).
func (s *snapshot) definition(ctx context.Context, name tableName) (string, error) {
	var table, create string
	if err := s.conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+quoteName(name)).Scan(&table, &create); err != nil {
		return "", s.errorf("SHOW CREATE TABLE %s: %w", name, err)
	}
	return oldTemporalFormat.ReplaceAllString(autoIncrementOption.ReplaceAllString(create, ""), ""), nil
}

func (s *snapshot) countRows(ctx context.Context, name tableName) (int64, error) {
	var n int64
	if err := s.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteName(name)).Scan(&n); err != nil {
		return 0, s.errorf("counting rows of %s: %w", name, err)
	}
	return n, nil
}

// column is what row comparison needs to know about a column.
type column struct {
	name      string
	dataType  string // information_schema DATA_TYPE, e.g. "int", "varchar"
	charset   string // "" for non-character columns
	collation string
}

// tableShape is a table's columns in a chosen order and which of them, in
// key order, form the primary key (none when the table has no primary key).
type tableShape struct {
	columns    []column
	primaryKey []int
}

func (s *snapshot) shape(ctx context.Context, name tableName) (tableShape, error) {
	var shape tableShape
	rows, err := s.conn.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, '')"+
		" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", name.schema, name.table)
	if err != nil {
		return shape, s.errorf("reading columns of %s: %w", name, err)
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.dataType, &c.charset, &c.collation); err != nil {
			rows.Close()
			return shape, s.errorf("reading columns of %s: %w", name, err)
		}
		c.dataType = strings.ToLower(c.dataType)
		shape.columns = append(shape.columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return shape, s.errorf("reading columns of %s: %w", name, err)
	}

	rows, err = s.conn.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.STATISTICS"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX", name.schema, name.table)
	if err != nil {
		return shape, s.errorf("reading primary key of %s: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			return shape, s.errorf("reading primary key of %s: %w", name, err)
		}
		i := shape.index(col)
		if i < 0 {
			return shape, s.errorf("primary key column %s of %s is not among its columns", col, name)
		}
		shape.primaryKey = append(shape.primaryKey, i)
	}
	if err := rows.Err(); err != nil {
		return shape, s.errorf("reading primary key of %s: %w", name, err)
	}
	return shape, nil
}

func (t tableShape) index(name string) int {
	for i, c := range t.columns {
		if strings.EqualFold(c.name, name) {
			return i
		}
	}
	return -1
}

// alignColumns orders the target's columns like the source's and gives it
// the source's key, so rows of both sides can be compared field by field.
// When the two have different column names it returns a description of the
// mismatch instead.
func alignColumns(source, target tableShape) (tableShape, string) {
	aligned := tableShape{primaryKey: source.primaryKey}
	var onlySource, onlyTarget []string
	for _, c := range source.columns {
		i := target.index(c.name)
		if i < 0 {
			onlySource = append(onlySource, c.name)
			continue
		}
		aligned.columns = append(aligned.columns, target.columns[i])
	}
	for _, c := range target.columns {
		if source.index(c.name) < 0 {
			onlyTarget = append(onlyTarget, c.name)
		}
	}
	var parts []string
	if len(onlySource) > 0 {
		parts = append(parts, plural(len(onlySource), "column ", "columns ")+strings.Join(onlySource, ", ")+" only on source")
	}
	if len(onlyTarget) > 0 {
		parts = append(parts, plural(len(onlyTarget), "column ", "columns ")+strings.Join(onlyTarget, ", ")+" only on target")
	}
	return aligned, strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteName(n tableName) string {
	return quoteIdent(n.schema) + "." + quoteIdent(n.table)
}
