package binlog

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// nullUserVar is a USER_VAR_EVENT setting name to NULL.
func (e *encoder) nullUserVar(name string) []byte {
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
	body = append(body, name...)
	return e.event(replication.USER_VAR_EVENT, 0, body, []byte{1})
}

// statementGroup decodes one transactional, parallel group of the given
// events (BEGIN and XID around them) with r.
func statementGroup(t *testing.T, r *StatementReader, e *encoder, flags byte, events ...[]byte) *Transaction {
	t.Helper()
	raw := append([][]byte{e.format(), e.mariaGTID(1, 0, flags, 0), e.query("db", "BEGIN")}, events...)
	raw = append(raw, e.xid(9))
	parsed := parseEvents(t, raw...)
	txn := &Transaction{Flavor: FlavorMariaDB, Flags: MariaDBFlags(flags)}
	for _, ev := range parsed[2:] {
		txn.add(ev, nil, nil, nil)
	}
	r.Read(txn)
	return txn
}

func TestStatementReaderKnowsPlainDML(t *testing.T) {
	const parallel = gtidTransactional | gtidAllowParallel
	for _, c := range []struct {
		name   string
		flags  byte
		events func(e *encoder) [][]byte
		tables []TableRef // nil: not known
	}{
		{"sysbench's statements", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE sbtest1 SET k=k+1 WHERE id=5"), e.query("db", "DELETE FROM other.sbtest2 WHERE id=7"),
				e.intVar(3), e.query("db", "INSERT INTO sbtest1 (k) VALUES (1)")}
		}, []TableRef{{"db", "sbtest1"}, {"other", "sbtest2"}}},
		{"a user variable the group sets", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.nullUserVar("tag"), e.query("db", "INSERT INTO t VALUES (@tag)")}
		}, []TableRef{{"db", "t"}}},
		{"a user variable the group does not set", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.nullUserVar("tag"), e.query("db", "INSERT INTO t VALUES (@other)")}
		}, nil},
		{"one statement not plain DML", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE t SET a = 1"), e.query("db", "SAVEPOINT a")}
		}, nil},
		{"unsafe: LIMIT without ORDER BY", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE t SET a = 1 LIMIT 1")}
		}, nil},
		{"a stored function", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE t SET a = f()")}
		}, nil},
		{"not transactional on the source", gtidAllowParallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE t SET a = 1")}
		}, nil},
		{"not to run in parallel", gtidTransactional, func(e *encoder) [][]byte {
			return [][]byte{e.query("db", "UPDATE t SET a = 1")}
		}, nil},
		{"no default database for a name without one", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.query("", "UPDATE t SET a = 1")}
		}, nil},
		{"rows only", parallel, func(e *encoder) [][]byte {
			return [][]byte{e.tableMap(1, "db", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 1, 5)}
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEncoder()
			txn := statementGroup(t, NewStatementReader(), e, c.flags, c.events(e)...)
			if got := txn.Has(FlagKnownStatements); got != (c.tables != nil) {
				t.Fatalf("known %v, want %v", got, c.tables != nil)
			}
			if c.tables != nil && !slices.Equal(txn.Tables, c.tables) {
				t.Errorf("tables %v, want %v", txn.Tables, c.tables)
			}
		})
	}
}

// A temporary table created in one group keeps the statements of later
// groups that name it, of any session, unknown until it is dropped.
func TestStatementReaderFollowsTemporaryTables(t *testing.T) {
	const parallel = gtidTransactional | gtidAllowParallel
	r := NewStatementReader()
	e := newEncoder()
	update := func() bool {
		return statementGroup(t, r, e, parallel, e.query("db", "UPDATE t SET a = 1")).Has(FlagKnownStatements)
	}
	if !update() {
		t.Fatal("a statement on a real table is not known")
	}
	statementGroup(t, r, e, 0, e.query("db", "CREATE TEMPORARY TABLE t (a INT)"))
	if update() {
		t.Fatal("a statement on a name held as a temporary table is known")
	}
	statementGroup(t, r, e, 0, e.query("db", "DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t`"))
	if !update() {
		t.Fatal("a statement on a dropped temporary table's name is not known")
	}
}

func TestStatementReaderSaysWhichGroupsMayUseTemporaryTables(t *testing.T) {
	const parallel = gtidTransactional | gtidAllowParallel
	r := NewStatementReader()
	e := newEncoder()
	uses := func(flags byte, events ...[]byte) bool {
		return statementGroup(t, r, e, flags, events...).MayUseTemporary
	}
	if uses(parallel, e.query("db", "UPDATE t SET a = 1")) {
		t.Fatal("a statement on a real table, none held, may use a temporary table")
	}
	if !uses(0, e.query("db", "CREATE TEMPORARY TABLE scratch (a INT)")) {
		t.Fatal("CREATE TEMPORARY TABLE may not use a temporary table")
	}
	if !uses(parallel, e.query("db", "UPDATE t JOIN scratch USING (a) SET t.a = 2")) {
		t.Fatal("a statement naming a held temporary table may not use it")
	}
	if uses(parallel, e.query("db", "XA START 'x'"), e.query("db", "UPDATE t SET a = 3"), e.query("db", "XA END 'x'")) {
		t.Fatal("an XA transaction on a real table may use a temporary table")
	}
	if !uses(0, e.query("db", "DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `scratch`")) {
		t.Fatal("DROP TEMPORARY TABLE may not use a temporary table")
	}
	if uses(parallel, e.query("db", "UPDATE t JOIN scratch USING (a) SET t.a = 4")) {
		t.Fatal("a statement naming a dropped temporary table may use it")
	}
}
