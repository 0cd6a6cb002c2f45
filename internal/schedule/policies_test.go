// policies_test.go proves that serial, commit-id (MariaDB commit_id and MySQL
// logical clock), schema and domain make each transaction wait for exactly
// the uncommitted transactions their rule orders before it, that barriers
// (DDL, statements, transactions the source did not let run in parallel)
// run alone, and that New knows the policies by name.
package schedule

import (
	"testing"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

func TestSerial(t *testing.T) {
	run(t, NewSerial(), []step{
		admit(dml()),
		admit(dml(), 1),
		admit(inDomain(7), 2),
		commit(1),
		admit(mysqlClock(0, 1), 3),
		commit(2, 3, 4),
		admit(dml()),
	})
}

func TestCommitIDMariaDB(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"one group runs in parallel, the next waits for all of it", []step{
			admit(mariadb(10)),
			admit(mariadb(10)),
			admit(mariadb(10)),
			admit(mariadb(11), 1, 2, 3),
			admit(mariadb(11), 1, 2, 3),
			admit(mariadb(12), 4, 5),
		}},
		{"commits shrink what the next group waits for", []step{
			admit(mariadb(10)),
			admit(mariadb(10)),
			admit(mariadb(10)),
			commit(1, 3),
			admit(mariadb(11), 2),
			commit(2),
			admit(mariadb(11)),
			admit(mariadb(12), 4, 5),
		}},
		{"commit_id 0 runs alone", []step{
			admit(mariadb(10)),
			admit(mariadb(10)),
			admit(mariadb(0), 1, 2),
			admit(mariadb(0), 3),
			admit(mariadb(10), 4),
			admit(mariadb(10), 4),
		}},
		{"a DDL waits for every uncommitted one and the next waits for it", []step{
			admit(mariadb(10)),
			admit(mariadb(10)),
			admitBarrier(ddl("ALTER TABLE db.t ADD c INT"), 1, 2),
			admit(mariadb(11), 3),
			admit(mariadb(11), 3),
		}},
		{"a DDL inside a group is still a barrier", []step{
			admit(mariadb(10)),
			admitBarrier(withCommitID(ddl("CREATE TABLE db.u (id INT PRIMARY KEY)"), 10), 1),
			admit(mariadb(10), 2),
		}},
		{"a transaction without allow-parallel is a barrier", []step{
			admit(mariadb(10)),
			admitBarrier(serialOnly(mariadb(10)), 1),
			admit(mariadb(10), 2),
		}},
		{"statements are a barrier", []step{
			admit(mariadb(10)),
			admitBarrier(mariadb(10, query("BEGIN"), query("UPDATE db.t SET v = v + 1"), query("COMMIT")), 1),
			admit(mariadb(10), 2),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewCommitID(), c.steps) })
	}
}

func TestCommitIDMySQL(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"last_committed below every sequence number runs in parallel", []step{
			admit(mysqlClock(0, 1)),
			admit(mysqlClock(0, 2)),
			admit(mysqlClock(0, 3)),
			admit(mysqlClock(3, 4), 1, 2, 3),
			admit(mysqlClock(3, 5), 1, 2, 3),
			admit(mysqlClock(4, 6), 4),
		}},
		{"last_committed names the newest sequence number to wait for", []step{
			admit(mysqlClock(0, 1)),
			admit(mysqlClock(1, 2), 1),
			admit(mysqlClock(1, 3), 1),
			admit(mysqlClock(2, 4), 2),
			commit(1, 3),
			admit(mysqlClock(3, 5), 2),
			commit(2),
			admit(mysqlClock(3, 6)),
		}},
		{"a new binlog file restarts sequence numbers after everything before it", []step{
			admit(mysqlClock(0, 1)),
			admit(mysqlClock(1, 2), 1),
			admit(mysqlClock(1, 3), 1),
			admit(mysqlClock(0, 1), 2, 3),
			admit(mysqlClock(0, 2), 2, 3),
			admit(mysqlClock(1, 3), 4),
			commit(1, 2, 3, 4),
			admit(mysqlClock(2, 4), 5),
		}},
		{"a new binlog file after everything committed waits for nothing", []step{
			admit(mysqlClock(0, 1)),
			admit(mysqlClock(1, 2), 1),
			commit(1, 2),
			admit(mysqlClock(0, 1)),
			admit(mysqlClock(1, 2), 3),
		}},
		{"a DDL is a barrier", []step{
			admit(mysqlClock(0, 1)),
			admitBarrier(mysqlDDL(0, 2), 1),
			admit(mysqlClock(0, 3), 2),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewCommitID(), c.steps) })
	}
}

func TestSchema(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"different databases in parallel, the same database in order", []step{
			admit(inSchemas("a")),
			admit(inSchemas("b")),
			admit(inSchemas("a"), 1),
			admit(inSchemas("c")),
			admit(inSchemas("a", "b"), 2, 3),
			admit(inSchemas("c"), 4),
			commit(1, 2, 3),
			admit(inSchemas("b"), 5),
			commit(5),
			admit(inSchemas("a")),
		}},
		{"a transaction of no database is a barrier", []step{
			admit(inSchemas("a")),
			admit(inSchemas("b")),
			admitBarrier(inSchemas(), 1, 2),
			admit(inSchemas("c"), 3),
		}},
		{"a DDL is a barrier", []step{
			admit(inSchemas("a")),
			admitBarrier(withSchemas(ddl("CREATE TABLE a.t (id INT)"), "a"), 1),
			admit(inSchemas("b"), 2),
		}},
		{"row events name their database", []step{
			admit(dml(rows("a", "t", row(1)))),
			admit(dml(rows("b", "t", row(1)))),
			admit(dml(rows("a", "u", row(2))), 1),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewSchema(), c.steps) })
	}
}

func TestDomain(t *testing.T) {
	sid := func(b byte) *binlog.Transaction {
		t := mysqlClock(0, 1)
		t.MySQL = gtid.MySQLGTID{SID: [16]byte{b}, GNO: 1}
		return t
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"each domain in order, domains independent", []step{
			admit(inDomain(0)),
			admit(inDomain(1)),
			admit(inDomain(0), 1),
			admit(inDomain(2)),
			admit(inDomain(1), 2),
			commit(1),
			admit(inDomain(0), 3),
			commit(2, 3, 4, 5, 6),
			admit(inDomain(0)),
			admit(inDomain(1)),
		}},
		{"MySQL source UUIDs are domains", []step{
			admit(sid(1)),
			admit(sid(2)),
			admit(sid(1), 1),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, NewDomain(), c.steps) })
	}
}

func TestNew(t *testing.T) {
	catalog := &fakeCatalog{}
	for _, name := range Names {
		p, err := New(name, catalog)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if p.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, p.Name())
		}
	}
	if _, err := New("writeset", nil); err == nil {
		t.Error("New(writeset) without a catalog: no error")
	}
	if _, err := New("logical-clock", catalog); err == nil {
		t.Error("New(logical-clock): no error")
	}
}

func withCommitID(t *binlog.Transaction, id uint64) *binlog.Transaction {
	t.CommitID = id
	return t
}

func withSchemas(t *binlog.Transaction, schemas ...string) *binlog.Transaction {
	t.Schemas = schemas
	return t
}

func serialOnly(t *binlog.Transaction) *binlog.Transaction {
	t.Flags &^= binlog.FlagAllowParallel
	return t
}

func standalone(t *binlog.Transaction) *binlog.Transaction {
	t.Flags |= binlog.FlagStandalone
	return t
}

func mysqlDDL(lastCommitted, sequence int64) *binlog.Transaction {
	t := mysqlClock(lastCommitted, sequence)
	t.Events = []binlog.Event{query("ALTER TABLE db.t ADD c INT")}
	t.Flags |= binlog.FlagDDL
	return t
}
