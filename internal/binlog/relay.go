// relay.go owns the relay log: the source's events kept on disk between the
// receiver and the decoder, so that the receiver can run ahead of a slow
// target and a restart does not need the source's old binlogs.
//
// The relay log is a folder of segment files relay-NNNNNN.bin, each in binlog
// file format so that mariadb-binlog can read it:
//
//	magic | format description (the source's) | GTID list | whole groups ... | rotate
//
// Invariants:
//   - readers see only whole event groups: a group is written as its events
//     arrive (a large one in several writes, never held whole in memory), but
//     the readable end moves past it only once its last event is written; a
//     group the connection loses midway is cut off the segment again, and
//     recovery cuts a torn tail back to the last whole group;
//   - the GTID list event of a segment is the position just before its first
//     group, and equals the position after the previous segment's last group,
//     so the relay log is one gap-less run of the source's history
//     (Start, End];
//   - every segment but the active one ends with a rotate event naming the next;
//   - every event of a segment carries a CRC32 checksum, whatever the source
//     sends: when the source writes binlog_checksum=NONE, the segment's format
//     description says CRC32 and the relay log computes each event's checksum
//     as it appends it, so damage on disk is found before anything is applied
//     (mariadb-binlog and the target's BINLOG statements read such events as
//     they read a source's own checksummed ones);
//   - the relay log is a cache: the position on the target is the truth, and a
//     relay log that does not continue it is discarded, never applied.
package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// binlogMagic opens every binlog file.
var binlogMagic = []byte{0xfe, 'b', 'i', 'n'}

const (
	eventHeaderSize = replication.EventHeaderSize
	checksumSize    = replication.BinlogChecksumLength
	segmentPrefix   = "relay-"
	segmentSuffix   = ".bin"
)

// ErrCorruptRelay is returned by a reader that meets an event it cannot trust
// (a bad checksum, a torn event, a size that runs past the segment); the
// caller discards the relay log from there and fetches the events again from
// the source. An event whose checksum holds is never called corrupt, however
// badly it decodes: fetching it again would bring the same bytes.
var ErrCorruptRelay = errors.New("relay log is corrupt")

// UndecodableError is an event whose bytes are intact (its checksum holds)
// but which gapless cannot turn into a decoded event: a gap in gapless or in
// its decoding library, not damage, so fetching it again cannot help.
type UndecodableError struct {
	Segment string // the relay segment file
	Offset  int64  // the event's first byte in it
	Type    replication.EventType
	Raw     []byte // the whole event
	Err     error
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("%s: %s event at byte %d cannot be decoded: %v", e.Segment, e.Type, e.Offset, e.Err)
}

func (e *UndecodableError) Unwrap() error { return e.Err }

// RelayOptions configure a relay log.
type RelayOptions struct {
	Dir         string
	SegmentSize int64         // rotate to a new segment after this many bytes (default 64 MiB)
	SyncEvery   time.Duration // fsync the active segment at most this often (default 1 s; the rotate is always synced)
	// Logger gets a warning for every segment recovery cuts back or removes.
	Logger *slog.Logger
	// Source names the server the events come from (its identity as
	// text; empty: not known). SwitchSource compares it with the one the
	// relay log's events were fetched from.
	Source string
}

type segment struct {
	number int
	path   string
	start  gtid.MariaDBPosition // position before the segment's first group
}

// RelayLog is the writer side and the registry of segments; readers are made from it.
type RelayLog struct {
	opts RelayOptions

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever readers may have more to read
	segments []segment
	active   *os.File // nil when no segment is open for writing
	// activeSize is how many bytes of the last segment hold whole events; readers read no further.
	activeSize int64
	format     []byte // raw format description event of the active segment
	checksum   bool   // the active segment's events carry CRC32 checksums
	// addChecksum: the source sends events without checksums, and Append
	// adds a CRC32 to each (the segment's format description says CRC32).
	addChecksum bool
	end         gtid.MariaDBPosition
	lastSync    time.Time
	// buf holds the events AddEvent took and Flush has not written yet, in
	// segment format; buffered are the GTIDs of the groups they complete.
	buf      []byte
	buffered []gtid.MariaDBGTID
	// written is how many bytes of the active segment are on disk: more
	// than activeSize while the open group (open) is too large to hold, its
	// first events written, not yet readable. whole is where the last
	// complete group ends, on disk or in buf.
	written, whole int64
	open           bool
	// unusable is why appending may not go on: a failed write that could
	// not be cut off the segment, or a rotation that failed.
	unusable error
	// control: buf ends with an event between groups (AddControl), to be
	// read once written.
	control bool
}

// OpenRelay opens (creating if needed) the relay log in opts.Dir and recovers
// it: a torn tail is cut back to the last whole group, and a segment that is
// corrupt or does not continue the one before is removed with all after it.
func OpenRelay(opts RelayOptions) (*RelayLog, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = 64 << 20
	}
	if opts.SyncEvery <= 0 {
		opts.SyncEvery = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("relay directory %s: %w", opts.Dir, err)
	}
	probe := filepath.Join(opts.Dir, ".gapless-write-test")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return nil, fmt.Errorf("relay directory %s is not writable: %w", opts.Dir, err)
	}
	os.Remove(probe)

	l := &RelayLog{opts: opts, changed: make(chan struct{})}
	if err := l.recover(); err != nil {
		return nil, err
	}
	return l, nil
}

func segmentPath(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%06d%s", segmentPrefix, n, segmentSuffix))
}

func listSegments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("relay directory %s: %w", dir, err)
	}
	var segs []segment
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, segmentPrefix) || !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, segmentPrefix), segmentSuffix))
		if err != nil {
			continue
		}
		segs = append(segs, segment{number: n, path: filepath.Join(dir, name)})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].number < segs[j].number })
	return segs, nil
}

// segmentScan is what recovery learned from reading one segment.
type segmentScan struct {
	start   gtid.MariaDBPosition
	end     gtid.MariaDBPosition // after the last whole group
	whole   int64                // bytes up to the end of the last whole group or control event
	rotated bool                 // ends with a rotate event
	err     error                // why the scan stopped early, if it did
}

// scanSegment reads a segment, checking every checksum, without decoding
// rows. It reads one event at a time: a segment can hold one transaction of
// many gigabytes.
func scanSegment(path string) segmentScan {
	var s segmentScan
	f, err := openScanFile(path)
	if err != nil {
		s.err = err
		return s
	}
	defer f.Close()
	fde, err := f.event(int64(len(binlogMagic)))
	if err == nil {
		err = checkFormatEvent(fde)
	}
	if err != nil {
		s.err = fmt.Errorf("%s: %w", path, err)
		return s
	}
	w := segmentWalk{s: &s, parser: newRelayParser(false), checksum: formatHasChecksum(fde)}
	for off := int64(len(binlogMagic)); off < f.end; {
		raw, err := f.event(off)
		if err != nil {
			s.err = fmt.Errorf("%s: %w", path, err)
			break
		}
		if err := w.take(raw, off); err != nil {
			s.err = fmt.Errorf("%s: %w", path, err)
			break
		}
		off += int64(len(raw))
	}
	if !w.sawList {
		s.whole = 0
	}
	return s
}

// scanFile is a segment open for a scan, and its size when opened.
type scanFile struct {
	*os.File
	end    int64
	header []byte
}

// openScanFile opens a segment and checks it starts as a binlog does.
func openScanFile(path string) (*scanFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	magic := make([]byte, len(binlogMagic))
	if _, err := f.ReadAt(magic, 0); err != nil || !bytes.Equal(magic, binlogMagic) {
		f.Close()
		return nil, fmt.Errorf("%s: not a binlog file", path)
	}
	return &scanFile{File: f, end: info.Size(), header: make([]byte, eventHeaderSize)}, nil
}

// event reads the event at off, or says how it is torn.
func (f *scanFile) event(off int64) ([]byte, error) {
	if f.end-off < eventHeaderSize {
		return nil, fmt.Errorf("torn event header at byte %d", off)
	}
	if _, err := f.ReadAt(f.header, off); err != nil {
		return nil, err
	}
	size := int64(binary.LittleEndian.Uint32(f.header[9:]))
	if size < eventHeaderSize || off+size > f.end {
		return nil, fmt.Errorf("torn event at byte %d", off)
	}
	raw := make([]byte, size)
	if _, err := f.ReadAt(raw, off); err != nil {
		return nil, err
	}
	return raw, nil
}

// segmentWalk is a scan's state between events: the groups met, the GTID
// of the open one, and whether the GTID list event that follows the
// format description was seen.
type segmentWalk struct {
	s        *segmentScan
	parser   *replication.BinlogParser
	checksum bool
	groups   groupTracker
	pending  gtid.MariaDBGTID
	sawList  bool
}

// take checks the event raw, at off, and moves the scan past it: where the
// segment starts and how far its whole groups go. An error is where the
// scan stops (damage, or what no segment gapless writes holds).
func (w *segmentWalk) take(raw []byte, off int64) error {
	s := w.s
	if s.rotated {
		return fmt.Errorf("bytes after the rotate event at byte %d", off)
	}
	if w.checksum && off > int64(len(binlogMagic)) && !checksumHolds(raw) {
		return fmt.Errorf("event at byte %d has a bad checksum", off)
	}
	ev, err := safeParse(w.parser, raw)
	if err != nil && w.checksum {
		// Intact but not decodable: not damage, so not cut here. It
		// keeps its place in the group; the decoder reports it.
		ev, err = opaqueEvent(raw), nil
	}
	if err != nil {
		return fmt.Errorf("event at byte %d: %w", off, err)
	}
	end := off + int64(len(raw))
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDListEvent:
		if !w.sawList {
			w.sawList = true
			s.start = positionFromList(e)
			s.end = s.start.Clone()
		}
	case *replication.MariadbGTIDEvent:
		w.pending = mariaDBGTID(e)
	}
	if ev.Header.EventType == replication.ROTATE_EVENT {
		s.rotated = true
	}
	cut, err := w.groups.add(ev)
	if err != nil {
		return err
	}
	switch cut {
	case cutComplete:
		s.end.Advance(w.pending)
		s.whole = end
	case cutControl:
		s.whole = end
	}
	if !w.sawList && ev.Header.EventType != replication.FORMAT_DESCRIPTION_EVENT {
		return errors.New("no GTID list event after the format description")
	}
	return nil
}

// checkFormatEvent checks the format description event a segment starts
// with, including its own checksum, which the parser does not verify.
func checkFormatEvent(data []byte) error {
	if len(data) < eventHeaderSize+checksumSize+1 {
		return errors.New("no format description event")
	}
	size := int(binary.LittleEndian.Uint32(data[9:]))
	if replication.EventType(data[4]) != replication.FORMAT_DESCRIPTION_EVENT || size < eventHeaderSize+checksumSize+1 || size > len(data) {
		return errors.New("no format description event")
	}
	fde := data[:size]
	if alg := fde[size-checksumSize-1]; alg != replication.BINLOG_CHECKSUM_ALG_OFF && alg != replication.BINLOG_CHECKSUM_ALG_CRC32 {
		return fmt.Errorf("format description event names checksum algorithm %d", alg)
	}
	if crc32.ChecksumIEEE(fde[:size-checksumSize]) != binary.LittleEndian.Uint32(fde[size-checksumSize:]) {
		return errors.New("format description event has a bad checksum")
	}
	return nil
}

// withChecksum returns a copy of a format description event with its
// checksum computed again (the dump thread may change the header after the
// source computed it).
func withChecksum(fde []byte) []byte {
	out := append([]byte(nil), fde...)
	if len(out) >= eventHeaderSize+checksumSize {
		binary.LittleEndian.PutUint32(out[len(out)-checksumSize:], crc32.ChecksumIEEE(out[:len(out)-checksumSize]))
	}
	return out
}

// safeParse parses one event; the decoders trust lengths inside events, so a
// damaged event may panic them, which is turned into an error here.
func safeParse(p *replication.BinlogParser, data []byte) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("undecodable event: %v", r)
		}
	}()
	return p.Parse(data)
}

func positionFromList(e *replication.MariadbGTIDListEvent) gtid.MariaDBPosition {
	var p gtid.MariaDBPosition
	for _, g := range e.GTIDs {
		p.Advance(gtid.MariaDBGTID{Domain: g.DomainID, Server: g.ServerID, Seq: g.SequenceNumber})
	}
	return p
}

func mariaDBGTID(e *replication.MariadbGTIDEvent) gtid.MariaDBGTID {
	return gtid.MariaDBGTID{Domain: e.GTID.DomainID, Server: e.GTID.ServerID, Seq: e.GTID.SequenceNumber}
}

func newRelayParser(decodeRows bool) *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	// The relay log's readers check every event's checksum themselves
	// (checksumHolds) before they parse it, to tell damage from an event
	// that does not decode: a second check in the parser only cost CPU.
	p.SetVerifyChecksum(false)
	p.SetUseDecimal(false)
	if !decodeRows {
		p.SetRowsEventDecodeFunc(func(*replication.RowsEvent, []byte) error { return nil })
	}
	return p
}

// DecodeRowsOrKeepHeader decodes a row event's header (table id, flags,
// columns, bitmaps, and the table map it refers to), then its rows. A header
// that does not decode is an error: nothing can be said of the event. Rows
// that do not decode (a column type or layout the library does not know,
// which it answers with an error or a panic) leave the event with its header
// and no rows, and the reason in undecoded: the target decodes the raw event
// itself, so the event is still applicable, only its values are unknown here.
// It is a go-mysql row decoding function for any parser that must not stop
// at such rows (the relay reader's, analyze's).
func DecodeRowsOrKeepHeader(re *replication.RowsEvent, body []byte) (undecoded error, err error) {
	pos, err := re.DecodeHeader(body)
	if err != nil {
		return nil, err
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				undecoded = fmt.Errorf("row decoder panic: %v", r)
			}
		}()
		undecoded = re.DecodeData(pos, body)
	}()
	if undecoded != nil {
		re.Rows, re.SkippedColumns = nil, nil
		undecoded = shortRowsError(undecoded)
	}
	return undecoded, nil
}

// shortRowsError keeps the first line of a row decoding error: go-mysql
// appends the whole event and table map to some, which no one can read.
func shortRowsError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ", data "); i > 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return errors.New(msg)
}

// opaqueEvent stands for an intact event that does not decode, so that the
// group it belongs to can still be cut: its header, and no content.
func opaqueEvent(raw []byte) *replication.BinlogEvent {
	h := &replication.EventHeader{}
	if err := h.Decode(raw); err != nil {
		h.EventType = replication.EventType(raw[4])
	}
	return &replication.BinlogEvent{Header: h, RawData: raw, Event: &replication.GenericEvent{}}
}

// checksumHolds reports whether a CRC32 event's last four bytes are the checksum of the rest.
func checksumHolds(ev []byte) bool {
	n := len(ev) - checksumSize
	return n >= eventHeaderSize && crc32.ChecksumIEEE(ev[:n]) == binary.LittleEndian.Uint32(ev[n:])
}

func (l *RelayLog) recover() error {
	segs, err := listSegments(l.opts.Dir)
	if err != nil {
		return err
	}
	var kept []segment
	var end gtid.MariaDBPosition
	for i, seg := range segs {
		scan := scanSegment(seg.path)
		continues := i == 0 || scan.start.Equal(end)
		if scan.whole == 0 || !continues {
			// Nothing usable here, and nothing after it can continue the run.
			why := "it does not continue the segment before"
			if scan.err != nil {
				why = scan.err.Error()
			} else if continues {
				why = "it holds no whole group"
			}
			l.opts.Logger.Warn("relay log recovery: removing segments; their events are fetched again from the source",
				"segment", seg.path, "offset", scan.whole, "segments removed", len(segs)-i, "reason", why)
			removeSegments(segs[i:])
			break
		}
		seg.start = scan.start
		kept = append(kept, seg)
		end = scan.end
		if scan.err != nil || !scan.rotated {
			if scan.err != nil {
				l.opts.Logger.Warn("relay log recovery: cutting a segment back to its last whole group; the rest is fetched again from the source",
					"segment", seg.path, "offset", scan.whole, "segments removed after it", len(segs)-i-1, "reason", scan.err.Error())
			} else if info, err := os.Stat(seg.path); err == nil && info.Size() > scan.whole {
				l.opts.Logger.Warn("relay log recovery: cutting a torn group off the end of a segment; it is fetched again from the source",
					"segment", seg.path, "offset", scan.whole, "bytes", info.Size()-scan.whole)
			}
			if err := os.Truncate(seg.path, scan.whole); err != nil {
				return fmt.Errorf("relay log recovery: cut %s back to its last whole group: %w", seg.path, err)
			}
			if err := l.sealSegment(seg, end); err != nil {
				return err
			}
			removeSegments(segs[i+1:])
			break
		}
	}
	l.segments = kept
	l.end = end
	return nil
}

func removeSegments(segs []segment) {
	for _, s := range segs {
		os.Remove(s.path)
	}
}

// sealSegment appends a rotate event to a segment left open by a crash, so a
// reader moves on to the next segment.
func (l *RelayLog) sealSegment(seg segment, _ gtid.MariaDBPosition) error {
	f, err := os.OpenFile(seg.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("relay log recovery: %w", err)
	}
	defer f.Close()
	format, err := readFormat(f)
	if err != nil {
		return fmt.Errorf("relay log recovery: %s: %w", seg.path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	ev := encodeRotate(segmentPath(l.opts.Dir, seg.number+1), uint32(size), formatHasChecksum(format))
	if _, err := f.Write(ev); err != nil {
		return fmt.Errorf("relay log recovery: seal %s: %w", seg.path, err)
	}
	return f.Sync()
}

// readFormat returns the raw format description event of a segment.
func readFormat(r io.ReaderAt) ([]byte, error) {
	head := make([]byte, len(binlogMagic)+eventHeaderSize)
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(head[len(binlogMagic)+9:])
	ev := make([]byte, size)
	if _, err := r.ReadAt(ev, int64(len(binlogMagic))); err != nil {
		return nil, err
	}
	return ev, nil
}

// formatHasChecksum reports whether events written under this format
// description carry a CRC32 checksum (the algorithm byte sits just before the
// format event's own checksum).
func formatHasChecksum(format []byte) bool {
	if len(format) < eventHeaderSize+checksumSize+1 {
		return false
	}
	return format[len(format)-checksumSize-1] == replication.BINLOG_CHECKSUM_ALG_CRC32
}

// encodeEvent builds an event of our own with the given body.
func encodeEvent(t replication.EventType, body []byte, logPos uint32, checksum bool) []byte {
	size := eventHeaderSize + len(body)
	if checksum {
		size += checksumSize
	}
	ev := make([]byte, eventHeaderSize, size)
	binary.LittleEndian.PutUint32(ev[0:], uint32(time.Now().Unix()))
	ev[4] = byte(t)
	binary.LittleEndian.PutUint32(ev[5:], 0)
	binary.LittleEndian.PutUint32(ev[9:], uint32(size))
	binary.LittleEndian.PutUint32(ev[13:], logPos+uint32(size))
	binary.LittleEndian.PutUint16(ev[17:], 0)
	ev = append(ev, body...)
	if checksum {
		ev = binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
	}
	return ev
}

func encodeRotate(next string, logPos uint32, checksum bool) []byte {
	body := binary.LittleEndian.AppendUint64(nil, 4)
	body = append(body, filepath.Base(next)...)
	return encodeEvent(replication.ROTATE_EVENT, body, logPos, checksum)
}

func encodeGTIDList(p gtid.MariaDBPosition, logPos uint32, checksum bool) []byte {
	domains := p.Domains()
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(domains)))
	for _, d := range domains {
		g, _ := p.Get(d)
		body = binary.LittleEndian.AppendUint32(body, g.Domain)
		body = binary.LittleEndian.AppendUint32(body, g.Server)
		body = binary.LittleEndian.AppendUint64(body, g.Seq)
	}
	return encodeEvent(replication.MARIADB_GTID_LIST_EVENT, body, logPos, checksum)
}

// Start is the position just before the relay log's first group; ok is false when the relay log is empty.
func (l *RelayLog) Start() (p gtid.MariaDBPosition, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segments) == 0 {
		return gtid.MariaDBPosition{}, false
	}
	return l.segments[0].start.Clone(), true
}

// End is the position after the last whole group received.
func (l *RelayLog) End() gtid.MariaDBPosition {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end.Clone()
}

// Continues reports whether the relay log holds the history right after
// applied: applied lies within (Start, End], so reading the relay log from its
// start and skipping what applied contains yields every later group once.
func (l *RelayLog) Continues(applied gtid.MariaDBPosition) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segments) == 0 {
		return false
	}
	return applied.Covers(l.segments[0].start) && l.end.Covers(applied)
}

// sourceFile, in the relay folder, names the server its segments were
// fetched from (RelayOptions.Source).
const sourceFile = "source"

// SwitchSource makes the relay log the one of opts.Source. Events fetched
// from another server are history that the source may not share: after a
// failover, the promoted replica may lack the old primary's last
// transactions, and a replica applying them would hold transactions its
// new source never wrote. So, as MariaDB's CHANGE MASTER empties its relay
// log, a relay log of another server is reset to applied, the target's
// position, and fetched again from the source; what the target applied
// stays. previous is the server it was fetched from; dropped says whether
// the relay log held events past applied. A relay log whose server is not
// known (made before sources were recorded) is kept.
func (l *RelayLog) SwitchSource(applied gtid.MariaDBPosition) (previous string, dropped bool, err error) {
	if l.opts.Source == "" {
		return "", false, nil
	}
	path := filepath.Join(l.opts.Dir, sourceFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("relay directory %s: %w", l.opts.Dir, err)
	}
	previous = strings.TrimSpace(string(data))
	if previous == l.opts.Source {
		return previous, false, nil
	}
	if previous != "" {
		dropped = !applied.Covers(l.End())
		if err := l.Reset(applied); err != nil {
			return previous, false, err
		}
	}
	// Not synced: a crash that loses or tears the file makes the next run
	// reset the relay log again, which costs a fetch and loses nothing.
	if err := os.WriteFile(path, []byte(l.opts.Source+"\n"), 0o600); err != nil {
		return previous, dropped, fmt.Errorf("relay directory %s: %w", l.opts.Dir, err)
	}
	return previous, dropped, nil
}

// Reset removes every segment; the next segment will start at start.
func (l *RelayLog) Reset(start gtid.MariaDBPosition) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active != nil {
		l.active.Close()
		l.active = nil
	}
	removeSegments(l.segments)
	l.segments = nil
	l.buf, l.buffered, l.open = l.buf[:0], l.buffered[:0], false
	l.end = start.Clone()
	l.notifyLocked()
	return nil
}

func (l *RelayLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// BeginSession starts a new segment under the source's format description
// event; the receiver calls it once per connection, before appending.
func (l *RelayLog) BeginSession(format []byte) error {
	if err := l.AbandonGroup(); err != nil {
		return err
	}
	if err := l.Flush(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addChecksum = !formatHasChecksum(format)
	return l.rotateLocked(format)
}

// createdAt is where a format description event holds when its binlog was
// created, set only in the first binlog a server writes after it starts:
// after the header, the binlog version (2 bytes) and the server version (50).
const createdAt = eventHeaderSize + 2 + 50

// notCreated returns a copy of a format description event without its
// creation time, its checksum computed again: a segment that goes on from
// the one before, rotated for its size, must not say that the source
// started again (the decoder ends the source's temporary tables there).
func notCreated(fde []byte) []byte {
	if len(fde) < createdAt+4+checksumSize {
		return fde
	}
	out := bytes.Clone(fde)
	binary.LittleEndian.PutUint32(out[createdAt:], 0)
	return withChecksum(out)
}

// withCRC32 returns a copy of a format description event that says its
// events carry CRC32 checksums, its own checksum computed again.
func withCRC32(fde []byte) []byte {
	out := bytes.Clone(fde)
	if len(out) >= eventHeaderSize+checksumSize+1 {
		out[len(out)-checksumSize-1] = replication.BINLOG_CHECKSUM_ALG_CRC32
	}
	return withChecksum(out)
}

// appendWithChecksum appends ev to buf with a CRC32 of its own: its size
// grows by four bytes, the rest is the source's.
func appendWithChecksum(buf, ev []byte) []byte {
	at := len(buf)
	buf = append(buf, ev...)
	if len(ev) < eventHeaderSize {
		return buf
	}
	binary.LittleEndian.PutUint32(buf[at+9:], uint32(len(ev)+checksumSize))
	return binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(buf[at:]))
}

// rotateLocked opens the next segment and seals the active one, if any,
// with a rotate event to it. The next is made whole before the active one
// is sealed, so that a write that fails (a full filesystem) leaves the
// relay log as it was, the new file removed: appending goes on once there
// is room. Only a sync that fails leaves it unusable.
func (l *RelayLog) rotateLocked(format []byte) error {
	next := 1
	if n := len(l.segments); n > 0 {
		next = l.segments[n-1].number + 1
	}
	path := segmentPath(l.opts.Dir, next)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("relay log: new segment: %w", err)
	}
	withSum := withCRC32(format)
	head := append(append([]byte(nil), binlogMagic...), withSum...)
	head = append(head, encodeGTIDList(l.end, uint32(len(head)), true)...)
	if _, err := f.Write(head); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("relay log: new segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("relay log: new segment: %w", err)
	}
	if l.active != nil {
		rot := encodeRotate(path, uint32(l.activeSize), l.checksum)
		if _, err := l.active.Write(rot); err != nil {
			f.Close()
			os.Remove(path)
			err = fmt.Errorf("relay log: seal segment: %w", err)
			if cutErr := l.cutBackLocked(); cutErr != nil {
				err = errors.Join(err, cutErr)
			}
			return err
		}
		if err := l.active.Sync(); err != nil {
			f.Close()
			l.unusable = fmt.Errorf("relay log: sync segment: %w", err)
			return l.unusable
		}
		l.active.Close()
		l.activeSize += int64(len(rot))
	}
	syncDir(l.opts.Dir)
	l.format = withSum
	l.checksum = true
	l.active = f
	l.activeSize = int64(len(head))
	l.written, l.whole = l.activeSize, l.activeSize
	l.segments = append(l.segments, segment{number: next, path: path, start: l.end.Clone()})
	l.lastSync = time.Now()
	l.notifyLocked()
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Append writes one whole group (raw events, GTID event first) and advances
// the end position to its GTID.
func (l *RelayLog) Append(events [][]byte, id gtid.MariaDBGTID) error {
	if err := l.Buffer(events, id); err != nil {
		return err
	}
	return l.Flush()
}

// flushSize is how many bytes of events the relay log holds before it
// writes them without waiting for Flush.
const flushSize = 256 << 10

// Buffer adds one whole group (raw events, GTID event first) to the groups
// waiting to be written, as AddEvent and EndGroup do.
func (l *RelayLog) Buffer(events [][]byte, id gtid.MariaDBGTID) error {
	for _, ev := range events {
		if err := l.AddEvent(ev); err != nil {
			return err
		}
	}
	return l.EndGroup(id)
}

// AddEvent adds one event of the open group (the first opens it). Events
// reach the segment at the next Flush, or as soon as flushSize bytes wait, so
// a group of any size costs flushSize bytes of memory here; readers see none
// of a group before its last event (EndGroup) is written. A writer that
// buffers calls Flush before it waits for more: a group is never held back
// for the next one to arrive.
func (l *RelayLog) AddEvent(ev []byte) error {
	l.mu.Lock()
	if l.active == nil {
		l.mu.Unlock()
		return errors.New("relay log: append before BeginSession")
	}
	l.open = true
	l.bufferLocked(ev)
	full := len(l.buf) >= flushSize
	l.mu.Unlock()
	if full {
		return l.Flush()
	}
	return nil
}

// EndGroup closes the open group, whose GTID is id: it becomes readable, and
// the end position passes it, at the next Flush.
func (l *RelayLog) EndGroup(id gtid.MariaDBGTID) error {
	l.mu.Lock()
	l.open = false
	l.whole = l.written + int64(len(l.buf))
	l.buffered = append(l.buffered, id)
	full := len(l.buf) >= flushSize
	l.mu.Unlock()
	if full {
		return l.Flush()
	}
	return nil
}

// bufferLocked appends ev to buf in segment format: with a CRC32 of its own
// when the source sends none.
func (l *RelayLog) bufferLocked(ev []byte) {
	if l.addChecksum {
		l.buf = appendWithChecksum(l.buf, ev)
	} else {
		l.buf = append(l.buf, ev...)
	}
}

// AddControl appends ev, an event between groups that the decoder must
// meet in its place (a source's incident), and writes it.
func (l *RelayLog) AddControl(ev []byte) error {
	l.mu.Lock()
	if l.active == nil || l.open {
		l.mu.Unlock()
		return errors.New("relay log: an event between groups before BeginSession or inside a group")
	}
	l.bufferLocked(ev)
	l.whole = l.written + int64(len(l.buf))
	l.control = true
	l.mu.Unlock()
	return l.Flush()
}

// AbandonGroup forgets the open group's events (the connection was lost
// inside it; the next session fetches it whole): those still buffered, and
// those already written, which are cut off the segment.
func (l *RelayLog) AbandonGroup() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open {
		return nil
	}
	l.open = false
	if keep := l.whole - l.written; keep >= 0 {
		l.buf = l.buf[:keep]
		return nil
	}
	l.buf = l.buf[:0]
	if err := l.active.Truncate(l.whole); err != nil {
		return fmt.Errorf("relay log: cut an unfinished group off %s: %w", l.segments[len(l.segments)-1].path, err)
	}
	if _, err := l.active.Seek(l.whole, io.SeekStart); err != nil {
		return fmt.Errorf("relay log: cut an unfinished group off %s: %w", l.segments[len(l.segments)-1].path, err)
	}
	l.written = l.whole
	return nil
}

// Flush writes the buffered events in one write and advances the end
// position past the groups they complete.
func (l *RelayLog) Flush() error {
	l.mu.Lock()
	if len(l.buf) == 0 && len(l.buffered) == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.active == nil {
		l.mu.Unlock()
		return errors.New("relay log: flush without a segment")
	}
	_, err := l.active.Write(l.buf)
	l.written += int64(len(l.buf))
	l.buf = l.buf[:0]
	if cap(l.buf) > 4*flushSize {
		l.buf = nil // a large event's buffer is not kept
	}
	ids, control := l.buffered, l.control
	l.buffered, l.control = l.buffered[:0], false
	if err != nil {
		err = fmt.Errorf("relay log: %w", err) // the error names the write and the segment
		if cutErr := l.cutBackLocked(); cutErr != nil {
			err = errors.Join(err, cutErr)
		}
		l.mu.Unlock()
		return err
	}
	if len(ids) == 0 && !control {
		// Only the first events of a large group: nothing new to read.
		l.mu.Unlock()
		return nil
	}
	l.activeSize = l.whole
	for _, id := range ids {
		l.end.Advance(id)
	}
	var syncNow *os.File
	if l.activeSize >= l.opts.SegmentSize && !l.open {
		if err := l.rotateLocked(notCreated(l.format)); err != nil {
			l.mu.Unlock()
			return err
		}
	} else if time.Since(l.lastSync) >= l.opts.SyncEvery {
		syncNow = l.active
		l.lastSync = time.Now()
	}
	l.notifyLocked()
	l.mu.Unlock()
	// The periodic sync runs outside the lock: readers must not wait for the disk.
	if syncNow != nil {
		if err := syncNow.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
			return fmt.Errorf("relay log: sync: %w", err)
		}
	}
	return nil
}

// cutBackLocked undoes a write that failed (a full filesystem): the active
// segment is cut back to its last whole group, which readers have, and the
// groups the write was to complete are dropped with the open one, so that
// a session of the receiver after it fetches them again and appends where
// the relay log ends. A segment that cannot be cut back leaves the relay
// log unusable (Usable).
func (l *RelayLog) cutBackLocked() error {
	l.open = false
	l.buf = l.buf[:0]
	l.written, l.whole = l.activeSize, l.activeSize
	err := l.active.Truncate(l.activeSize)
	if err == nil {
		_, err = l.active.Seek(l.activeSize, io.SeekStart)
	}
	if err != nil {
		l.unusable = fmt.Errorf("relay log: cut a failed write off %s: %w", l.segments[len(l.segments)-1].path, err)
		return l.unusable
	}
	return nil
}

// Usable is nil while a write that failed has left the relay log whole,
// so that appending may go on once the cause is gone (space freed).
func (l *RelayLog) Usable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unusable
}

// Close writes what is buffered, syncs and closes the active segment.
func (l *RelayLog) Close() error {
	flushErr := errors.Join(l.AbandonGroup(), l.Flush())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active == nil {
		return nil
	}
	err := l.active.Sync()
	l.active.Close()
	l.active = nil
	l.notifyLocked()
	return errors.Join(flushErr, err)
}

// Purge removes the segments whose every group is contained in applied. The
// last segment is never removed.
func (l *RelayLog) Purge(applied gtid.MariaDBPosition) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n+1 < len(l.segments) && applied.Covers(l.segments[n+1].start) {
		os.Remove(l.segments[n].path)
		n++
	}
	l.segments = l.segments[n:]
	return n
}

// Segments lists the segment files, oldest first.
func (l *RelayLog) Segments() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	paths := make([]string, len(l.segments))
	for i, s := range l.segments {
		paths[i] = s.path
	}
	return paths
}

// readable returns how far the segment numbered n may be read, and whether it
// is still being written (so a reader at its end must wait rather than stop).
func (l *RelayLog) readable(n int) (size int64, growing bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := len(l.segments) - 1
	if last >= 0 && l.segments[last].number == n && l.active != nil {
		return l.activeSize, true, l.changed
	}
	return -1, false, l.changed
}

// RelayReader reads the relay log from its first segment on, following the
// writer: at the end of the active segment it waits for more.
//
// It returns every event decoded and never compressed: a compressed event
// comes back as the plain event it stands for (compressed.go), and a row
// event whose rows cannot be decoded comes back with its header only, its
// raw bytes whole, and Undecoded saying why.
type RelayReader struct {
	log    *RelayLog
	parser *replication.BinlogParser
	seg    int // number of the segment being read; 0 before the first
	file   *os.File
	off    int64
	// format is the segment's format description; checksum says its events
	// carry CRC32 checksums, which the reader checks before decoding anything.
	format   *replication.FormatDescriptionEvent
	checksum bool
	// last is where the event Next returned last starts; undecoded why its
	// rows are not decoded (nil when they are, or it is no row event).
	last      int64
	undecoded error
	// pending are the row images of the event Next returned last when its
	// rows are left pending (Event.RowsPending).
	pending *PendingRows
	// pendings and starts are the pieces the pending rows of the events
	// returned are made in, one after the other (what lies before their
	// lengths belongs to events returned).
	pendings []PendingRows
	starts   []uint32
	// headersOnly, when set, is why row events are read without their rows.
	headersOnly error
	// ahead holds the segment's bytes from aheadAt on, read in large pieces
	// so that an event costs no system call of its own. The events returned
	// point into it, so its bytes are never written twice: a piece grows
	// only into its spare capacity, and a read beyond starts a new piece.
	ahead   []byte
	aheadAt int64
	// limit and growing are what the relay log said last of how far the
	// segment may be read (limitKnown: it said it of this segment); the
	// readable end only moves on, so the reader asks again only when an
	// event reaches past it.
	limit      int64
	growing    bool
	limitKnown bool
	// tableMaps are the table maps read, each once (tablemaps.go).
	tableMaps tableMaps
	// plans are the column plans of the table maps met (rowimages.go).
	plans map[*replication.TableMapEvent]*columnPlan
	// fast decodes the hot events without the parser (fastevents.go).
	fast fastEvents
}

const readAhead = 256 << 10

// bytesAt returns n bytes of the segment at off, reading ahead up to limit
// (or to the end of the file when limit < 0). The slice stays valid: the
// reader never writes over bytes it has returned.
func (r *RelayReader) bytesAt(off, n, limit int64) ([]byte, error) {
	end := r.aheadAt + int64(len(r.ahead))
	if off >= r.aheadAt && off+n <= end {
		return r.ahead[off-r.aheadAt : off-r.aheadAt+n : off-r.aheadAt+n], nil
	}
	if r.ahead != nil && off >= r.aheadAt && off <= end && off+n <= r.aheadAt+int64(cap(r.ahead)) {
		// The piece continues at off and has room: read into its spare capacity.
		spare := r.aheadAt + int64(cap(r.ahead))
		if limit >= 0 {
			spare = max(min(spare, limit), off+n)
		}
		got, err := r.file.ReadAt(r.ahead[len(r.ahead):spare-r.aheadAt], end)
		r.ahead = r.ahead[:len(r.ahead)+got]
		if off+n > end+int64(got) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return r.ahead[off-r.aheadAt : off-r.aheadAt+n : off-r.aheadAt+n], nil
	}
	want := max(n, readAhead)
	piece := make([]byte, want)
	if limit >= 0 && off+want > limit {
		want = max(n, limit-off)
	}
	got, err := r.file.ReadAt(piece[:want], off)
	r.ahead, r.aheadAt = piece[:got], off
	if int64(got) < n {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return r.ahead[:n:n], nil
}

// NewReader returns a reader positioned before the first segment.
func (l *RelayLog) NewReader() *RelayReader {
	r := &RelayReader{log: l, parser: newRelayParser(true)}
	// A table map's optional metadata (column names, keys, charsets) is
	// not read: rows decode without it, and the target's own definitions
	// are what the policies use.
	r.parser.SetTableMapOptionalMetaDecodeFunc(func([]byte) error { return nil })
	r.parser.SetRowsEventDecodeFunc(func(re *replication.RowsEvent, body []byte) error {
		pos, err := re.DecodeHeader(body)
		if err != nil {
			return err
		}
		if err := r.rowsPending(re, body, pos); err == nil || r.headersOnly != nil {
			return nil
		}
		undecoded, err := DecodeRowsOrKeepHeader(re, body)
		r.undecoded = undecoded
		return err
	})
	return r
}

// errRowsWalk: a row event's images do not pass checkImages, and its rows
// are decoded in full instead.
var errRowsWalk = errors.New("row images not walked")

// rowsPending leaves the rows of re, whose header ends at pos in body,
// pending: its images walked (checkImages), r.pending set. With
// headersOnly set, the rows are left undecoded instead. It returns
// errRowsWalk, changing nothing, when the images do not pass the walk.
func (r *RelayReader) rowsPending(re *replication.RowsEvent, body []byte, pos int) error {
	if r.headersOnly != nil {
		r.undecoded = r.headersOnly
		return nil
	}
	if cap(r.starts)-len(r.starts) < 64 {
		// A new piece: the events returned keep the old one.
		r.starts = make([]uint32, 0, 4096)
	}
	from := len(r.starts)
	plan := r.planOf(re)
	starts, ok := checkImages(re, body[pos:], r.starts, plan)
	if !ok {
		r.starts = r.starts[:from]
		return errRowsWalk
	}
	if len(r.pendings) == cap(r.pendings) {
		r.pendings = make([]PendingRows, 0, 256)
	}
	r.pendings = append(r.pendings, PendingRows{images: body[pos:], starts: starts[from:len(starts):len(starts)], plan: plan})
	r.pending = &r.pendings[len(r.pendings)-1]
	r.starts = starts
	return nil
}

// planOf is the column plan of re's table map (rowimages.go), worked out
// once per table map and column count; nil for an event without one.
func (r *RelayReader) planOf(re *replication.RowsEvent) *columnPlan {
	t := re.Table
	if t == nil || int(re.ColumnCount) > len(t.ColumnType) || int(re.ColumnCount) > len(t.ColumnMeta) {
		return nil
	}
	if p, ok := r.plans[t]; ok && len(p.lengths) == int(re.ColumnCount) {
		return p
	}
	if r.plans == nil || len(r.plans) >= maxTableMaps {
		r.plans = make(map[*replication.TableMapEvent]*columnPlan)
	}
	p := planOf(t, int(re.ColumnCount))
	r.plans[t] = p
	return p
}

// HeadersOnly makes the reader leave the rows of the row events it returns
// undecoded, with why as their Undecoded, until it is called with nil.
func (r *RelayReader) HeadersOnly(why error) { r.headersOnly = why }

// Undecoded says why the rows of the event Next returned last are not
// decoded; nil when they are, or when it is no row event.
func (r *RelayReader) Undecoded() error { return r.undecoded }

// Pending are the row images of the event Next returned last when its rows
// are left pending (Event.RowsPending); nil otherwise.
func (r *RelayReader) Pending() *PendingRows { return r.pending }

// Position names the segment file and byte where the event Next returned last starts.
func (r *RelayReader) Position() (segment string, offset int64) {
	if r.file == nil {
		return segmentPath(r.log.opts.Dir, r.seg), r.last
	}
	return r.file.Name(), r.last
}

// Close releases the reader's file.
func (r *RelayReader) Close() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
}

// Next returns the next event, blocking until the writer provides one or ctx ends.
func (r *RelayReader) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	for {
		if r.file == nil {
			if err := r.openNext(ctx); err != nil {
				return nil, err
			}
			continue
		}
		limit, growing := r.limit, r.growing
		if !r.limitKnown || growing && r.off+eventHeaderSize > limit {
			var changed <-chan struct{}
			limit, growing, changed = r.log.readable(r.seg)
			if !growing {
				limit = -1
			}
			r.limit, r.growing, r.limitKnown = limit, growing, true
			if growing && r.off+eventHeaderSize > limit {
				select {
				case <-changed:
					continue
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		header, err := r.bytesAt(r.off, eventHeaderSize, limit)
		if err != nil {
			if errors.Is(err, io.EOF) && !growing {
				return nil, fmt.Errorf("%w: segment %s ends without a rotate event at byte %d", ErrCorruptRelay, r.file.Name(), r.off)
			}
			return nil, fmt.Errorf("%w: %s at byte %d: %v", ErrCorruptRelay, r.file.Name(), r.off, err)
		}
		size := int64(binary.LittleEndian.Uint32(header[9:]))
		if growing && r.off+size > limit {
			// Past the end known: ask again before calling it torn.
			limit, growing, _ = r.log.readable(r.seg)
			if !growing {
				limit = -1
			}
			r.limit, r.growing = limit, growing
		}
		if size < eventHeaderSize || (growing && r.off+size > limit) {
			return nil, fmt.Errorf("%w: %s: bad event size %d at byte %d", ErrCorruptRelay, r.file.Name(), size, r.off)
		}
		data, err := r.bytesAt(r.off, size, limit)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: torn event at byte %d: %v", ErrCorruptRelay, r.file.Name(), r.off, err)
		}
		ev, err := r.decode(data)
		if err != nil && !isUndecodable(err) {
			return nil, err
		}
		// An intact event is read past even when it does not decode: the
		// decoder may pass its group (--skip-gtid).
		r.last = r.off
		r.off += size
		if err != nil {
			return nil, err
		}
		if ev.Header.EventType == replication.ROTATE_EVENT {
			r.file.Close()
			r.file = nil
			r.ahead = nil
			r.limitKnown = false
			continue
		}
		return ev, nil
	}
}

// isUndecodable reports whether err is an *UndecodableError.
func isUndecodable(err error) bool {
	var ue *UndecodableError
	return errors.As(err, &ue)
}

// decode checks one whole event read at r.off and decodes it. Damage (a bad
// checksum, a bad format description) is ErrCorruptRelay; an intact event
// that does not decode is an *UndecodableError. Without checksums the two
// cannot be told apart, and a failure counts as damage.
func (r *RelayReader) decode(data []byte) (*replication.BinlogEvent, error) {
	t := replication.EventType(data[4])
	at := r.off
	if at == int64(len(binlogMagic)) {
		if err := checkFormatEvent(data); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorruptRelay, r.file.Name(), err)
		}
		r.checksum = formatHasChecksum(data)
		r.format = nil
	} else if r.checksum && !checksumHolds(data) {
		return nil, fmt.Errorf("%w: %s: %s event at byte %d has a bad checksum", ErrCorruptRelay, r.file.Name(), t, at)
	}
	undecodable := func(err error) error {
		if !r.checksum {
			return fmt.Errorf("%w: %s: %s event at byte %d: %v", ErrCorruptRelay, r.file.Name(), t, at, err)
		}
		return &UndecodableError{Segment: r.file.Name(), Offset: at, Type: t, Raw: data, Err: err}
	}
	compressed := isCompressedEvent(t)
	if compressed {
		plain, _, err := uncompressEvent(data, r.format)
		if err != nil {
			return nil, undecodable(err)
		}
		data = plain
	}
	r.undecoded, r.pending = nil, nil
	if !compressed {
		if ev, ok := r.fastDecode(data); ok {
			return ev, nil
		}
	}
	r.syncParser()
	ev, err := safeParse(r.parser, data)
	if err != nil {
		return nil, undecodable(err)
	}
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		r.format = e
		r.tableMaps.format(data)
		r.fast.reset()
	case *replication.TableMapEvent:
		ev.Event = r.tableMaps.same(e, data, r.checksum)
	case *replication.RowsEvent:
		if tm := r.fast.table(e.TableID); tm != nil && e.Table != nil {
			e.Table = tm
		} else if e.Table != nil {
			e.Table = r.tableMaps.current(e.TableID, e.Table)
		}
	}
	r.fast.learn(ev.Header, ev.Event)
	return ev, nil
}

func (r *RelayReader) openNext(ctx context.Context) error {
	for {
		r.log.mu.Lock()
		var next *segment
		for i := range r.log.segments {
			if r.log.segments[i].number > r.seg {
				s := r.log.segments[i]
				next = &s
				break
			}
		}
		changed := r.log.changed
		r.log.mu.Unlock()
		if next == nil {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		f, err := os.Open(next.path)
		if err != nil {
			return fmt.Errorf("relay log: %w", err)
		}
		r.file = f
		r.seg = next.number
		r.off = int64(len(binlogMagic))
		r.ahead, r.aheadAt = nil, 0
		r.limitKnown = false
		return nil
	}
}
