// rows.go tells, from the text alone, which rows a single-table statement
// may write, when the text says so plainly: the columns it compares with a
// number in a WHERE made of ANDs (UPDATE, DELETE), or the numbers it gives
// for each row (INSERT, REPLACE). The scheduler turns those into the row
// keys a row event for the same rows would carry, with the table's keys
// from the target (internal/schedule).
//
// Example of what it guards: "UPDATE t SET k = k + 1 WHERE id = 7" writes
// the row id 7 and no other; "UPDATE t SET k = k + 1 WHERE id = 7 OR id = 8",
// "... WHERE id = 7 AND k > (SELECT AVG(k) FROM t)" and "... WHERE id = -7"
// are not read (the first two may write or depend on other rows, the third
// is not a plain number): they take their table whole.
//
// A Rows is cached with the statement's shape, so its values are named by
// position: the n-th number of the text (Number), which each statement of
// the shape has at the same place. To find which number an expression of the
// tree is, the shape is parsed a second time with each number written as a
// value no other part of the text can give (a marker): an expression that is
// a plain integer literal with marker n is the n-th number, and nothing else.
package statement

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// RowsKind is the kind of a statement whose rows are known.
type RowsKind uint8

const (
	RowsInsert  RowsKind = iota + 1 // INSERT INTO t (columns) VALUES ...
	RowsReplace                     // REPLACE INTO t (columns) VALUES ...
	RowsUpdate                      // UPDATE t SET ... WHERE a = 1 AND ...
	RowsDelete                      // DELETE FROM t WHERE a = 1 AND ...
)

// Rows says which rows a statement naming one table may write.
//
// UPDATE and DELETE have one row: Columns are the columns the WHERE clause
// compares with a plain number, at its top level of ANDs (the statement
// writes no row whose values differ); every other part of the statement
// reads only the row itself. INSERT and REPLACE have a row per VALUES list;
// Columns are the column list, and a value that is not a plain number has
// no literal.
type Rows struct {
	Kind RowsKind
	// Columns, lower case.
	Columns []string
	// Literals[r][c] is which number of the text (0-based, Number) gives
	// row r's value of Columns[c], or -1 when none does.
	Literals [][]int
	// Assigned are the columns an UPDATE sets, lower case.
	Assigned []string
}

// Number is where a number of the statement's text lies, in the order the
// text gives them: an unsigned run of decimal digits, which shape writes as
// 0 (signs, decimal points and exponents are not part of it).
type Number struct {
	Start, End int // in the text
	shapeAt    int // where shape wrote its 0
}

// Value returns the value of the n-th number of text (its Numbers), and
// false when there is none or it exceeds max.
func Value(text string, numbers []Number, n int, max uint64) (uint64, bool) {
	if n < 0 || n >= len(numbers) {
		return 0, false
	}
	v, err := strconv.ParseUint(text[numbers[n].Start:numbers[n].End], 10, 64)
	if err != nil || v > max {
		return 0, false
	}
	return v, true
}

// markerDigits: markers are 10^markerDigits + n, plain integers for the
// parser (below 10^18).
const markerDigits = 12

// readRows finds the rows of a statement of shape sh whose numbers are
// numbers; nil when the text does not say them plainly.
func (a *Analyzer) readRows(sh string, mode uint64, numbers []Number, tables int) *Rows {
	if tables != 1 || len(numbers) == 0 {
		return nil
	}
	// Markers are 10^markerDigits + n: longer than any run of digits the
	// shape keeps as it is (next to a dot), so no other literal equals one.
	for i := 0; i < len(sh); {
		j := i
		for j < len(sh) && sh[j] >= '0' && sh[j] <= '9' {
			j++
		}
		if j-i > markerDigits {
			return nil
		}
		i = j + 1
	}
	var b strings.Builder
	last := 0
	for n, num := range numbers {
		if sh[num.shapeAt] != '0' {
			return nil
		}
		b.WriteString(sh[last:num.shapeAt])
		b.WriteString(strconv.FormatUint(marker(n), 10))
		last = num.shapeAt + 1
	}
	b.WriteString(sh[last:])
	nodes, ok := a.parseNodes(b.String(), mode)
	if !ok {
		return nil
	}
	count := len(numbers)
	return readRowsOf(nodes[0], func(e ast.ExprNode) int {
		u, ok := plainInteger(e)
		if !ok || u < marker(0) || u >= marker(count) {
			return -1
		}
		return int(u - marker(0))
	})
}

// readRowsOf reads the rows of a parsed statement; literal says which
// number an expression is (-1: none).
func readRowsOf(node ast.StmtNode, literal func(ast.ExprNode) int) *Rows {
	r := rowsReader{literal: literal}
	switch n := node.(type) {
	case *ast.UpdateStmt:
		return r.update(n)
	case *ast.DeleteStmt:
		return r.delete(n)
	case *ast.InsertStmt:
		return r.insert(n)
	}
	return nil
}

func marker(n int) uint64 {
	base := uint64(1)
	for range markerDigits {
		base *= 10
	}
	return base + uint64(n)
}

type rowsReader struct {
	literal func(ast.ExprNode) int
	table   string // the table's name or alias, lower case
}

// plainInteger returns the value of an integer literal that is not negative.
func plainInteger(e ast.ExprNode) (uint64, bool) {
	v, ok := e.(ast.ValueExpr)
	if !ok {
		return 0, false
	}
	switch x := v.GetValue().(type) {
	case int64:
		return uint64(x), x >= 0
	case uint64:
		return x, true
	}
	return 0, false
}

// single returns the one table of a clause that names a single base
// table, and its alias, lower case.
func single(refs *ast.TableRefsClause) (string, bool) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return "", false
	}
	src, ok := refs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return "", false
	}
	name, ok := src.Source.(*ast.TableName)
	if !ok || len(name.PartitionNames) > 0 {
		return "", false
	}
	if src.AsName.L != "" {
		return src.AsName.L, true
	}
	return name.Name.L, true
}

// column returns the lower-case name of a column of the statement's table.
func (r *rowsReader) column(c *ast.ColumnName) (string, bool) {
	if c == nil || c.Table.L != "" && c.Table.L != r.table {
		return "", false
	}
	return strings.ToLower(c.Name.O), true
}

func (r *rowsReader) update(n *ast.UpdateStmt) *Rows {
	table, ok := single(n.TableRefs)
	if !ok || n.MultipleTable || n.IgnoreErr || n.Order != nil || n.Limit != nil {
		return nil
	}
	r.table = table
	rows := &Rows{Kind: RowsUpdate}
	for _, a := range n.List {
		name, ok := r.column(a.Column)
		if !ok || !rowLocal(a.Expr) {
			return nil
		}
		rows.Assigned = append(rows.Assigned, name)
	}
	if !r.where(n.Where, rows) {
		return nil
	}
	return rows
}

func (r *rowsReader) delete(n *ast.DeleteStmt) *Rows {
	table, ok := single(n.TableRefs)
	if !ok || n.IsMultiTable || n.Tables != nil || n.IgnoreErr || n.Order != nil || n.Limit != nil {
		return nil
	}
	r.table = table
	rows := &Rows{Kind: RowsDelete}
	if !r.where(n.Where, rows) {
		return nil
	}
	return rows
}

// where reads a WHERE clause into one row: its top-level conjuncts that
// compare a column with a number. Everything in it must read only the row.
func (r *rowsReader) where(where ast.ExprNode, rows *Rows) bool {
	if where == nil || !rowLocal(where) {
		return false
	}
	var literals []int
	var walk func(e ast.ExprNode)
	walk = func(e ast.ExprNode) {
		switch e := e.(type) {
		case *ast.ParenthesesExpr:
			walk(e.Expr)
		case *ast.BinaryOperationExpr:
			switch e.Op {
			case opcode.LogicAnd:
				walk(e.L)
				walk(e.R)
			case opcode.EQ:
				col, lit := e.L, e.R
				if _, ok := col.(*ast.ColumnNameExpr); !ok {
					col, lit = lit, col
				}
				c, ok := col.(*ast.ColumnNameExpr)
				if !ok {
					return
				}
				name, ok := r.column(c.Name)
				n := r.literal(lit)
				if !ok || n < 0 {
					return
				}
				for _, have := range rows.Columns {
					if have == name {
						return // the first is enough: the row has both values or none
					}
				}
				rows.Columns = append(rows.Columns, name)
				literals = append(literals, n)
			}
		}
	}
	walk(where)
	if len(rows.Columns) == 0 {
		return false
	}
	rows.Literals = [][]int{literals}
	return true
}

func (r *rowsReader) insert(n *ast.InsertStmt) *Rows {
	table, ok := single(n.Table)
	if !ok || n.IgnoreErr || n.Setlist || n.Select != nil || len(n.OnDuplicate) > 0 || len(n.PartitionNames) > 0 ||
		len(n.Columns) == 0 || len(n.Lists) == 0 {
		return nil
	}
	r.table = table
	rows := &Rows{Kind: RowsInsert}
	if n.IsReplace {
		rows.Kind = RowsReplace
	}
	for _, c := range n.Columns {
		name, ok := r.column(c)
		if !ok || slices.Contains(rows.Columns, name) {
			return nil // a column named twice: the server refuses it
		}
		rows.Columns = append(rows.Columns, name)
	}
	for _, list := range n.Lists {
		if len(list) != len(rows.Columns) {
			return nil
		}
		literals := make([]int, len(list))
		for i, e := range list {
			if !rowLocal(e) {
				return nil
			}
			literals[i] = r.literal(e)
		}
		rows.Literals = append(rows.Literals, literals)
	}
	return rows
}

// rowLocal reports whether an expression reads nothing but literals, the
// row's own columns and functions of them: no subquery (which may read
// other rows of the table), no variable, no DEFAULT(), nothing unlisted.
func rowLocal(e ast.ExprNode) bool {
	v := &localChecker{}
	e.Accept(v)
	return !v.refused
}

type localChecker struct{ refused bool }

func (v *localChecker) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case ast.ValueExpr, *ast.ColumnNameExpr, *ast.ColumnName, *ast.BinaryOperationExpr, *ast.UnaryOperationExpr,
		*ast.ParenthesesExpr, *ast.FuncCallExpr, *ast.FuncCastExpr, *ast.IsNullExpr, *ast.IsTruthExpr,
		*ast.BetweenExpr, *ast.PatternLikeOrIlikeExpr, *ast.CaseExpr, *ast.WhenClause,
		*ast.TimeUnitExpr, *ast.TrimDirectionExpr:
		return n, false
	case *ast.PatternInExpr:
		if n.(*ast.PatternInExpr).Sel == nil {
			return n, false
		}
	}
	v.refused = true
	return n, true
}

func (v *localChecker) Leave(n ast.Node) (ast.Node, bool) { return n, !v.refused }
