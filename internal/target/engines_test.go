package target

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

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

// TestPatientlyWaitsOutALockWait: a catalog read that times out on a lock
// (a Galera node rolling back the transactions of a node that left) is
// read again; one that fails otherwise is not.
func TestPatientlyWaitsOutALockWait(t *testing.T) {
	calls := 0
	err := patiently(func() error {
		calls++
		if calls < 3 {
			return &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction"}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after two lock wait timeouts: %v, %d reads; want nil after 3", err, calls)
	}
	calls = 0
	err = patiently(func() error {
		calls++
		return &mysql.MySQLError{Number: 1146, Message: "Table 'x.y' doesn't exist"}
	})
	if err == nil || calls != 1 {
		t.Fatalf("a missing table: %v after %d reads; want the error after 1", err, calls)
	}
}
