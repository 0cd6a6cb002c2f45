package filter

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// A group of statements the decoder read loses that mark when the rules
// drop part of it: its tables no longer list all its statements name.
func TestFilteredStatementsLeaveTheirMark(t *testing.T) {
	q := func(db, text string) binlog.Event {
		return binlog.Event{Data: &replication.QueryEvent{Schema: []byte(db), Query: []byte(text)}}
	}
	txn := &binlog.Transaction{
		Flags:  binlog.FlagTransactional | binlog.FlagAllowParallel | binlog.FlagKnownStatements,
		Events: []binlog.Event{q("app", "BEGIN"), q("app", "UPDATE t SET a = 1"), q("skip", "UPDATE t SET a = 1"), q("app", "COMMIT")},
		Tables: []binlog.TableRef{{Schema: "app", Table: "t"}, {Schema: "skip", Table: "t"}},
	}
	r := &Rules{IgnoreDB: []string{"skip"}}
	out, ok := r.Apply(txn)
	if !ok || out.Has(binlog.FlagKnownStatements) {
		t.Fatalf("kept %v, known %v: want kept, not known", ok, ok && out.Has(binlog.FlagKnownStatements))
	}
	if !txn.Has(binlog.FlagKnownStatements) {
		t.Errorf("the decoded transaction itself was changed")
	}
	same, _ := (&Rules{IgnoreDB: []string{"other"}}).Apply(txn)
	if !same.Has(binlog.FlagKnownStatements) {
		t.Errorf("a group the rules leave whole lost its mark")
	}
}
