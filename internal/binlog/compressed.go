// compressed.go turns MariaDB's compressed events (log_bin_compress=ON on the
// source) back into the plain events they stand for, so that nothing after the
// decoder ever sees a compressed one: a target refuses compressed row events
// in a BINLOG statement (error 1730), and the rest of gapless knows only
// QUERY_EVENT and the v1 row events.
//
// What MariaDB compresses, and how (its format, not its code):
//
//   - QUERY_COMPRESSED_EVENT: the query text. Header, post-header, status
//     variables and the default database with its terminating zero stay as
//     they are; the query text after them is a compressed record.
//   - WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT_V1: the row images. Header,
//     post-header (table id and flags), column count and the column
//     bitmap(s) (two for an update) stay as they are; the rows after them
//     are a compressed record.
//
// A compressed record is one byte (bit 7 set; bits 4-6 the algorithm, 0 for
// zlib, the only one; bits 0-2 how many length bytes follow, 1 to 4), the
// uncompressed length in that many bytes, high byte first, then a zlib stream.
//
// The plain event keeps everything before the record, takes the plain type
// (QUERY_EVENT, or WRITE/UPDATE/DELETE_ROWS_EVENTv1), the new length in its
// header, and a checksum computed again when the format description says
// events carry one. Its position in the source's binlog (log_pos) is kept: it
// still names where the source's event ended.
package binlog

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/go-mysql-org/go-mysql/replication"
)

// isCompressedEvent reports whether t is one of MariaDB's compressed event types.
func isCompressedEvent(t replication.EventType) bool {
	switch t {
	case replication.MARIADB_QUERY_COMPRESSED_EVENT, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

// plainEventType is the uncompressed counterpart of a compressed event type.
func plainEventType(t replication.EventType) replication.EventType {
	switch t {
	case replication.MARIADB_QUERY_COMPRESSED_EVENT:
		return replication.QUERY_EVENT
	case replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return replication.WRITE_ROWS_EVENTv1
	case replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return replication.UPDATE_ROWS_EVENTv1
	case replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return replication.DELETE_ROWS_EVENTv1
	}
	return t
}

// maxUncompressed bounds the length a compressed record may claim: an event
// is at most 4 GiB, and no server writes one near that; the bound keeps a
// damaged length from making gapless allocate gigabytes.
const maxUncompressed = 1 << 30

// uncompressEvent returns the plain event a compressed one stands for, with
// its header. format is the format description the event was written under
// (its post-header lengths and checksum algorithm). The result is a new
// slice; raw is not changed.
func uncompressEvent(raw []byte, format *replication.FormatDescriptionEvent) ([]byte, *replication.EventHeader, error) {
	if format == nil {
		return nil, nil, errors.New("compressed event before any format description")
	}
	if len(raw) < eventHeaderSize {
		return nil, nil, errors.New("compressed event shorter than an event header")
	}
	t := replication.EventType(raw[4])
	size := int(binary.LittleEndian.Uint32(raw[9:]))
	if size != len(raw) {
		return nil, nil, fmt.Errorf("%s: header says %d bytes, the event has %d", t, size, len(raw))
	}
	checksum := format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	end := len(raw)
	if checksum {
		end -= checksumSize
	}
	if int(t) < 1 || int(t) > len(format.EventTypeHeaderLengths) {
		return nil, nil, fmt.Errorf("%s: the format description gives no post-header length for it", t)
	}
	postHeader := int(format.EventTypeHeaderLengths[t-1])
	head, err := compressedHead(t, raw[:end], postHeader)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t, err)
	}
	body, err := uncompressRecord(raw[head:end])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t, err)
	}
	out := make([]byte, 0, head+len(body)+checksumSize)
	out = append(out, raw[:head]...)
	out = append(out, body...)
	if checksum {
		out = append(out, 0, 0, 0, 0)
	}
	out[4] = byte(plainEventType(t))
	binary.LittleEndian.PutUint32(out[9:], uint32(len(out)))
	if checksum {
		n := len(out) - checksumSize
		binary.LittleEndian.PutUint32(out[n:], crc32.ChecksumIEEE(out[:n]))
	}
	header := &replication.EventHeader{}
	if err := header.Decode(out); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t, err)
	}
	return out, header, nil
}

// compressedHead returns how many bytes of the event (checksum cut off) come
// before its compressed record.
func compressedHead(t replication.EventType, ev []byte, postHeader int) (int, error) {
	pos := eventHeaderSize
	if t == replication.MARIADB_QUERY_COMPRESSED_EVENT {
		// Post-header: thread id (4), exec time (4), db length (1), error code (2), status vars length (2).
		if postHeader < 13 || len(ev) < pos+postHeader {
			return 0, errors.New("post-header cut short")
		}
		dbLen := int(ev[pos+8])
		statusLen := int(binary.LittleEndian.Uint16(ev[pos+11:]))
		pos += postHeader + statusLen + dbLen + 1
		if pos >= len(ev) {
			return 0, errors.New("no query text after the default database")
		}
		return pos, nil
	}
	// Post-header: table id and flags (8 bytes; 6 with a 4-byte table id),
	// then, in the v2 layout (10), the length of extra data including its own two bytes.
	if len(ev) < pos+postHeader {
		return 0, errors.New("post-header cut short")
	}
	if postHeader == 10 {
		extra := int(binary.LittleEndian.Uint16(ev[pos+8:]))
		if extra < 2 {
			return 0, errors.New("extra row data length below 2")
		}
		pos += extra - 2
	}
	pos += postHeader
	if pos >= len(ev) {
		return 0, errors.New("no column count")
	}
	width, _, n := lengthEncodedInt(ev[pos:])
	if n == 0 || width > 1<<16 {
		return 0, errors.New("bad column count")
	}
	pos += n
	bitmap := int(width+7) / 8
	pos += bitmap
	if t == replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1 {
		pos += bitmap
	}
	if pos >= len(ev) {
		return 0, errors.New("no rows after the column bitmaps")
	}
	return pos, nil
}

// lengthEncodedInt reads a packed integer; n is 0 when b is too short.
func lengthEncodedInt(b []byte) (v uint64, null bool, n int) {
	if len(b) == 0 {
		return 0, false, 0
	}
	switch b[0] {
	case 0xfb:
		return 0, true, 1
	case 0xfc:
		if len(b) < 3 {
			return 0, false, 0
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), false, 3
	case 0xfd:
		if len(b) < 4 {
			return 0, false, 0
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, false, 4
	case 0xfe:
		if len(b) < 9 {
			return 0, false, 0
		}
		return binary.LittleEndian.Uint64(b[1:]), false, 9
	}
	return uint64(b[0]), false, 1
}

// uncompressRecord reads one compressed record and returns what it holds.
func uncompressRecord(rec []byte) ([]byte, error) {
	if len(rec) < 2 || rec[0]&0x80 == 0 {
		return nil, errors.New("not a compressed record")
	}
	if alg := (rec[0] >> 4) & 0x07; alg != 0 {
		return nil, fmt.Errorf("compression algorithm %d (only 0, zlib, exists)", alg)
	}
	lenBytes := int(rec[0] & 0x07)
	if lenBytes < 1 || lenBytes > 4 || len(rec) < 1+lenBytes {
		return nil, fmt.Errorf("compressed record with %d length bytes", lenBytes)
	}
	var want int
	for _, b := range rec[1 : 1+lenBytes] {
		want = want<<8 | int(b)
	}
	if want == 0 || want > maxUncompressed {
		return nil, fmt.Errorf("compressed record claims %d bytes", want)
	}
	zr, err := zlib.NewReader(bytes.NewReader(rec[1+lenBytes:]))
	if err != nil {
		return nil, fmt.Errorf("compressed record: %w", err)
	}
	defer zr.Close()
	out := make([]byte, want)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("compressed record of %d bytes: %w", want, err)
	}
	// The record must hold exactly what it claims, and its stream end whole
	// (zlib checks its own checksum at the end).
	n, err := zr.Read(make([]byte, 1))
	if n != 0 {
		return nil, fmt.Errorf("compressed record holds more than the %d bytes it claims", want)
	}
	if err != io.EOF {
		return nil, fmt.Errorf("compressed record of %d bytes: %v", want, err)
	}
	return out, nil
}
