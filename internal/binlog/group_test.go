// Tests that groupTracker cuts MariaDB and MySQL event streams into groups
// where the source's groups begin and end, and refuses events that cannot be
// where they are.
package binlog

import (
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

func TestGroupTrackerCuts(t *testing.T) {
	sid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	e := newEncoder()
	c, i, x := cutControl, cutInside, cutComplete
	tests := []struct {
		name   string
		events [][]byte
		cuts   []groupCut
	}{
		{"MariaDB transaction: the GTID event is BEGIN, XID ends it",
			e.mariaTxn(0, 5, 0, "s", "t", 1), []groupCut{i, i, i, i, x}},
		{"MariaDB transaction with group commit id",
			e.mariaTxn(0, 6, 3, "s", "t", 1, 2), []groupCut{i, i, i, i, x}},
		{"MariaDB standalone DDL",
			e.mariaDDL(0, 7, "s", "CREATE TABLE t (a INT)"), []groupCut{i, x}},
		{"MariaDB standalone statement after context events",
			[][]byte{e.mariaGTID(8, 0, gtidStandalone, 0), e.intVar(3), e.annotate("x"), e.query("s", "INSERT INTO m VALUES (NULL)")},
			[]groupCut{i, i, i, x}},
		{"statement group ends with a COMMIT query",
			e.mariaStatementTxn(1, 2, "s", "INSERT INTO m VALUES (8)"), []groupCut{i, i, i, x}},
		{"ROLLBACK query ends a group",
			[][]byte{e.mariaGTID(9, 0, 0, 0), e.query("s", "INSERT INTO m VALUES (1)"), e.query("s", "ROLLBACK")},
			[]groupCut{i, i, x}},
		{"lower-case commit with spaces ends a group",
			[][]byte{e.mariaGTID(9, 0, 0, 0), e.query("s", "UPDATE m SET a=1"), e.query("s", " commit ")},
			[]groupCut{i, i, x}},
		{"ROLLBACK TO SAVEPOINT does not end a group",
			[][]byte{e.mariaGTID(9, 0, 0, 0), e.query("s", "ROLLBACK TO SAVEPOINT a"), e.xid(1)},
			[]groupCut{i, i, x}},
		{"XA prepare ends a group",
			[][]byte{e.mariaGTID(10, 0, gtidTransactional, 0), e.query("s", "XA START 'x1'"), e.tableMap(70, "s", "t"),
				e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1), e.query("s", "XA END 'x1'"), e.xaPrepare()},
			[]groupCut{i, i, i, i, i, x}},
		{"control events outside groups",
			[][]byte{e.rotate("bin.000002"), e.gtidList(), e.binlogCheckpoint("bin.000001")},
			[]groupCut{c, c, c}},
		{"control events between groups",
			append(append(e.mariaDDL(0, 1, "s", "DROP TABLE t"), e.binlogCheckpoint("bin.000001")), e.mariaDDL(0, 2, "s", "DROP TABLE u")...),
			[]groupCut{i, x, c, i, x}},
		{"MySQL transaction: GTID, BEGIN, ..., XID",
			e.mysqlTxn(sid, 1, 0, 1, "s", "t", 1), []groupCut{i, i, i, i, x}},
		{"MySQL DDL: GTID and the statement",
			e.mysqlDDL(sid, 2, 1, 2, "s", "CREATE TABLE t (a INT)"), []groupCut{i, x}},
		{"MySQL statement transaction ends with COMMIT",
			[][]byte{e.mysqlGTID(sid, 3, 2, 3), e.query("s", "BEGIN"), e.query("s", "INSERT INTO m VALUES (1)"), e.query("s", "COMMIT")},
			[]groupCut{i, i, i, x}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format := e.format()
			if strings.HasPrefix(tt.name, "MySQL") {
				format = e.mysqlFormat()
			}
			evs := parseEvents(t, append([][]byte{format}, tt.events...)...)[1:]
			var g groupTracker
			for n, ev := range evs {
				cut, err := g.add(ev)
				if err != nil {
					t.Fatalf("event %d (%s): %v", n, ev.Header.EventType, err)
				}
				if cut != tt.cuts[n] {
					t.Fatalf("event %d (%s): cut %d, want %d", n, ev.Header.EventType, cut, tt.cuts[n])
				}
				if want := cut == cutInside; g.open() != want {
					t.Fatalf("event %d (%s): open() = %v, want %v", n, ev.Header.EventType, g.open(), want)
				}
			}
		})
	}
}

func TestGroupTrackerErrors(t *testing.T) {
	sid := [16]byte{9: 1}
	e := newEncoder()
	tests := []struct {
		name   string
		mysql  bool
		events [][]byte // the last one must be refused
		want   string
	}{
		{"MariaDB GTID inside an open transaction", false,
			[][]byte{e.mariaGTID(1, 0, gtidTransactional, 0), e.tableMap(70, "s", "t"), e.mariaGTID(2, 0, 0, 0)}, "before the previous one committed"},
		{"MariaDB GTID right after a standalone GTID", false,
			[][]byte{e.mariaGTID(1, 0, gtidStandalone|gtidDDL, 0), e.mariaGTID(2, 0, gtidStandalone, 0)}, "before the previous one ended"},
		{"MySQL GTID before BEGIN's group committed", true,
			[][]byte{e.mysqlGTID(sid, 1, 0, 1), e.query("s", "BEGIN"), e.mysqlGTID(sid, 2, 0, 2)}, "before the previous one committed"},
		{"MySQL GTID right after a GTID", true,
			[][]byte{e.mysqlGTID(sid, 1, 0, 1), e.mysqlGTID(sid, 2, 0, 2)}, "before the previous one ended"},
		{"query outside a group", false, [][]byte{e.query("s", "CREATE TABLE t (a INT)")}, "outside any GTID event group"},
		{"BEGIN outside a group", false, [][]byte{e.query("s", "BEGIN")}, "outside any GTID event group"},
		{"table map outside a group", false, [][]byte{e.tableMap(70, "s", "t")}, "outside any GTID event group"},
		{"XID after a whole group", false, append(e.mariaTxn(0, 1, 0, "s", "t", 1), e.xid(9)), "outside any GTID event group"},
		{"COMMIT after a standalone DDL", false, append(e.mariaDDL(0, 1, "s", "DROP TABLE t"), e.query("s", "COMMIT")), "outside any GTID event group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format := e.format()
			if tt.mysql {
				format = e.mysqlFormat()
			}
			evs := parseEvents(t, append([][]byte{format}, tt.events...)...)[1:]
			var g groupTracker
			last := len(evs) - 1
			for n, ev := range evs[:last] {
				if _, err := g.add(ev); err != nil {
					t.Fatalf("event %d: %v", n, err)
				}
			}
			_, err := g.add(evs[last])
			if err == nil {
				t.Fatalf("%s accepted", evs[last].Header.EventType)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}
