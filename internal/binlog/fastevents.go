// fastevents.go decodes the events every row change comes in (a MariaDB
// GTID, an annotate-rows, a table map met before with the same body, a
// write, update or delete row event, an XID) without go-mysql's parser,
// into the same go-mysql values the parser makes of them. The parser
// allocates a header, an event and the BinlogEvent around them for every
// event, decodes a table map's twenty-odd slices for each statement only
// for tablemaps.go to hand out the one kept, and makes a new map of tables
// at every statement's end; here those come from slabs the reader fills in
// turn, a table map met before is looked up by its bytes, and nothing else
// is made.
//
// Invariant: an event decoded here is, field for field, what the parser
// would have made of it (TestFastEventsAsParsed). Anything this file does
// not know for sure (another event type, a compressed event, a rows event
// of version 0 or 2, a table map not met before or changed, a rows event
// whose table the statement did not map here, a length that does not add
// up) goes to the parser, as before; the parser is first told the table
// maps it did not see (syncParser), so that it finds the row event's
// table as it would have.
//
// Layouts (MariaDB's binlog event formats, after the 19-byte header, the
// 4-byte CRC32 checksum at the end):
//
//	GTID (162)          seq_no u64 | domain_id u32 | flags u8 | [commit_id u64 when flags&2] ...
//	XID (16)            xid u64
//	annotate rows (160) the statement's text
//	table map (19)      table_id u48 | flags u16 | schema, table, columns, types, metadata ...
//	rows v1 (23,24,25)  table_id u48 | flags u16 | columns lenenc | bitmap | [update: bitmap] | images
package binlog

import (
	"bytes"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/replication"
)

// slabSize is how many values of a kind a slab holds: one allocation
// stands for that many events. A slab lives while any of its events does;
// transactions leave the queue in the order they entered it, so a slab
// dies soon after its last event.
const slabSize = 64

// slab hands out values of T from a slice allocated slabSize at a time;
// a value handed out is never handed out again.
type slab[T any] struct{ free []T }

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabSize)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// fastEvents is the relay reader's state for decoding hot events itself.
type fastEvents struct {
	events    slab[replication.BinlogEvent]
	headers   slab[replication.EventHeader]
	gtids     slab[replication.MariadbGTIDEvent]
	xids      slab[replication.XIDEvent]
	annotates slab[replication.MariadbAnnotateRowsEvent]
	rows      slab[replication.RowsEvent]
	// templates are, by row event type (write, update, delete, v1), a
	// RowsEvent the parser made under the current format description,
	// with its own fields cleared: the settings a parser gives every row
	// event it makes (which this package cannot set) for copies to carry.
	templates [3]*replication.RowsEvent
	// mapped are the table ids mapped since the last statement's end, in
	// order; unseen says, for each, that the parser did not decode that
	// map (it came from the kept ones here).
	mapped []mappedTable
	// reuse: the BinlogEvent returned is the same one every time, valid
	// until the next (the decoder's reader, which keeps only what it
	// holds: the header, the bytes and the event).
	reuse bool
	event replication.BinlogEvent
	// off leaves every event to the parser, and decoded counts the events
	// decoded here (tests compare the two ways).
	off     bool
	decoded int
}

type mappedTable struct {
	id uint64
	tm *replication.TableMapEvent // as handed out (tablemaps.go)
	// unseen is the whole table map event, when the parser has not
	// decoded it; nil when it has.
	unseen []byte
}

// rowsIndex is a v1 row event type's index in templates, -1 for another type.
func rowsIndex(t replication.EventType) int {
	switch t {
	case replication.WRITE_ROWS_EVENTv1:
		return 0
	case replication.UPDATE_ROWS_EVENTv1:
		return 1
	case replication.DELETE_ROWS_EVENTv1:
		return 2
	}
	return -1
}

// reset forgets what a format description made: the templates and the
// tables mapped.
func (f *fastEvents) reset() {
	f.templates = [3]*replication.RowsEvent{}
	f.mapped = f.mapped[:0]
}

// learn notes what the parser made of an event: a row event becomes its
// type's template; a table map is mapped, a statement's end ends the maps.
func (f *fastEvents) learn(h *replication.EventHeader, e replication.Event) {
	switch e := e.(type) {
	case *replication.TableMapEvent:
		f.mapTable(e, nil)
	case *replication.RowsEvent:
		if i := rowsIndex(h.EventType); i >= 0 && f.templates[i] == nil && e.Version == 1 {
			t := *e
			t.Table, t.TableID, t.Flags, t.ColumnCount = nil, 0, 0, 0
			t.ColumnBitmap1, t.ColumnBitmap2, t.Rows, t.SkippedColumns = nil, nil, nil, nil
			t.NdbFormat, t.NdbData, t.PartitionId, t.SourcePartitionId = 0, nil, 0, 0
			f.templates[i] = &t
		}
		f.endStatement(e.Flags)
	}
}

func (f *fastEvents) mapTable(tm *replication.TableMapEvent, unseen []byte) {
	for i := range f.mapped {
		if f.mapped[i].id == tm.TableID {
			f.mapped[i].tm, f.mapped[i].unseen = tm, unseen
			return
		}
	}
	f.mapped = append(f.mapped, mappedTable{id: tm.TableID, tm: tm, unseen: unseen})
}

func (f *fastEvents) endStatement(flags uint16) {
	if flags&replication.RowsEventStmtEndFlag != 0 {
		f.mapped = f.mapped[:0]
	}
}

// table is the table map the statement mapped table id to, as handed
// out; nil when it mapped none.
func (f *fastEvents) table(id uint64) *replication.TableMapEvent {
	for i := range f.mapped {
		if f.mapped[i].id == id {
			return f.mapped[i].tm
		}
	}
	return nil
}

// tableIDSize is the bytes of a table id in events of type t under format.
func tableIDSize(format *replication.FormatDescriptionEvent, t replication.EventType) int {
	if int(t) < 1 || int(t) > len(format.EventTypeHeaderLengths) {
		return 0
	}
	if format.EventTypeHeaderLengths[t-1] == 6 {
		return 4
	}
	return 6
}

func littleEndian(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// gtidBodyWhole reports whether body, a MariaDB GTID event's after its
// header, holds all that MariadbGTIDEvent.Decode reads: seq_no, domain_id,
// flags2, and the commit id when flags2 says one follows.
func gtidBodyWhole(body []byte) bool {
	return len(body) >= 13 && (body[12]&replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID == 0 || len(body) >= 21)
}

// fastDecode decodes data, a whole event with its checksum, when it is one
// this file decodes; ok is false when the parser is to decode it.
func (r *RelayReader) fastDecode(data []byte) (ev *replication.BinlogEvent, ok bool) {
	if r.fast.off || r.format == nil || !r.checksum || r.format.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 ||
		len(data) < eventHeaderSize+checksumSize {
		return nil, false
	}
	t := replication.EventType(data[4])
	body := data[eventHeaderSize : len(data)-checksumSize]
	f := &r.fast
	var e replication.Event
	switch t {
	case replication.MARIADB_GTID_EVENT:
		if !gtidBodyWhole(body) {
			return nil, false
		}
		g := f.gtids.next()
		g.GTID.ServerID = binary.LittleEndian.Uint32(data[5:])
		if g.Decode(body) != nil {
			return nil, false
		}
		e = g
	case replication.XID_EVENT:
		if len(body) < 8 {
			return nil, false
		}
		x := f.xids.next()
		x.XID = binary.LittleEndian.Uint64(body)
		e = x
	case replication.MARIADB_ANNOTATE_ROWS_EVENT:
		a := f.annotates.next()
		a.Query = body
		e = a
	case replication.TABLE_MAP_EVENT:
		tm := r.keptTableMap(t, data, body)
		if tm == nil {
			return nil, false
		}
		e = tm
	case replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1:
		re, ok := r.fastRows(t, body)
		if !ok {
			return nil, false
		}
		e = re
	default:
		return nil, false
	}
	h := f.headers.next()
	if h.Decode(data) != nil || int(h.EventSize) != len(data) {
		return nil, false
	}
	if f.reuse {
		ev = &f.event
	} else {
		ev = f.events.next()
	}
	ev.RawData, ev.Header, ev.Event = data, h, e
	f.decoded++
	return ev, true
}

// keptTableMap returns the table map kept for a table map event whose
// body is the kept one's; nil when there is none.
func (r *RelayReader) keptTableMap(t replication.EventType, data, body []byte) *replication.TableMapEvent {
	m := &r.tableMaps
	n := tableIDSize(r.format, t)
	if n == 0 || len(body) < n || m.byID == nil {
		return nil
	}
	id := littleEndian(body[:n])
	k, ok := m.byID[id]
	if !ok || !bytes.Equal(k.raw, body) {
		return nil
	}
	r.fast.mapTable(k.tm, k.event)
	return k.tm
}

// fastRows decodes a v1 row event's header into a copy of its type's
// template, pointed at the table map kept for its table, and leaves its
// rows pending as the parser's row decoding function would.
func (r *RelayReader) fastRows(t replication.EventType, body []byte) (*replication.RowsEvent, bool) {
	f := &r.fast
	tpl := f.templates[rowsIndex(t)]
	n := tableIDSize(r.format, t)
	if tpl == nil || n != 6 || len(body) < n+3 {
		return nil, false
	}
	id := littleEndian(body[:n])
	pos := n
	flags := binary.LittleEndian.Uint16(body[pos:])
	pos += 2
	columns, width, ok := lengthEncoded(body[pos:])
	if !ok || columns == 0 || columns > 1<<16 {
		return nil, false
	}
	pos += width
	bitmap := int(columns+7) / 8
	bitmaps := 1
	if t == replication.UPDATE_ROWS_EVENTv1 {
		bitmaps = 2
	}
	if len(body) < pos+bitmaps*bitmap {
		return nil, false
	}
	table := f.table(id)
	if table == nil {
		return nil, false
	}
	re := f.rows.next()
	*re = *tpl
	re.TableID, re.Flags, re.ColumnCount, re.Table = id, flags, columns, table
	re.ColumnBitmap1 = body[pos : pos+bitmap : pos+bitmap]
	pos += bitmap
	if bitmaps == 2 {
		re.ColumnBitmap2 = body[pos : pos+bitmap : pos+bitmap]
		pos += bitmap
	}
	if err := r.rowsPending(re, body, pos); err != nil {
		return nil, false
	}
	f.endStatement(flags)
	return re, true
}

// lengthEncoded reads a length-encoded integer; ok is false for a NULL
// marker, an error marker or a short buffer.
func lengthEncoded(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfb, 0xff:
		return 0, 0, false
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < n {
		return 0, 0, false
	}
	return littleEndian(b[1:n]), n, true
}

// syncParser tells the parser the table maps of the statement it did not
// decode, before it decodes a row event: it looks the event's table up
// among the maps it decoded.
func (r *RelayReader) syncParser() {
	for i := range r.fast.mapped {
		m := &r.fast.mapped[i]
		if m.unseen != nil {
			safeParse(r.parser, m.unseen)
			m.unseen = nil
		}
	}
}
