package target

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

func TestRollsBackRows(t *testing.T) {
	ev := func(d replication.Event) binlog.Event { return binlog.Event{Data: d} }
	query := func(q string) binlog.Event { return ev(&replication.QueryEvent{Query: []byte(q)}) }
	rows := []binlog.Event{
		ev(&replication.MariadbAnnotateRowsEvent{}),
		ev(&replication.TableMapEvent{Schema: []byte("s"), Table: []byte("t")}),
		ev(&replication.RowsEvent{}),
	}
	for _, c := range []struct {
		name   string
		events []binlog.Event
		want   bool
	}{
		{"rows, then ROLLBACK", append(rows[:3:3], query("ROLLBACK")), true},
		{"rows, then COMMIT", append(rows[:3:3], query("COMMIT")), false},
		{"rows, then XID", append(rows[:3:3], ev(&replication.XIDEvent{})), false},
		{"a statement, then ROLLBACK", append(append(rows[:3:3], query("INSERT INTO m VALUES (1)")), query("ROLLBACK")), false},
		{"a savepoint rolled back to", append(append(rows[:3:3], query("ROLLBACK TO SAVEPOINT a")), query("ROLLBACK")), false},
		{"ROLLBACK alone", []binlog.Event{query("ROLLBACK")}, false},
	} {
		txn := &binlog.Transaction{Flavor: binlog.FlavorMariaDB, Events: c.events}
		if got := rollsBackRows(txn); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
