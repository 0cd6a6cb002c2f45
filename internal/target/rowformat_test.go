package target

import (
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// groupOf is a MariaDB group from server 7 made of events: a string is a
// query, an int the number of row statements (a table map and a row event
// with the statement-end flag each). flags2 are the GTID event's.
func groupOf(flags binlog.TxnFlags, flags2 byte, events ...any) *binlog.Transaction {
	txn := &binlog.Transaction{
		Flavor:  binlog.FlavorMariaDB,
		Flags:   flags,
		MariaDB: gtid.MariaDBGTID{Domain: 0, Server: 7, Seq: 9},
	}
	txn.Begin.Raw = make([]byte, 19+13)
	txn.Begin.Raw[19+12] = flags2
	for _, ev := range events {
		switch e := ev.(type) {
		case string:
			txn.Events = append(txn.Events, binlog.Event{Header: &replication.EventHeader{EventType: replication.QUERY_EVENT},
				Data: &replication.QueryEvent{Schema: []byte("test"), Query: []byte(e)}})
		case int:
			for range e {
				txn.Events = append(txn.Events,
					binlog.Event{Header: &replication.EventHeader{EventType: replication.TABLE_MAP_EVENT}, Data: &replication.TableMapEvent{}},
					binlog.Event{Header: &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv1}, Data: &replication.RowsEvent{Flags: replication.RowsEventStmtEndFlag}})
			}
		}
	}
	return txn
}

// TestMixedReason checks which groups a session that logs rows applies in
// MIXED (rowformat.go): those that need their one transaction and hold
// more than one statement, not all on transactional tables, and no other.
func TestMixedReason(t *testing.T) {
	row := Options{KeepGTID: true, WriteBinlog: true, RowFormat: true}
	mysql := groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO m VALUES (2)", "ROLLBACK")
	mysql.Flavor = binlog.FlavorMySQL
	for _, c := range []struct {
		name  string
		opts  Options
		whole bool // the group runs whole: temporary tables pin the session's domain
		txn   *binlog.Transaction
		want  string // a part of the reason; "" for none
	}{
		{"a session in MIXED", Options{KeepGTID: true, WriteBinlog: true}, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO m VALUES (2)", "ROLLBACK"), ""},
		{"the target's binlog off", Options{KeepGTID: true, RowFormat: true}, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO m VALUES (2)", "ROLLBACK"), ""},
		{"a MySQL source", row, false, mysql, ""},
		{"a transaction of transactional tables", row, false, statementTxn("test", "UPDATE t SET a = 1"), ""},
		{"one statement, run in autocommit", row, false, groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "COMMIT"), ""},
		{"several statements, applied in parts", row, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO t VALUES (1)", "INSERT INTO m VALUES (2)", "COMMIT"), ""},
		{"row statements only, applied in parts", row, false, groupOf(0, 0, "BEGIN", 3, "COMMIT"), ""},
		{"a DDL", row, false, groupOf(binlog.FlagDDL|binlog.FlagStandalone, 0, "CREATE TABLE m (a INT) ENGINE=MyISAM"), ""},
		{"an XA COMMIT", row, false, groupOf(0, gtidCompletedXA, "XA COMMIT X'01',X'',1"), ""},
		{"one statement between savepoints the target leaves out, run whole", row, true,
			groupOf(0, gtidTransactional, "BEGIN", "SAVEPOINT a", "INSERT INTO m VALUES (1)", "RELEASE SAVEPOINT a", "COMMIT"), ""},
		{"several statements run whole", row, true,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO t VALUES (1)", "INSERT INTO m VALUES (2)", "COMMIT"), "holds 3 statements"},
		{"statements ending in ROLLBACK", row, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO t VALUES (1)", "ROLLBACK"), "ends in ROLLBACK"},
		{"statements with savepoints", row, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "SAVEPOINT a", "INSERT INTO m VALUES (2)", "ROLLBACK TO SAVEPOINT a", "COMMIT"), "holds 4 statements"},
		{"a statement and row statements", row, false,
			groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", 2, "COMMIT"), "1 statements and 2 row statements"},
	} {
		s := &Session{opts: c.opts, whole: c.whole, maxStatement: 1 << 20}
		shape := shapeOf(c.txn)
		got := s.mixedReason(c.txn, shape, s.statementsApart(c.txn, shape))
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: applied in MIXED (%s), want ROW", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: reason %q, want one saying %q", c.name, got, c.want)
		}
	}
}

// TestInMixedWrapsTheGroup checks that a group applied in MIXED switches
// the session to MIXED first and back to ROW after its end, with a warning
// naming its GTID, and that a group applied in ROW is left as it is.
func TestInMixedWrapsTheGroup(t *testing.T) {
	var warnings []string
	s := &Session{opts: Options{KeepGTID: true, WriteBinlog: true, RowFormat: true, Warn: func(w string) { warnings = append(warnings, w) }}, maxStatement: 1 << 20}
	body, tail, err := s.script(groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "INSERT INTO t VALUES (1)", "ROLLBACK"), "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}
	if body[0] != mixedForGroup || tail[len(tail)-1] != rowsAgain {
		t.Errorf("body %q, tail %q: want %q first and %q last", body, tail, mixedForGroup, rowsAgain)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "0-7-9") {
		t.Errorf("warnings %q: want one naming 0-7-9", warnings)
	}

	body, tail, err = s.script(groupOf(0, 0, "BEGIN", "INSERT INTO m VALUES (1)", "COMMIT"), "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range append(body, tail...) {
		if stmt == mixedForGroup || stmt == rowsAgain {
			t.Errorf("one statement in autocommit: script %q %q changes the session's format", body, tail)
		}
	}
}
