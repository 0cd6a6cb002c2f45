// Tests of what the decoder does with events it cannot read as go-mysql
// would: MariaDB's compressed events come out as the plain events MariaDB
// writes for the same change, byte for byte from the type on; row events
// whose rows go-mysql cannot decode are kept whole and flagged; an intact
// event that does not decode at all stops the decoder with an error naming
// the GTID and the --skip-gtid that passes it, and a damaged one is still
// corruption.
//
// The fixtures are binlogs of a MariaDB 10.11.19 primary (binlog_format=ROW):
//
//	mariadb-10.11-compressed.bin: 0-45093-2 CREATE TABLE test.z; with
//	  log_bin_compress=ON, log_bin_compress_min_len=10: 3 INSERT two rows,
//	  4 UPDATE one, 5 DELETE one, 6 an INSERT in statement format (a
//	  compressed query), 7 DELETE the rest uncompressed; then with
//	  log_bin_compress=OFF the same four changes again as 8..11, and 12 DELETE.
//	mariadb-10.11-undecodable-rows.bin: 0-45093-13 CREATE TABLE test.c with
//	  COMPRESSED columns, 14 INSERT into it; 15 CREATE TABLE test.t with
//	  TIME(6) in the pre-10.1 format (mysql56_temporal_format=OFF), 16
//	  INSERT into it; then with log_bin_compress=ON one INSERT into each, 17
//	  and 18.
package binlog

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// fixtureRelay makes a relay log whose only segment is the named binlog.
func fixtureRelay(t *testing.T, name string) (*RelayLog, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return openTestRelay(t, dir, 0), data
}

func byGTID(txns []*Transaction) map[string]*Transaction {
	m := map[string]*Transaction{}
	for _, txn := range txns {
		m[txn.GTID()] = txn
	}
	return m
}

// sameEventFromType compares two events from the type byte on, leaving out
// what differs between two writes of the same change: the timestamp, the
// position in the binlog, the checksum, and a query's thread id (its first
// four bytes after the header; the two writes came from two connections).
func sameEventFromType(a, b []byte) bool {
	if len(a) != len(b) || len(a) < eventHeaderSize+4+checksumSize {
		return false
	}
	from := 17
	if replication.EventType(a[4]) == replication.QUERY_EVENT {
		if !bytes.Equal(a[17:19], b[17:19]) {
			return false
		}
		from = eventHeaderSize + 4
	}
	return bytes.Equal(a[4:13], b[4:13]) && bytes.Equal(a[from:len(a)-checksumSize], b[from:len(b)-checksumSize])
}

func TestDecoderUncompressesEvents(t *testing.T) {
	l, data := fixtureRelay(t, "mariadb-10.11-compressed.bin")
	txns := byGTID(decodeAll(t, l, gtid.MariaDBPosition{}))
	if len(txns) != 11 {
		t.Fatalf("%d transactions, want 11", len(txns))
	}
	pairs := []struct {
		compressed, plain string
		event             int // index in Events of the rewritten event
		original          replication.EventType
		want              replication.EventType
	}{
		{"0-45093-3", "0-45093-8", 2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.WRITE_ROWS_EVENTv1},
		{"0-45093-4", "0-45093-9", 2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.UPDATE_ROWS_EVENTv1},
		{"0-45093-5", "0-45093-10", 2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1, replication.DELETE_ROWS_EVENTv1},
		{"0-45093-6", "0-45093-11", 0, replication.MARIADB_QUERY_COMPRESSED_EVENT, replication.QUERY_EVENT},
	}
	for _, p := range pairs {
		c, u := txns[p.compressed], txns[p.plain]
		if c == nil || u == nil {
			t.Fatalf("%s or %s missing", p.compressed, p.plain)
		}
		got, want := c.Events[p.event], u.Events[p.event]
		if got.Header.EventType != p.want || got.Raw[4] != byte(p.want) {
			t.Errorf("%s: event %d is %s, want %s", p.compressed, p.event, got.Header.EventType, p.want)
		}
		if !sameEventFromType(got.Raw, want.Raw) {
			t.Errorf("%s: the uncompressed %s differs from MariaDB's own for the same change (%s)", p.compressed, p.want, p.plain)
		}
		if !checksumHolds(got.Raw) || int(got.Header.EventSize) != len(got.Raw) {
			t.Errorf("%s: bad checksum or size in the rewritten event", p.compressed)
		}
		// The relay log still holds what the source wrote.
		if bytes.Contains(data, got.Raw) || !bytes.Contains(data, want.Raw) {
			t.Errorf("%s: the rewritten event is in the binlog, or the plain one is not", p.compressed)
		}
		if bytes.IndexByte(data, byte(p.original)) < 0 {
			t.Errorf("fixture lacks %s", p.original)
		}
		switch e := got.Data.(type) {
		case *replication.RowsEvent:
			if err := c.Events[p.event].DecodeRows(); err != nil {
				t.Fatal(err)
			}
			if err := u.Events[p.event].DecodeRows(); err != nil {
				t.Fatal(err)
			}
			w := want.Data.(*replication.RowsEvent)
			if !reflect.DeepEqual(e.Rows, w.Rows) || len(e.Rows) == 0 || got.Undecoded != nil {
				t.Errorf("%s: rows %v, want %v", p.compressed, e.Rows, w.Rows)
			}
		case *replication.QueryEvent:
			if string(e.Query) != "INSERT INTO test.z VALUES (3, REPEAT('q', 50))" {
				t.Errorf("%s: query %q", p.compressed, e.Query)
			}
		default:
			t.Errorf("%s: event %d decoded as %T", p.compressed, p.event, got.Data)
		}
		if c.Size != u.Size || c.OpaqueRows {
			t.Errorf("%s: size %d (plain %d), opaque %v", p.compressed, c.Size, u.Size, c.OpaqueRows)
		}
	}
}

func TestDecoderKeepsUndecodableRows(t *testing.T) {
	l, data := fixtureRelay(t, "mariadb-10.11-undecodable-rows.bin")
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != 6 {
		t.Fatalf("%d transactions, want 6", len(txns))
	}
	tables := map[string]string{"0-45093-14": "c", "0-45093-16": "t", "0-45093-17": "c", "0-45093-18": "t"}
	for _, txn := range txns {
		table, opaque := tables[txn.GTID()]
		if txn.OpaqueRows != opaque {
			t.Errorf("%s: OpaqueRows %v, want %v", txn.GTID(), txn.OpaqueRows, opaque)
		}
		if !opaque {
			continue
		}
		rows := txn.RowEvents()
		if len(rows) != 1 || len(txn.Events) != 4 {
			t.Fatalf("%s: %d row events in %d events", txn.GTID(), len(rows), len(txn.Events))
		}
		ev := txn.Events[2]
		if ev.Undecoded == nil || rows[0].Rows != nil {
			t.Errorf("%s: rows %v decoded, Undecoded %v", txn.GTID(), rows[0].Rows, ev.Undecoded)
		}
		if rows[0].Table == nil || string(rows[0].Table.Schema) != "test" || string(rows[0].Table.Table) != table || rows[0].ColumnCount != 2 && rows[0].ColumnCount != 3 {
			t.Errorf("%s: header not decoded: %+v", txn.GTID(), rows[0])
		}
		if rows[0].Flags&replication.RowsEventStmtEndFlag == 0 {
			t.Errorf("%s: statement end flag lost", txn.GTID())
		}
		if ev.Header.EventType != replication.WRITE_ROWS_EVENTv1 || !checksumHolds(ev.Raw) {
			t.Errorf("%s: %s event, checksum holds %v", txn.GTID(), ev.Header.EventType, checksumHolds(ev.Raw))
		}
		if txn.GTID() == "0-45093-14" || txn.GTID() == "0-45093-16" {
			if !bytes.Contains(data, ev.Raw) {
				t.Errorf("%s: the row event is not the source's bytes", txn.GTID())
			}
		}
	}
}

// brokenTableMap is a table map event with an intact checksum whose body
// ends in the middle of its column types: go-mysql cannot decode it.
func (e *encoder) brokenTableMap(id uint64, schema, table string) []byte {
	body := append(tableID(id), 1, 0)
	body = append(body, byte(len(schema)))
	body = append(append(body, schema...), 0)
	body = append(body, byte(len(table)))
	body = append(append(body, table...), 0)
	body = append(body, 9, mysqlTypeLong)
	return e.event(replication.TABLE_MAP_EVENT, 0, body)
}

func undecodableGroups() (format []byte, groups []testGroup) {
	e := newEncoder()
	format = e.format()
	ok1 := e.mariaTxn(0, 1, 0, "d", "t", 1)
	bad := e.mariaTxn(0, 2, 0, "d", "t", 2)
	bad[2] = e.brokenTableMap(70, "d", "t")
	ok3 := e.mariaTxn(0, 3, 0, "d", "t", 3)
	return format, []testGroup{
		{gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: 1}, ok1},
		{gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: 2}, bad},
		{gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: 3}, ok3},
	}
}

func TestDecoderUndecodableEventIsABugNotCorruption(t *testing.T) {
	format, groups := undecodableGroups()
	dir := t.TempDir()
	writeRelay(t, dir, 0, format, groups)
	l := openTestRelay(t, dir, 0)

	d := NewDecoder(l, gtid.MariaDBPosition{})
	defer d.Close()
	first, err := d.Next(canceledCtx)
	if err != nil || first.GTID() != "0-1-1" {
		t.Fatalf("first transaction: %v, %v", first, err)
	}
	_, err = d.Next(canceledCtx)
	var de *DecodeError
	if !errors.As(err, &de) || errors.Is(err, ErrCorruptRelay) {
		t.Fatalf("got %v, want a DecodeError that is not corruption", err)
	}
	if de.GTID != "0-1-2" || de.Event != replication.TABLE_MAP_EVENT || de.Segment == "" || de.Offset <= 0 {
		t.Errorf("DecodeError %+v", de)
	}
	for _, want := range []string{"0-1-2", "TableMapEvent", "relay-000001.bin", "gapless bug", "--skip-gtid 0-1-2", "lacks its changes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	// With the GTID to skip, the group passes without events and the next one follows.
	d2 := NewDecoder(l, gtid.MariaDBPosition{})
	defer d2.Close()
	d2.Skip = func(g gtid.MariaDBGTID) bool { return g.String() == "0-1-2" }
	var got []*Transaction
	for {
		txn, err := d2.Next(canceledCtx)
		if errors.Is(err, context.Canceled) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, txn)
	}
	if len(got) != 3 || got[1].GTID() != "0-1-2" || !got[1].Filtered || len(got[1].Events) != 0 || got[2].GTID() != "0-1-3" || got[2].Filtered {
		t.Fatalf("with --skip-gtid 0-1-2: %v", got)
	}
}

func TestRelayBadChecksumIsCorruption(t *testing.T) {
	format, groups := undecodableGroups()
	groups = groups[:1]
	ev := bytes.Clone(groups[0].events[3]) // the row event
	ev[len(ev)-checksumSize-1] ^= 0xff
	groups[0].events[3] = ev
	// Reading the active segment, not recovering it (recovery would cut it).
	l := openTestRelay(t, t.TempDir(), 0)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	d := NewDecoder(l, gtid.MariaDBPosition{})
	defer d.Close()
	_, err := d.Next(canceledCtx)
	var de *DecodeError
	if !errors.Is(err, ErrCorruptRelay) || errors.As(err, &de) || !strings.Contains(err.Error(), "bad checksum") {
		t.Fatalf("got %v, want corruption", err)
	}
}

func TestUncompressRecordRefusesBadRecords(t *testing.T) {
	good := append([]byte{0x81, 3}, zlibBytes(t, []byte("abc"))...)
	if out, err := uncompressRecord(good); err != nil || string(out) != "abc" {
		t.Fatalf("good record: %q, %v", out, err)
	}
	for name, rec := range map[string][]byte{
		"not compressed":  append([]byte{0x01}, good[1:]...),
		"algorithm 1":     append([]byte{0x91}, good[1:]...),
		"no length bytes": append([]byte{0x80}, good[1:]...),
		"claims more":     append([]byte{0x81, 4}, good[2:]...),
		"claims less":     append([]byte{0x81, 2}, good[2:]...),
		"cut short":       good[:len(good)-6],
		"empty":           nil,
	} {
		if out, err := uncompressRecord(rec); err == nil {
			t.Errorf("%s: accepted, gave %q", name, out)
		}
	}
}

func TestUncompressEventRecomputesHeaderAndChecksum(t *testing.T) {
	e := newEncoder()
	format := parseEvents(t, e.format())[0].Event.(*replication.FormatDescriptionEvent)
	rows := e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1, 2)
	// The same event compressed: header and post-header, column count and bitmap, then the record.
	const head = eventHeaderSize + 8 + 2
	plainRows := rows[head : len(rows)-checksumSize]
	record := append([]byte{0x81, byte(len(plainRows))}, zlibBytes(t, plainRows)...)
	compressed := e.event(replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, 0, rows[eventHeaderSize:head], record)
	binary.LittleEndian.PutUint32(compressed[0:], binary.LittleEndian.Uint32(rows[0:]))
	binary.LittleEndian.PutUint32(compressed[13:], binary.LittleEndian.Uint32(rows[13:]))
	out, header, err := uncompressEvent(compressed, format)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, rows) {
		t.Errorf("uncompressed event\n%x\nwant\n%x", out, rows)
	}
	if header.EventType != replication.WRITE_ROWS_EVENTv1 || int(header.EventSize) != len(rows) {
		t.Errorf("header %+v", header)
	}
}

func zlibBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
