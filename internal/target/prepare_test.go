package target

import (
	"reflect"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// statementTxn is a transaction of one UPDATE on db, as a MIXED binlog
// logs sysbench's.
func statementTxn(db, update string) *binlog.Transaction {
	query := func(schema, text string) binlog.Event {
		return binlog.Event{Header: &replication.EventHeader{EventType: replication.QUERY_EVENT},
			Data: &replication.QueryEvent{Schema: []byte(schema), Query: []byte(text)}}
	}
	return &binlog.Transaction{
		Flavor: binlog.FlavorMariaDB,
		Flags:  binlog.FlagTransactional | binlog.FlagAllowParallel,
		Events: []binlog.Event{query(db, "BEGIN"), query(db, update),
			{Header: &replication.EventHeader{EventType: replication.XID_EVENT}, Data: &replication.XIDEvent{}}},
	}
}

// TestPreparedScriptIsTheScript checks that a batch's script made ahead
// is the one made at its turn, that making it leaves the session as it
// was, and that a session whose state changed meanwhile makes it again.
func TestPreparedScriptIsTheScript(t *testing.T) {
	txns := []*binlog.Transaction{statementTxn("d1", "UPDATE t SET a=1"), statementTxn("d2", "UPDATE t SET a=2")}
	for _, txn := range txns {
		if !Batchable(txn) {
			t.Fatalf("%v is not Batchable", txn.Events)
		}
	}

	fresh := &Session{maxStatement: 1 << 20}
	want, wantTail, err := fresh.batchScript(txns, "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}

	s := &Session{maxStatement: 1 << 20}
	s.Prepare(txns)
	if s.prepared == nil {
		t.Fatal("Prepare kept no script")
	}
	if s.db != "" || s.state != nil {
		t.Fatalf("Prepare left the session at database %q, state %v; want it as it was", s.db, s.state)
	}
	p := s.takePrepared(txns)
	if p == nil {
		t.Fatal("the prepared script was not taken by an unchanged session")
	}
	p.body[p.checkpointAt] = "CHECKPOINT"
	if !slices.Equal(p.body, want) || !slices.Equal(p.tail, wantTail) {
		t.Errorf("prepared script\n%q %q\nwant\n%q %q", p.body, p.tail, want, wantTail)
	}
	if s.db != fresh.db || s.state == nil {
		t.Errorf("after the prepared script the session is at database %q, state %v; want %q and a state", s.db, s.state, fresh.db)
	}
	if s.takePrepared(txns) != nil {
		t.Error("a prepared script was taken twice")
	}

	// Making a script changes nothing of the state the session holds (a
	// USE resets collation_database in the state it replaces).
	s.state.HasCollationDatabase = true
	held := *s.state
	s.Prepare(txns)
	if !reflect.DeepEqual(*s.state, held) {
		t.Errorf("Prepare changed the session's state from %+v to %+v", held, *s.state)
	}

	// The session's state changed between Prepare and the turn.
	s.Prepare(txns)
	s.db = "elsewhere"
	if s.takePrepared(txns) != nil {
		t.Error("a script made for another database was taken")
	}
	// Another batch.
	s.Prepare(txns)
	if s.takePrepared(txns[:1]) != nil {
		t.Error("a script made for other transactions was taken")
	}
}
