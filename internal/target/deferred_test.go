package target

import (
	"strings"
	"testing"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// aloneTxn is a statement on a MyISAM table: a group the target binlogs as
// it executes.
func aloneTxn(domain uint32, seq uint64) *binlog.Transaction {
	txn := statementTxn("d", "INSERT INTO m VALUES (1)")
	txn.Flags = 0
	txn.MariaDB = gtid.MariaDBGTID{Domain: domain, Server: 1, Seq: seq}
	return txn
}

// TestPositionsWait checks which groups' positions wait, that a waiting
// position's transaction leaves the group's script for the one-group check,
// and when the session keeps the position or drops it.
func TestPositionsWait(t *testing.T) {
	on := Options{KeepGTID: true, WriteBinlog: true, DeferPositions: true}
	alone := aloneTxn(0, 5)
	sequence := aloneTxn(0, 6)
	sequence.WritesSequence = true
	ddl := aloneTxn(0, 7)
	ddl.Flags = binlog.FlagDDL | binlog.FlagStandalone
	for _, c := range []struct {
		name string
		opts Options
		txns []*binlog.Transaction
		want bool
	}{
		{"a MyISAM statement", on, []*binlog.Transaction{alone}, true},
		{"causal commit order", Options{KeepGTID: true, WriteBinlog: true}, []*binlog.Transaction{alone}, false},
		{"the target's binlog off", Options{KeepGTID: true, DeferPositions: true}, []*binlog.Transaction{alone}, false},
		{"a transaction", on, []*binlog.Transaction{statementTxn("d", "UPDATE t SET a=1")}, false},
		{"a sequence's new value", on, []*binlog.Transaction{sequence}, false},
		{"a DDL", on, []*binlog.Transaction{ddl}, false},
	} {
		s := &Session{opts: c.opts, maxStatement: 1 << 20}
		if got := s.defersPosition(c.txns); got != c.want {
			t.Errorf("%s: defersPosition %v, want %v", c.name, got, c.want)
		}
	}

	s := &Session{opts: on, maxStatement: 1 << 20}
	const checkpoint = "INSERT INTO gapless.checkpoint VALUES (5)"
	_, tail, err := s.script(alone, checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	tail, err = s.deferPosition(tail, checkpoint, alone)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(tail, ";"), checkpoint) {
		t.Errorf("the position is still in the script's tail: %q", tail)
	}
	checks := 0
	for _, stmt := range tail {
		if strings.HasPrefix(stmt, oneGroupMark) {
			checks++
		}
	}
	if checks != 1 {
		t.Errorf("the tail holds %d one-group checks, want 1: %q", checks, tail)
	}

	s.committed(alone)
	if !s.Deferred() || s.deferred[0] != checkpoint {
		t.Fatalf("after the commit the session keeps %v, want the group's position", s.deferred)
	}
	s.committed(aloneTxn(1, 9)) // a job of another domain
	if s.deferred[0] != checkpoint {
		t.Fatalf("a job of another domain dropped the position: %v", s.deferred)
	}
	s.committed(aloneTxn(0, 6)) // a later job of the domain, its position written
	if s.Deferred() {
		t.Fatalf("a later job of the domain left the position waiting: %v", s.deferred)
	}
}

// TestForeignWriteNamesTheDomain: a group applied alone whose domain the
// target's binlog holds past it, written by something besides this
// stream, stops the run with a message docs/status.md quotes.
func TestForeignWriteNamesTheDomain(t *testing.T) {
	last := gtid.MariaDBGTID{Domain: 0, Server: 2, Seq: 9}
	msg := foreignWriteError(aloneTxn(0, 5), last).Error()
	for _, want := range []string{"the target's binlog already holds 0-2-9, past this transaction in its domain", "something besides this stream writes GTID domain 0 on the target"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q: %s", want, msg)
		}
	}
}
