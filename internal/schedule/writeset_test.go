// writeset_test.go proves that the writeset policy makes two transactions
// wait for each other exactly when a row key one writes could be a row key
// the other writes (primary and unique keys, before and after images,
// collations folded, prefixes cut, NULL parts ignored), falls back to the
// whole table or to all foreign-key tables where keys cannot tell, and runs
// DDL and statements as barriers that drop what the catalog knows.
package schedule

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

func testCatalog() *fakeCatalog {
	bin := key("PRIMARY", 0)
	bin.Pad[0] = true
	fk := func() *TableInfo { return &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}, ForeignKeys: true} }
	return &fakeCatalog{tables: map[string]*TableInfo{
		"db.t":       table(key("PRIMARY", 0), ciKey("u", 1)),
		"db.t2":      table(key("PRIMARY", 0), ciKey("u", 1)),
		"other.t":    table(key("PRIMARY", 0), ciKey("u", 1)),
		"db.ci":      table(ciKey("PRIMARY", 0)),
		"db.bin":     table(bin),
		"db.pre":     table(key("PRIMARY", 0), prefixKey("p", 1, 3)),
		"db.nul":     table(key("PRIMARY", 0), key("ab", 1, 2)),
		"db.nokey":   {},
		"db.parent":  fk(),
		"db.child":   fk(),
		"db.orphan":  {ForeignKeys: true},
		"db.pk_name": table(key("pk_id", 0), ciKey("u", 1)),
	}}
}

func TestWriteset(t *testing.T) {
	ins := func(tbl string, images ...[]any) step { return admit(dml(rows("db", tbl, images...))) }
	waits := func(s step, want ...int64) step { s.want = want; return s }
	cases := []struct {
		name  string
		steps []step
	}{
		{"same primary key", []step{
			ins("t", row(1, "a")),
			waits(ins("t", row(1, "a"), row(1, "b")), 1),
			waits(ins("t", row(1, "b")), 2),
		}},
		{"different keys", []step{
			ins("t", row(1, "a")),
			ins("t", row(2, "b")),
			ins("t", row(3, "c"), row(3, "d")),
		}},
		{"same key values in other tables and databases", []step{
			ins("t", row(1, "a")),
			ins("t2", row(1, "a")),
			admit(dml(rows("other", "t", row(1, "a")))),
		}},
		{"an update of the primary key holds the old and the new value", []step{
			ins("t", row(1, "a"), row(5, "a")),
			waits(ins("t", row(1, "x")), 1),
			waits(ins("t", row(5, "z")), 1),
			ins("t", row(7, "q")),
		}},
		{"a unique value swapped between two rows", []step{
			ins("t", row(1, "a"), row(1, nil), row(2, "b"), row(2, "a"), row(1, nil), row(1, "b")),
			waits(ins("t", row(2, "a"), row(2, nil), row(1, "b"), row(1, "a"), row(2, nil), row(2, "b")), 1),
		}},
		{"a unique value freed by one row and taken by another", []step{
			ins("t", row(1, "a"), row(1, "b")),
			waits(ins("t", row(3, "a")), 1),
			waits(ins("t", row(4, "B")), 1),
			ins("t", row(5, "c")),
		}},
		{"case-insensitive and PAD SPACE", []step{
			ins("ci", row("A")),
			waits(ins("ci", row("a ")), 1),
			ins("t", row(1, "Abc")),
			waits(ins("t", row(2, []byte("aBC  "))), 3),
		}},
		{"binary collation tells case apart but not trailing spaces", []step{
			ins("bin", row("A")),
			ins("bin", row("a")),
			waits(ins("bin", row("a  ")), 2),
		}},
		{"accents", []step{
			ins("ci", row("é")),
			waits(ins("ci", row("E")), 1),
			ins("ci", row("Straße")),
			waits(ins("ci", row("STRASSE")), 3),
			ins("ci", row("Ä")),
			waits(ins("ci", row([]byte("á"))), 5),
		}},
		{"prefix index", []step{
			ins("pre", row(1, "abcdef")),
			waits(ins("pre", row(2, "ABCxyz")), 1),
			ins("pre", row(3, "abd")),
			ins("pre", row(4, "éèêx")),
			waits(ins("pre", row(5, "éèêy")), 4),
		}},
		{"a unique key with a NULL part is no key", []step{
			ins("nul", row(1, "x", nil)),
			ins("nul", row(2, "x", nil)),
			ins("nul", row(3, nil, nil)),
			ins("nul", row(4, "x", "y")),
			waits(ins("nul", row(5, "x", "y")), 4),
		}},
		{"a table without keys is taken whole", []step{
			ins("nokey", row(1)),
			waits(ins("nokey", row(2)), 1),
			ins("t", row(1, "a")),
			ins("unknown", row(1)),
			waits(ins("nokey", row(3), row(4)), 2),
			waits(ins("unknown", row(2)), 4),
			commit(1, 2, 5),
			ins("nokey", row(1)),
		}},
		{"rows the decoder could not read take their table whole", []step{
			ins("t", row(1, "a")),
			ins("t2", row(1, "a")),
			waits(admit(opaque(dml(rows("db", "t")))), 1),
			waits(ins("t", row(7, "q")), 3),
			ins("t2", row(2, "b")),
			commit(1, 3, 4),
			ins("t", row(8, "r")),
		}},
		{"opaque rows in a foreign-key table wait for the other foreign-key tables", []step{
			ins("parent", row(1)),
			waits(admit(opaque(dml(rows("db", "child")))), 1),
			waits(ins("child", row(12, 1)), 2),
		}},
		{"tables with foreign keys run one at a time", []step{
			ins("parent", row(1)),
			waits(ins("child", row(10, 1)), 1),
			ins("t", row(1, "a")),
			waits(ins("parent", row(2)), 2),
			commit(1, 2, 4),
			ins("child", row(11, 2)),
		}},
		{"a table with foreign keys and no key is taken whole and waits for the other foreign-key tables", []step{
			ins("parent", row(1)),
			waits(ins("orphan", row(1)), 1),
			waits(ins("parent", row(2)), 2),
		}},
		{"a row image without the primary key falls back to the table", []step{
			ins("t", row(1, "a")),
			ins("t", row(2, "b")),
			waits(admit(dml(partial("db", "t", [][]int{{0}, {0}}, row(0, "a"), row(0, "c")))), 1, 2),
			waits(ins("t", row(3, "x")), 3),
			ins("t2", row(3, "x")),
			commit(1, 2, 3),
			ins("t", row(6, "y")),
		}},
		{"a row image without a unique key's columns falls back to the table", []step{
			admit(dml(partial("db", "t", [][]int{{1}, nil}, row(1, ""), row(1, "b")))),
			waits(ins("t", row(3, "a")), 1),
		}},
		{"a row image without the first key, whatever its name, falls back to the table", []step{
			ins("pk_name", row(1, "a")),
			waits(admit(dml(partial("db", "pk_name", [][]int{{0}}, row(0, "z")))), 1),
			waits(ins("pk_name", row(9, "y")), 2),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewWriteset(testCatalog()), c.steps) })
	}
}

func TestWritesetBarriers(t *testing.T) {
	cases := []struct {
		name    string
		barrier step
	}{
		{"DDL", admitBarrier(ddl("ALTER TABLE db.t ADD c INT"), 2)},
		{"statement-format DML", admitBarrier(mariadb(0, query("BEGIN"), query("INSERT INTO db.t VALUES (9, 'z')"), query("COMMIT")), 2)},
		{"statement beside row events", admitBarrier(dml(rows("db", "t", row(9, "z")), query("DELETE FROM db.t2")), 2)},
		{"no allow-parallel flag", admitBarrier(serialOnly(dml(rows("db", "t", row(9, "z")))), 2)},
		{"standalone", admitBarrier(standalone(dml(rows("db", "t", row(9, "z")))), 2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			catalog := testCatalog()
			p := NewWriteset(catalog)
			run(t, p, []step{
				admit(dml(rows("db", "t", row(1, "a")))),
				admit(dml(rows("db", "t2", row(1, "a")))),
				commit(1),
				c.barrier,
				admit(dml(rows("db", "nokey", row(1))), 3),
				admit(dml(rows("other", "t", row(5, "e"))), 3),
				commit(2, 3),
				admit(dml(rows("db", "t", row(1, "a")))),
			})
			if catalog.invalidated != 1 {
				t.Errorf("catalog invalidated %d times, want 1", catalog.invalidated)
			}
		})
	}
}

func TestWritesetRowsOnlyIsNoBarrier(t *testing.T) {
	catalog := testCatalog()
	run(t, NewWriteset(catalog), []step{
		admit(mariadb(0, query("BEGIN"), rows("db", "t", row(1, "a")), query("COMMIT"))),
		admit(mariadb(0, query("begin"), rows("db", "t", row(2, "b")), query("ROLLBACK"))),
		admit(mariadb(0, rows("db", "t", row(3, "c")))),
	})
	if catalog.invalidated != 0 {
		t.Errorf("catalog invalidated %d times, want 0", catalog.invalidated)
	}
}

func TestWritesetWarnsOnce(t *testing.T) {
	var warnings []string
	p := NewWriteset(testCatalog())
	p.Warn = func(s string) { warnings = append(warnings, s) }
	for gi := int64(1); gi <= 3; gi++ {
		if _, err := p.Admit(gi, dml(partial("db", "t", [][]int{{0}}, row(0, "a")))); err != nil {
			t.Fatal(err)
		}
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want one", warnings)
	}
}

func TestWritesetRowEventWithoutTable(t *testing.T) {
	p := NewWriteset(testCatalog())
	txn := dml(rows("db", "t", row(1, "a")))
	txn.RowEvents()[0].Table = nil
	if _, err := p.Admit(1, txn); err == nil {
		t.Error("Admit of a row event without its table map: no error")
	}
}

func TestFoldString(t *testing.T) {
	cases := []struct{ a, b string }{
		{"A", "a"},
		{"é", "E"},
		{"Ä", "a"},
		{"ñ", "N"},
		{"Straße", "STRASSE"},
		{"Ǆ", "ǆ"},
		{"Ａ", "a"},
		{"ﬁ", "FI"},
		{"Æ", "ae"},
		{"œ", "OE"},
	}
	for _, c := range cases {
		if foldString(c.a) != foldString(c.b) {
			t.Errorf("foldString(%q) = %q, foldString(%q) = %q: want equal", c.a, foldString(c.a), c.b, foldString(c.b))
		}
	}
}

// TestWritesetSteps checks what Steps says of a row transaction: each
// statement's events, the dependencies it added, and the resources it took,
// a resource taken a second time listed again but adding no dependency.
func TestWritesetSteps(t *testing.T) {
	end := func(ev binlog.Event) binlog.Event {
		ev.Data.(*replication.RowsEvent).Flags |= replication.RowsEventStmtEndFlag
		return ev
	}
	p := NewWriteset(testCatalog())
	mustAdmit := func(gi int64, txn *binlog.Transaction) Deps {
		t.Helper()
		deps, err := p.Admit(gi, txn)
		if err != nil {
			t.Fatal(err)
		}
		return deps
	}
	mustAdmit(1, dml(end(rows("db", "t", row(1, "a")))))
	mustAdmit(2, dml(end(rows("db", "t", row(2, "b")))))
	// events: BEGIN | row 5, row 1 | row 6 | row 1 again, row 2 | COMMIT
	txn := dml(rows("db", "t", row(5, "e")), end(rows("db", "t", row(1, "a"))),
		end(rows("db", "t2", row(6, "f"))),
		rows("db", "t", row(1, "a")), end(rows("db", "t", row(2, "b"))))
	if deps := mustAdmit(3, txn); !slices.Equal(deps, Deps{1, 2}) {
		t.Fatalf("Admit = %v, want [1 2]", deps)
	}
	steps := p.Steps()
	if steps == nil {
		t.Fatal("no steps for a row transaction")
	}
	var got []string
	for k, st := range steps.Statements {
		added := tidy(slices.Clone(steps.DepsOf(k))) // a row's two keys may name one holder twice
		got = append(got, fmt.Sprintf("%d-%d:%v:%d", st.From, st.To, []int64(added), len(steps.TakenOf(k))))
	}
	// each row takes its table shared and its two keys
	want := []string{"1-3:[1]:6", "3-4:[]:3", "4-6:[2]:6"}
	if !slices.Equal(got, want) || steps.All != 0 {
		t.Errorf("statements (events:dependencies added:resources taken) = %v (after %d for all), want %v", got, steps.All, want)
	}
	if third := steps.TakenOf(2); !Meets(third, steps.TakenOf(0)) || Meets(third, steps.TakenOf(1)) {
		t.Error("the third statement's rows meet the first's (row 1), and not the second's")
	}

	mustAdmit(4, ddl("CREATE TABLE db.x (a INT)"))
	if steps := p.Steps(); steps != nil {
		t.Errorf("after a barrier, Steps = %+v; want nil", steps)
	}

	// A transaction of more resources than maxStepsTaken has none.
	var many [][]any
	for i := range maxStepsTaken {
		many = append(many, row(1000+i, fmt.Sprint(i)))
	}
	mustAdmit(5, dml(end(rows("db", "t", row(7, "g"))), end(rows("db", "t", many...))))
	if steps := p.Steps(); steps != nil {
		t.Errorf("a transaction of %d resources has %d steps, want none", len(steps.Taken), len(steps.Statements))
	}
}
