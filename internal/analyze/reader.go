// reader.go reads raw binlog events from files, and decodes event groups
// into Transactions, the contract the applier's decoder produces too. Many
// decoders run at once, one group each; only the file reading and the group
// cutting (group.go) see every event in order.
//
// Invariant: a decoded transaction holds its group's events in source order,
// with the format description event the group was written under.
package analyze

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// rawEvent is one event's bytes and where it was read.
type rawEvent struct {
	data []byte
	file string
	pos  int64 // offset of the event in file
}

// eventSource yields raw events in source order; io.EOF ends it.
type eventSource interface {
	next(ctx context.Context) (rawEvent, error)
	close()
}

var binlogMagic = []byte{0xfe, 'b', 'i', 'n'}

// slab hands out byte slices carved from large blocks, so that reading a
// gigabyte of small events costs few allocations; a block is freed once no
// transaction refers to it.
type slab struct{ block []byte }

const slabBlock = 4 << 20

func (s *slab) take(n int) []byte {
	if n > slabBlock/4 {
		return make([]byte, n)
	}
	if len(s.block) < n {
		s.block = make([]byte, slabBlock)
	}
	out := s.block[:n:n]
	s.block = s.block[n:]
	return out
}

// fileSource reads binlog (or relay log) files one after the other.
type fileSource struct {
	paths   []string
	index   int
	file    *os.File
	reader  *bufio.Reader
	name    string
	pos     int64
	mem     slab
	skipped []string // files that are not binlog files
	torn    string   // where the input ended inside an event, if it did
	bytes   int64    // bytes of events read
}

func newFileSource(paths []string) *fileSource { return &fileSource{paths: paths} }

func (s *fileSource) close() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}

func (s *fileSource) openNext() error {
	for s.index < len(s.paths) {
		path := s.paths[s.index]
		s.index++
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("open binlog file: %w", err)
		}
		r := bufio.NewReaderSize(f, 1<<20)
		magic := make([]byte, len(binlogMagic))
		if _, err := io.ReadFull(r, magic); err != nil || !bytes.Equal(magic, binlogMagic) {
			f.Close()
			s.skipped = append(s.skipped, path)
			continue
		}
		s.file, s.reader, s.name, s.pos = f, r, path, int64(len(binlogMagic))
		return nil
	}
	return io.EOF
}

func (s *fileSource) next(ctx context.Context) (rawEvent, error) {
	for {
		if s.file == nil {
			if err := ctx.Err(); err != nil {
				return rawEvent{}, err
			}
			if err := s.openNext(); err != nil {
				return rawEvent{}, err
			}
		}
		header, err := s.reader.Peek(replication.EventHeaderSize)
		if err != nil {
			if !errors.Is(err, io.EOF) || len(header) > 0 {
				s.torn = fmt.Sprintf("%s at byte %d", s.name, s.pos)
			}
			s.close()
			continue
		}
		size := int(binary.LittleEndian.Uint32(header[9:]))
		if size < replication.EventHeaderSize {
			return rawEvent{}, fmt.Errorf("%s: event at byte %d has an impossible size %d: not a binlog file, or damaged", s.name, s.pos, size)
		}
		data := s.mem.take(size)
		if _, err := io.ReadFull(s.reader, data); err != nil {
			s.torn = fmt.Sprintf("%s at byte %d", s.name, s.pos)
			s.close()
			continue
		}
		ev := rawEvent{data: data, file: s.name, pos: s.pos}
		s.pos += int64(size)
		s.bytes += int64(size)
		return ev, nil
	}
}

// txnInfo is one transaction and what the analysis derives from it.
type txnInfo struct {
	txn  *binlog.Transaction
	gi   int64
	file string
	pos  int64
	// rows is the number of row changes (an update counts once); 0 when
	// row images were not decoded.
	rows int
	// statement is the first SQL statement of the group other than BEGIN/COMMIT.
	statement string
	threadID  uint32
	payload   bool // MySQL compressed transaction payload
	// keys derived from the table maps (table-map key source only)
	tableKeys []tableKeysOf
	execCost  float64 // µs, parallel part
	commit    float64 // µs, serial part
	barrier   barrierKind
}

// decoder turns raw groups into transactions; one per decode goroutine,
// each with its own parser.
type decoder struct {
	parser *replication.BinlogParser
	format *formatDesc // the one parser holds
	fde    binlog.Event
	keys   tableKeyCache
	opaque bool // a row event of the group being decoded kept only its header
}

// newDecoder decodes row images only when rows is true; the header of a row
// event, which names its table, is always decoded.
func newDecoder(rows bool) *decoder {
	d := &decoder{parser: replication.NewBinlogParser(), keys: tableKeyCache{}}
	d.parser.SetVerifyChecksum(true)
	d.parser.SetUseDecimal(false)
	if rows {
		// Rows the decoder cannot read (a column type it does not know)
		// leave the event with its header, and the transaction opaque.
		d.parser.SetRowsEventDecodeFunc(func(re *replication.RowsEvent, body []byte) error {
			undecoded, err := binlog.DecodeRowsOrKeepHeader(re, body)
			d.opaque = d.opaque || undecoded != nil
			return err
		})
	} else {
		d.parser.SetRowsEventDecodeFunc(func(re *replication.RowsEvent, body []byte) error {
			_, err := re.DecodeHeader(body)
			return err
		})
	}
	return d
}

// parse decodes one raw event, turning go-mysql's panics on damaged data into errors.
func (d *decoder) parse(raw rawEvent) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: undecodable event at byte %d: %v", raw.file, raw.pos, r)
		}
	}()
	ev, err = d.parser.Parse(raw.data)
	if err != nil {
		return nil, fmt.Errorf("%s: event at byte %d: %w", raw.file, raw.pos, err)
	}
	return ev, nil
}

// transaction decodes one group.
func (d *decoder) transaction(g *rawGroup) (*txnInfo, error) {
	if d.format != g.format {
		d.parser.Reset()
		d.parser.SetFlavor(g.format.flavor.String())
		raw := rawEvent{data: g.format.raw, file: g.events[0].file}
		ev, err := d.parse(raw)
		if err != nil {
			return nil, err
		}
		d.format, d.fde = g.format, binlog.Event{Header: ev.Header, Raw: raw.data, Data: ev.Event}
	}
	var t *txnInfo
	d.opaque = false
	for i, raw := range g.events {
		ev, err := d.parse(raw)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			t = d.begin(ev, raw)
			continue
		}
		t.addEvent(ev, raw.data)
	}
	t.txn.OpaqueRows = d.opaque
	if g.single && t.txn.Flavor == binlog.FlavorMySQL && !t.payload {
		// A MySQL group without BEGIN is one DDL statement.
		t.txn.Flags = t.txn.Flags&^binlog.FlagTransactional | binlog.FlagDDL | binlog.FlagStandalone
	}
	return t, nil
}

func (d *decoder) begin(ev *replication.BinlogEvent, raw rawEvent) *txnInfo {
	txn := &binlog.Transaction{
		Begin:      binlog.Event{Header: ev.Header, Raw: raw.data, Data: ev.Event},
		Format:     d.fde,
		Size:       len(raw.data),
		SourceTime: time.Unix(int64(ev.Header.Timestamp), 0),
		Events:     make([]binlog.Event, 0, 8),
	}
	switch g := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		txn.Flavor = binlog.FlavorMariaDB
		txn.MariaDB = gtid.MariaDBGTID{Domain: g.GTID.DomainID, Server: g.GTID.ServerID, Seq: g.GTID.SequenceNumber}
		txn.CommitID = g.CommitID
		txn.Flags = binlog.MariaDBFlags(g.Flags)
	case *replication.GTIDEvent:
		txn.Flavor = binlog.FlavorMySQL
		txn.MySQL = binlog.MySQLGTIDFromEvent(g.SID, "", g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = binlog.MySQLFlags(g.CommitFlag)
	case *replication.GtidTaggedLogEvent:
		txn.Flavor = binlog.FlavorMySQL
		txn.MySQL = binlog.MySQLGTIDFromEvent(g.SID, g.Tag, g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = binlog.MySQLFlags(g.CommitFlag)
	}
	return &txnInfo{txn: txn, file: raw.file, pos: raw.pos}
}

// addEvent appends one event of the group and notes what it touches.
func (t *txnInfo) addEvent(ev *replication.BinlogEvent, raw []byte) {
	txn := t.txn
	txn.Events = append(txn.Events, binlog.Event{Header: ev.Header, Raw: raw, Data: ev.Event})
	txn.Size += len(raw)
	if ts := time.Unix(int64(ev.Header.Timestamp), 0); ts.After(txn.SourceTime) {
		txn.SourceTime = ts
	}
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		touch(txn, string(e.Schema), string(e.Table))
	case *replication.QueryEvent:
		t.noteQuery(e)
	case *replication.RowsEvent:
		t.rows += rowChanges(e)
	case *replication.TransactionPayloadEvent:
		t.payload = true
		txn.Events = txn.Events[:len(txn.Events)-1]
		for _, inner := range e.Events {
			txn.Events = append(txn.Events, binlog.Event{Header: inner.Header, Raw: inner.RawData, Data: inner.Event})
			switch ie := inner.Event.(type) {
			case *replication.TableMapEvent:
				touch(txn, string(ie.Schema), string(ie.Table))
			case *replication.RowsEvent:
				t.rows += rowChanges(ie)
			case *replication.QueryEvent:
				t.noteQuery(ie)
			}
		}
	}
}

func (t *txnInfo) noteQuery(e *replication.QueryEvent) {
	switch {
	case isQuery(e, "BEGIN"):
		t.threadID = e.SlaveProxyID
	case isQuery(e, "COMMIT", "ROLLBACK"):
	default:
		touch(t.txn, string(e.Schema), "")
		if t.statement == "" {
			t.statement = string(bytes.TrimSpace(e.Query))
		}
		if t.threadID == 0 {
			t.threadID = e.SlaveProxyID
		}
	}
}

func isQuery(e *replication.QueryEvent, words ...string) bool {
	text := bytes.TrimSpace(e.Query)
	for _, w := range words {
		if bytes.EqualFold(text, []byte(w)) {
			return true
		}
	}
	return false
}

func rowChanges(ev *replication.RowsEvent) int {
	switch ev.Type() {
	case replication.EnumRowsEventTypeUpdate:
		return len(ev.Rows) / 2
	}
	return len(ev.Rows)
}

func touch(txn *binlog.Transaction, schema, table string) {
	if schema == "" {
		return
	}
	found := false
	for _, s := range txn.Schemas {
		if s == schema {
			found = true
			break
		}
	}
	if !found {
		txn.Schemas = append(txn.Schemas, schema)
	}
	if table == "" {
		return
	}
	ref := binlog.TableRef{Schema: schema, Table: table}
	for _, have := range txn.Tables {
		if have == ref {
			return
		}
	}
	txn.Tables = append(txn.Tables, ref)
}
