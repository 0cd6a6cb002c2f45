package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// sameValue compares what the parser and fastevents.go made of one event,
// field by field, unexported fields too: a map (a RowsEvent's tables, the
// parser's own bookkeeping) and a function are left out.
func sameValue(a, b reflect.Value, path string, seen map[[2]uintptr]bool) error {
	if a.Kind() != b.Kind() || a.Type() != b.Type() {
		return fmt.Errorf("%s: %s against %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Map, reflect.Func:
		return nil
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("%s: nil against not nil", path)
			}
			return nil
		}
		return sameValue(a.Elem(), b.Elem(), path, seen)
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("%s: nil against not nil", path)
			}
			return nil
		}
		// A table map is shared by the events of its table while it
		// stays the same (tablemaps.go): compared once.
		if _, ok := a.Interface().(*replication.TableMapEvent); ok {
			key := [2]uintptr{a.Pointer(), b.Pointer()}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		return sameValue(a.Elem(), b.Elem(), path, seen)
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if err := sameValue(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Errorf("%s: %d (nil %v) against %d (nil %v)", path, a.Len(), a.IsNil(), b.Len(), b.IsNil())
		}
		fallthrough
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if err := sameValue(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), seen); err != nil {
				return err
			}
		}
		return nil
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Errorf("%s: %v against %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Errorf("%s: %d against %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Errorf("%s: %d against %d", path, a.Uint(), b.Uint())
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Errorf("%s: %q against %q", path, a.String(), b.String())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() {
			return fmt.Errorf("%s: %v against %v", path, a.Float(), b.Float())
		}
	default:
		return fmt.Errorf("%s: kind %s not compared", path, a.Kind())
	}
	return nil
}

// readBoth reads a relay log with two readers, one decoding the hot events
// itself and one leaving every event to the parser, and fails where they
// return anything different: the event, its rows' state, or an error. It
// returns how many events the first decoded itself, and how many it read.
func readBoth(t *testing.T, l *RelayLog, headersOnly error) (fast, all int) {
	t.Helper()
	a, b := l.NewReader(), l.NewReader()
	defer a.Close()
	defer b.Close()
	b.fast.off = true
	seen := map[[2]uintptr]bool{}
	a.HeadersOnly(headersOnly)
	b.HeadersOnly(headersOnly)
	for {
		ea, erra := a.Next(canceledCtx)
		eb, errb := b.Next(canceledCtx)
		if (erra == nil) != (errb == nil) || erra != nil && erra.Error() != errb.Error() {
			t.Fatalf("event %d: errors %v against %v", all, erra, errb)
		}
		if errors.Is(erra, context.Canceled) {
			return a.fast.decoded, all
		}
		if erra != nil {
			// An undecodable event is read past.
			all++
			continue
		}
		if err := sameValue(reflect.ValueOf(ea), reflect.ValueOf(eb), ea.Header.EventType.String(), seen); err != nil {
			t.Fatalf("event %d: %v", all, err)
		}
		if ua, ub := a.Undecoded(), b.Undecoded(); (ua == nil) != (ub == nil) || ua != nil && ua.Error() != ub.Error() {
			t.Fatalf("event %d (%s): undecoded %v against %v", all, ea.Header.EventType, ua, ub)
		}
		pa, pb := a.Pending(), b.Pending()
		if (pa == nil) != (pb == nil) || pa != nil && (!bytes.Equal(pa.images, pb.images) || !reflect.DeepEqual(pa.starts, pb.starts)) {
			t.Fatalf("event %d (%s): pending rows differ", all, ea.Header.EventType)
		}
		all++
	}
}

// TestFastEventsAsParsed reads the recorded binlogs (MariaDB 10.11's,
// with compressed events, with rows go-mysql does not decode; order entry
// and W1 from the hot-path benchmark) both ways, rows pending and with
// headers only.
func TestFastEventsAsParsed(t *testing.T) {
	files := []struct {
		path string
		fast bool // the hot events are decoded here, not only a few
	}{
		{filepath.Join("testdata", "mariadb-10.11.bin"), false},
		{filepath.Join("testdata", "mariadb-10.11-compressed.bin"), false},
		{filepath.Join("testdata", "mariadb-10.11-undecodable-rows.bin"), false},
		{filepath.Join("..", "target", "testdata", "hotpath-orderentry.bin"), true},
		{filepath.Join("..", "target", "testdata", "hotpath-w1.bin"), true},
	}
	for _, f := range files {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			data, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			l := openTestRelay(t, dir, 0)
			fast, all := readBoth(t, l, nil)
			t.Logf("%d of %d events decoded without the parser", fast, all)
			if fast == 0 || f.fast && fast < all*3/4 {
				t.Errorf("%d of %d events decoded without the parser", fast, all)
			}
			readBoth(t, l, errLargeTransaction)
		})
	}
}

// rowsBody is a v1 row event's body: table id 6 bytes, flags, column
// count, bitmaps, images.
func rowsBody(tid uint64, flags uint16, columns int, bitmaps [][]byte, images ...[]byte) []byte {
	body := append(tableID(tid), byte(flags), byte(flags>>8))
	if columns < 251 {
		body = append(body, byte(columns))
	} else {
		body = append(body, 0xfc, byte(columns), byte(columns>>8))
	}
	for _, b := range bitmaps {
		body = append(body, b...)
	}
	for _, im := range images {
		body = append(body, im...)
	}
	return body
}

// wideTableMap maps id to schema.t with columns INT columns, all nullable
// but the first.
func (e *encoder) wideTableMap(id uint64, columns int) []byte {
	body := append(tableID(id), 1, 0)
	body = append(body, 1, 's', 0, 1, 't', 0)
	if columns < 251 {
		body = append(body, byte(columns))
	} else {
		body = append(body, 0xfc, byte(columns), byte(columns>>8))
	}
	for range columns {
		body = append(body, mysqlTypeLong)
	}
	body = append(body, 0) // no metadata
	nulls := make([]byte, (columns+7)/8)
	for i := 1; i < columns; i++ {
		nulls[i/8] |= 1 << (i % 8)
	}
	return e.event(replication.TABLE_MAP_EVENT, 0, append(body, nulls...))
}

func ones(columns int) []byte {
	b := make([]byte, (columns+7)/8)
	for i := range columns {
		b[i/8] |= 1 << (i % 8)
	}
	return b
}

func int32s(vs ...int32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// TestFastEventsCases reads made events both ways: each event type, NULL
// bitmaps, partial images (binlog_row_image=MINIMAL), wide rows, and the
// cases left to the parser (a table map changed, a row event of a table
// the statement did not map, version 2, a compressed event, a short body).
func TestFastEventsCases(t *testing.T) {
	for _, tt := range fastEventCases() {
		t.Run(tt.name, func(t *testing.T) {
			l := openTestRelay(t, caseRelay(t, tt.events), 0)
			fast, all := readBoth(t, l, nil)
			if fast != tt.fast {
				t.Errorf("%d of %d events decoded without the parser, want %d", fast, all, tt.fast)
			}
			readBoth(t, l, errLargeTransaction)
		})
	}
}

// caseRelay writes a relay segment of a format description, a GTID list
// and the events made, in a new folder.
func caseRelay(t *testing.T, made func(e *encoder) [][]byte) string {
	e := newEncoder()
	events := [][]byte{e.format(), e.gtidList()}
	events = append(events, made(e)...)
	dir := t.TempDir()
	raw := append(append([]byte(nil), binlogMagic...), joinEvents(events)...)
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type fastEventCase struct {
	name   string
	events func(e *encoder) [][]byte
	fast   int // events decoded without the parser
}

func fastEventCases() []fastEventCase {
	const stmtEnd = replication.RowsEventStmtEndFlag
	wide := 300
	wideRow := make([]int32, wide)
	for i := range wideRow {
		wideRow[i] = int32(i * 7)
	}
	return []fastEventCase{
		{"insert, update, delete", func(e *encoder) [][]byte {
			return [][]byte{
				e.mariaGTID(10, 0, 0, 7), e.annotate("INSERT INTO t VALUES (1, 'v1')"), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1, 2), e.xid(1),
				e.mariaGTID(11, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 3), e.xid(2),
				e.mariaGTID(12, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 4), e.xid(3),
			}
		}, 11},
		{"NULLs and partial images", func(e *encoder) [][]byte {
			cols := 10
			all, some := ones(cols), []byte{0x05, 0x00} // MINIMAL: columns 0 and 2
			update := func() []byte {
				return e.event(replication.UPDATE_ROWS_EVENTv1, 0, rowsBody(80, stmtEnd, cols, [][]byte{some, all},
					[]byte{0x02}, int32s(1), // before: 0, 2 (NULL)
					[]byte{0xfe, 0x03}, int32s(1))) // after: 0 set, 1..9 NULL
			}
			del := func() []byte {
				return e.event(replication.DELETE_ROWS_EVENTv1, 0, rowsBody(80, stmtEnd, cols, [][]byte{some}, []byte{0x00}, int32s(5, 6)))
			}
			return [][]byte{
				e.mariaGTID(20, 0, 0, 0), e.wideTableMap(80, cols), update(), e.xid(1),
				e.mariaGTID(21, 0, 0, 0), e.wideTableMap(80, cols), update(), e.wideTableMap(80, cols), del(), e.xid(2),
				e.mariaGTID(22, 0, 0, 0), e.wideTableMap(80, cols), del(), e.xid(3),
			}
		}, 11},
		{"a wide row", func(e *encoder) [][]byte {
			ins := func() []byte {
				return e.event(replication.WRITE_ROWS_EVENTv1, 0, rowsBody(90, stmtEnd, wide, [][]byte{ones(wide)}, make([]byte, (wide+7)/8), int32s(wideRow...)))
			}
			return [][]byte{
				e.mariaGTID(30, 0, 0, 0), e.wideTableMap(90, wide), ins(), e.xid(1),
				e.mariaGTID(31, 0, 0, 0), e.wideTableMap(90, wide), ins(), e.xid(2),
			}
		}, 6},
		{"a table map changed", func(e *encoder) [][]byte {
			return [][]byte{
				e.mariaGTID(40, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1), e.xid(1),
				e.mariaGTID(41, 0, 0, 0), e.tableMap(70, "s", "u"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 2), e.xid(2),
			}
		}, 5},
		{"rows of a table not mapped", func(e *encoder) [][]byte {
			return [][]byte{
				e.mariaGTID(50, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1), e.xid(1),
				e.mariaGTID(51, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 2), e.xid(2),
			}
		}, 6},
		{"version 2 rows", func(e *encoder) [][]byte {
			return [][]byte{
				e.mariaGTID(60, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv2, 70, 1), e.xid(1),
				e.mariaGTID(61, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv2, 70, 2), e.xid(2),
			}
		}, 5},
		{"short bodies", func(e *encoder) [][]byte {
			return [][]byte{
				e.mariaGTID(70, 0, 0, 0), e.tableMap(70, "s", "t"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1), e.xid(1),
				e.mariaGTID(71, 0, 0, 0), e.tableMap(70, "s", "t"),
				e.event(replication.WRITE_ROWS_EVENTv1, 0, append(tableID(70), 1, 0)),
				e.event(replication.XID_EVENT, 0, []byte{1, 2, 3}),
			}
		}, 4},
	}
}

func TestLengthEncoded(t *testing.T) {
	tests := []struct {
		in []byte
		v  uint64
		n  int
		ok bool
	}{
		{[]byte{0}, 0, 1, true},
		{[]byte{250}, 250, 1, true},
		{[]byte{0xfb}, 0, 0, false},
		{[]byte{0xfc, 0x2c, 0x01}, 300, 3, true},
		{[]byte{0xfc, 0x2c}, 0, 0, false},
		{[]byte{0xfd, 1, 2, 3}, 0x030201, 4, true},
		{[]byte{0xfe, 1, 0, 0, 0, 0, 0, 0, 1}, 1<<56 | 1, 9, true},
		{[]byte{0xff}, 0, 0, false},
		{nil, 0, 0, false},
	}
	for _, tt := range tests {
		v, n, ok := lengthEncoded(tt.in)
		if v != tt.v || n != tt.n || ok != tt.ok {
			t.Errorf("lengthEncoded(%x) = %d, %d, %v; want %d, %d, %v", tt.in, v, n, ok, tt.v, tt.n, tt.ok)
		}
	}
}

// TestColumnPlanWalksAsColumnLength walks the row images of the recorded
// binlogs with their table maps' plans and without, and gets the same
// image boundaries; and truncated images fail both ways.
func TestColumnPlanWalksAsColumnLength(t *testing.T) {
	dirs := map[string]string{}
	for _, path := range []string{
		filepath.Join("testdata", "mariadb-10.11.bin"),
		filepath.Join("..", "target", "testdata", "hotpath-orderentry.bin"),
		filepath.Join("..", "target", "testdata", "hotpath-w1.bin"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[path] = dir
	}
	for _, c := range fastEventCases() {
		dirs[c.name] = caseRelay(t, c.events)
	}
	for path, dir := range dirs {
		r := openTestRelay(t, dir, 0).NewReader()
		walked, full := 0, 0
		for {
			ev, err := r.Next(canceledCtx)
			if errors.Is(err, context.Canceled) {
				break
			}
			if err != nil {
				continue
			}
			re, ok := ev.Event.(*replication.RowsEvent)
			if !ok || r.Pending() == nil {
				continue
			}
			images := r.Pending().images
			plan := planOf(re.Table, int(re.ColumnCount))
			if plan.runs != nil && allSet(re.ColumnBitmap1, int(re.ColumnCount)) {
				full++
			}
			for _, cut := range []int{len(images), len(images) - 1, len(images) / 2} {
				without, okWithout := checkImages(re, images[:cut], nil, nil)
				with, okWith := checkImages(re, images[:cut], nil, plan)
				if okWith != okWithout || okWith && !reflect.DeepEqual(with, without) {
					t.Fatalf("%s: %s on %s.%s, %d of %d bytes: %v %v with the plan, %v %v without", path, ev.Header.EventType, re.Table.Schema, re.Table.Table, cut, len(images), with, okWith, without, okWithout)
				}
			}
			walked++
		}
		r.Close()
		t.Logf("%s: %d row events, %d with full images walked by runs", filepath.Base(path), walked, full)
		if walked == 0 && path != "short bodies" {
			t.Errorf("%s: no row event walked", path)
		}
	}
}

func TestPlanOf(t *testing.T) {
	tm := &replication.TableMapEvent{
		// INT, VARCHAR(20), BIGINT, DATETIME(3), CHAR(10), ENUM, BLOB, DECIMAL(10,2), GEOMETRY
		ColumnType: []byte{3, 15, 8, 18, 254, 254, 252, 246, 255},
		ColumnMeta: []uint16{0, 20, 0, 3, 0xfe0a, 0xf701, 2, 0x0a02, 4},
	}
	p := planOf(tm, 8)
	wantLengths := []int16{4, lengthInValue, 8, 7, lengthInValue, 1, lengthInValue, 5}
	wantRuns := []planRun{{4, 1}, {15, 4}, {1, 6}, {5, -1}}
	if !reflect.DeepEqual(p.lengths, wantLengths) || !reflect.DeepEqual(p.runs, wantRuns) {
		t.Errorf("plan of 8 columns: %v %v, want %v %v", p.lengths, p.runs, wantLengths, wantRuns)
	}
	if p := planOf(tm, 9); p.lengths[8] != lengthUnknown || p.runs != nil {
		t.Errorf("plan with a GEOMETRY column: %v %v, want it unknown and no runs", p.lengths, p.runs)
	}
}

func TestAllSet(t *testing.T) {
	tests := []struct {
		bitmap []byte
		n      int
		want   bool
	}{
		{[]byte{0xff}, 8, true},
		{[]byte{0x7f}, 7, true},
		{[]byte{0x7f}, 8, false},
		{[]byte{0xff, 0x01}, 9, true},
		{[]byte{0xff, 0x02}, 9, false},
		{[]byte{0xfe, 0xff}, 16, false},
		{[]byte{0x03}, 2, true},
	}
	for _, tt := range tests {
		if got := allSet(tt.bitmap, tt.n); got != tt.want {
			t.Errorf("allSet(%x, %d) = %v", tt.bitmap, tt.n, got)
		}
	}
}
