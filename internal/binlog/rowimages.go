// rowimages.go reads row events' images without decoding every value.
//
// A row event's rows serve the applier only to find the row keys a
// transaction writes (the writeset policy reads the key columns) and, on a
// sequence, its new values; the target gets the event's own bytes. Decoding
// every column of every image into Go values (what go-mysql's row decoder
// does) cost most of the decoder's time and allocations, so the relay
// reader leaves the rows of an event pending (Event.RowsPending) once
// checkImages has walked them: every column's type is one whose length it
// knows, and the images end where the event ends. Such rows decode in full
// (DecodeRows) as go-mysql would have decoded them then, and a reader of
// keys takes only the columns it wants (EachImage). An event that does not
// pass the walk is decoded in full at once, as before, and its failure
// marks it Undecoded.
package binlog

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// ValueKind is what a column value read by EachImage holds.
type ValueKind uint8

const (
	ValueAbsent ValueKind = iota // a column not asked for
	ValueNull
	ValueInt   // Int: an integer, ENUM or SET, as go-mysql decodes it (signed)
	ValueBytes // Bytes: a CHAR, VARCHAR, BINARY or VARBINARY column's bytes
)

// Value is one column of a row image as EachImage reads it. Bytes points
// into the event.
type Value struct {
	Kind  ValueKind
	Int   int64
	Bytes []byte
}

// columnLength is the length of a value of column type tp with metadata
// meta at the start of data, and whether its type is one this file reads.
// It returns ok=false for a type it does not know and for a value that
// would run past data.
func columnLength(data []byte, tp byte, meta uint16) (n int, ok bool) {
	switch tp {
	case mysql.MYSQL_TYPE_NULL:
		return 0, true
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		n = 1
	case mysql.MYSQL_TYPE_SHORT:
		n = 2
	case mysql.MYSQL_TYPE_INT24:
		n = 3
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT:
		n = 4
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE:
		n = 8
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		n = decimalLength(int(meta>>8), int(meta&0xFF))
		if n <= 0 {
			return 0, false
		}
	case mysql.MYSQL_TYPE_BIT:
		nbits := (meta>>8)*8 + meta&0xFF
		n = int(nbits+7) / 8
		if nbits == 0 || n > 8 {
			return 0, false
		}
	case mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME2:
		if meta > 6 {
			return 0, false
		}
		n = int(meta+1) / 2
		switch tp {
		case mysql.MYSQL_TYPE_TIMESTAMP2:
			n += 4
		case mysql.MYSQL_TYPE_DATETIME2:
			n += 5
		default:
			n += 3
		}
	case mysql.MYSQL_TYPE_DATE:
		n = 3
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return stringLength(data, int(meta))
	case mysql.MYSQL_TYPE_STRING:
		real, length := stringType(meta)
		switch real {
		case mysql.MYSQL_TYPE_STRING:
			return stringLength(data, length)
		case mysql.MYSQL_TYPE_ENUM:
			n = int(meta & 0xFF)
			if n != 1 && n != 2 {
				return 0, false
			}
		case mysql.MYSQL_TYPE_SET:
			n = int(meta & 0xFF)
			if n < 1 || n > 8 {
				return 0, false
			}
		default:
			return 0, false
		}
	case mysql.MYSQL_TYPE_BLOB:
		if meta < 1 || meta > 4 || len(data) < int(meta) {
			return 0, false
		}
		n = int(meta) + int(mysql.FixedLengthInt(data[:meta]))
	default:
		// The old temporal types (their fractional forms are MariaDB's
		// own), JSON, GEOMETRY, compressed columns: decoded by go-mysql.
		return 0, false
	}
	return n, n <= len(data)
}

// stringType is the real type and length of a MYSQL_TYPE_STRING column
// from its metadata (CHAR, BINARY, ENUM or SET), as go-mysql reads it.
func stringType(meta uint16) (real byte, length int) {
	if meta < 256 {
		return mysql.MYSQL_TYPE_STRING, int(meta)
	}
	b0, b1 := uint8(meta>>8), uint8(meta&0xFF)
	if b0&0x30 != 0x30 {
		return b0 | 0x30, int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
	}
	return b0, int(meta & 0xFF)
}

// stringLength is the length of a string value of a column of at most
// length bytes: its length prefix (1 byte, or 2 past 255) and its bytes.
func stringLength(data []byte, length int) (int, bool) {
	prefix := 1
	if length >= 256 {
		prefix = 2
	}
	if len(data) < prefix {
		return 0, false
	}
	n := int(data[0])
	if prefix == 2 {
		n = int(binary.LittleEndian.Uint16(data))
	}
	n += prefix
	return n, n <= len(data)
}

var decimalBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// decimalLength is the bytes of a DECIMAL(precision, scale) value.
func decimalLength(precision, scale int) int {
	if precision <= 0 || scale > precision {
		return 0
	}
	integral := precision - scale
	return integral/9*4 + decimalBytes[integral%9] + scale/9*4 + decimalBytes[scale%9]
}

// imageShape is what walking one image needs of its event.
type imageShape struct {
	table   *replication.TableMapEvent
	columns int
	plan    *columnPlan // nil: every length from columnLength
}

// columnPlan is how a table map's values are laid out, worked out once
// per table map rather than once per value: the length of every column
// whose values all have one, and, for an image that holds every column
// and no NULL (binlog_row_image=FULL, the common case), the runs of such
// columns between those whose values say their length.
type columnPlan struct {
	// lengths[c] is column c's value length, lengthInValue when the value
	// says it, lengthUnknown for a type columnLength does not know.
	lengths []int16
	// runs walk a full image without NULLs: skip fixed bytes, then read
	// column's length (none after the last run: column -1). nil when a
	// column's type is unknown.
	runs []planRun
}

type planRun struct {
	fixed  int32
	column int32
}

const (
	lengthInValue = -1
	lengthUnknown = -2
)

// planOf works out the plan of a table map's first columns.
func planOf(t *replication.TableMapEvent, columns int) *columnPlan {
	var zeros [64]byte
	p := &columnPlan{lengths: make([]int16, columns)}
	known, fixed := true, int32(0)
	for c := range columns {
		tp, meta := t.ColumnType[c], t.ColumnMeta[c]
		variable := tp == mysql.MYSQL_TYPE_VARCHAR || tp == mysql.MYSQL_TYPE_VAR_STRING || tp == mysql.MYSQL_TYPE_BLOB
		if tp == mysql.MYSQL_TYPE_STRING {
			real, _ := stringType(meta)
			variable = real == mysql.MYSQL_TYPE_STRING
		}
		switch n, ok := columnLength(zeros[:], tp, meta); {
		case variable:
			p.lengths[c] = lengthInValue
			p.runs = append(p.runs, planRun{fixed: fixed, column: int32(c)})
			fixed = 0
		case ok:
			p.lengths[c] = int16(n)
			fixed += int32(n)
		default:
			p.lengths[c] = lengthUnknown
			known = false
		}
	}
	p.runs = append(p.runs, planRun{fixed: fixed, column: -1})
	if !known {
		p.runs = nil
	}
	return p
}

// walkFull walks a full image without NULLs, from pos (past its NULL
// bitmap): its length, or ok=false where walkImage would fail.
func (s imageShape) walkFull(data []byte, pos int) (int, bool) {
	for _, run := range s.plan.runs {
		pos += int(run.fixed)
		if pos > len(data) {
			return 0, false
		}
		if run.column < 0 {
			break
		}
		n, ok := columnLength(data[pos:], s.table.ColumnType[run.column], s.table.ColumnMeta[run.column])
		if !ok {
			return 0, false
		}
		pos += n
	}
	return pos, true
}

// allSet reports whether bitmap holds the first n columns.
func allSet(bitmap []byte, n int) bool {
	for ; n >= 8; n -= 8 {
		if bitmap[0] != 0xFF {
			return false
		}
		bitmap = bitmap[1:]
	}
	return n == 0 || bitmap[0]&byte(1<<n-1) == byte(1<<n-1)
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// walkImage walks one row image at the start of data, with bitmap saying
// which columns it holds, up to column limit (excluded), and, with r,
// reads the columns r wants into r.row. It returns the length walked (the
// image's, with limit at the column count), or ok=false where checkImages
// would fail.
//
// full says bitmap holds every column: then, walked whole and holding no
// NULL, the image is walked by its plan's runs.
func (s imageShape) walkImage(data, bitmap []byte, full bool, limit int, r *imageReader) (n int, ok bool) {
	present, col := 0, 0
	if full {
		present = s.columns
	} else {
		for ; col+8 <= s.columns; col += 8 {
			present += bits.OnesCount8(bitmap[col>>3])
		}
		if col < s.columns {
			present += bits.OnesCount8(bitmap[col>>3] & byte(1<<(s.columns-col)-1))
		}
	}
	nulls := (present + 7) / 8
	if len(data) < nulls {
		return 0, false
	}
	nullBitmap, pos, seen := data[:nulls], nulls, 0
	if full && r == nil && limit == s.columns && s.plan != nil && s.plan.runs != nil && allZero(nullBitmap) {
		return s.walkFull(data, pos)
	}
	for i := 0; i < limit; i++ {
		if !isBit(bitmap, i) {
			if r != nil {
				r.skipped = append(r.skipped, i)
			}
			continue
		}
		null := isBit(nullBitmap, seen)
		seen++
		wanted := r != nil && i < len(r.want) && r.want[i]
		if null {
			if wanted {
				r.row[i] = Value{Kind: ValueNull}
			}
			continue
		}
		tp, meta := s.table.ColumnType[i], s.table.ColumnMeta[i]
		var n int
		if s.plan != nil && s.plan.lengths[i] >= 0 {
			if n = int(s.plan.lengths[i]); pos+n > len(data) {
				return 0, false
			}
		} else if n, ok = columnLength(data[pos:], tp, meta); !ok {
			return 0, false
		}
		if wanted {
			if r.row[i], ok = keyValue(data[pos:pos+n], tp, meta); !ok {
				return 0, false
			}
		}
		pos += n
	}
	return pos, true
}

// imageReader is where EachImage reads an image's wanted columns.
type imageReader struct {
	want    []bool
	row     []Value
	skipped []int
}

func isBit(bitmap []byte, i int) bool { return bitmap[i>>3]&(1<<(uint(i)&7)) != 0 }

// shapeOf returns the shape of re's images, false when this file cannot
// walk them: an event whose columns its table map does not describe, or a
// MySQL partial update.
func rowsShape(re *replication.RowsEvent, plan *columnPlan) (imageShape, bool) {
	t := re.Table
	if t == nil || re.Type() == replication.EnumRowsEventTypeUnknown || int(re.ColumnCount) > len(t.ColumnType) ||
		len(t.ColumnMeta) < int(re.ColumnCount) || len(re.ColumnBitmap1)*8 < int(re.ColumnCount) ||
		(re.ColumnBitmap2 != nil && len(re.ColumnBitmap2)*8 < int(re.ColumnCount)) {
		return imageShape{}, false
	}
	if plan != nil && len(plan.lengths) != int(re.ColumnCount) {
		plan = nil
	}
	return imageShape{table: t, columns: int(re.ColumnCount), plan: plan}, true
}

// checkImages reports whether the rows of re (its header decoded), images
// being the bytes after its header, can be left pending: every value has
// a type this file knows, and the images end where the event does. It
// appends to starts where each image begins in images.
//
// plan, when not nil, is the plan of re's table map's first re.ColumnCount
// columns.
func checkImages(re *replication.RowsEvent, images []byte, starts []uint32, plan *columnPlan) ([]uint32, bool) {
	s, ok := rowsShape(re, plan)
	if !ok || len(images) == 0 || len(images) > math.MaxUint32 {
		return starts, false
	}
	full1 := allSet(re.ColumnBitmap1, s.columns)
	full2 := re.ColumnBitmap2 != nil && allSet(re.ColumnBitmap2, s.columns)
	for pos := 0; pos < len(images); {
		starts = append(starts, uint32(pos))
		n, ok := s.walkImage(images[pos:], re.ColumnBitmap1, full1, s.columns, nil)
		if !ok || n == 0 {
			return starts, false
		}
		pos += n
		if re.ColumnBitmap2 != nil {
			starts = append(starts, uint32(pos))
			if n, ok = s.walkImage(images[pos:], re.ColumnBitmap2, full2, s.columns, nil); !ok || n == 0 {
				return starts, false
			}
			pos += n
		}
	}
	return starts, true
}

// PendingRows are the row images of a row event whose rows are pending,
// and where each image begins in them (an update's before and after images
// in turn).
type PendingRows struct {
	images []byte
	starts []uint32
	plan   *columnPlan // nil: none worked out
}

// RowsPending reports whether the event is a row event whose rows are
// pending: not decoded, read by EachImage or decoded by DecodeRows.
func (e *Event) RowsPending() bool { return e.pending != nil }

// DecodeRows decodes the rows of a row event left pending in
// full, into its RowsEvent's Rows and SkippedColumns, as the relay reader
// used to: go-mysql's values. It does nothing for any other event, or
// rows decoded already.
func (e *Event) DecodeRows() error {
	re, ok := e.Data.(*replication.RowsEvent)
	if !ok || e.pending == nil {
		return nil
	}
	images := e.pending.images
	e.pending = nil
	if re.Rows != nil {
		return nil
	}
	if err := re.DecodeData(0, images); err != nil {
		re.Rows, re.SkippedColumns = nil, nil
		return shortRowsError(err)
	}
	return nil
}

// EachImage calls fn with every row image of a row event whose rows are
// pending, before and after image of an update in turn: row[c]
// is column c's value when want[c] (ValueAbsent otherwise), skipped the
// columns the image lacks, as go-mysql lists them. row must have room for
// the event's columns. It returns false, calling fn for no image, when a
// wanted column has a type other than an integer, ENUM, SET or string
// one: then DecodeRows.
func (e *Event) EachImage(want []bool, row []Value, skipped []int, fn func(row []Value, skipped []int) bool) bool {
	re, ok := e.Data.(*replication.RowsEvent)
	if !ok || e.pending == nil {
		return false
	}
	images, starts := e.pending.images, e.pending.starts
	s, ok := rowsShape(re, e.pending.plan)
	if !ok || len(row) < s.columns {
		return false
	}
	for c := 0; c < s.columns && c < len(want); c++ {
		if want[c] && !keyType(s.table.ColumnType[c], s.table.ColumnMeta[c]) {
			return false
		}
	}
	// Only the columns up to the last one wanted are read: where each
	// image starts is known.
	limit := 0
	for c := min(s.columns, len(want)) - 1; c >= 0; c-- {
		if want[c] {
			limit = c + 1
			break
		}
	}
	if len(starts) == 0 {
		return false
	}
	r := imageReader{want: want, row: row[:s.columns], skipped: skipped}
	for i, start := range starts {
		bitmap := re.ColumnBitmap1
		if re.ColumnBitmap2 != nil && i%2 == 1 {
			bitmap = re.ColumnBitmap2
		}
		clear(r.row)
		r.skipped = r.skipped[:0]
		if int(start) > len(images) {
			return false
		}
		if _, ok := s.walkImage(images[start:], bitmap, false, limit, &r); !ok {
			return false
		}
		if !fn(r.row, r.skipped) {
			return true
		}
	}
	return true
}

// keyType reports whether EachImage reads a column of this type.
func keyType(tp byte, meta uint16) bool {
	switch tp {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG,
		mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return true
	case mysql.MYSQL_TYPE_STRING:
		real, _ := stringType(meta)
		return real == mysql.MYSQL_TYPE_STRING || real == mysql.MYSQL_TYPE_ENUM || real == mysql.MYSQL_TYPE_SET
	}
	return false
}

// keyValue reads one value of a keyType column as go-mysql decodes it:
// integers signed, whatever the column's sign (the table map's optional
// metadata is not read), ENUM and SET as their number, strings as bytes.
func keyValue(b []byte, tp byte, meta uint16) (Value, bool) {
	switch tp {
	case mysql.MYSQL_TYPE_TINY:
		return Value{Kind: ValueInt, Int: int64(int8(b[0]))}, true
	case mysql.MYSQL_TYPE_SHORT:
		return Value{Kind: ValueInt, Int: int64(int16(binary.LittleEndian.Uint16(b)))}, true
	case mysql.MYSQL_TYPE_INT24:
		v := int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16)
		if v&0x800000 != 0 {
			v -= 1 << 24
		}
		return Value{Kind: ValueInt, Int: int64(v)}, true
	case mysql.MYSQL_TYPE_LONG:
		return Value{Kind: ValueInt, Int: int64(int32(binary.LittleEndian.Uint32(b)))}, true
	case mysql.MYSQL_TYPE_LONGLONG:
		return Value{Kind: ValueInt, Int: int64(binary.LittleEndian.Uint64(b))}, true
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		return stringValue(b, int(meta)), true
	case mysql.MYSQL_TYPE_STRING:
		real, length := stringType(meta)
		switch real {
		case mysql.MYSQL_TYPE_STRING:
			return stringValue(b, length), true
		case mysql.MYSQL_TYPE_ENUM:
			if len(b) == 1 {
				return Value{Kind: ValueInt, Int: int64(b[0])}, true
			}
			return Value{Kind: ValueInt, Int: int64(binary.LittleEndian.Uint16(b))}, true
		case mysql.MYSQL_TYPE_SET:
			return Value{Kind: ValueInt, Int: int64(mysql.FixedLengthInt(b))}, true
		}
	}
	return Value{}, false
}

func stringValue(b []byte, length int) Value {
	if length >= 256 {
		return Value{Kind: ValueBytes, Bytes: b[2:]}
	}
	return Value{Kind: ValueBytes, Bytes: b[1:]}
}
