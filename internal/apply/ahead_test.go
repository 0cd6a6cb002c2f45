package apply

import (
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/schedule"
)

func TestAheadOf(t *testing.T) {
	batch := make([]*binlog.Transaction, 4)
	for i := range batch {
		batch[i] = &binlog.Transaction{Events: make([]binlog.Event, 5)}
	}
	for _, c := range []struct {
		ahead, want []int
	}{
		{[]int{5, 5, 5, 5}, nil},
		{[]int{0, 0, 0, 0}, nil},
		{[]int{0, 5, 0, 5}, []int{0, 5, 0, 5}},
		{[]int{5, 0, 0, 0}, []int{5, 0, 0, 0}},
		{[]int{3, 5, 5, 5}, []int{3, 5, 5, 5}},
		{[]int{0, 2, 0, 0}, []int{0, 2, 0, 0}},
	} {
		if got := aheadOf(c.ahead, batch); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("aheadOf(%v) = %v, want %v", c.ahead, got, c.want)
		}
	}
}

// TestNewJobRunsAheadTheStatementsThatWaitForNothing checks which events of
// a batch's members run ahead, put first: of each, its statements that
// write no row a transaction still to commit before the batch writes, nor a
// row a member writes whose events do not all run ahead, nor a row a
// statement before it in the member that waits writes.
func TestNewJobRunsAheadTheStatementsThatWaitForNothing(t *testing.T) {
	ws := schedule.NewWriteset(oneTable{})
	c := &coordinator{r: &Replica{clog: newCommitLog()}, ws: ws, policy: ws}
	if _, err := c.newJob([]*binlog.Transaction{rowTxn(1)}); err != nil {
		t.Fatal(err)
	}
	// Each statement writes one row; every transaction is BEGIN, its
	// statements, COMMIT.
	batch := []*binlog.Transaction{
		rowTxn(10, 1, 11), // row 1 is the first job's, still to commit
		rowTxn(20),
		rowTxn(11, 30), // row 11 is the first member's, which does not all run ahead
		rowTxn(10),     // row 10 too
		rowTxn(40, 41),
		rowTxn(20),       // the second member's row: that one runs whole ahead
		rowTxn(1, 60, 1), // row 1 again: it meets the first statement, which waits
	}
	j, err := c.newJob(batch)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 3, 2, 0, 4, 3, 2}; !slices.Equal(j.ahead, want) {
		t.Errorf("events run ahead %v, want %v", j.ahead, want)
	}
	// The statements run ahead are put first, in their order.
	for i, want := range map[int][]int64{0: {10, 11, 1}, 2: {30, 11}, 6: {60, 1, 1}} {
		if got := rowIDs(batch[i]); !slices.Equal(got, want) {
			t.Errorf("member %d's rows are in the order %v, want %v", i, got, want)
		}
	}
	if !slices.Equal(j.deps, []int64{1}) {
		t.Errorf("the job waits for %v, want [1]", j.deps)
	}

	// A job of one transaction runs whole, its events in their order.
	one := rowTxn(50, 1, 51)
	if j, err = c.newJob([]*binlog.Transaction{one}); err != nil {
		t.Fatal(err)
	}
	if j.ahead != nil || !slices.Equal(rowIDs(one), []int64{50, 1, 51}) {
		t.Errorf("a job of one transaction has ahead %v and rows %v, want nil and [50 1 51]", j.ahead, rowIDs(one))
	}

	// Once the first job has committed, nothing waits.
	c.r.clog.commit(1)
	c.r.clog.commitRun(2, len(batch)+1)
	j, err = c.newJob([]*binlog.Transaction{rowTxn(1), rowTxn(10)})
	if err != nil {
		t.Fatal(err)
	}
	if j.ahead != nil {
		t.Errorf("with nothing to wait for, events run ahead %v, want nil", j.ahead)
	}
}

// oneTable is a catalog of one table, db.t, keyed by its first column.
type oneTable struct{}

func (oneTable) Table(schema, table string) (*schedule.TableInfo, error) {
	pk := schedule.UniqueKey{Name: "PRIMARY", Columns: []int{0}, Fold: []bool{false}, Pad: []bool{false}, Prefix: []int{0}}
	return &schedule.TableInfo{Keys: []schedule.UniqueKey{pk}}, nil
}
func (oneTable) Invalidate() {}

// rowIDs are the ids rowTxn's events write, in the order of its events.
func rowIDs(txn *binlog.Transaction) []int64 {
	var ids []int64
	for _, ev := range txn.Events {
		if r, ok := ev.Data.(*replication.RowsEvent); ok {
			ids = append(ids, r.Rows[0][0].(int64))
		}
	}
	return ids
}

// rowTxn is a transaction of one single-row insert into db.t per id, each
// a statement of its own.
func rowTxn(ids ...int64) *binlog.Transaction {
	tm := &replication.TableMapEvent{Schema: []byte("db"), Table: []byte("t")}
	events := []binlog.Event{{Data: &replication.QueryEvent{Query: []byte("BEGIN")}}}
	for _, id := range ids {
		events = append(events, binlog.Event{Data: &replication.RowsEvent{Table: tm, Flags: replication.RowsEventStmtEndFlag, Rows: [][]any{{id}}, SkippedColumns: [][]int{nil}}})
	}
	events = append(events, binlog.Event{Data: &replication.QueryEvent{Query: []byte("COMMIT")}})
	return &binlog.Transaction{Flavor: binlog.FlavorMariaDB, Flags: binlog.FlagTransactional | binlog.FlagAllowParallel, Events: events}
}
