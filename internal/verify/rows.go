// This file owns the row-by-row comparison of one table. Both sides are read
// in the same order (primary key, or a digest of the whole row when there is
// no primary key) and walked in step; the first pair of rows that differ is
// described and the rest of each side is only counted. A row is a slice of
// column values, each nil (NULL) or the value's text: the bytes the server
// sent, or the driver's number written back in Go's shortest form.
package verify

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type rowDiff struct {
	sourceRows, targetRows int64
	first                  string // "" when every row matches
}

// compareRows compares the rows of name on the source with those of
// onTarget, the same table as the target names it.
func (c *comparer) compareRows(ctx context.Context, name, onTarget tableName, src, tgt *snapshot, srcShape, tgtShape tableShape) (rowDiff, error) {
	sc := newCursor(src, name, srcShape, c.chunkRows)
	defer sc.close()
	tc := newCursor(tgt, onTarget, tgtShape, c.chunkRows)
	defer tc.close()
	progressEvery := int64(max(c.chunkRows, 100000))
	var matched int64
	for {
		sr, sok, err := sc.next(ctx)
		if err != nil {
			return rowDiff{}, err
		}
		tr, tok, err := tc.next(ctx)
		if err != nil {
			return rowDiff{}, err
		}
		if !sok && !tok {
			return rowDiff{sourceRows: sc.read, targetRows: tc.read}, nil
		}
		if sok && tok && rowsEqual(sr, tr) {
			matched++
			if matched%progressEvery == 0 {
				c.progress(fmt.Sprintf("%s: %d rows compared", name, matched))
			}
			continue
		}
		var diff rowDiff
		if diff.first, err = describeDifference(ctx, sc, tc, sr, tr); err != nil {
			return rowDiff{}, err
		}
		if diff.sourceRows, err = sc.count(ctx); err != nil {
			return rowDiff{}, err
		}
		if diff.targetRows, err = tc.count(ctx); err != nil {
			return rowDiff{}, err
		}
		return diff, nil
	}
}

// describeDifference explains the first pair of rows that differ; a nil row
// means that side has no more rows.
func describeDifference(ctx context.Context, sc, tc *cursor, sr, tr []any) (string, error) {
	shape := sc.shape
	if len(shape.primaryKey) == 0 {
		// Rows are in digest order, so the row with the smaller digest is the
		// one the other side lacks (or has fewer copies of).
		if tr == nil || sr != nil && bytes.Compare(sr[len(sr)-1].([]byte), tr[len(tr)-1].([]byte)) < 0 {
			return "row " + shape.formatRow(sr) + " missing on target", nil
		}
		return "row " + shape.formatRow(tr) + " extra on target", nil
	}
	switch {
	case tr == nil:
		return shape.formatKey(sr) + " missing on target", nil
	case sr == nil:
		return shape.formatKey(tr) + " only on target", nil
	}
	if rowsEqual(shape.key(sr), shape.key(tr)) {
		var cols []string
		for i := range shape.columns {
			if !fieldEqual(sr[i], tr[i]) {
				cols = append(cols, shape.columns[i].name)
			}
		}
		return fmt.Sprintf("%s differs in %s%s", shape.formatKey(sr), plural(len(cols), "column ", "columns "), strings.Join(cols, ", ")), nil
	}
	// Both sides are in key order and agreed so far, so the smaller of the
	// two keys is absent from the other side; equality lookups find which.
	sourceKeyOnTarget, ok1, err := tc.hasKey(ctx, shape.key(sr))
	if err != nil {
		return "", err
	}
	targetKeyOnSource, ok2, err := sc.hasKey(ctx, shape.key(tr))
	if err != nil {
		return "", err
	}
	missing := shape.formatKey(sr) + " missing on target"
	extra := shape.formatKey(tr) + " only on target"
	switch {
	case !ok1 || !ok2 || sourceKeyOnTarget && targetKeyOnSource:
		return fmt.Sprintf("source has %s where target has %s", shape.formatKey(sr), shape.formatKey(tr)), nil
	case !sourceKeyOnTarget && targetKeyOnSource:
		return missing, nil
	case sourceKeyOnTarget && !targetKeyOnSource:
		return extra, nil
	default:
		return missing + ", " + extra, nil
	}
}

func fieldEqual(a, b any) bool {
	ab, aok := a.([]byte)
	bb, bok := b.([]byte)
	if !aok || !bok {
		return a == nil && b == nil
	}
	return bytes.Equal(ab, bb)
}

func rowsEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !fieldEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// cursor reads one side of a table in order. With a primary key whose
// columns can be written back as literals it reads chunkRows rows per query,
// each query starting after the last key read; otherwise it streams the
// whole table from one query. Without a primary key each row carries its
// digest (see rowDigest) as an extra last field, and rows come in digest order.
type cursor struct {
	snap      *snapshot
	table     tableName
	shape     tableShape
	chunkRows int

	pending   [][]any
	stream    *sql.Rows
	started   bool
	exhausted bool
	lastKey   []any
	read      int64
}

func newCursor(snap *snapshot, table tableName, shape tableShape, chunkRows int) *cursor {
	c := &cursor{snap: snap, table: table, shape: shape}
	if len(shape.primaryKey) > 0 {
		c.chunkRows = chunkRows
		for _, i := range shape.primaryKey {
			if !literalSupported(shape.columns[i].dataType) {
				c.chunkRows = 0
			}
		}
	}
	return c
}

func (c *cursor) selectList() string {
	names := make([]string, len(c.shape.columns))
	for i, col := range c.shape.columns {
		names[i] = quoteIdent(col.name)
	}
	if len(c.shape.primaryKey) == 0 {
		names = append(names, c.shape.rowDigest())
	}
	return strings.Join(names, ", ")
}

func (c *cursor) orderBy() string {
	if len(c.shape.primaryKey) == 0 {
		return fmt.Sprint(len(c.shape.columns) + 1)
	}
	terms := make([]string, len(c.shape.primaryKey))
	for i, col := range c.shape.primaryKey {
		terms[i] = quoteIdent(c.shape.columns[col].name)
	}
	return strings.Join(terms, ", ")
}

// rowDigest is an expression that differs between any two rows that differ
// (barring MD5 collisions) and stays short however long the values are, so
// sorting by it orders rows without ties and within the sort buffer.
func (t tableShape) rowDigest() string {
	parts := make([]string, len(t.columns))
	for i, col := range t.columns {
		parts[i] = "COALESCE(MD5(CAST(" + quoteIdent(col.name) + " AS BINARY)), 'N')"
	}
	return "MD5(CONCAT(" + strings.Join(parts, ", ") + "))"
}

// next returns the next row, or ok=false when the side has no more rows.
func (c *cursor) next(ctx context.Context) (row []any, ok bool, err error) {
	if c.chunkRows == 0 {
		return c.nextStreamed(ctx)
	}
	if len(c.pending) == 0 && !c.exhausted {
		if err := c.fetchChunk(ctx); err != nil {
			return nil, false, err
		}
	}
	if len(c.pending) == 0 {
		return nil, false, nil
	}
	row = c.pending[0]
	c.pending = c.pending[1:]
	c.read++
	return row, true, nil
}

func (c *cursor) fetchChunk(ctx context.Context) error {
	query := "SELECT " + c.selectList() + " FROM " + quoteName(c.table)
	if c.lastKey != nil {
		after, ok := c.afterKey(c.lastKey)
		if !ok {
			return c.snap.errorf("%s: cannot write key %s back as a literal", c.table, c.shape.formatKey(c.lastKey))
		}
		query += " WHERE " + after
	}
	query += fmt.Sprintf(" ORDER BY %s LIMIT %d", c.orderBy(), c.chunkRows)
	rows, err := c.snap.conn.QueryContext(ctx, query)
	if err != nil {
		return c.snap.errorf("reading rows of %s: %w", c.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		row, err := c.scan(rows)
		if err != nil {
			return err
		}
		c.pending = append(c.pending, row)
	}
	if err := rows.Err(); err != nil {
		return c.snap.errorf("reading rows of %s: %w", c.table, err)
	}
	if len(c.pending) < c.chunkRows {
		c.exhausted = true
	}
	if len(c.pending) > 0 {
		c.lastKey = c.shape.key(c.pending[len(c.pending)-1])
	}
	return nil
}

func (c *cursor) nextStreamed(ctx context.Context) ([]any, bool, error) {
	if !c.started {
		c.started = true
		query := "SELECT " + c.selectList() + " FROM " + quoteName(c.table) + " ORDER BY " + c.orderBy()
		rows, err := c.snap.conn.QueryContext(ctx, query)
		if err != nil {
			return nil, false, c.snap.errorf("reading rows of %s: %w", c.table, err)
		}
		c.stream = rows
	}
	if c.stream == nil {
		return nil, false, nil
	}
	if !c.stream.Next() {
		err := c.stream.Err()
		c.stream.Close()
		c.stream = nil
		if err != nil {
			return nil, false, c.snap.errorf("reading rows of %s: %w", c.table, err)
		}
		return nil, false, nil
	}
	row, err := c.scan(c.stream)
	if err != nil {
		return nil, false, err
	}
	c.read++
	return row, true, nil
}

func (c *cursor) scan(rows *sql.Rows) ([]any, error) {
	fields := len(c.shape.columns)
	if len(c.shape.primaryKey) == 0 {
		fields++
	}
	row := make([]any, fields)
	dest := make([]any, len(row))
	for i := range row {
		dest[i] = &row[i]
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, c.snap.errorf("reading rows of %s: %w", c.table, err)
	}
	for i, v := range row {
		switch v := v.(type) {
		case nil, []byte:
		case int64:
			row[i] = strconv.AppendInt(nil, v, 10)
		case uint64:
			row[i] = strconv.AppendUint(nil, v, 10)
		case float32:
			row[i] = strconv.AppendFloat(nil, float64(v), 'g', -1, 32)
		case float64:
			row[i] = strconv.AppendFloat(nil, v, 'g', -1, 64)
		default:
			return nil, c.snap.errorf("column %d of %s arrived as %T, not as text; open the connection without parseTime", i+1, c.table, v)
		}
	}
	return row, nil
}

// count is the number of rows on this side, read in the same snapshot.
func (c *cursor) count(ctx context.Context) (int64, error) {
	if c.chunkRows > 0 {
		return c.snap.countRows(ctx, c.table)
	}
	for {
		_, ok, err := c.nextStreamed(ctx)
		if err != nil {
			return 0, err
		}
		if !ok {
			return c.read, nil
		}
	}
}

func (c *cursor) close() {
	if c.stream != nil {
		c.stream.Close()
		c.stream = nil
	}
}

// hasKey looks the primary key up on this side; ok=false when the key
// cannot be written as a literal.
func (c *cursor) hasKey(ctx context.Context, key []any) (found, ok bool, err error) {
	var terms []string
	for i, col := range c.shape.primaryKey {
		lit, ok := c.snap.literal(c.shape.columns[col], key[i])
		if !ok {
			return false, false, nil
		}
		terms = append(terms, quoteIdent(c.shape.columns[col].name)+" = "+lit)
	}
	var n int64
	query := "SELECT COUNT(*) FROM " + quoteName(c.table) + " WHERE " + strings.Join(terms, " AND ")
	if err := c.snap.conn.QueryRowContext(ctx, query).Scan(&n); err != nil {
		return false, false, c.snap.errorf("looking up a key in %s: %w", c.table, err)
	}
	return n > 0, true, nil
}

// afterKey is a condition selecting the rows whose primary key sorts after key.
func (c *cursor) afterKey(key []any) (string, bool) {
	var alternatives []string
	var equalPrefix []string
	for i, col := range c.shape.primaryKey {
		lit, ok := c.snap.literal(c.shape.columns[col], key[i])
		if !ok {
			return "", false
		}
		name := quoteIdent(c.shape.columns[col].name)
		terms := append(append([]string{}, equalPrefix...), name+" > "+lit)
		alternatives = append(alternatives, "("+strings.Join(terms, " AND ")+")")
		equalPrefix = append(equalPrefix, name+" = "+lit)
	}
	return strings.Join(alternatives, " OR "), true
}

func (t tableShape) key(row []any) []any {
	key := make([]any, len(t.primaryKey))
	for i, col := range t.primaryKey {
		key[i] = row[col]
	}
	return key
}

var (
	integerText  = regexp.MustCompile(`^-?[0-9]+$`)
	decimalText  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	temporalText = regexp.MustCompile(`^-?[0-9][0-9: .-]*$`)
	charsetName  = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

func literalSupported(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal",
		"char", "varchar", "binary", "varbinary", "date", "datetime", "timestamp", "time":
		return true
	}
	return false
}

// literal writes a value read from col back as SQL that compares equal to
// it under col's type and collation.
func (s *snapshot) literal(col column, value any) (string, bool) {
	b, isBytes := value.([]byte)
	if !isBytes || !literalSupported(col.dataType) {
		return "", false
	}
	switch col.dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		return string(b), integerText.Match(b)
	case "decimal":
		return string(b), decimalText.Match(b)
	case "binary", "varbinary":
		return fmt.Sprintf("X'%x'", b), true
	case "date", "datetime", "timestamp", "time":
		return "'" + string(b) + "'", temporalText.Match(b)
	}
	from := s.resultsCharset
	if from == "" {
		from = col.charset
	}
	if !charsetName.MatchString(from) || !charsetName.MatchString(col.charset) || !charsetName.MatchString(col.collation) {
		return "", false
	}
	return fmt.Sprintf("CONVERT(_%s X'%x' USING %s) COLLATE %s", from, b, col.charset, col.collation), true
}

const maxShownColumns = 8

func (t tableShape) formatKey(row []any) string {
	if len(t.primaryKey) == 1 {
		col := t.primaryKey[0]
		return t.columns[col].name + "=" + formatValue(t.columns[col], row[col])
	}
	names := make([]string, len(t.primaryKey))
	values := make([]string, len(t.primaryKey))
	for i, col := range t.primaryKey {
		names[i] = t.columns[col].name
		values[i] = formatValue(t.columns[col], row[col])
	}
	return "(" + strings.Join(names, ",") + ")=(" + strings.Join(values, ",") + ")"
}

func (t tableShape) formatRow(row []any) string {
	var values []string
	for i, col := range t.columns {
		if i == maxShownColumns {
			values = append(values, "…")
			break
		}
		values = append(values, formatValue(col, row[i]))
	}
	return "(" + strings.Join(values, ",") + ")"
}

const maxShownRunes = 40

func formatValue(col column, v any) string {
	b, ok := v.([]byte)
	if !ok {
		return "NULL"
	}
	switch col.dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year", "decimal", "float", "double":
		return string(b)
	case "date", "datetime", "timestamp", "time":
		return "'" + string(b) + "'"
	}
	if col.charset == "" || col.charset == "binary" || !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) {
		if len(b) > maxShownRunes/2 {
			return fmt.Sprintf("0x%x…", b[:maxShownRunes/2])
		}
		return fmt.Sprintf("0x%x", b)
	}
	s := string(b)
	if utf8.RuneCountInString(s) > maxShownRunes {
		s = string([]rune(s)[:maxShownRunes]) + "…"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
