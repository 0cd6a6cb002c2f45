package target

import (
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
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
	want, wantTail, err := fresh.batchScript(txns, nil, "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}

	s := &Session{maxStatement: 1 << 20}
	s.Prepare(txns, nil)
	if s.prepared == nil {
		t.Fatal("Prepare kept no script")
	}
	if s.db != "" || s.state != nil {
		t.Fatalf("Prepare left the session at database %q, state %v; want it as it was", s.db, s.state)
	}
	p := s.takePrepared(txns, nil)
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
	if s.takePrepared(txns, nil) != nil {
		t.Error("a prepared script was taken twice")
	}

	// Making a script changes nothing of the state the session holds (a
	// USE resets collation_database in the state it replaces).
	s.state.HasCollationDatabase = true
	held := *s.state
	s.Prepare(txns, nil)
	if !reflect.DeepEqual(*s.state, held) {
		t.Errorf("Prepare changed the session's state from %+v to %+v", held, *s.state)
	}

	// The session's state changed between Prepare and the turn.
	s.Prepare(txns, nil)
	s.db = "elsewhere"
	if s.takePrepared(txns, nil) != nil {
		t.Error("a script made for another database was taken")
	}
	// Another batch.
	s.Prepare(txns, nil)
	if s.takePrepared(txns[:1], nil) != nil {
		t.Error("a script made for other transactions was taken")
	}
}

// TestBatchBegunAhead checks that a batch with transactions ahead runs
// them first, each part in source order, each statement under its own
// database still, with the mark between the parts, and the GTID of the
// batch's last transaction; and that a script prepared for another split
// is not taken.
func TestBatchBegunAhead(t *testing.T) {
	txns := []*binlog.Transaction{
		statementTxn("d1", "UPDATE t SET a=1"), statementTxn("d2", "UPDATE t SET a=2"),
		statementTxn("d1", "UPDATE t SET a=3"), statementTxn("d3", "UPDATE t SET a=4"),
	}
	for i, txn := range txns {
		txn.MariaDB.Domain, txn.MariaDB.Server, txn.MariaDB.Seq = 0, 1, uint64(10+i)
	}
	ahead := []int{0, len(txns[1].Events), 0, len(txns[3].Events)}
	s := &Session{maxStatement: 1 << 20, opts: Options{KeepGTID: true}}
	body, _, err := s.batchScript(txns, ahead, "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}
	var updates []string
	mark, seqs := -1, 0
	for i, stmt := range body {
		if strings.Contains(stmt, "gtid_seq_no") {
			seqs++
		}
		switch {
		case stmt == aheadMark:
			mark = len(updates)
		case strings.HasPrefix(stmt, "UPDATE"):
			updates = append(updates, stmt)
		case strings.HasPrefix(stmt, "USE"):
			updates = append(updates, stmt)
		case strings.Contains(stmt, "gtid_seq_no") && !strings.Contains(stmt, "=13"):
			t.Errorf("statement %d %q: the batch takes the GTID of its last transaction, seq 13", i, stmt)
		}
	}
	if seqs != 1 {
		t.Errorf("the batch sets gtid_seq_no %d times, want once:\n%q", seqs, body)
	}
	want := []string{"USE `d2`", "UPDATE t SET a=2", "USE `d3`", "UPDATE t SET a=4", "USE `d1`", "UPDATE t SET a=1", "UPDATE t SET a=3"}
	if !slices.Equal(updates, want) || mark != 4 {
		t.Errorf("batch begun ahead runs\n%q\nwith the mark before %d; want\n%q\nwith the mark before 4\n(script %q)", updates, mark, want, body)
	}

	s.Prepare(txns, ahead)
	if s.takePrepared(txns, nil) != nil {
		t.Error("a script prepared with transactions ahead was taken for a batch run whole")
	}
	s.Prepare(txns, nil)
	if s.takePrepared(txns, ahead) != nil {
		t.Error("a script prepared whole was taken for a batch begun ahead")
	}
	s.Prepare(txns, ahead)
	if p := s.takePrepared(txns, ahead); p == nil || !slices.Contains(p.body, aheadMark) {
		t.Error("the script prepared with transactions ahead was not taken, or has no mark")
	}
}

// TestBatchBegunAheadInPart checks a batch whose transactions run their
// first statements ahead: the events before the mark are each
// transaction's first ahead[i], in source order, and those after it the
// rest, in source order, each statement's table map with its rows.
func TestBatchBegunAheadInPart(t *testing.T) {
	// A transaction of statements, each a table map and one row event
	// whose bytes name it.
	txn := func(names ...string) *binlog.Transaction {
		events := []binlog.Event{{Data: &replication.QueryEvent{Query: []byte("BEGIN")}}}
		for _, n := range names {
			events = append(events,
				binlog.Event{Data: &replication.TableMapEvent{}, Raw: []byte("map" + n + ";")},
				binlog.Event{Data: &replication.RowsEvent{Flags: replication.RowsEventStmtEndFlag}, Raw: []byte("rows" + n + ";")})
		}
		events = append(events, binlog.Event{Data: &replication.XIDEvent{}})
		return &binlog.Transaction{Flavor: binlog.FlavorMariaDB, Flags: binlog.FlagTransactional | binlog.FlagAllowParallel, Events: events}
	}
	txns := []*binlog.Transaction{txn("a1", "a2", "a3"), txn("b1"), txn("c1", "c2"), txn("d1")}
	ahead := []int{3, len(txns[1].Events), 1, 0} // a1; b1 whole; nothing of c and d
	s := &Session{maxStatement: 1 << 20}
	body, _, err := s.batchScript(txns, ahead, "CHECKPOINT")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	part := ""
	for _, stmt := range body {
		switch {
		case stmt == aheadMark:
			parts, part = append(parts, part), ""
		case strings.HasPrefix(stmt, "BINLOG '"):
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(stmt, "BINLOG '"), "'"))
			if err != nil {
				t.Fatalf("%q: %v", stmt, err)
			}
			part += string(raw)
		}
	}
	parts = append(parts, part)
	want := []string{"mapa1;rowsa1;mapb1;rowsb1;", "mapa2;rowsa2;mapa3;rowsa3;mapc1;rowsc1;mapc2;rowsc2;mapd1;rowsd1;"}
	if !slices.Equal(parts, want) {
		t.Errorf("the events before and after the mark are\n%q\nwant\n%q", parts, want)
	}
}
