// Tests that the relay log keeps whole groups in order across segments,
// follows the writer, purges and resets by position, and recovers from a
// torn tail, a corrupt event or a segment that does not continue the one
// before, always leaving only whole groups that mariadb-binlog can read.
package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

type testGroup struct {
	id     gtid.MariaDBGTID
	events [][]byte
}

func (g testGroup) size() int {
	n := 0
	for _, ev := range g.events {
		n += len(ev)
	}
	return n
}

// makeGroups returns n groups of every shape, on domains 0 and 1, with
// sequence numbers continuing after seq (indexed by domain).
func makeGroups(e *encoder, n int, seq map[uint32]uint64) []testGroup {
	groups := make([]testGroup, 0, n)
	for i := range n {
		domain := uint32(i % 2)
		seq[domain]++
		s := seq[domain]
		var evs [][]byte
		switch i % 4 {
		case 0, 1:
			evs = e.mariaTxn(domain, s, uint64(i/2), "shop", "orders", int32(i), int32(i+1))
		case 2:
			evs = e.mariaDDL(domain, s, "shop", "ALTER TABLE orders ADD COLUMN c"+strings.Repeat("x", i%7)+" INT")
		default:
			evs = e.mariaStatementTxn(domain, s, "shop", "INSERT INTO log VALUES (1)")
		}
		groups = append(groups, testGroup{id: gtid.MariaDBGTID{Domain: domain, Server: e.server, Seq: s}, events: evs})
	}
	return groups
}

func endOf(start gtid.MariaDBPosition, groups []testGroup) gtid.MariaDBPosition {
	p := start.Clone()
	for _, g := range groups {
		p.Advance(g.id)
	}
	return p
}

func openTestRelay(t testing.TB, dir string, segmentSize int64) *RelayLog {
	t.Helper()
	l, err := OpenRelay(RelayOptions{Dir: dir, SegmentSize: segmentSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendGroups(t testing.TB, l *RelayLog, groups []testGroup) {
	t.Helper()
	for _, g := range groups {
		if err := l.Append(g.events, g.id); err != nil {
			t.Fatal(err)
		}
	}
}

// writeRelay writes groups into a new relay log in dir and closes it.
func writeRelay(t testing.TB, dir string, segmentSize int64, format []byte, groups []testGroup) {
	t.Helper()
	l := openTestRelay(t, dir, segmentSize)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// drain reads every event the reader can return without waiting.
func drain(r *RelayReader) ([]*replication.BinlogEvent, error) {
	var evs []*replication.BinlogEvent
	for {
		ev, err := r.Next(canceledCtx)
		if errors.Is(err, context.Canceled) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func drainLog(t testing.TB, l *RelayLog) []*replication.BinlogEvent {
	t.Helper()
	r := l.NewReader()
	defer r.Close()
	evs, err := drain(r)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// relayContent is what a reader returned, cut into its parts.
type relayContent struct {
	formats [][]byte
	lists   []gtid.MariaDBPosition
	groups  [][][]byte
}

// splitEvents cuts events into groups with a groupTracker; it fails on an
// event out of place and on a group left open at the end.
func splitEvents(t testing.TB, evs []*replication.BinlogEvent) relayContent {
	t.Helper()
	var c relayContent
	var g groupTracker
	var cur [][]byte
	for i, ev := range evs {
		switch e := ev.Event.(type) {
		case *replication.FormatDescriptionEvent:
			if g.open() {
				t.Fatalf("event %d: format description inside a group", i)
			}
			c.formats = append(c.formats, ev.RawData)
			continue
		case *replication.MariadbGTIDListEvent:
			c.lists = append(c.lists, positionFromList(e))
		}
		cut, err := g.add(ev)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		switch cut {
		case cutInside:
			cur = append(cur, ev.RawData)
		case cutComplete:
			c.groups = append(c.groups, append(cur, ev.RawData))
			cur = nil
		}
	}
	if g.open() {
		t.Fatalf("the reader returned a group without its end (%d events)", len(cur))
	}
	return c
}

func checkGroups(t testing.TB, got [][][]byte, want []testGroup) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d groups, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(joinEvents(got[i]), joinEvents(want[i].events)) {
			t.Fatalf("group %d (%s) differs from the one appended", i, want[i].id)
		}
	}
}

// segmentFile is one segment file parsed on its own.
type segmentFile struct {
	format []byte
	start  gtid.MariaDBPosition
	groups [][][]byte
	rotate string // base name the closing rotate event names, "" if none
	tail   []byte // the closing rotate event
}

func parseSegment(t testing.TB, path string) segmentFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, binlogMagic) {
		t.Fatalf("%s: no binlog magic", path)
	}
	var raws [][]byte
	for off := 4; off < len(data); {
		if len(data)-off < eventHeaderSize {
			t.Fatalf("%s: torn header at %d", path, off)
		}
		size := int(binary.LittleEndian.Uint32(data[off+9:]))
		if size < eventHeaderSize || off+size > len(data) {
			t.Fatalf("%s: torn event at %d", path, off)
		}
		raws = append(raws, data[off:off+size])
		off += size
	}
	evs := parseEvents(t, raws...)
	var s segmentFile
	if evs[0].Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
		t.Fatalf("%s: first event is %s", path, evs[0].Header.EventType)
	}
	s.format = evs[0].RawData
	list, ok := evs[1].Event.(*replication.MariadbGTIDListEvent)
	if !ok {
		t.Fatalf("%s: second event is %s, not a GTID list", path, evs[1].Header.EventType)
	}
	s.start = positionFromList(list)
	last := evs[len(evs)-1]
	if r, ok := last.Event.(*replication.RotateEvent); ok {
		s.rotate = string(r.NextLogName)
		s.tail = last.RawData
		if r.Position != 4 {
			t.Errorf("%s: rotate to position %d", path, r.Position)
		}
		evs = evs[:len(evs)-1]
	}
	s.groups = splitEvents(t, evs).groups
	for _, ev := range evs[2:] {
		if ev.Header.EventType == replication.ROTATE_EVENT {
			t.Fatalf("%s: rotate event before the end", path)
		}
	}
	return s
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readFixture(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "mariadb-10.11.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRelayAppendAndRead(t *testing.T) {
	e := newEncoder()
	format := e.format()
	groups := makeGroups(e, 12, map[uint32]uint64{})
	l := openTestRelay(t, t.TempDir(), 0)
	if _, ok := l.Start(); ok {
		t.Fatal("an empty relay log has a start")
	}
	if !l.End().IsEmpty() {
		t.Fatalf("empty relay log ends at %s", l.End())
	}
	if err := l.Append(groups[0].events, groups[0].id); err == nil {
		t.Fatal("Append before BeginSession succeeded")
	}
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)

	c := splitEvents(t, drainLog(t, l))
	if len(c.formats) != 1 || !bytes.Equal(c.formats[0], format) {
		t.Fatalf("formats read: %d", len(c.formats))
	}
	if len(c.lists) != 1 || !c.lists[0].IsEmpty() {
		t.Fatalf("GTID lists read: %v", c.lists)
	}
	checkGroups(t, c.groups, groups)
	if want := endOf(gtid.MariaDBPosition{}, groups); !l.End().Equal(want) {
		t.Fatalf("End() = %s, want %s", l.End(), want)
	}
	if start, ok := l.Start(); !ok || !start.IsEmpty() {
		t.Fatalf("Start() = %s, %v", start, ok)
	}
	if segs := l.Segments(); len(segs) != 1 || filepath.Base(segs[0]) != "relay-000001.bin" {
		t.Fatalf("segments %v", segs)
	}
}

func TestRelayReaderWaits(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 2, map[uint32]uint64{})
	l := openTestRelay(t, t.TempDir(), 0)
	r := l.NewReader()
	defer r.Close()

	type result struct {
		ev  *replication.BinlogEvent
		err error
	}
	next := func(ctx context.Context) <-chan result {
		ch := make(chan result, 1)
		go func() {
			ev, err := r.Next(ctx)
			ch <- result{ev, err}
		}()
		return ch
	}
	quiet := func(ch <-chan result) {
		t.Helper()
		select {
		case res := <-ch:
			t.Fatalf("Next returned at the end of the relay log: %v %v", res.ev, res.err)
		case <-time.After(30 * time.Millisecond):
		}
	}
	get := func(ch <-chan result) *replication.BinlogEvent {
		t.Helper()
		select {
		case res := <-ch:
			if res.err != nil {
				t.Fatal(res.err)
			}
			return res.ev
		case <-time.After(5 * time.Second):
			t.Fatal("Next did not return the event appended")
		}
		return nil
	}
	ctx := context.Background()

	ch := next(ctx)
	quiet(ch)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	if ev := get(ch); ev.Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
		t.Fatalf("first event %s", ev.Header.EventType)
	}
	if ev := get(next(ctx)); ev.Header.EventType != replication.MARIADB_GTID_LIST_EVENT {
		t.Fatalf("second event %s", ev.Header.EventType)
	}

	for _, g := range groups {
		ch := next(ctx)
		quiet(ch)
		if err := l.Append(g.events, g.id); err != nil {
			t.Fatal(err)
		}
		if ev := get(ch); !bytes.Equal(ev.RawData, g.events[0]) {
			t.Fatalf("waiting reader got %s, not the GTID event of %s", ev.Header.EventType, g.id)
		}
		for _, want := range g.events[1:] {
			if ev := get(next(ctx)); !bytes.Equal(ev.RawData, want) {
				t.Fatalf("reader got %s out of order", ev.Header.EventType)
			}
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	ch = next(cctx)
	quiet(ch)
	cancel()
	select {
	case res := <-ch:
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("canceled Next returned %v, %v", res.ev, res.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("canceling the context did not end the wait")
	}

	empty := openTestRelay(t, t.TempDir(), 0).NewReader()
	defer empty.Close()
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer dcancel()
	if _, err := empty.Next(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reader of an empty relay log: %v", err)
	}
}

func TestRelayRotation(t *testing.T) {
	e := newEncoder()
	format := e.format()
	groups := makeGroups(e, 40, map[uint32]uint64{})
	dir := t.TempDir()
	l := openTestRelay(t, dir, 700)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := make(chan [][]byte, 1)
	r := l.NewReader()
	defer r.Close()
	go func() {
		var raws [][]byte
		defer func() { read <- raws }()
		want := 0
		for _, g := range groups {
			want += len(g.events)
		}
		for want > 0 {
			ev, err := r.Next(ctx)
			if err != nil {
				return
			}
			switch ev.Header.EventType {
			case replication.FORMAT_DESCRIPTION_EVENT, replication.MARIADB_GTID_LIST_EVENT:
			default:
				raws = append(raws, ev.RawData)
				want--
			}
		}
	}()
	appendGroups(t, l, groups)
	var all [][]byte
	for _, g := range groups {
		all = append(all, g.events...)
	}
	got := <-read
	if len(got) != len(all) {
		t.Fatalf("concurrent reader got %d events, want %d", len(got), len(all))
	}
	for i := range got {
		if !bytes.Equal(got[i], all[i]) {
			t.Fatalf("concurrent reader: event %d out of order", i)
		}
	}

	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments of at most 700 bytes", len(segs))
	}
	var end gtid.MariaDBPosition
	n := 0
	for i, path := range segs {
		s := parseSegment(t, path)
		if !bytes.Equal(s.format, format) {
			t.Errorf("%s: format description differs", path)
		}
		if !s.start.Equal(end) {
			t.Errorf("%s starts at %s, the previous segment ends at %s", path, s.start, end)
		}
		if i < len(segs)-1 {
			if want := filepath.Base(segs[i+1]); s.rotate != want {
				t.Errorf("%s rotates to %q, want %q", path, s.rotate, want)
			}
		} else if s.rotate != "" {
			t.Errorf("active segment %s ends with a rotate event", path)
		}
		checkGroups(t, s.groups, groups[n:n+len(s.groups)])
		end = endOf(end, groups[n:n+len(s.groups)])
		n += len(s.groups)
		if i < len(segs)-1 && fileSize(t, path)-int64(len(s.tail)) < 700 {
			t.Errorf("%s rotated before 700 bytes", path)
		}
	}
	if n != len(groups) {
		t.Fatalf("segments hold %d groups, want %d", n, len(groups))
	}
	if !l.End().Equal(end) {
		t.Fatalf("End() = %s, segments end at %s", l.End(), end)
	}
	c := splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, groups)
	if len(c.formats) != len(segs) || len(c.lists) != len(segs) {
		t.Fatalf("a fresh reader saw %d formats and %d GTID lists in %d segments", len(c.formats), len(c.lists), len(segs))
	}
}

func TestRelayContinues(t *testing.T) {
	e := newEncoder()
	l := openTestRelay(t, t.TempDir(), 0)
	if l.Continues(gtid.MariaDBPosition{}) {
		t.Fatal("an empty relay log continues the empty position")
	}
	start := mustPosition(t, "0-1-3")
	if err := l.Reset(start); err != nil {
		t.Fatal(err)
	}
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	var groups []testGroup
	for _, id := range []string{"0-1-4", "1-1-1", "0-1-5", "1-1-2", "0-1-6"} {
		g := mustGTID(t, id)
		groups = append(groups, testGroup{id: g, events: e.mariaTxn(g.Domain, g.Seq, 0, "s", "t", 1)})
	}
	appendGroups(t, l, groups)
	if got, ok := l.Start(); !ok || !got.Equal(start) {
		t.Fatalf("Start() = %s, %v", got, ok)
	}
	if got := l.End(); got.String() != "0-1-6,1-1-2" {
		t.Fatalf("End() = %s", got)
	}
	tests := []struct {
		applied string
		want    bool
	}{
		{"0-1-3", true},
		{"0-1-4", true},
		{"0-1-5,1-1-1", true},
		{"0-1-6,1-1-2", true},
		{"0-2-6,1-7-2", true},
		{"0-1-6", true},
		{"", false},
		{"0-1-2", false},
		{"0-1-2,1-1-1", false},
		{"0-1-7", false},
		{"0-1-6,1-1-3", false},
		{"0-1-5,2-1-1", false},
	}
	for _, tt := range tests {
		if got := l.Continues(mustPosition(t, tt.applied)); got != tt.want {
			t.Errorf("Continues(%q) = %v, want %v", tt.applied, got, tt.want)
		}
	}
}

func TestRelayPurge(t *testing.T) {
	e := newEncoder()
	seq := map[uint32]uint64{}
	groups := makeGroups(e, 30, seq)
	dir := t.TempDir()
	l := openTestRelay(t, dir, 500)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	starts := make([]gtid.MariaDBPosition, len(segs))
	first := make([]int, len(segs)) // index of the segment's first group
	n := 0
	for i, path := range segs {
		s := parseSegment(t, path)
		starts[i], first[i] = s.start, n
		n += len(s.groups)
	}

	inside := endOf(gtid.MariaDBPosition{}, groups[:first[2]+1])
	if first[3] == first[2]+1 {
		t.Fatal("segment 2 holds one group")
	}
	tests := []struct {
		name    string
		applied gtid.MariaDBPosition
		removed int
	}{
		{"empty", gtid.MariaDBPosition{}, 0},
		{"one domain only", mustPosition(t, "1-1-1000"), 0},
		{"before the end of segment 0", endOf(gtid.MariaDBPosition{}, groups[:first[1]-1]), 0},
		{"the end of segment 0", starts[1], 1},
		{"inside segment 2", inside, 1},
		{"the end of segment 2", starts[3], 1},
		{"past the end", mustPosition(t, "0-1-1000,1-1-1000"), len(segs) - 4},
	}
	remaining := segs
	for _, tt := range tests {
		if got := l.Purge(tt.applied); got != tt.removed {
			t.Fatalf("%s: Purge removed %d segments, want %d", tt.name, got, tt.removed)
		}
		remaining = remaining[tt.removed:]
		if got := l.Segments(); strings.Join(got, ",") != strings.Join(remaining, ",") {
			t.Fatalf("%s: segments %v, want %v", tt.name, got, remaining)
		}
		for _, path := range segs {
			_, err := os.Stat(path)
			kept := err == nil
			want := false
			for _, r := range remaining {
				want = want || r == path
			}
			if kept != want {
				t.Fatalf("%s: %s on disk: %v, want %v", tt.name, filepath.Base(path), kept, want)
			}
		}
	}
	if len(l.Segments()) != 1 {
		t.Fatalf("the last segment was not kept: %v", l.Segments())
	}
	start, _ := l.Start()
	if !start.Equal(starts[len(segs)-1]) {
		t.Fatalf("Start() = %s after purging, want %s", start, starts[len(segs)-1])
	}
	c := splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, groups[first[len(segs)-1]:])

	more := makeGroups(e, 4, seq)
	appendGroups(t, l, more)
	c = splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, append(groups[first[len(segs)-1]:len(groups):len(groups)], more...))
}

func TestRelayReset(t *testing.T) {
	e := newEncoder()
	seq := map[uint32]uint64{}
	groups := makeGroups(e, 10, seq)
	dir := t.TempDir()
	l := openTestRelay(t, dir, 600)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	old := l.Segments()

	start := mustPosition(t, "0-1-50,1-1-60,7-3-2")
	if err := l.Reset(start); err != nil {
		t.Fatal(err)
	}
	if len(l.Segments()) != 0 {
		t.Fatalf("segments after Reset: %v", l.Segments())
	}
	for _, path := range old {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s still on disk after Reset", path)
		}
	}
	if _, ok := l.Start(); ok {
		t.Fatal("Start() after Reset is ok")
	}
	if !l.End().Equal(start) {
		t.Fatalf("End() = %s after Reset(%s)", l.End(), start)
	}
	if err := l.Append(groups[0].events, groups[0].id); err == nil {
		t.Fatal("Append after Reset and before BeginSession succeeded")
	}

	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	seq[0], seq[1] = 50, 60
	more := makeGroups(e, 3, seq)
	appendGroups(t, l, more)
	if got, ok := l.Start(); !ok || !got.Equal(start) {
		t.Fatalf("Start() = %s, %v; want %s", got, ok, start)
	}
	if !l.Continues(start) {
		t.Fatal("the relay log does not continue the position it was reset to")
	}
	s := parseSegment(t, l.Segments()[0])
	if !s.start.Equal(start) {
		t.Fatalf("new segment's GTID list is %s, want %s", s.start, start)
	}
	c := splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, more)
	if want := endOf(start, more); !l.End().Equal(want) {
		t.Fatalf("End() = %s, want %s", l.End(), want)
	}
}

// TestRelaySwitchSource: a relay log fetched from one server is emptied
// back to the target's position when the source is another server, and
// kept when it is the same one, or when its server is not known.
func TestRelaySwitchSource(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 10, map[uint32]uint64{})
	open := func(dir, source string) *RelayLog {
		l, err := OpenRelay(RelayOptions{Dir: dir, SegmentSize: 600, Source: source})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	applied := endOf(gtid.MariaDBPosition{}, groups[:4])
	end := endOf(gtid.MariaDBPosition{}, groups)

	dir := t.TempDir()
	writeRelay(t, dir, 600, e.format(), groups) // made before sources were recorded
	l := open(dir, "server_id 1")
	if prev, dropped, err := l.SwitchSource(applied); err != nil || prev != "" || dropped || !l.End().Equal(end) {
		t.Fatalf("a relay log of no known server: previous %q, dropped %v, %v, end %s; want it kept to %s", prev, dropped, err, l.End(), end)
	}
	l.Close()
	l = open(dir, "server_id 1")
	if prev, dropped, err := l.SwitchSource(applied); err != nil || prev != "server_id 1" || dropped || !l.End().Equal(end) {
		t.Fatalf("the same source: previous %q, dropped %v, %v, end %s; want it kept to %s", prev, dropped, err, l.End(), end)
	}
	l.Close()
	l = open(dir, "server_id 2")
	prev, dropped, err := l.SwitchSource(applied)
	if err != nil || prev != "server_id 1" || !dropped {
		t.Fatalf("another source: previous %q, dropped %v, %v; want server_id 1, dropped", prev, dropped, err)
	}
	if !l.End().Equal(applied) || len(l.Segments()) != 0 || l.Continues(applied) {
		t.Fatalf("after a switch of source: end %s, segments %v; want none, fetched again from %s", l.End(), l.Segments(), applied)
	}
	l.Close()
	if l = open(dir, "server_id 2"); func() bool { p, d, _ := l.SwitchSource(applied); return p != "server_id 2" || d }() {
		t.Fatal("the new source was not recorded")
	}
}

func TestRelayRecoverTornTail(t *testing.T) {
	e := newEncoder()
	format := e.format()
	groups := makeGroups(e, 8, map[uint32]uint64{})
	last := groups[len(groups)-1]
	lastGTID := len(last.events[0])
	tests := []struct {
		name string
		cut  int // bytes of the last group left in the file
		kept int // groups left
	}{
		{"whole", last.size(), 8},
		{"at a group boundary", 0, 7},
		{"in the GTID event header", 7, 7},
		{"in the GTID event body", lastGTID - 6, 7},
		{"after the GTID event", lastGTID, 7},
		{"in the second event", lastGTID + 25, 7},
		{"in the last event's checksum", last.size() - 2, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRelay(t, dir, 0, format, groups)
			segs, _ := filepath.Glob(filepath.Join(dir, "relay-*.bin"))
			tail := segs[len(segs)-1]
			size := fileSize(t, tail)
			keep := size - int64(last.size()) + int64(tt.cut)
			if err := os.Truncate(tail, keep); err != nil {
				t.Fatal(err)
			}
			whole := size - int64(last.size())
			if tt.kept == len(groups) {
				whole = size
			}

			l := openTestRelay(t, dir, 0)
			if want := endOf(gtid.MariaDBPosition{}, groups[:tt.kept]); !l.End().Equal(want) {
				t.Fatalf("End() = %s, want %s", l.End(), want)
			}
			s := parseSegment(t, tail)
			if want := filepath.Base(segmentPath("", segmentNumber(tail)+1)); s.rotate != want {
				t.Fatalf("the torn segment was sealed with rotate %q", s.rotate)
			}
			if got := fileSize(t, tail); got != whole+int64(len(s.tail)) {
				t.Fatalf("torn segment is %d bytes, want %d whole and a rotate of %d", got, whole, len(s.tail))
			}
			c := splitEvents(t, drainLog(t, l))
			checkGroups(t, c.groups, groups[:tt.kept])

			if err := l.BeginSession(format); err != nil {
				t.Fatal(err)
			}
			next := makeGroups(e, 1, map[uint32]uint64{0: 100})
			appendGroups(t, l, next)
			c = splitEvents(t, drainLog(t, l))
			checkGroups(t, c.groups, append(groups[:tt.kept:tt.kept], next...))
			if !c.lists[len(c.lists)-1].Equal(endOf(gtid.MariaDBPosition{}, groups[:tt.kept])) {
				t.Fatalf("new segment starts at %s", c.lists[len(c.lists)-1])
			}
		})
	}
}

// relaySnapshot is a relay log written once and kept as bytes, so that a
// test can lay it down again and damage one copy at a time.
type relaySnapshot struct {
	format []byte
	groups []testGroup
	files  [][]byte
	names  []string
	events [][]snapEvent // the events of every segment, magic excluded
}

type snapEvent struct {
	start, end int
	endsGroup  bool
}

func takeSnapshot(t testing.TB, segmentSize int64, groups []testGroup, format []byte) *relaySnapshot {
	t.Helper()
	dir, err := os.MkdirTemp("", "relay-snapshot")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeRelay(t, dir, segmentSize, format, groups)
	s := &relaySnapshot{format: format, groups: groups}
	paths, _ := filepath.Glob(filepath.Join(dir, "relay-*.bin"))
	g, n := 0, 0
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s.files = append(s.files, data)
		s.names = append(s.names, filepath.Base(path))
		var evs []snapEvent
		for off := 4; off < len(data); {
			end := off + int(binary.LittleEndian.Uint32(data[off+9:]))
			ev := snapEvent{start: off, end: end}
			if g < len(groups) && bytes.Equal(data[off:end], groups[g].events[n]) {
				n++
				if n == len(groups[g].events) {
					ev.endsGroup = true
					g, n = g+1, 0
				}
			}
			evs = append(evs, ev)
			off = end
		}
		s.events = append(s.events, evs)
	}
	if g != len(groups) {
		t.Fatalf("snapshot holds %d groups, want %d", g, len(groups))
	}
	return s
}

// at is the byte offset of event ev of segment seg.
func (s *relaySnapshot) at(seg, ev int) int { return s.events[seg][ev].start }

// groupsBefore is the number of groups that end at or before byte off of segment seg.
func (s *relaySnapshot) groupsBefore(seg, off int) int {
	n := 0
	for i := 0; i <= seg && i < len(s.events); i++ {
		for _, ev := range s.events[i] {
			if ev.endsGroup && (i < seg || ev.end <= off) {
				n++
			}
		}
	}
	return n
}

func (s *relaySnapshot) lay(t testing.TB, dir string, files [][]byte) {
	t.Helper()
	for i, data := range files {
		if err := os.WriteFile(filepath.Join(dir, s.names[i]), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRecovered opens the relay log in dir and checks that it holds exactly
// the first want groups, whole, under the original format description, ends
// where they end, and takes a new session that continues them.
func (s *relaySnapshot) checkRecovered(t testing.TB, dir string, want int) {
	t.Helper()
	l, err := OpenRelay(RelayOptions{Dir: dir, SegmentSize: 1 << 20})
	if err != nil {
		t.Fatalf("OpenRelay: %v", err)
	}
	defer l.Close()
	evs := drainLog(t, l)
	c := splitEvents(t, evs)
	for i, f := range c.formats {
		if !bytes.Equal(f, s.format) {
			t.Fatalf("format description %d read back differs from the one written", i)
		}
	}
	if want >= 0 {
		checkGroups(t, c.groups, s.groups[:want])
	} else {
		checkGroups(t, c.groups, s.groups[:len(c.groups)])
		want = len(c.groups)
	}
	end := endOf(gtid.MariaDBPosition{}, s.groups[:want])
	if !l.End().Equal(end) {
		t.Fatalf("End() = %s, want %s", l.End(), end)
	}
	if err := l.BeginSession(s.format); err != nil {
		t.Fatal(err)
	}
	g := testGroup{id: gtid.MariaDBGTID{Domain: 5, Server: 1, Seq: 1}, events: newEncoder().mariaDDL(5, 1, "s", "DROP TABLE x")}
	if err := l.Append(g.events, g.id); err != nil {
		t.Fatal(err)
	}
	c = splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, append(s.groups[:want:want], g))
	if !c.lists[len(c.lists)-1].Equal(end) {
		t.Fatalf("the new segment starts at %s, want %s", c.lists[len(c.lists)-1], end)
	}
}

func TestRelayRecoverCorruptEvent(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 24, map[uint32]uint64{})
	s := takeSnapshot(t, 900, groups, e.format())
	if len(s.files) < 3 {
		t.Fatalf("%d segments", len(s.files))
	}
	mid := s.at(1, len(s.events[1])/2) + 30
	tests := []struct {
		name string
		seg  int
		off  int
	}{
		{"in a group in the middle of segment 2", 1, mid},
		{"in the first group of segment 2", 1, s.at(1, 2) + 3},
		{"in the rotate event of segment 2", 1, len(s.files[1]) - 6},
		{"in the GTID list of segment 2", 1, s.at(1, 1) + eventHeaderSize + 2},
		{"in the magic of segment 2", 1, 1},
		{"in the last segment", len(s.files) - 1, s.at(len(s.files)-1, 3) + 20},
		{"in the first segment", 0, s.at(0, 4) + 1},
		{"in the size of an event", 1, s.at(1, 3) + 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := cloneFiles(s.files)
			files[tt.seg][tt.off] ^= 0x20
			s.lay(t, dir, files)
			s.checkRecovered(t, dir, s.groupsBefore(tt.seg, tt.off))
			segs, _ := filepath.Glob(filepath.Join(dir, "relay-*.bin"))
			for _, path := range segs {
				if n := segmentNumber(path); n > tt.seg+2 {
					t.Fatalf("%s after the corrupt segment is still there", filepath.Base(path))
				}
			}
		})
	}
}

func segmentNumber(path string) int {
	n := 0
	base := filepath.Base(path)
	for _, c := range base[len(segmentPrefix) : len(base)-len(segmentSuffix)] {
		n = n*10 + int(c-'0')
	}
	return n
}

// scratchDir is a temporary folder in memory when the machine has one, for
// tests that lay down a relay log hundreds of times.
func scratchDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "gapless-relay-test")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func cloneFiles(files [][]byte) [][]byte {
	out := make([][]byte, len(files))
	for i, f := range files {
		out[i] = bytes.Clone(f)
	}
	return out
}

// TestRelayRecoverEveryFlippedByte flips each byte of a middle segment in
// turn: recovery must keep exactly the groups before the damaged event.
func TestRelayRecoverEveryFlippedByte(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 10, map[uint32]uint64{})
	s := takeSnapshot(t, 700, groups, e.format())
	if len(s.files) < 3 {
		t.Fatalf("%d segments", len(s.files))
	}
	seg := 1
	failed := make([]string, len(s.files[seg]))
	t.Run("flips", func(t *testing.T) {
		for off := range s.files[seg] {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				dir := scratchDir(t)
				files := cloneFiles(s.files)
				files[seg][off] ^= 0x10
				s.lay(t, dir, files)
				ft := &failTB{TB: t}
				ft.run(func() { s.checkRecovered(ft, dir, s.groupsBefore(seg, off)) })
				if ft.msg != "" {
					failed[off] = fmt.Sprintf("byte %d (%s): %s", off, s.eventKind(seg, off), ft.msg)
				}
			})
		}
	})
	failed = slices.DeleteFunc(failed, func(f string) bool { return f == "" })
	if len(failed) > 0 {
		t.Errorf("%d of %d single-byte flips in %s were not recovered from:\n%s", len(failed), len(s.files[seg]), s.names[seg], summarize(failed))
	}
}

// summarize keeps the first failure of every run of failures with the same problem.
func summarize(lines []string) string {
	var b strings.Builder
	prev := ""
	for _, l := range lines {
		_, msg, _ := strings.Cut(l, ": ")
		if msg != prev {
			b.WriteString(l + "\n")
		}
		prev = msg
	}
	return b.String()
}

// eventKind names the event holding byte off of segment seg.
func (s *relaySnapshot) eventKind(seg, off int) string {
	if off < len(binlogMagic) {
		return "magic"
	}
	for _, ev := range s.events[seg] {
		if ev.start <= off && off < ev.end {
			return fmt.Sprintf("%s at +%d", replication.EventType(s.files[seg][ev.start+4]), off-ev.start)
		}
	}
	return "?"
}

// failTB turns the first Fatal of a check into a message.
type failTB struct {
	testing.TB
	msg string
}

func (f *failTB) Helper() {}

func (f *failTB) Fatal(args ...any) { f.msg = fmt.Sprint(args...); runtime.Goexit() }

func (f *failTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *failTB) run(check func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				f.msg = fmt.Sprintf("panic: %v", r)
			}
		}()
		check()
	}()
	<-done
}

func TestRelayRecoverDiscontinuity(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 24, map[uint32]uint64{})
	s := takeSnapshot(t, 900, groups, e.format())
	if len(s.files) < 3 {
		t.Fatalf("%d segments", len(s.files))
	}
	first := s.groupsBefore(1, 0)
	dir := t.TempDir()
	files := cloneFiles(s.files)
	list := files[1][s.at(1, 1):s.at(1, 2)]
	shifted := endOf(gtid.MariaDBPosition{}, groups[:first])
	g, _ := shifted.Get(0)
	g.Seq += 1
	shifted.Advance(g)
	enc := &encoder{server: 0, when: binary.LittleEndian.Uint32(list), pos: uint32(s.at(1, 1))}
	forged := enc.gtidList(shifted.GTIDs()...)
	if len(forged) != len(list) {
		t.Fatalf("forged GTID list is %d bytes, the real one %d", len(forged), len(list))
	}
	copy(list, forged)
	s.lay(t, dir, files)
	s.checkRecovered(t, dir, first)
	if got := parseSegment(t, filepath.Join(dir, s.names[0])); got.rotate != s.names[1] {
		t.Fatalf("segment 1 now rotates to %q", got.rotate)
	}
	if _, err := os.Stat(filepath.Join(dir, s.names[2])); !os.IsNotExist(err) {
		t.Fatalf("%s after the discontinuity is still there", s.names[2])
	}
}

func TestRelayReopenAfterClose(t *testing.T) {
	e := newEncoder()
	format := e.format()
	seq := map[uint32]uint64{}
	first := makeGroups(e, 5, seq)
	dir := t.TempDir()
	writeRelay(t, dir, 0, format, first)

	l := openTestRelay(t, dir, 0)
	end := endOf(gtid.MariaDBPosition{}, first)
	if !l.End().Equal(end) {
		t.Fatalf("End() after reopening = %s, want %s", l.End(), end)
	}
	if !l.Continues(end) || !l.Continues(gtid.MariaDBPosition{}) {
		t.Fatal("the reopened relay log does not continue its own positions")
	}
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	second := makeGroups(e, 5, seq)
	appendGroups(t, l, second)
	segs := l.Segments()
	if len(segs) != 2 || filepath.Base(segs[1]) != "relay-000002.bin" {
		t.Fatalf("segments after reopening: %v", segs)
	}
	if s := parseSegment(t, segs[0]); s.rotate != "relay-000002.bin" || len(s.groups) != len(first) {
		t.Fatalf("closed segment rotates to %q with %d groups", s.rotate, len(s.groups))
	}
	if s := parseSegment(t, segs[1]); !s.start.Equal(end) {
		t.Fatalf("new segment starts at %s, want %s", s.start, end)
	}
	c := splitEvents(t, drainLog(t, l))
	checkGroups(t, c.groups, append(first, second...))
}

func TestRelayReadsRealBinlog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), readFixture(t), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openTestRelay(t, dir, 0)
	if got := l.End().String(); got != "0-1-5,1-1-3" {
		t.Fatalf("End() = %s", got)
	}
	if start, ok := l.Start(); !ok || !start.IsEmpty() {
		t.Fatalf("Start() = %s, %v", start, ok)
	}
	if got := fileSize(t, filepath.Join(dir, "relay-000001.bin")); got != int64(len(readFixture(t))) {
		t.Fatalf("recovery changed a whole, rotated binlog: %d bytes", got)
	}
	c := splitEvents(t, drainLog(t, l))
	if len(c.groups) != 8 {
		t.Fatalf("%d groups", len(c.groups))
	}
}

func TestRelayMariaDBBinlogReadsSegments(t *testing.T) {
	tool, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		t.Skip("mariadb-binlog is not installed")
	}
	e := newEncoder()
	groups := makeGroups(e, 20, map[uint32]uint64{})
	dir := t.TempDir()
	writeRelay(t, dir, 900, e.format(), groups)
	segs, _ := filepath.Glob(filepath.Join(dir, "relay-*.bin"))
	last := segs[len(segs)-1]
	torn := joinEvents(e.mariaTxn(3, 1, 0, "s", "t", 1))
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn[:len(torn)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	openTestRelay(t, dir, 0).Close()
	segs, _ = filepath.Glob(filepath.Join(dir, "relay-*.bin"))
	if len(segs) < 2 {
		t.Fatalf("%d segments", len(segs))
	}
	var all []byte
	for _, path := range segs {
		var stderr bytes.Buffer
		cmd := exec.Command(tool, "--no-defaults", "--verbose", path)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("mariadb-binlog %s: %v\n%s", filepath.Base(path), err, stderr.String())
		}
		all = append(all, out...)
	}
	for _, g := range groups {
		if !regexp.MustCompile(`(?m)GTID ` + g.id.String() + `( |$)`).Match(all) {
			t.Fatalf("mariadb-binlog did not print GTID %s", g.id)
		}
	}
	if n := bytes.Count(all, []byte("Rotate to relay-")); n != len(segs) {
		t.Fatalf("mariadb-binlog printed %d rotate events in %d sealed segments", n, len(segs))
	}
}

// FuzzRelayRecovery damages a valid relay log of two segments (overwriting,
// appending or cutting and appending bytes) and checks that OpenRelay neither
// panics nor fails, and leaves a relay log whose reader returns only whole
// groups: first the undamaged ones, in order, then nothing half-written, with
// End() after the last of them, and room for a new session.
func FuzzRelayRecovery(f *testing.F) {
	e := newEncoder()
	groups := makeGroups(e, 8, map[uint32]uint64{})
	s := takeSnapshot(f, 1000, groups, e.format())
	if len(s.files) < 2 {
		f.Fatalf("%d segments, want 2 or more", len(s.files))
	}
	f.Add(uint8(1), uint16(600), uint8(0), []byte{0xff})
	f.Add(uint8(0), uint16(700), uint8(0), []byte("garbage"))
	f.Add(uint8(0), uint16(0), uint8(1), []byte{1, 2, 3})
	f.Add(uint8(1), uint16(420), uint8(2), []byte{})
	f.Add(uint8(1), uint16(290), uint8(2), groups[3].events[0][:30])
	f.Add(uint8(0), uint16(9), uint8(0), []byte{0x20})
	f.Fuzz(func(t *testing.T, seg uint8, off uint16, mode uint8, data []byte) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		files := cloneFiles(s.files)
		i := int(seg) % len(files)
		at := int(off) % len(files[i])
		switch mode % 3 {
		case 0:
			n := copy(files[i][at:], data)
			files[i] = files[i][:max(len(files[i]), at+n)]
		case 1:
			files[i] = append(files[i], data...)
		default:
			files[i] = append(files[i][:at], data...)
		}
		dir := scratchDir(t)
		s.lay(t, dir, files)

		changed := len(s.files[i])
		for j := range min(len(files[i]), len(s.files[i])) {
			if files[i][j] != s.files[i][j] {
				changed = j
				break
			}
		}
		if changed == len(s.files[i]) && len(files[i]) < len(s.files[i]) {
			changed = len(files[i])
		}
		intact := s.groupsBefore(i, changed)
		if len(files[i]) == len(s.files[i]) && changed == len(s.files[i]) {
			intact = len(groups)
		}

		l, err := OpenRelay(RelayOptions{Dir: dir, SegmentSize: 1 << 20})
		if err != nil {
			t.Fatalf("OpenRelay: %v", err)
		}
		defer l.Close()
		c := splitEvents(t, drainLog(t, l))
		if len(c.groups) < intact {
			t.Fatalf("recovery kept %d groups; the first %d were intact", len(c.groups), intact)
		}
		checkGroups(t, c.groups[:intact], groups[:intact])
		var end gtid.MariaDBPosition
		for _, g := range c.groups {
			if ev := parseEvents(t, s.format, g[0])[1]; ev.Header.EventType == replication.MARIADB_GTID_EVENT {
				end.Advance(mariaDBGTID(ev.Event.(*replication.MariadbGTIDEvent)))
			}
		}
		if !l.End().Equal(end) {
			t.Fatalf("End() = %s, the groups read end at %s", l.End(), end)
		}
		if err := l.BeginSession(s.format); err != nil {
			t.Fatal(err)
		}
		next := testGroup{id: gtid.MariaDBGTID{Domain: 9, Server: 1, Seq: 1}, events: newEncoder().mariaDDL(9, 1, "s", "DROP TABLE x")}
		if err := l.Append(next.events, next.id); err != nil {
			t.Fatal(err)
		}
		after := splitEvents(t, drainLog(t, l))
		if len(after.groups) != len(c.groups)+1 || !bytes.Equal(joinEvents(after.groups[len(c.groups)]), joinEvents(next.events)) {
			t.Fatalf("after a new session the reader returned %d groups, want %d and the new one last", len(after.groups), len(c.groups)+1)
		}
	})
}
