package statement

import (
	"errors"
	"slices"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// FuzzShapeKeepsTables checks the cache's premise: what the analysis of a
// statement's shape names is what the statement itself names, read whole
// by the parser. A shape that moved a quote or a comment would show here.
func FuzzShapeKeepsTables(f *testing.F) {
	for _, s := range []string{
		"UPDATE sbtest3 SET k=k+1 WHERE id=5012",
		"INSERT INTO t VALUES ('it\\'s', \"x\", 1.5e3, x'41', -.5)",
		"INSERT INTO t SELECT * FROM u WHERE x IN (SELECT y FROM v) # comment",
		"UPDATE t1, db2.t2 SET t1.a=t2.a /* c */ WHERE t1.id=t2.id",
		"DELETE a FROM t1 AS a JOIN `t``2` ON a.id=`t``2`.id",
		"INSERT INTO t (a) VALUES (@tag), (@`Other`), (@'x')",
		"UPDATE \"acct\" SET note = 'ansi' WHERE id = 3",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, text string, modeBits uint8) {
		mode := fuzzMode(modeBits)
		d, ok := NewAnalyzer().DML(text, mode, true)
		if !ok {
			return
		}
		p := parser.New()
		p.SetSQLMode(mysql.SQLMode(mode))
		nodes, err := parseQuietly(p, text)
		if err != nil || len(nodes) != 1 {
			// A literal the parser refuses (X'0') that its shape does not
			// have: the server read the text, and the shape names what it did.
			return
		}
		v := &namer{seen: map[Name]bool{}, vars: map[string]bool{}}
		nodes[0].Accept(v)
		if _, dml := nodes[0].(ast.DMLNode); !dml || v.refused {
			t.Fatalf("%q: its shape was read as DML, the text is not plain DML", text)
		}
		if !slices.Equal(v.dml.Tables, d.Tables) || !slices.Equal(v.dml.Variables, d.Variables) {
			t.Fatalf("%q: shape names %v %v, text names %v %v", text, d.Tables, d.Variables, v.dml.Tables, v.dml.Variables)
		}
	})
}

// parseQuietly parses text, a panic of the parser's literal driver taken
// for an error.
func parseQuietly(p *parser.Parser, text string) (nodes []ast.StmtNode, err error) {
	defer func() {
		if r := recover(); r != nil {
			nodes, err = nil, errPanicked
		}
	}()
	nodes, _, err = p.ParseSQL(text)
	return nodes, err
}

var errPanicked = errors.New("the parser panicked")

// FuzzRowsAreTheTextsRows checks what rows.go caches by shape: where the
// cached Rows give a value, the statement's own text, parsed whole, has
// that very value there (a plain integer literal), under the same columns.
func FuzzRowsAreTheTextsRows(f *testing.F) {
	for _, s := range []string{
		"UPDATE sbtest3 SET k=k+1 WHERE id=5012",
		"UPDATE t AS x SET x.v = CONCAT(v, 'a') WHERE (x.a = 01 AND 2 = b) AND v IS NOT NULL AND a = 9",
		"DELETE FROM sbtest1 WHERE id=5001",
		"INSERT INTO sbtest1 (id, k, c, pad) VALUES (5001, 4998, '678-48', '221')",
		"REPLACE INTO t (a, b) VALUES (1, 2), (3, -4), (5, 6+1), (7.5, 1e3)",
		"UPDATE t SET v = 1.5 WHERE a = 1 AND b = 0x10 AND c = 99999999999999999999",
		"INSERT INTO t (a, b) VALUES ('1', \"2\"), (3 /* 4 */, 5) # 6",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, text string, modeBits uint8) {
		mode := fuzzMode(modeBits)
		d, numbers, ok := NewAnalyzer().DMLNumbers(text, mode, true, nil)
		if !ok || d.Rows == nil {
			return // nothing cached to check: the table whole
		}
		p := parser.New()
		p.SetSQLMode(mysql.SQLMode(mode))
		nodes, err := parseQuietly(p, text)
		if err != nil || len(nodes) != 1 {
			return
		}
		var values []uint64
		direct := readRowsOf(nodes[0], func(e ast.ExprNode) int {
			u, ok := plainInteger(e)
			if !ok {
				return -1
			}
			values = append(values, u)
			return len(values) - 1
		})
		if direct == nil {
			// The text has no rows where its shape has: the shape's
			// numbers there must give no value (a number beyond 2^64,
			// which the text reads as a decimal).
			for _, literals := range d.Rows.Literals {
				for _, n := range literals {
					if v, ok := Value(text, numbers, n, 1<<63-1); ok {
						t.Fatalf("%q: shape reads rows %+v with value %d, the text none", text, d.Rows, v)
					}
				}
			}
			return
		}
		if direct.Kind != d.Rows.Kind || !slices.Equal(direct.Assigned, d.Rows.Assigned) ||
			len(direct.Literals) != len(d.Rows.Literals) {
			t.Fatalf("%q: shape reads rows %+v, the text %+v", text, d.Rows, direct)
		}
		insert := d.Rows.Kind == RowsInsert || d.Rows.Kind == RowsReplace
		if insert && !slices.Equal(direct.Columns, d.Rows.Columns) {
			t.Fatalf("%q: shape reads columns %v, the text %v", text, d.Rows.Columns, direct.Columns)
		}
		// A WHERE may compare a column with a number the shape gives no
		// value for (beyond 2^63) and that the text does not read as an
		// integer: compared by column name.
		for r, literals := range d.Rows.Literals {
			for c, n := range literals {
				v, ok := Value(text, numbers, n, 1<<63-1)
				if !ok {
					continue
				}
				at := c
				if !insert {
					at = slices.Index(direct.Columns, d.Rows.Columns[c])
				}
				if at < 0 || direct.Literals[r][at] < 0 || values[direct.Literals[r][at]] != v {
					t.Fatalf("%q: row %d column %s is %d by the shape, not by the text (%+v)", text, r, d.Rows.Columns[c], v, direct)
				}
			}
		}
	})
}

// fuzzMode turns a fuzzed byte into the sql_mode bits that change lexing.
func fuzzMode(bits uint8) uint64 {
	var mode uint64
	if bits&1 != 0 {
		mode |= modeANSIQuotes
	}
	if bits&2 != 0 {
		mode |= modeNoBackslashEscapes
	}
	return mode
}
