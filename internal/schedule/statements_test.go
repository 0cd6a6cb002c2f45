package schedule

import (
	"math"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/statement"
)

// known is a transaction of statements the decoder read
// (binlog.FlagKnownStatements), naming tables.
func known(text string, tables ...string) *binlog.Transaction {
	t := mariadb(0, query("BEGIN"), query(text), query("COMMIT"))
	t.Flags |= binlog.FlagKnownStatements
	for _, name := range tables {
		t.Tables = append(t.Tables, binlog.TableRef{Schema: "db", Table: name})
	}
	t.Schemas = []string{"db"}
	return t
}

func TestWritesetKnownStatementsTakeTheirTables(t *testing.T) {
	ins := func(tbl string, images ...[]any) step { return admit(dml(rows("db", tbl, images...))) }
	waits := func(s step, want ...int64) step { s.want = want; return s }
	cases := []struct {
		name  string
		steps []step
	}{
		{"a statement waits for every row change of its table, and only its table", []step{
			ins("t", row(1, "a")),
			ins("t2", row(1, "a")),
			waits(admit(known("UPDATE t SET v = v + 1", "t")), 1),
		}},
		{"a row change waits for a statement on its table", []step{
			admit(known("DELETE FROM t WHERE v > 3", "t")),
			waits(ins("t", row(7, "z")), 1),
			ins("t2", row(7, "z")),
		}},
		{"statements on one table keep their order; on others they do not wait", []step{
			admit(known("UPDATE t SET v = 1", "t")),
			admit(known("UPDATE t2 SET v = 1", "t2")),
			waits(admit(known("UPDATE t SET v = 2", "t")), 1),
			waits(admit(known("INSERT INTO t2 SELECT * FROM t", "t2", "t")), 2, 3),
		}},
		{"a table named in another case is the same table", []step{
			admit(known("UPDATE T SET v = 1", "T")),
			waits(ins("t", row(1, "a")), 1),
		}},
		{"tables with foreign keys wait for each other, statements or rows", []step{
			ins("child", row(1)),
			waits(admit(known("DELETE FROM parent WHERE id = 1", "parent")), 1),
			waits(ins("orphan", row(2)), 2),
			ins("t", row(1, "a")),
		}},
		{"a table the catalog does not know is ordered with the foreign-key tables", []step{
			ins("parent", row(1)),
			waits(admit(known("UPDATE gone SET v = 1", "gone")), 1),
		}},
		{"after a commit nothing is waited for", []step{
			admit(known("UPDATE t SET v = 1", "t")),
			commit(1),
			admit(known("UPDATE t SET v = 2", "t")),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewWriteset(testCatalog()), c.steps) })
	}
}

// Statements the decoder could not read stay barriers under every policy;
// read ones are barriers under none.
func TestWhatStaysABarrier(t *testing.T) {
	unread := mariadb(0, query("BEGIN"), query("INSERT INTO db.t VALUES (f(1))"), query("COMMIT"))
	nonTransactional := known("UPDATE t SET v = 1", "t")
	nonTransactional.Flags &^= binlog.FlagTransactional
	serialOnly := known("UPDATE t SET v = 1", "t")
	serialOnly.Flags &^= binlog.FlagAllowParallel
	loadData := mariadb(0, binlog.Event{Data: &replication.BeginLoadQueryEvent{FileID: 1}},
		binlog.Event{Data: &replication.ExecuteLoadQueryEvent{FileID: 1}})
	for _, c := range []struct {
		name    string
		txn     *binlog.Transaction
		barrier bool
	}{
		{"read statements", known("UPDATE t SET v = 1", "t"), false},
		{"unread statements", unread, true},
		{"read statements on a table that is not transactional", nonTransactional, true},
		{"read statements the source would not run in parallel", serialOnly, true},
		{"LOAD DATA logged as a statement", loadData, true},
	} {
		for _, name := range []string{"writeset", "commit-id", "schema"} {
			p, err := New(name, testCatalog())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Admit(1, c.txn); err != nil {
				t.Fatal(err)
			}
			if p.Barrier() != c.barrier {
				t.Errorf("%s, %s: barrier %v, want %v", c.name, name, p.Barrier(), c.barrier)
			}
		}
	}
}

// stmts is a group of statements as the decoder reads it: per statement, its
// tables (default database db) and, when the text says them, its rows.
func stmts(texts ...string) *binlog.Transaction {
	t := mariadb(0, query("BEGIN"))
	t.Schemas = []string{"db"}
	addStatements(t, "db", texts...)
	t.Events = append(t.Events, query("COMMIT"))
	return t
}

// analyzer reads the tests' statements, as the decoder's does.
var analyzer = statement.NewAnalyzer()

// addStatements appends statements run in database db to t, as the decoder
// reads them, and flags t as a group of statements it could read.
func addStatements(t *binlog.Transaction, db string, texts ...string) {
	t.Flags |= binlog.FlagKnownStatements
	for _, text := range texts {
		t.Events = append(t.Events, query(text))
		d, numbers, ok := analyzer.DMLNumbers(text, 0, true, nil)
		if !ok {
			panic("not plain DML: " + text)
		}
		var w binlog.StatementWrites
		for _, n := range d.Tables {
			ref := binlog.TableRef{Schema: n.Schema, Table: n.Table}
			if ref.Schema == "" {
				ref.Schema = db
			}
			w.Tables = append(w.Tables, ref)
			if !slices.Contains(t.Tables, ref) {
				t.Tables = append(t.Tables, ref)
			}
		}
		if d.Rows != nil && len(w.Tables) == 1 {
			w.Rows = d.Rows
			for _, lits := range d.Rows.Literals {
				for _, n := range lits {
					v, ok := statement.Value(text, numbers, n, math.MaxInt64)
					if !ok {
						w.Values = append(w.Values, -1)
						continue
					}
					w.Values = append(w.Values, int64(v))
				}
			}
		}
		t.Statements = append(t.Statements, w)
	}
}

// rowCatalog has tables whose columns are known, as the target's catalog
// reads them.
func rowCatalog() *fakeCatalog {
	c := testCatalog()
	integer := func(name string, bits int) Column { return Column{Name: name, IntegerBits: bits, Plain: true} }
	text := func(name string) Column { return Column{Name: name, Plain: true} }
	// sysbench's: id INT primary key, k INT, c and pad CHAR
	c.tables["db.sb"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)},
		Columns: []Column{integer("id", 32), integer("k", 32), text("c"), text("pad")}}
	c.tables["db.sb2"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)},
		Columns: []Column{integer("id", 32), integer("k", 32), text("c"), text("pad")}}
	// a second unique key, on an integer column
	c.tables["db.uq"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0), key("u", 1)},
		Columns: []Column{integer("id", 64), integer("u", 16), integer("v", 32)}}
	// a unique key on a string column
	c.tables["db.su"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0), ciKey("s", 1)},
		Columns: []Column{integer("id", 32), text("s"), integer("v", 32)}}
	// a two-column primary key of small integers
	c.tables["db.pair"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0, 1)},
		Columns: []Column{integer("a", 8), integer("b", 16), integer("v", 32)}}
	// a string primary key
	c.tables["db.spk"] = &TableInfo{Keys: []UniqueKey{ciKey("PRIMARY", 0)}, Columns: []Column{text("id"), integer("v", 32)}}
	// a generated column in the primary key
	gen := integer("g", 32)
	gen.Plain = false
	c.tables["db.gen"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}, Columns: []Column{gen, integer("v", 32)}}
	c.tables["db.fkrows"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}, ForeignKeys: true,
		Columns: []Column{integer("id", 32), integer("v", 32)}}
	c.tables["db.nocols"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}}
	c.tables["db.nopk"] = &TableInfo{Keys: []UniqueKey{key("u", 0)}, Columns: []Column{integer("u", 32), integer("v", 32)}}
	return c
}

func TestStatementsTakeRowKeys(t *testing.T) {
	ins := func(tbl string, images ...[]any) step { return admit(dml(rows("db", tbl, images...))) }
	waits := func(s step, want ...int64) step { s.want = want; return s }
	st := func(texts ...string) step { return admit(stmts(texts...)) }
	cases := []struct {
		name  string
		steps []step
	}{
		{"sysbench's statements on different rows run at once", []step{
			st("UPDATE sb SET k=k+1 WHERE id=5", "UPDATE sb SET c='x' WHERE id=6", "DELETE FROM sb WHERE id=7",
				"INSERT INTO sb (id, k, c, pad) VALUES (7, 1, 'c', 'p')"),
			st("UPDATE sb SET k=k+1 WHERE id=15", "UPDATE sb SET c='x' WHERE id=16", "DELETE FROM sb WHERE id=17",
				"INSERT INTO sb (id, k, c, pad) VALUES (17, 1, 'c', 'p')"),
			st("UPDATE sb2 SET k=k+1 WHERE id=5"),
		}},
		{"statements on one row keep their order", []step{
			st("UPDATE sb SET k=k+1 WHERE id=5"),
			waits(st("UPDATE sb SET k=k+1 WHERE id=5"), 1),
			waits(st("DELETE FROM sb WHERE id=5"), 2),
			waits(st("INSERT INTO sb (id, k, c, pad) VALUES (5, 1, 'c', 'p')"), 3),
			st("INSERT INTO sb (id, k, c, pad) VALUES (6, 1, 'c', 'p')"),
		}},
		{"a statement and a row event on one row wait for each other, whatever the integer's Go type", []step{
			st("UPDATE sb SET k=k+1 WHERE id=5"),
			waits(ins("sb", row(int32(5), int32(1), "c", "p")), 1),
			ins("sb", row(int32(6), int32(1), "c", "p")),
			waits(st("DELETE FROM sb WHERE id=6"), 3),
			st("UPDATE pair SET v=1 WHERE a=100 AND b=30000"),
			waits(ins("pair", row(int8(100), int16(30000), int32(1))), 5),
			waits(ins("pair", row(uint8(100), uint16(30000), int32(1))), 6),
			ins("pair", row(int8(100), int16(30001), int32(1))),
			st("INSERT INTO uq (id, u, v) VALUES (9, 300, 1)"),
			waits(ins("uq", row(int64(10), int16(300), int32(1))), 9),
			waits(ins("uq", row(uint64(9), uint16(7), int32(1))), 9),
		}},
		{"a number written to a column that is not an integer is no key, and no panic", []step{
			st("INSERT INTO sb2 (id, k, c, pad) VALUES (7, 1, 2, 3)"),
			waits(st("UPDATE sb2 SET k=k+1 WHERE id=7"), 1),
			st("UPDATE sb2 SET k=k+1 WHERE id=8"),
		}},
		{"a statement the rules refuse takes its table whole", []step{
			st("UPDATE sb SET k=k+1 WHERE id=5"),
			waits(st("UPDATE sb SET k=k+1 WHERE id=6 OR id=7"), 1),
			waits(st("UPDATE sb SET k=k+1 WHERE id=8"), 2),
		}},
		{"an update of a key column takes its table whole", []step{
			st("UPDATE uq SET v=1 WHERE id=1"),
			waits(st("UPDATE uq SET u=2 WHERE id=2"), 1),
			waits(st("UPDATE uq SET id=3 WHERE id=4"), 2),
			waits(st("UPDATE uq SET v=1 WHERE id=5"), 3),
		}},
		{"a delete or a replace where another unique key may free or take a value takes its table whole", []step{
			st("UPDATE uq SET v=1 WHERE id=1"),
			waits(st("DELETE FROM uq WHERE id=2"), 1),
			waits(st("REPLACE INTO uq (id, u, v) VALUES (3, 3, 3)"), 2),
			waits(st("INSERT INTO uq (id, u, v) VALUES (4, 4, 4)"), 3),
			st("REPLACE INTO sb (id, k, c, pad) VALUES (3, 3, 'c', 'p')"),
		}},
		{"an insert that leaves a unique key's value to the server takes its table whole", []step{
			st("INSERT INTO uq (id, u, v) VALUES (1, 1, 1)"),
			waits(st("INSERT INTO uq (id, v) VALUES (2, 2)"), 1),
			waits(st("INSERT INTO sb (k, c, pad) VALUES (1, 'c', 'p')")),
			waits(st("INSERT INTO sb (id, k, c, pad) VALUES (0, 1, 'c', 'p')"), 3),
			waits(st("INSERT INTO sb (id, k, c, pad) VALUES (NULL, 1, 'c', 'p')"), 4),
			waits(st("INSERT INTO sb (id, k, c, pad) VALUES (5, 1, 'c', 'p'), (6+0, 1, 'c', 'p')"), 5),
		}},
		{"values beyond the column's signed range take the table whole", []step{
			st("UPDATE pair SET v=1 WHERE a=1 AND b=1"),
			waits(st("UPDATE pair SET v=1 WHERE a=128 AND b=1"), 1),
			waits(st("UPDATE pair SET v=1 WHERE a=1 AND b=32768"), 2),
			waits(st("UPDATE pair SET v=1 WHERE a=2"), 3),
			waits(st("UPDATE sb SET k=1 WHERE id=2147483648")),
		}},
		{"tables whose keys are not plain integers take the table whole", []step{
			st("UPDATE su SET v=1 WHERE id=1"),
			waits(st("UPDATE su SET v=1 WHERE id=2"), 1),
			st("UPDATE spk SET v=1 WHERE id=1"),
			waits(st("UPDATE spk SET v=1 WHERE id=2"), 3),
			st("UPDATE gen SET v=1 WHERE g=1"),
			waits(st("UPDATE gen SET v=1 WHERE g=2"), 5),
			st("UPDATE nocols SET v=1 WHERE id=1"),
			waits(st("UPDATE nocols SET v=1 WHERE id=2"), 7),
			st("UPDATE nopk SET v=1 WHERE u=1"),
			waits(st("UPDATE nopk SET v=1 WHERE u=2"), 9),
			st("UPDATE fkrows SET v=1 WHERE id=1"),
			waits(st("UPDATE fkrows SET v=1 WHERE id=2"), 11),
			waits(st("UPDATE sb SET nosuch=1 WHERE id=1")),
			waits(st("UPDATE sb SET k=1 WHERE id=1"), 13),
		}},
		{"one statement of a group that takes its table whole makes the group take it whole", []step{
			st("UPDATE sb SET k=1 WHERE id=1"),
			waits(st("UPDATE sb SET k=1 WHERE id=2", "UPDATE sb SET k=1 WHERE k=3"), 1),
			waits(st("UPDATE sb SET k=1 WHERE id=3"), 2),
		}},
		{"a statement that reads another table takes both whole", []step{
			st("UPDATE sb SET k=1 WHERE id=1"),
			st("UPDATE sb2 SET k=1 WHERE id=1"),
			waits(st("UPDATE sb SET k=(SELECT MAX(k) FROM sb2) WHERE id=2"), 1, 2),
		}},
		{"a table spelt in another case is the same table", []step{
			st("UPDATE SB SET k=k+1 WHERE ID=5"),
			waits(st("UPDATE sb SET k=k+1 WHERE id=5"), 1),
			waits(ins("sb", row(int32(5), int32(1), "c", "p")), 2),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat := rowCatalog()
			cat.tables["db.SB"] = cat.tables["db.sb"]
			run(t, NewWriteset(cat), c.steps)
		})
	}
}

// A row event in a group of statements (MIXED logs an unsafe statement as
// rows) takes its table whole, even beside a statement with row keys.
func TestStatementsBesideRowEvents(t *testing.T) {
	withRows := stmts("UPDATE sb SET k=k+1 WHERE id=5")
	withRows.Events = append(withRows.Events[:len(withRows.Events)-1], rows("db", "sb", row(int32(9), int32(1), "c", "p")), query("COMMIT"))
	run(t, NewWriteset(rowCatalog()), []step{
		admit(stmts("UPDATE sb SET k=k+1 WHERE id=1")),
		admit(withRows, 1),
		admit(stmts("UPDATE sb SET k=k+1 WHERE id=2"), 2),
	})
}
