// cutter_test.go checks that the receiver's cutter decodes a MariaDB GTID
// event itself into what the parser makes of it, and leaves one it cannot
// read to the parser's error.
package binlog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

func TestCutterDecodesGTIDEventsAsParsed(t *testing.T) {
	e := newEncoder()
	e.server = 7
	format := e.format()
	events := [][]byte{
		e.mariaGTID(41, 0, gtidTransactional|gtidAllowParallel, 0),
		e.mariaGTID(1<<40+3, 12, gtidStandalone|gtidDDL, 0),
		e.mariaGTID(42, 3, gtidTransactional, 987654321),
	}
	c := newCutter()
	if _, err := c.decode(parseEvents(t, format)[0]); err != nil {
		t.Fatal(err)
	}
	for i, raw := range events {
		want := parseEvents(t, format, raw)[1]
		header := *want.Header
		got, err := c.decode(&replication.BinlogEvent{Header: &header, RawData: raw})
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !reflect.DeepEqual(got.Event, want.Event) {
			t.Fatalf("event %d decoded as %+v, the parser makes %+v", i, got.Event, want.Event)
		}
		g := got.Event.(*replication.MariadbGTIDEvent)
		if g.IsStandalone() != (i == 1) {
			t.Fatalf("event %d: standalone %v", i, g.IsStandalone())
		}
	}

	// The commit id's flag without the commit id: the parser's error.
	raw := e.mariaGTID(43, 0, 0, 0)
	raw[eventHeaderSize+12] |= gtidGroupCommitID
	short := raw[:eventHeaderSize+13]
	header := replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, EventSize: uint32(len(short)), LogPos: 4}
	if _, err := c.decode(&replication.BinlogEvent{Header: &header, RawData: short}); err == nil || !strings.Contains(err.Error(), "source event") {
		t.Fatalf("a GTID event cut short decoded: %v", err)
	}
}
