// Tests that a MySQL 8.0 binlog (written byte by byte here, as MySQL writes
// it: GTID events with the logical clock, BEGIN, row events v2, XID) is read
// with its last_committed groups, and that commit-id follows them.
package analyze

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// mysqlWriter writes MySQL 8.0 events with CRC32 checksums.
type mysqlWriter struct {
	when uint32
	pos  uint32
	out  []byte
}

func (w *mysqlWriter) event(t replication.EventType, body ...[]byte) {
	size := replication.EventHeaderSize + replication.BinlogChecksumLength
	for _, b := range body {
		size += len(b)
	}
	ev := binary.LittleEndian.AppendUint32(nil, w.when)
	ev = append(ev, byte(t))
	ev = binary.LittleEndian.AppendUint32(ev, 1)
	ev = binary.LittleEndian.AppendUint32(ev, uint32(size))
	w.pos += uint32(size)
	ev = binary.LittleEndian.AppendUint32(ev, w.pos)
	ev = binary.LittleEndian.AppendUint16(ev, 0)
	for _, b := range body {
		ev = append(ev, b...)
	}
	w.out = append(w.out, binary.LittleEndian.AppendUint32(ev, crc32.ChecksumIEEE(ev))...)
}

func (w *mysqlWriter) format() {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	version := make([]byte, 50)
	copy(version, "8.0.40")
	body = append(body, version...)
	body = binary.LittleEndian.AppendUint32(body, 0)
	body = append(body, replication.EventHeaderSize)
	// MySQL 8.0's post-header lengths of event types 1..40.
	body = append(body,
		0x00, 0x0d, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x04, 0x00, 0x00, 0x00, 0x61, 0x00, 0x04, 0x1a, 0x08, 0x00,
		0x00, 0x00, 0x08, 0x08, 0x08, 0x02, 0x00, 0x00, 0x00, 0x0a,
		0x0a, 0x0a, 0x2a, 0x2a, 0x00, 0x12, 0x34, 0x00, 0x0a, 0x28)
	body = append(body, replication.BINLOG_CHECKSUM_ALG_CRC32)
	w.event(replication.FORMAT_DESCRIPTION_EVENT, body)
}

func (w *mysqlWriter) gtid(gno, lastCommitted, sequenceNumber int64) {
	body := []byte{1}
	body = append(body, 0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62)
	body = binary.LittleEndian.AppendUint64(body, uint64(gno))
	body = append(body, replication.LogicalTimestampTypeCode)
	body = binary.LittleEndian.AppendUint64(body, uint64(lastCommitted))
	body = binary.LittleEndian.AppendUint64(body, uint64(sequenceNumber))
	body = append(body, binary.LittleEndian.AppendUint64(nil, uint64(w.when)*1e6)[:7]...)
	body = append(body, 0xfa)
	body = binary.LittleEndian.AppendUint32(body, 80040)
	w.event(replication.GTID_EVENT, body)
}

func (w *mysqlWriter) query(thread uint32, schema, text string) {
	post := binary.LittleEndian.AppendUint32(nil, thread)
	post = binary.LittleEndian.AppendUint32(post, 0)
	post = append(post, byte(len(schema)))
	post = binary.LittleEndian.AppendUint16(post, 0)
	post = binary.LittleEndian.AppendUint16(post, 0)
	w.event(replication.QUERY_EVENT, post, []byte(schema), []byte{0}, []byte(text))
}

func (w *mysqlWriter) rowTxn(gno, lastCommitted int64, id int32) {
	w.gtid(gno, lastCommitted, gno)
	w.query(uint32(gno), "d", "BEGIN")
	tid := binary.LittleEndian.AppendUint64(nil, 80)[:6]
	tm := append(append([]byte{}, tid...), 1, 0, 1, 'd', 0, 1, 't', 0, 2, 3, 15, 2, 20, 0, 0x02)
	w.event(replication.TABLE_MAP_EVENT, tm)
	rows := append(append([]byte{}, tid...), 1, 0)
	rows = binary.LittleEndian.AppendUint16(rows, 2)
	v := "v" + strconv.Itoa(int(id))
	rows = append(rows, 2, 0x03, 0xfc)
	rows = binary.LittleEndian.AppendUint32(rows, uint32(id))
	rows = append(append(rows, byte(len(v))), v...)
	w.event(replication.WRITE_ROWS_EVENTv2, rows)
	w.event(replication.XID_EVENT, binary.LittleEndian.AppendUint64(nil, uint64(gno)))
}

func TestMySQLBinlog(t *testing.T) {
	w := &mysqlWriter{when: 1_700_000_000, pos: 4}
	w.format()
	w.gtid(1, 0, 1)
	w.query(1, "d", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
	// Two groups of four: last_committed 1, then 5.
	for gno := int64(2); gno <= 9; gno++ {
		w.rowTxn(gno, 1+4*((gno-2)/4), int32(gno))
	}
	path := filepath.Join(t.TempDir(), "binlog.000001")
	if err := os.WriteFile(path, append(append([]byte{}, binlogMagic...), w.out...), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Files(context.Background(), []string{path}, Options{Cost: executionBound})
	if err != nil {
		t.Fatal(err)
	}
	if r.Flavor != "mysql" || r.Transactions != 9 || r.RowChanges != 8 {
		t.Fatalf("%s: %d transactions, %d rows; want mysql, 9, 8", r.Flavor, r.Transactions, r.RowChanges)
	}
	if len(r.Barriers) != 1 || r.Barriers[0].Note != "ddl" {
		t.Errorf("barriers %+v, want the CREATE TABLE as DDL", r.Barriers)
	}
	if g := r.GroupCommit; g.By != "last_committed" || g.Groups != 3 {
		t.Errorf("groups %+v, want 3 by last_committed", g)
	}
	// The DDL alone, then two rounds of four.
	checkSpeedup(t, r, "commit-id", 4, 3, 0.1)
	checkSpeedup(t, r, "writeset", 4, 1, 1e-9) // no key metadata: one table, one at a time
	if !strings.Contains(strings.Join(r.Advice, "\n"), "binlog_group_commit_sync_delay") {
		t.Errorf("advice %q: want MySQL's group commit settings", r.Advice)
	}
}
