package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// TestRelayBufferWritesOnFlush: buffered groups reach the end position and
// the readers together, at Flush (or at BeginSession, or Close), in order.
func TestRelayBufferWritesOnFlush(t *testing.T) {
	e := newEncoder()
	format := e.format()
	groups := makeGroups(e, 12, map[uint32]uint64{})
	dir := t.TempDir()
	l := openTestRelay(t, dir, 0)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	if err := l.Buffer(groups[0].events, groups[0].id); err != nil {
		t.Fatal(err)
	}
	if !l.End().IsEmpty() {
		t.Fatalf("End() = %s before the buffered group is written", l.End())
	}
	for _, g := range groups[1:6] {
		if err := l.Buffer(g.events, g.id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := endOf(gtid.MariaDBPosition{}, groups[:6]); !l.End().Equal(want) {
		t.Fatalf("End() = %s after Flush, want %s", l.End(), want)
	}
	// A new session (a reconnect) writes what is buffered before its segment starts.
	for _, g := range groups[6:9] {
		if err := l.Buffer(g.events, g.id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups[9:] {
		if err := l.Buffer(g.events, g.id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c := splitEvents(t, drainLog(t, openTestRelay(t, dir, 0)))
	checkGroups(t, c.groups, groups)
}

// bigTxn is a group of many statements' row events, far larger than flushSize.
func bigTxn(e *encoder, seq uint64, statements int) testGroup {
	ids := make([]int32, 1000)
	evs := [][]byte{e.mariaGTID(seq, 0, gtidTransactional|gtidAllowParallel, 0)}
	for range statements {
		evs = append(evs, e.tableMap(70, "shop", "orders"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, ids...))
	}
	evs = append(evs, e.xid(seq+1000))
	return testGroup{id: gtid.MariaDBGTID{Domain: 0, Server: e.server, Seq: seq}, events: evs}
}

// TestRelayWritesLargeGroupsAsTheyCome: a group larger than flushSize is
// written as its events arrive (the relay log holds flushSize bytes of it,
// not the whole group), readers and the end position see none of it until
// its last event, and a group the connection loses midway is cut off the
// segment, so that the next session appends the whole group after what
// was complete.
func TestRelayWritesLargeGroupsAsTheyCome(t *testing.T) {
	e := newEncoder()
	format := e.format()
	small := makeGroups(e, 2, map[uint32]uint64{})
	big := bigTxn(e, 10, 200) // about 800 KB
	if big.size() < 3*flushSize {
		t.Fatalf("the large group holds %d bytes, want at least %d", big.size(), 3*flushSize)
	}
	dir := t.TempDir()
	l := openTestRelay(t, dir, 0)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, small)
	reader := l.NewReader()
	defer reader.Close()
	if evs, err := drain(reader); err != nil || len(splitEvents(t, evs).groups) != len(small) {
		t.Fatalf("read %d events (%v) before the large group", len(evs), err)
	}
	segment := l.Segments()[len(l.Segments())-1]
	before := fileSize(t, segment)

	// The connection is lost two thirds into the large group.
	cut := len(big.events) * 2 / 3
	for _, ev := range big.events[:cut] {
		if err := l.AddEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if cap(l.buf) > 4*flushSize {
		t.Errorf("the relay log holds %d bytes of an open group, want at most %d", cap(l.buf), 4*flushSize)
	}
	if grown := fileSize(t, segment) - before; grown < int64(big.size()/2) {
		t.Errorf("the segment grew %d bytes while %d of the open group were given, want them written", grown, big.size()*2/3)
	}
	if evs, err := drain(reader); err != nil || len(evs) != 0 {
		t.Fatalf("read %d events (%v) of an open group", len(evs), err)
	}
	if want := endOf(gtid.MariaDBPosition{}, small); !l.End().Equal(want) {
		t.Fatalf("End() = %s with a group open, want %s", l.End(), want)
	}
	if err := l.AbandonGroup(); err != nil {
		t.Fatal(err)
	}
	if size := fileSize(t, segment); size != before {
		t.Fatalf("the segment holds %d bytes after the open group was abandoned, want %d", size, before)
	}

	// The same segment goes on (a lost connection inside one session's
	// dump), then a new session fetches the group whole.
	if err := l.Buffer(big.events, big.id); err != nil {
		t.Fatal(err)
	}
	more := makeGroups(e, 2, map[uint32]uint64{0: 20, 1: 20})
	appendGroups(t, l, more)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]testGroup(nil), small...), big), more...)
	c := splitEvents(t, drainLog(t, openTestRelay(t, dir, 0)))
	checkGroups(t, c.groups, want)
}
