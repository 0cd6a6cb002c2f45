// Test helpers that build raw binlog events byte by byte as MariaDB 10.11
// writes them (and MySQL 8.0 for its GTID events and row events v2), with
// CRC32 checksums, and parse them back with the relay log's parser.
package binlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

const (
	testMariaDBVersion = "10.11.19-MariaDB-log"
	testMySQLVersion   = "8.0.40"

	// MariaDB GTID event flags (log_event.h, Gtid_log_event).
	gtidStandalone    byte = 1
	gtidGroupCommitID byte = 2
	gtidTransactional byte = 4
	gtidAllowParallel byte = 8
	gtidWaited        byte = 16
	gtidDDL           byte = 32

	logEventSuppressUse uint16 = 0x08

	mysqlTypeLong    byte = 3
	mysqlTypeVarchar byte = 15
)

// mariaDBPostHeaderLengths is the post-header length of every event type
// 1..171 in MariaDB 10.11's format description event, as a real 10.11.19
// binlog holds it (testdata/mariadb-10.11.bin).
func mariaDBPostHeaderLengths() []byte {
	b := []byte{
		0x38, 0x0d, 0x00, 0x08, 0x00, 0x12, 0x00, 0x04, 0x04, 0x04, // 1..10
		0x04, 0x12, 0x00, 0x00, 0xe4, 0x00, 0x04, 0x1a, 0x08, 0x00, // 11..20
		0x00, 0x00, 0x08, 0x08, 0x08, 0x02, 0x00, 0x00, 0x00, 0x0a, // 21..30
		0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x0a, // 31..40
		0x0a, // 41
	}
	b = append(b, make([]byte, 159-41)...)
	return append(b, 0x00, 0x04, 0x13, 0x04, 0x00, 0x0d, 0x08, 0x08, 0x08, 0x0a, 0x0a, 0x0a) // 160..171
}

// mySQLPostHeaderLengths is MySQL 8.0's array for event types 1..40
// (libbinlogevents, Format_description_event).
func mySQLPostHeaderLengths() []byte {
	return []byte{
		0x00, 0x0d, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, // 1..10
		0x04, 0x00, 0x00, 0x00, 0x61, 0x00, 0x04, 0x1a, 0x08, 0x00, // 11..20
		0x00, 0x00, 0x08, 0x08, 0x08, 0x02, 0x00, 0x00, 0x00, 0x0a, // 21..30
		0x0a, 0x0a, 0x2a, 0x2a, 0x00, 0x12, 0x34, 0x00, 0x0a, 0x28, // 31..40
	}
}

// encoder writes events as one source server would: every header carries
// its server id and timestamp, and log positions run on from pos.
type encoder struct {
	server uint32
	when   uint32
	pos    uint32
}

func newEncoder() *encoder { return &encoder{server: 1, when: 1_700_000_000, pos: 4} }

func (e *encoder) event(t replication.EventType, flags uint16, body ...[]byte) []byte {
	size := eventHeaderSize + checksumSize
	for _, b := range body {
		size += len(b)
	}
	ev := make([]byte, 0, size)
	ev = binary.LittleEndian.AppendUint32(ev, e.when)
	ev = append(ev, byte(t))
	ev = binary.LittleEndian.AppendUint32(ev, e.server)
	ev = binary.LittleEndian.AppendUint32(ev, uint32(size))
	e.pos += uint32(size)
	ev = binary.LittleEndian.AppendUint32(ev, e.pos)
	ev = binary.LittleEndian.AppendUint16(ev, flags)
	for _, b := range body {
		ev = append(ev, b...)
	}
	return binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))
}

func (e *encoder) formatEvent(version string, postHeader []byte) []byte {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	v := make([]byte, 50)
	copy(v, version)
	body = append(body, v...)
	body = binary.LittleEndian.AppendUint32(body, 0)
	body = append(body, eventHeaderSize)
	body = append(body, postHeader...)
	body = append(body, replication.BINLOG_CHECKSUM_ALG_CRC32)
	return e.event(replication.FORMAT_DESCRIPTION_EVENT, 0, body)
}

// format is MariaDB 10.11's format description event.
func (e *encoder) format() []byte {
	return e.formatEvent(testMariaDBVersion, mariaDBPostHeaderLengths())
}

// mysqlFormat is MySQL 8.0's format description event.
func (e *encoder) mysqlFormat() []byte {
	return e.formatEvent(testMySQLVersion, mySQLPostHeaderLengths())
}

func (e *encoder) gtidList(gtids ...gtid.MariaDBGTID) []byte {
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(gtids)))
	for _, g := range gtids {
		body = binary.LittleEndian.AppendUint32(body, g.Domain)
		body = binary.LittleEndian.AppendUint32(body, g.Server)
		body = binary.LittleEndian.AppendUint64(body, g.Seq)
	}
	return e.event(replication.MARIADB_GTID_LIST_EVENT, 0, body)
}

func (e *encoder) binlogCheckpoint(file string) []byte {
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(file)))
	return e.event(replication.MARIADB_BINLOG_CHECKPOINT_EVENT, 0, body, []byte(file))
}

func (e *encoder) rotate(next string) []byte {
	return e.event(replication.ROTATE_EVENT, 0, binary.LittleEndian.AppendUint64(nil, 4), []byte(next))
}

// mariaGTID is a MariaDB GTID event; a non-zero commitID sets FL_GROUP_COMMIT_ID.
func (e *encoder) mariaGTID(seq uint64, domain uint32, flags byte, commitID uint64) []byte {
	if commitID != 0 {
		flags |= gtidGroupCommitID
	}
	body := binary.LittleEndian.AppendUint64(nil, seq)
	body = binary.LittleEndian.AppendUint32(body, domain)
	body = append(body, flags)
	if commitID != 0 {
		body = binary.LittleEndian.AppendUint64(body, commitID)
	} else {
		body = append(body, make([]byte, 6)...)
	}
	return e.event(replication.MARIADB_GTID_EVENT, logEventSuppressUse, body)
}

// query is a query event with the status variables MariaDB 10.11 writes for
// a default session (flags2, sql_mode, catalog, charsets).
func (e *encoder) query(schema, text string) []byte {
	status := []byte{0x00, 0, 0, 0, 0}                          // Q_FLAGS2_CODE
	status = append(status, 0x01, 0, 0, 0x20, 0x54, 0, 0, 0, 0) // Q_SQL_MODE_CODE
	status = append(status, 0x06, 3, 's', 't', 'd')             // Q_CATALOG_NZ_CODE
	status = append(status, 0x04, 0x21, 0, 0x21, 0, 0x08, 0)    // Q_CHARSET_CODE
	post := binary.LittleEndian.AppendUint32(nil, 5)            // thread id
	post = binary.LittleEndian.AppendUint32(post, 0)            // exec time
	post = append(post, byte(len(schema)))
	post = binary.LittleEndian.AppendUint16(post, 0) // error code
	post = binary.LittleEndian.AppendUint16(post, uint16(len(status)))
	return e.event(replication.QUERY_EVENT, 0, post, status, []byte(schema), []byte{0}, []byte(text))
}

func (e *encoder) annotate(text string) []byte {
	return e.event(replication.MARIADB_ANNOTATE_ROWS_EVENT, 0, []byte(text))
}

func (e *encoder) intVar(value uint64) []byte {
	return e.event(replication.INTVAR_EVENT, 0, []byte{2}, binary.LittleEndian.AppendUint64(nil, value))
}

func tableID(id uint64) []byte { return binary.LittleEndian.AppendUint64(nil, id)[:6] }

// tableMap maps id to schema.table (id INT NOT NULL, v VARCHAR(20) NULL).
func (e *encoder) tableMap(id uint64, schema, table string) []byte {
	body := append(tableID(id), 1, 0)
	body = append(body, byte(len(schema)))
	body = append(append(body, schema...), 0)
	body = append(body, byte(len(table)))
	body = append(append(body, table...), 0)
	body = append(body, 2, mysqlTypeLong, mysqlTypeVarchar)
	body = append(body, 2, 20, 0) // metadata: VARCHAR(20) max length
	body = append(body, 0x02)     // null bitmap: v is nullable
	return e.event(replication.TABLE_MAP_EVENT, 0, body)
}

// writeRows is a write rows event (v1 as MariaDB writes it, or v2 as MySQL
// does) inserting (id, "v<id>") for every id into the table mapped as tid.
func (e *encoder) writeRows(t replication.EventType, tid uint64, ids ...int32) []byte {
	body := append(tableID(tid), 1, 0) // STMT_END_F
	if t == replication.WRITE_ROWS_EVENTv2 {
		body = binary.LittleEndian.AppendUint16(body, 2)
	}
	body = append(body, 2, 0x03)
	for _, id := range ids {
		v := "v" + strconv.Itoa(int(id))
		body = append(body, 0xfc)
		body = binary.LittleEndian.AppendUint32(body, uint32(id))
		body = append(body, byte(len(v)))
		body = append(body, v...)
	}
	return e.event(t, 0, body)
}

func (e *encoder) xid(n uint64) []byte {
	return e.event(replication.XID_EVENT, 0, binary.LittleEndian.AppendUint64(nil, n))
}

func (e *encoder) xaPrepare() []byte {
	body := []byte{0}
	body = binary.LittleEndian.AppendUint32(body, 1)
	body = binary.LittleEndian.AppendUint32(body, 2)
	body = binary.LittleEndian.AppendUint32(body, 0)
	return e.event(xaPrepareEvent, 0, body, []byte("x1"))
}

// mysqlGTID is a MySQL 8.0 GTID event with its logical clock, commit
// timestamps, transaction length and server version.
func (e *encoder) mysqlGTID(sid [16]byte, gno, lastCommitted, sequenceNumber int64) []byte {
	body := []byte{1}
	body = append(body, sid[:]...)
	body = binary.LittleEndian.AppendUint64(body, uint64(gno))
	body = append(body, replication.LogicalTimestampTypeCode)
	body = binary.LittleEndian.AppendUint64(body, uint64(lastCommitted))
	body = binary.LittleEndian.AppendUint64(body, uint64(sequenceNumber))
	body = append(body, binary.LittleEndian.AppendUint64(nil, uint64(e.when)*1e6)[:7]...)
	body = append(body, 0xfa) // transaction length, one byte
	body = binary.LittleEndian.AppendUint32(body, 80040)
	return e.event(replication.GTID_EVENT, 0, body)
}

// Whole groups, each a list of raw events, GTID event first.

func (e *encoder) mariaTxn(domain uint32, seq, commitID uint64, schema, table string, ids ...int32) [][]byte {
	return [][]byte{
		e.mariaGTID(seq, domain, gtidTransactional|gtidAllowParallel, commitID),
		e.annotate("INSERT INTO " + schema + "." + table),
		e.tableMap(70, schema, table),
		e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, ids...),
		e.xid(seq + 1000),
	}
}

func (e *encoder) mariaDDL(domain uint32, seq uint64, schema, text string) [][]byte {
	return [][]byte{
		e.mariaGTID(seq, domain, gtidStandalone|gtidAllowParallel|gtidDDL, 0),
		e.query(schema, text),
	}
}

// mariaStatementTxn is a statement-format transaction on a non-transactional
// table: the GTID event stands for BEGIN and a COMMIT query ends the group.
func (e *encoder) mariaStatementTxn(domain uint32, seq uint64, schema, text string) [][]byte {
	return [][]byte{
		e.mariaGTID(seq, domain, gtidAllowParallel, 0),
		e.intVar(seq),
		e.query(schema, text),
		e.query(schema, "COMMIT"),
	}
}

func (e *encoder) mysqlTxn(sid [16]byte, gno, lastCommitted, sequenceNumber int64, schema, table string, ids ...int32) [][]byte {
	return [][]byte{
		e.mysqlGTID(sid, gno, lastCommitted, sequenceNumber),
		e.query(schema, "BEGIN"),
		e.tableMap(80, schema, table),
		e.writeRows(replication.WRITE_ROWS_EVENTv2, 80, ids...),
		e.xid(uint64(gno) + 2000),
	}
}

func (e *encoder) mysqlDDL(sid [16]byte, gno, lastCommitted, sequenceNumber int64, schema, text string) [][]byte {
	return [][]byte{
		e.mysqlGTID(sid, gno, lastCommitted, sequenceNumber),
		e.query(schema, text),
	}
}

func joinEvents(events [][]byte) []byte { return bytes.Join(events, nil) }

func mustGTID(t testing.TB, s string) gtid.MariaDBGTID {
	t.Helper()
	g, err := gtid.ParseMariaDBGTID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustPosition(t testing.TB, s string) gtid.MariaDBPosition {
	t.Helper()
	p, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parseEvents parses raw events, the first of which must be a format
// description event, with the relay log's parser (checksums verified, rows decoded).
func parseEvents(t testing.TB, raw ...[]byte) []*replication.BinlogEvent {
	t.Helper()
	p := newRelayParser(true)
	out := make([]*replication.BinlogEvent, 0, len(raw))
	for i, r := range raw {
		ev, err := p.Parse(r)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestEncoderMatchesMariaDBBinlog(t *testing.T) {
	data := readFixture(t)
	real := data[4 : 4+binary.LittleEndian.Uint32(data[4+9:])]
	ours := newEncoder().format()
	if len(ours) != len(real) {
		t.Fatalf("format description: %d bytes, real one has %d", len(ours), len(real))
	}
	if got, want := ours[eventHeaderSize+57:len(ours)-5], real[eventHeaderSize+57:len(real)-5]; !bytes.Equal(got, want) {
		t.Fatalf("post-header lengths differ:\n got %x\nwant %x", got, want)
	}
}

func TestEncoderEventsParse(t *testing.T) {
	e := newEncoder()
	sid := [16]byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	evs := parseEvents(t,
		e.format(),
		e.gtidList(gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: 9}, gtid.MariaDBGTID{Domain: 2, Server: 3, Seq: 4}),
		e.mariaGTID(10, 0, gtidTransactional, 77),
		e.tableMap(70, "shop", "orders"),
		e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1, 2),
		e.xid(5),
		e.query("shop", "CREATE TABLE t (a INT)"),
	)
	if f := evs[0].Event.(*replication.FormatDescriptionEvent); f.ServerVersion != testMariaDBVersion || f.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 {
		t.Errorf("format description: %q checksum %d", f.ServerVersion, f.ChecksumAlgorithm)
	}
	if l := evs[1].Event.(*replication.MariadbGTIDListEvent); len(l.GTIDs) != 2 || l.GTIDs[1].String() != "2-3-4" {
		t.Errorf("GTID list: %v", l.GTIDs)
	}
	if g := evs[2].Event.(*replication.MariadbGTIDEvent); g.GTID.String() != "0-1-10" || g.CommitID != 77 || g.IsStandalone() {
		t.Errorf("GTID: %v commit id %d", g.GTID, g.CommitID)
	}
	if m := evs[3].Event.(*replication.TableMapEvent); string(m.Schema) != "shop" || string(m.Table) != "orders" || m.TableID != 70 {
		t.Errorf("table map: %s.%s %d", m.Schema, m.Table, m.TableID)
	}
	r := evs[4].Event.(*replication.RowsEvent)
	if len(r.Rows) != 2 || r.Rows[1][0] != int32(2) || r.Rows[1][1] != "v2" {
		t.Errorf("rows: %v", r.Rows)
	}
	if x := evs[5].Event.(*replication.XIDEvent); x.XID != 5 {
		t.Errorf("xid %d", x.XID)
	}
	if q := evs[6].Event.(*replication.QueryEvent); string(q.Schema) != "shop" || string(q.Query) != "CREATE TABLE t (a INT)" {
		t.Errorf("query %s: %s", q.Schema, q.Query)
	}

	m := parseEvents(t, e.mysqlFormat(), e.mysqlGTID(sid, 42, 7, 9), e.tableMap(80, "a", "b"), e.writeRows(replication.WRITE_ROWS_EVENTv2, 80, 3))
	g := m[1].Event.(*replication.GTIDEvent)
	if g.GNO != 42 || g.LastCommitted != 7 || g.SequenceNumber != 9 || !bytes.Equal(g.SID, sid[:]) {
		t.Errorf("MySQL GTID: gno %d last committed %d sequence number %d", g.GNO, g.LastCommitted, g.SequenceNumber)
	}
	if r := m[3].Event.(*replication.RowsEvent); r.Version != 2 || len(r.Rows) != 1 || r.Rows[0][1] != "v3" {
		t.Errorf("rows v2: version %d rows %v", r.Version, r.Rows)
	}
}
