// reader.go turns binlog events, from files or a binlog dump, into
// Transactions, the same contract the applier's decoder produces. Row images
// are not decoded here: the header of each row event is (it names the
// table), and the rest is left for the decode pool, so the one reader that
// must run in order does the least work.
//
// Invariant: transactions come out whole and in source order; a group torn
// at the end of the input is counted and dropped, never emitted.
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
	"strings"
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

// deferredRows is a row event whose images are still to be decoded.
type deferredRows struct {
	event *replication.RowsEvent
	pos   int // where the images start in body
	body  []byte
}

// txnInfo is one transaction and what the analysis derives from it.
type txnInfo struct {
	txn      *binlog.Transaction
	gi       int64
	file     string
	pos      int64
	deferred []deferredRows
	// rows is the number of row changes (an update counts once).
	rows int
	// statement is the first SQL statement of the group other than BEGIN/COMMIT.
	statement string
	threadID  uint32
	payload   bool // MySQL compressed transaction payload
	// keys derived from the table maps (table-map key source only)
	tableKeys map[binlog.TableRef]*tableKeys
	execCost  float64 // µs, parallel part
	commit    float64 // µs, serial part
	barrier   barrierKind
}

// assembler cuts events into groups and builds Transactions.
type assembler struct {
	parser  *replication.BinlogParser
	flavor  binlog.Flavor
	version string
	format  binlog.Event
	groups  groupTracker
	current *txnInfo

	lastRows *deferredRows
	events   int64
}

func newAssembler() *assembler {
	a := &assembler{}
	a.parser = replication.NewBinlogParser()
	a.parser.SetVerifyChecksum(true)
	a.parser.SetUseDecimal(false)
	a.parser.SetRowsEventDecodeFunc(func(re *replication.RowsEvent, body []byte) error {
		pos, err := re.DecodeHeader(body)
		if err != nil {
			return err
		}
		a.lastRows = &deferredRows{event: re, pos: pos, body: body}
		return nil
	})
	return a
}

// parse decodes one raw event, turning go-mysql's panics on damaged data into errors.
func (a *assembler) parse(raw rawEvent) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: undecodable event at byte %d: %v", raw.file, raw.pos, r)
		}
	}()
	if len(raw.data) > 4 && replication.EventType(raw.data[4]) == replication.FORMAT_DESCRIPTION_EVENT {
		a.parser.Reset()
	}
	ev, err = a.parser.Parse(raw.data)
	if err != nil {
		return nil, fmt.Errorf("%s: event at byte %d: %w", raw.file, raw.pos, err)
	}
	return ev, nil
}

// add feeds one event; it returns a transaction when the event completed one.
func (a *assembler) add(raw rawEvent) (*txnInfo, error) {
	a.lastRows = nil
	ev, err := a.parse(raw)
	if err != nil {
		return nil, err
	}
	a.events++
	if fde, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
		a.format = binlog.Event{Header: ev.Header, Raw: raw.data, Data: ev.Event}
		a.version = fde.ServerVersion
		a.flavor = binlog.FlavorMySQL
		if strings.Contains(strings.ToLower(fde.ServerVersion), "mariadb") {
			a.flavor = binlog.FlavorMariaDB
		}
		a.parser.SetFlavor(a.flavor.String())
		return nil, nil
	}
	single := a.groups.state == afterGTID
	cut, err := a.groups.add(ev)
	if err != nil {
		return nil, fmt.Errorf("%s: event at byte %d: %w", raw.file, raw.pos, err)
	}
	if cut == cutControl {
		return nil, nil
	}
	if a.current == nil {
		a.current = a.begin(ev, raw)
		return nil, nil
	}
	t := a.current
	a.addEvent(t, ev, raw.data)
	if cut != cutComplete {
		return nil, nil
	}
	if single && t.txn.Flavor == binlog.FlavorMySQL && !t.payload {
		// A MySQL group without BEGIN is one DDL statement.
		t.txn.Flags = t.txn.Flags&^binlog.FlagTransactional | binlog.FlagDDL | binlog.FlagStandalone
	}
	a.current = nil
	return t, nil
}

// open reports whether the input ended inside a group.
func (a *assembler) open() bool { return a.current != nil }

func (a *assembler) begin(ev *replication.BinlogEvent, raw rawEvent) *txnInfo {
	txn := &binlog.Transaction{
		Begin:      binlog.Event{Header: ev.Header, Raw: raw.data, Data: ev.Event},
		Format:     a.format,
		Size:       len(raw.data),
		SourceTime: time.Unix(int64(ev.Header.Timestamp), 0),
	}
	switch g := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		txn.Flavor = binlog.FlavorMariaDB
		txn.MariaDB = gtid.MariaDBGTID{Domain: g.GTID.DomainID, Server: g.GTID.ServerID, Seq: g.GTID.SequenceNumber}
		txn.CommitID = g.CommitID
		txn.Flags = mariaDBFlags(g.Flags)
	case *replication.GTIDEvent:
		txn.Flavor = binlog.FlavorMySQL
		txn.MySQL = mySQLGTID(g.SID, "", g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = mySQLFlags(g.CommitFlag)
	case *replication.GtidTaggedLogEvent:
		txn.Flavor = binlog.FlavorMySQL
		txn.MySQL = mySQLGTID(g.SID, g.Tag, g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = mySQLFlags(g.CommitFlag)
	}
	return &txnInfo{txn: txn, file: raw.file, pos: raw.pos}
}

// addEvent appends one event of the group and notes what it touches.
func (a *assembler) addEvent(t *txnInfo, ev *replication.BinlogEvent, raw []byte) {
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
		switch {
		case isQuery(e, "BEGIN"):
			t.threadID = e.SlaveProxyID
		case isQuery(e, "COMMIT", "ROLLBACK"):
		default:
			touch(txn, string(e.Schema), "")
			if t.statement == "" {
				t.statement = string(bytes.TrimSpace(e.Query))
			}
			if t.threadID == 0 {
				t.threadID = e.SlaveProxyID
			}
		}
	case *replication.RowsEvent:
		if a.lastRows != nil {
			t.deferred = append(t.deferred, *a.lastRows)
		}
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
				if isQuery(ie, "BEGIN") {
					t.threadID = ie.SlaveProxyID
				}
			}
		}
	}
}

// decodeRows decodes the row images left for later and counts row changes.
func (t *txnInfo) decodeRows() error {
	for _, d := range t.deferred {
		if err := d.event.DecodeData(d.pos, d.body); err != nil {
			return fmt.Errorf("transaction %s (%s at byte %d): row event of %s.%s: %w",
				t.txn.GTID(), t.file, t.pos, d.event.Table.Schema, d.event.Table.Table, err)
		}
		t.rows += rowChanges(d.event)
	}
	t.deferred = nil
	return nil
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

func mariaDBFlags(f byte) binlog.TxnFlags {
	var flags binlog.TxnFlags
	if f&replication.BINLOG_MARIADB_FL_STANDALONE != 0 {
		flags |= binlog.FlagStandalone
	}
	if f&replication.BINLOG_MARIADB_FL_TRANSACTIONAL != 0 {
		flags |= binlog.FlagTransactional
	}
	if f&replication.BINLOG_MARIADB_FL_ALLOW_PARALLEL != 0 {
		flags |= binlog.FlagAllowParallel
	}
	if f&replication.BINLOG_MARIADB_FL_WAITED != 0 {
		flags |= binlog.FlagWaited
	}
	if f&replication.BINLOG_MARIADB_FL_DDL != 0 {
		flags |= binlog.FlagDDL
	}
	return flags
}

func mySQLFlags(commitFlag uint8) binlog.TxnFlags {
	flags := binlog.FlagTransactional
	if commitFlag&1 != 0 {
		flags |= binlog.FlagAllowParallel
	}
	return flags
}

func mySQLGTID(sid []byte, tag string, gno int64) gtid.MySQLGTID {
	var g gtid.MySQLGTID
	copy(g.SID[:], sid)
	g.Tag = tag
	g.GNO = uint64(gno)
	return g
}
