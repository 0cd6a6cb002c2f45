// Tests that the relay log's own checksums guard events a source sent
// without any (binlog_checksum=NONE), and that every cut-back or removal
// of segments in recovery is logged as a warning naming the segment and
// the byte.
package binlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// withoutChecksum is ev as a source with binlog_checksum=NONE sends it.
func withoutChecksum(ev []byte) []byte {
	out := bytes.Clone(ev[:len(ev)-checksumSize])
	binary.LittleEndian.PutUint32(out[9:], uint32(len(out)))
	return out
}

// formatWithoutChecksums is a format description that says NONE; the
// event itself keeps a checksum, as MariaDB writes it.
func formatWithoutChecksums(fde []byte) []byte {
	out := bytes.Clone(fde)
	out[len(out)-checksumSize-1] = replication.BINLOG_CHECKSUM_ALG_OFF
	binary.LittleEndian.PutUint32(out[len(out)-checksumSize:], crc32.ChecksumIEEE(out[:len(out)-checksumSize]))
	return out
}

func groupsWithoutChecksums(groups []testGroup) []testGroup {
	out := make([]testGroup, len(groups))
	for i, g := range groups {
		out[i] = testGroup{id: g.id}
		for _, ev := range g.events {
			out[i].events = append(out[i].events, withoutChecksum(ev))
		}
	}
	return out
}

// TestRelayChecksumsEventsTheSourceSentWithout writes a source's events
// without checksums and flips one byte of a row event's values in the
// segment: the reader must refuse the event as corrupt (it was applied with
// its changed value), and recovery must cut the segment back before its group.
func TestRelayChecksumsEventsTheSourceSentWithout(t *testing.T) {
	e := newEncoder()
	format := formatWithoutChecksums(e.format())
	groups := groupsWithoutChecksums(makeGroups(e, 8, map[uint32]uint64{}))
	dir := t.TempDir()
	writeRelay(t, dir, 1<<20, format, groups)
	path := filepath.Join(dir, "relay-000001.bin")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// Intact, the events read back are the source's, with a checksum each.
	l := openTestRelay(t, dir, 1<<20)
	c := splitEvents(t, drainLog(t, l))
	if len(c.groups) != len(groups) {
		t.Fatalf("read back %d groups, want %d", len(c.groups), len(groups))
	}
	if !formatHasChecksum(c.formats[0]) {
		t.Fatal("the segment's format description does not say CRC32")
	}
	for i, g := range c.groups {
		for j, ev := range g {
			if !checksumHolds(ev) || !bytes.Equal(withoutChecksum(ev)[eventHeaderSize:], groups[i].events[j][eventHeaderSize:]) {
				t.Fatalf("group %d event %d: not the source's event with a checksum", i, j)
			}
		}
	}
	l.Close()

	// The write rows event of group 2 (a row transaction): flip a byte of its values.
	rows := groups[1].events[len(groups[1].events)-2]
	if replication.EventType(rows[4]) != replication.WRITE_ROWS_EVENTv1 && replication.EventType(rows[4]) != replication.WRITE_ROWS_EVENTv2 {
		t.Fatalf("group 2's second last event is a %s", replication.EventType(rows[4]))
	}
	off := bytes.Index(data, rows[eventHeaderSize:]) - eventHeaderSize
	if off < 0 {
		t.Fatal("group 2's row event not found in the segment")
	}
	size := int(binary.LittleEndian.Uint32(data[off+9:]))
	damaged := bytes.Clone(data)
	damaged[off+size-checksumSize-2] ^= 0x01
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	l = &RelayLog{opts: RelayOptions{Dir: dir}, changed: make(chan struct{})}
	l.segments = []segment{{number: 1, path: path}}
	r := l.NewReader()
	defer r.Close()
	var readErr error
	for range 200 {
		if _, readErr = r.Next(canceledCtx); readErr != nil {
			break
		}
	}
	if !errors.Is(readErr, ErrCorruptRelay) || !strings.Contains(readErr.Error(), "bad checksum") {
		t.Fatalf("reading the damaged segment: %v, want a bad checksum (ErrCorruptRelay)", readErr)
	}

	var logged bytes.Buffer
	l, err = OpenRelay(RelayOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := endOf(gtid.MariaDBPosition{}, groups[:1])
	if !l.End().Equal(want) {
		t.Fatalf("after recovery End() = %s, want %s (the groups before the damaged one)", l.End(), want)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "segment="+path) ||
		!strings.Contains(logged.String(), "bad checksum") {
		t.Fatalf("recovery logged:\n%s\nwant a warning naming %s and the bad checksum", logged.String(), path)
	}
}

// TestRelayRecoveryWarns checks that a torn tail and a segment that does not
// continue the one before are each logged at WARN with segment and offset.
func TestRelayRecoveryWarns(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 12, map[uint32]uint64{})
	s := takeSnapshot(t, 700, groups, e.format())
	if len(s.files) < 3 {
		t.Fatalf("%d segments", len(s.files))
	}
	recoverWith := func(files [][]byte) string {
		dir := t.TempDir()
		s.lay(t, dir, files)
		var logged bytes.Buffer
		l, err := OpenRelay(RelayOptions{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return logged.String()
	}
	if out := recoverWith(cloneFiles(s.files)); out != "" {
		t.Fatalf("an intact relay log logged:\n%s", out)
	}

	last := len(s.files) - 1
	torn := cloneFiles(s.files)
	torn[last] = append(torn[last], joinEvents(e.mariaTxn(0, 99, 0, "s", "t", 1))[:30]...)
	out := recoverWith(torn)
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, s.names[last]) || !strings.Contains(out, "offset="+itoa(len(s.files[last]))) {
		t.Fatalf("a torn tail logged:\n%s\nwant a warning naming %s at offset %d", out, s.names[last], len(s.files[last]))
	}

	flipped := cloneFiles(s.files)
	flipped[1][s.at(1, 1)+eventHeaderSize+6] ^= 0x04 // the GTID list: segment 2 no longer continues segment 1
	flipped[1] = withGTIDListChecksum(flipped[1], s.at(1, 1))
	out = recoverWith(flipped)
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, s.names[1]) || !strings.Contains(out, "removing segments") {
		t.Fatalf("a segment that does not continue logged:\n%s\nwant a warning naming %s", out, s.names[1])
	}
}

// withGTIDListChecksum recomputes the checksum of the event at off.
func withGTIDListChecksum(seg []byte, off int) []byte {
	size := int(binary.LittleEndian.Uint32(seg[off+9:]))
	ev := seg[off : off+size]
	binary.LittleEndian.PutUint32(ev[size-checksumSize:], crc32.ChecksumIEEE(ev[:size-checksumSize]))
	return seg
}

func itoa(n int) string { return strconv.Itoa(n) }
