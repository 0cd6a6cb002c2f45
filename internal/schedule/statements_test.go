package schedule

import (
	"testing"

	"gapless/internal/binlog"
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
	for _, c := range []struct {
		name    string
		txn     *binlog.Transaction
		barrier bool
	}{
		{"read statements", known("UPDATE t SET v = 1", "t"), false},
		{"unread statements", unread, true},
		{"read statements on a table that is not transactional", nonTransactional, true},
		{"read statements the source would not run in parallel", serialOnly, true},
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
