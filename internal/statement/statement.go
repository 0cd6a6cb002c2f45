// Package statement tells, without running it, what a source statement
// does that the scheduler must know: whether it is plain DML (INSERT,
// REPLACE, UPDATE, DELETE), which tables it names, and which user variables
// it uses; and which names the source's sessions hold as temporary tables.
//
// A statement the package cannot read with certainty is reported as not
// plain DML: the applier then runs it as it runs every statement it cannot
// see into, alone, on the statement session. So every rule here errs on
// that side: a statement passes only when its text parses, every table it
// names is written out in it, and nothing in it can reach another table or
// another session's state (a stored function, a system variable, a
// sequence, a CTE whose name could hide a table's).
//
// Text is parsed with TiDB's parser (github.com/pingcap/tidb/pkg/parser),
// the maintained MySQL-dialect parser go-mysql already brings in, under the
// statement's own sql_mode. What it cannot parse of MariaDB's dialect
// (RETURNING, CREATE OR REPLACE TEMPORARY, WITH before INSERT) is refused,
// which is safe. A parse costs about 7 µs for a sysbench statement, more
// than the rest of gapless spends on it, so results are cached by the
// statement's shape (shape.go): its text with the literals taken out.
package statement

import (
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	// The parser needs a driver for literal values; this one is its own,
	// with no dependencies beyond the parser.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// Name is a table as a statement names it; Schema is "" when the statement
// leaves it to the default database.
type Name struct {
	Schema, Table string
}

// DML is what a plain DML statement names.
type DML struct {
	Tables []Name
	// Variables are the user variables it reads or sets, lower case (user
	// variable names are not case-sensitive).
	Variables []string
	// Rows are the rows it may write, when its text says them plainly
	// (rows.go); nil otherwise.
	Rows *Rows
}

// sql_mode bits (MariaDB's, equal to MySQL's and the parser's for these).
const (
	modePipesAsConcat      = 1 << 1
	modeANSIQuotes         = 1 << 2
	modeIgnoreSpace        = 1 << 3
	modePostgreSQL         = 1 << 8
	modeOracle             = 1 << 9
	modeMSSQL              = 1 << 10
	modeDB2                = 1 << 11
	modeMaxDB              = 1 << 12
	modeNoBackslashEscapes = 1 << 20
	modeHighNotPrecedence  = 1 << 29
)

// modeDialects are the sql_mode bits that switch MariaDB to another dialect
// (sql_mode=ORACLE parses PL/SQL): such statements are not read.
const modeDialects = modePostgreSQL | modeOracle | modeMSSQL | modeDB2 | modeMaxDB

// modeParse are the sql_mode bits that change how a statement parses.
const modeParse = modePipesAsConcat | modeANSIQuotes | modeIgnoreSpace | modeNoBackslashEscapes | modeHighNotPrecedence

// cacheSize bounds the shapes remembered; the cache starts over when full.
const cacheSize = 4096

// Analyzer reads statements, caching what it found by shape. Safe for
// concurrent use.
type Analyzer struct {
	mu     sync.Mutex
	parser *parser.Parser
	cache  map[cacheKey]*DML // nil: not plain DML
}

type cacheKey struct {
	mode  uint64
	shape string
}

// NewAnalyzer returns an analyzer with an empty cache.
func NewAnalyzer() *Analyzer {
	return &Analyzer{parser: parser.New(), cache: make(map[cacheKey]*DML)}
}

// DML returns what text names when it is one plain DML statement that can
// be read with certainty, and false otherwise. sqlMode is the statement's
// (its status variables'); utf8 says its text is in utf8mb3 or utf8mb4.
// The result is shared: callers must not change it.
func (a *Analyzer) DML(text string, sqlMode uint64, utf8 bool) (*DML, bool) {
	d, _, ok := a.DMLNumbers(text, sqlMode, utf8, nil)
	return d, ok
}

// DMLNumbers is DML that also returns where the numbers of text lie (for
// the values of DML.Rows: Value), appended to numbers[:0].
func (a *Analyzer) DMLNumbers(text string, sqlMode uint64, utf8 bool, numbers []Number) (*DML, []Number, bool) {
	if sqlMode&modeDialects != 0 || !IsDML(text) {
		return nil, numbers, false
	}
	lx := Lexing{ANSIQuotes: sqlMode&modeANSIQuotes != 0, NoBackslashEscapes: sqlMode&modeNoBackslashEscapes != 0, UTF8: utf8}
	sh, numbers, ok := shape(text, lx, numbers[:0])
	if !ok {
		return nil, numbers, false
	}
	key := cacheKey{mode: sqlMode & modeParse, shape: sh}
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.cache[key]; ok {
		return d, numbers, d != nil
	}
	d := a.parse(sh, sqlMode&modeParse)
	if d != nil {
		d.Rows = a.readRows(sh, sqlMode&modeParse, numbers, len(d.Tables))
	}
	if len(a.cache) >= cacheSize {
		clear(a.cache)
	}
	a.cache[key] = d
	return d, numbers, d != nil
}

// IsDML is a cheap first look: whether text starts, past blanks and plain
// comments, with INSERT, REPLACE, UPDATE or DELETE. Statements that do not
// (DDL, SET, XA, one behind an executable comment) are known without parsing.
func IsDML(text string) bool {
	text = PastComments(text)
	for _, w := range []string{"INSERT", "REPLACE", "UPDATE", "DELETE"} {
		if len(text) > len(w) && strings.EqualFold(text[:len(w)], w) && !isWordByte(text[len(w)]) {
			return true
		}
	}
	return false
}

// PastComments is text past its leading blanks and plain comments (/* */,
// #, -- ); an executable comment (/*! */, /*M! */) stays, as does one left
// open. Clients put comments before statements ("/* app: checkout */
// CREATE TEMPORARY TABLE ..."), and the binlog keeps them.
func PastComments(text string) string {
	for {
		text = strings.TrimLeft(text, " \t\r\n")
		switch {
		case strings.HasPrefix(text, "/*!") || strings.HasPrefix(text, "/*M!"):
			return text
		case strings.HasPrefix(text, "/*"):
			end := strings.Index(text[2:], "*/")
			if end < 0 {
				return text
			}
			text = text[2+end+2:]
		case strings.HasPrefix(text, "#") || strings.HasPrefix(text, "-- "):
			text = text[lineEnd(text, 0):]
		default:
			return text
		}
	}
}

// parseNodes parses text under mode; false unless it is one statement.
func (a *Analyzer) parseNodes(text string, mode uint64) (nodes []ast.StmtNode, ok bool) {
	defer func() {
		// The parser's literal driver panics on some values (a decimal
		// beyond its precision): refused, and a new parser for the next.
		if recover() != nil {
			nodes, ok = nil, false
			a.parser = parser.New()
		}
	}()
	a.parser.SetSQLMode(mysql.SQLMode(mode))
	nodes, _, err := a.parser.ParseSQL(text)
	return nodes, err == nil && len(nodes) == 1
}

// parse reads one shape; nil when it is not plain DML that can be read.
func (a *Analyzer) parse(sh string, mode uint64) *DML {
	nodes, ok := a.parseNodes(sh, mode)
	if !ok {
		return nil
	}
	switch n := nodes[0].(type) {
	case *ast.InsertStmt:
	case *ast.UpdateStmt:
		if n.With != nil {
			return nil // a CTE's name would be taken for a table
		}
	case *ast.DeleteStmt:
		if n.With != nil {
			return nil
		}
	default:
		return nil
	}
	v := &namer{seen: map[Name]bool{}, vars: map[string]bool{}}
	nodes[0].Accept(v)
	if v.refused || len(v.dml.Tables) == 0 {
		return nil
	}
	return &v.dml
}

// namer walks a statement's tree, collecting tables and variables, and
// refuses what could reach beyond them.
type namer struct {
	dml     DML
	seen    map[Name]bool
	vars    map[string]bool
	refused bool
}

func (v *namer) Enter(n ast.Node) (ast.Node, bool) {
	if v.refused {
		return n, true
	}
	switch n := n.(type) {
	case *ast.DeleteTableList:
		// DELETE a FROM t AS a: the list names aliases of the tables
		// that the FROM clause names.
		return n, true
	case *ast.TableName:
		if n.AsOf != nil || n.TableSample != nil || n.Name.O == "" {
			v.refused = true
			return n, true
		}
		name := Name{Schema: n.Schema.O, Table: n.Name.O}
		if !v.seen[name] {
			v.seen[name] = true
			v.dml.Tables = append(v.dml.Tables, name)
		}
	case *ast.VariableExpr:
		if n.IsSystem || n.IsGlobal {
			// @@x reads the target session's own value, which differs
			// from worker to worker.
			v.refused = true
			return n, true
		}
		name := strings.ToLower(n.Name)
		if !v.vars[name] {
			v.vars[name] = true
			v.dml.Variables = append(v.dml.Variables, name)
		}
	case *ast.FuncCallExpr:
		if n.Schema.L != "" || !builtin[n.FnName.L] {
			// A stored function may write other tables; a function not
			// listed may read another session's state.
			v.refused = true
			return n, true
		}
	case ast.ParamMarkerExpr, *ast.WithClause, *ast.CommonTableExpression:
		v.refused = true
		return n, true
	case *ast.SelectStmt:
		if n.With != nil || n.SelectIntoOpt != nil {
			v.refused = true // a CTE's name would be taken for a table
			return n, true
		}
	case *ast.SetOprStmt:
		if n.With != nil {
			v.refused = true
			return n, true
		}
	}
	return n, false
}

func (v *namer) Leave(n ast.Node) (ast.Node, bool) { return n, !v.refused }
