package binlog

import (
	"testing"

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
