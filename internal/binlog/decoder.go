// decoder.go turns the relay log's events into Transactions. It is the only
// place that knows how a source event group maps onto the Transaction
// contract; it skips the groups the target already holds, so everything it
// emits is still to be applied, in relay-log order.
//
// Every event it emits is plain (compressed ones were uncompressed by the
// relay reader) and whole. A row event's rows are left pending (its images
// walked, not decoded: rowimages.go) until something reads them; a row
// event whose rows it could not decode is emitted with its header only and
// the transaction marked OpaqueRows. An
// intact event it cannot turn into a Transaction at all stops it with a
// DecodeError, unless Skip names the group.
package binlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
	"gapless/internal/statement"
)

// Applied says which transactions the target holds already.
type Applied interface {
	Contains(gtid.MariaDBGTID) bool
}

// Decoder reads a relay log and emits Transactions.
type Decoder struct {
	reader  *RelayReader
	applied Applied
	format  Event
	groups  groupTracker
	txn     *Transaction
	// last is the last group begun, for errors outside any group (its
	// GTID printed only then).
	last *Transaction
	// names are the schema and table names met, each one string however
	// many groups name it (a transaction's Tables and Schemas use them).
	names names
	// statements reads every group's statements, in binlog order (statements.go).
	statements *StatementReader

	// Skip names the groups to pass when they cannot be decoded (the run's
	// --skip-gtid): such a group comes out Filtered and without events, so
	// it only advances the position. nil: none.
	Skip func(gtid.MariaDBGTID) bool
	// skipping is why the open group is being passed; nil when it is not.
	skipping error
	// rowsLeft: the open group grew past decodeRowsUpTo, and its rows are
	// no longer decoded (leaveRows).
	rowsLeft bool
	// sourceStarts is Transaction.SourceStarts of the next group.
	sourceStarts int
	// held are the temporary tables the target kept for the source's
	// sessions from a run before (HoldTemporary); returned says a group
	// has come out of the decoder.
	held     []HeldTemporary
	returned bool
	// atStart are the temporary tables the source's sessions held at the
	// target's position by the binlog read, known once a group has come
	// out (HeldAtStart).
	atStart     []HeldTemporary
	atStartRead bool
	// events is the room the events of the group being assembled are
	// gathered in (keepEvents).
	events []Event
}

// HeldTemporary is a temporary table a source session held at the target's
// position, which the target kept for it across runs of gapless.
type HeldTemporary struct {
	Thread        uint32
	Schema, Table string
}

// HoldTemporary tells the decoder of the temporary tables the target holds
// for the source's sessions at its position, made by groups the relay log
// may no longer hold: statements naming them go where they live.
func (d *Decoder) HoldTemporary(held []HeldTemporary) {
	d.held = held
	d.holdTemporary()
}

// HeldAtStart returns the temporary tables the source's sessions held at
// the target's position, as the relay log tells (names in lower case):
// those made by groups it holds that no later group it holds dropped. ok
// is false before a group has come out of the decoder, or when a
// statement about temporary tables could not be read.
func (d *Decoder) HeldAtStart() (held []HeldTemporary, ok bool) {
	return d.atStart, d.atStartRead
}

func (d *Decoder) holdTemporary() {
	for _, h := range d.held {
		d.statements.temporary.Hold(h.Thread, h.Schema, h.Table)
	}
}

// decodeRowsUpTo is the size past which a transaction's rows are left
// undecoded. Decoded rows take one to two times their events' bytes again,
// and they only serve to find which rows a transaction writes; a transaction
// this large conflicts with nearly everything anyway. Left undecoded
// (OpaqueRows), it is scheduled by the tables it writes, and applies as
// before: the target decodes its events.
const decodeRowsUpTo = 16 << 20

// errLargeTransaction is the Undecoded of the row events of a transaction
// larger than decodeRowsUpTo.
var errLargeTransaction = fmt.Errorf("rows not decoded: the transaction is larger than %d MiB", decodeRowsUpTo>>20)

// leaveRows stops decoding the open transaction's rows: those decoded so
// far are dropped, the rest are read with their headers only.
func (d *Decoder) leaveRows(txn *Transaction) {
	for i := range txn.Events {
		ev := &txn.Events[i]
		if re, ok := ev.Data.(*replication.RowsEvent); ok && ev.Undecoded == nil {
			re.Rows, re.SkippedColumns, ev.pending = nil, nil, nil
			ev.Undecoded = errLargeTransaction
		}
	}
	txn.OpaqueRows = true
	d.reader.HeadersOnly(errLargeTransaction)
	d.rowsLeft = true
}

// NewDecoder decodes the relay log from its start, skipping every group that
// applied already contains.
func NewDecoder(log *RelayLog, applied Applied) *Decoder {
	r := log.NewReader()
	r.fast.reuse = true // take keeps no *BinlogEvent
	return &Decoder{reader: r, applied: applied, statements: NewStatementReader()}
}

// Close releases the relay log reader.
func (d *Decoder) Close() { d.reader.Close() }

// DecodeError is an event group whose bytes are intact (checksums hold) but
// which gapless could not turn into a Transaction: a gap in gapless or in its
// decoding library. Fetching the events again cannot help; the run stops.
type DecodeError struct {
	GTID    string                // the group's GTID; "" when the GTID event itself failed
	After   string                // the GTID of the group before, when GTID is ""
	Event   replication.EventType // the event that failed
	Table   string                // schema.table it concerns, when known
	Segment string                // relay segment file
	Offset  int64                 // the event's first byte in it
	Err     error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	if e.GTID != "" {
		fmt.Fprintf(&b, "cannot decode transaction %s: its %s event", e.GTID, e.Event)
	} else {
		after := e.After
		if after == "" {
			after = "the start of the relay log"
		}
		fmt.Fprintf(&b, "cannot decode the %s event after %s", e.Event, after)
	}
	if e.Table != "" {
		fmt.Fprintf(&b, " on table %s", e.Table)
	}
	fmt.Fprintf(&b, " (relay segment %s, byte %d): %v", e.Segment, e.Offset, e.Err)
	b.WriteString("\nthis is a gapless bug: please report it, with that relay segment if you can share it")
	if e.GTID != "" {
		fmt.Fprintf(&b, "; to go on without this transaction, run again with --skip-gtid %s (the target then lacks its changes, which you must apply by hand)", e.GTID)
	}
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Next returns the next transaction to apply, blocking until one is whole.
func (d *Decoder) Next(ctx context.Context) (*Transaction, error) {
	for {
		ev, err := d.reader.Next(ctx)
		if err != nil {
			// (Declared here: what errors.As writes to lives on the heap.)
			var ue *UndecodableError
			if !errors.As(err, &ue) {
				return nil, err
			}
			if ev, err = d.undecodable(ue); err != nil {
				return nil, err
			}
		}
		txn, err := d.take(ev, d.reader.Undecoded(), d.reader.Pending())
		if err != nil || txn != nil {
			return txn, err
		}
	}
}

// undecodable handles an intact event that did not decode: an error, unless
// the group is one to skip, whose remaining events are then passed over (the
// failed one stands in the group's shape as an event of unknown content).
func (d *Decoder) undecodable(ue *UndecodableError) (*replication.BinlogEvent, error) {
	if d.txn != nil && d.txn.Flavor == FlavorMariaDB && d.Skip != nil && d.Skip(d.txn.MariaDB) {
		d.skipping = ue
		return opaqueEvent(ue.Raw), nil
	}
	de := &DecodeError{Event: ue.Type, Segment: ue.Segment, Offset: ue.Offset, Err: ue.Err, After: d.lastGTID()}
	if d.txn != nil {
		de.GTID = d.txn.GTID()
		if ue.Type != replication.TABLE_MAP_EVENT {
			de.Table = d.txn.lastTable()
		}
	}
	return nil, de
}

// take adds one event to the group being assembled and returns the
// transaction it completed, if any. A panic here (a gapless bug) becomes a
// DecodeError naming the group, the event and its table.
func (d *Decoder) take(ev *replication.BinlogEvent, undecoded error, pending *PendingRows) (txn *Transaction, err error) {
	defer func() {
		if r := recover(); r != nil {
			txn, err = nil, d.panicked(ev, r)
		}
	}()
	if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
		d.format = Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event}
		if sourceStarted(ev) {
			// The source started as it began this binlog. (A source
			// sends the description of a binlog a replica starts in
			// the middle of without its creation time; the receiver
			// writes every one that has it to the relay log, whose
			// segments rotated for their size carry none: notCreated.)
			d.sourceStarts++
			d.statements.SourceStarted()
		}
		return nil, nil
	}
	if ev.Header.EventType == replication.INCIDENT_EVENT && !d.groups.open() {
		return nil, incidentError(ev.RawData, d.lastGTID())
	}
	single := d.groups.state == afterGTID
	cut, err := d.groups.add(ev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptRelay, err)
	}
	if cut == cutControl {
		return nil, nil
	}
	if d.txn == nil {
		d.txn = d.begin(ev)
		d.last = d.txn
		return nil, nil
	}
	if d.skipping == nil {
		d.txn.add(ev, undecoded, pending, &d.names)
		if d.txn.Size > decodeRowsUpTo && !d.rowsLeft {
			d.leaveRows(d.txn)
		}
	}
	if cut == cutComplete && single && d.txn.Flavor == FlavorMySQL {
		// A MySQL group without BEGIN is one DDL statement.
		d.txn.Flags = d.txn.Flags&^FlagTransactional | FlagDDL | FlagStandalone
	}
	if cut != cutComplete {
		return nil, nil
	}
	txn, d.txn = d.txn, nil
	return d.complete(txn), nil
}

// panicked is the DecodeError for a panic while ev was taken (a gapless
// bug): the group, the event, its table and where it lies.
func (d *Decoder) panicked(ev *replication.BinlogEvent, r any) *DecodeError {
	seg, off := d.reader.Position()
	de := &DecodeError{Event: ev.Header.EventType, Segment: seg, Offset: off, After: d.lastGTID(), Err: fmt.Errorf("panic: %v", r)}
	if d.txn != nil {
		de.GTID, de.Table = d.txn.GTID(), d.txn.lastTable()
	}
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		if e.Table != nil {
			de.Table = string(e.Table.Schema) + "." + string(e.Table.Table)
		}
	case *replication.TableMapEvent:
		de.Table = string(e.Schema) + "." + string(e.Table)
	}
	return de
}

// complete finishes a group whose last event was taken: its events kept,
// a skipped one emptied, the statement sessions' temporary tables read.
// It returns the group, or nil when the target holds it already.
func (d *Decoder) complete(txn *Transaction) *Transaction {
	txn.Events = d.keepEvents(txn.Events)
	if d.rowsLeft {
		d.reader.HeadersOnly(nil)
		d.rowsLeft = false
	}
	if d.skipping != nil {
		// Passed at the user's word (--skip-gtid): nothing of it reaches the target.
		txn.Events, txn.Filtered, txn.OpaqueRows = nil, true, false
		d.skipping = nil
	}
	applied := txn.Flavor == FlavorMariaDB && d.applied.Contains(txn.MariaDB)
	if !applied && !d.returned {
		// What the sessions held at the position: before this group.
		d.atStartRead = d.statements.temporary.Each(func(thread uint32, n statement.Name) {
			d.atStart = append(d.atStart, HeldTemporary{Thread: thread, Schema: n.Schema, Table: n.Table})
		})
	}
	// Read before the applied ones are passed: they may create temporary tables.
	d.statements.Read(txn)
	if applied {
		if !d.returned && d.sourceStarts > 0 {
			// The source started before a group the target holds: the
			// sessions it ended are history, and so are their
			// temporary tables; those held at the position came after.
			d.sourceStarts = 0
			d.holdTemporary()
		}
		return nil
	}
	d.returned = true
	return txn
}

// A group's events are gathered in the decoder's own slice (events), which
// keeps its room from group to group, and copied out once the group is
// whole, to a slice of their number: one allocation per group instead of
// one per doubling, none of them larger than it needs.
//
// maxKeptEvents bounds the room kept: a group of more events gets a slice
// of its own, and the next begins small again.
const maxKeptEvents = 4096

// keepEvents returns a copy of a whole group's events, gathered in
// d.events, and keeps their room for the next group.
func (d *Decoder) keepEvents(events []Event) []Event {
	if cap(events) > maxKeptEvents {
		d.events = nil
		return events
	}
	d.events = events[:0]
	out := make([]Event, len(events))
	copy(out, events)
	clear(events) // the room kept holds no pointers to the group
	return out
}

// lastGTID is the GTID of the last group begun, "" before the first.
func (d *Decoder) lastGTID() string {
	if d.last == nil {
		return ""
	}
	return d.last.GTID()
}

// names hands out one string per schema or table name: a group's Tables
// are named from the table maps' bytes, and every group names them again.
type names map[string]string

// maxNames bounds the names kept; past it they are made again as met.
const maxNames = 1 << 14

func (n *names) of(b []byte) string {
	if n == nil {
		return string(b)
	}
	if s, ok := (*n)[string(b)]; ok {
		return s
	}
	if *n == nil || len(*n) >= maxNames {
		*n = make(names)
	}
	s := string(b)
	(*n)[s] = s
	return s
}

// begin opens a transaction at its GTID event.
func (d *Decoder) begin(ev *replication.BinlogEvent) *Transaction {
	txn := &Transaction{
		Begin:        Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event},
		Format:       d.format,
		SourceStarts: d.sourceStarts,
		Events:       d.events[:0],
		Size:         len(ev.RawData),
		SourceTime:   time.Unix(int64(ev.Header.Timestamp), 0),
	}
	txn.Tables, txn.Schemas = txn.tablesRoom[:0], txn.schemasRoom[:0]
	txn.decoded = true
	switch g := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		txn.Flavor = FlavorMariaDB
		txn.MariaDB = mariaDBGTID(g)
		txn.CommitID = g.CommitID
		txn.Flags = MariaDBFlags(g.Flags)
		txn.flags2, txn.flagsExtra = MariaDBGTIDFlags(ev.RawData, d.format)
	case *replication.GTIDEvent:
		txn.Flavor = FlavorMySQL
		txn.MySQL = MySQLGTIDFromEvent(g.SID, "", g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = MySQLFlags(g.CommitFlag)
	case *replication.GtidTaggedLogEvent:
		txn.Flavor = FlavorMySQL
		txn.MySQL = MySQLGTIDFromEvent(g.SID, g.Tag, g.GNO)
		txn.LastCommitted, txn.SequenceNumber = g.LastCommitted, g.SequenceNumber
		txn.Flags = MySQLFlags(g.CommitFlag)
	}
	return txn
}

// add appends one event of the group and notes the schemas and tables it
// touches; undecoded is why a row event's rows could not be decoded.
func (t *Transaction) add(ev *replication.BinlogEvent, undecoded error, pending *PendingRows, names *names) {
	t.Events = append(t.Events, Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event, Undecoded: undecoded, pending: pending})
	switch e := ev.Event.(type) {
	case *replication.QueryEvent, *replication.ExecuteLoadQueryEvent:
		t.queries = true
	case *replication.RowsEvent:
		if n := int(e.ColumnCount); len(e.ColumnBitmap1)*8 < n || !allSet(e.ColumnBitmap1, n) {
			t.partialRows = true
		}
	}
	if undecoded != nil {
		t.OpaqueRows = true
	}
	t.Size += len(ev.RawData)
	if ts := time.Unix(int64(ev.Header.Timestamp), 0); ts.After(t.SourceTime) {
		t.SourceTime = ts
	}
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		if !t.touched(e.Schema, e.Table) {
			t.touch(names.of(e.Schema), names.of(e.Table))
		}
	case *replication.QueryEvent:
		if !isQuery(e, "BEGIN", "COMMIT", "ROLLBACK") {
			t.touch(string(e.Schema), "")
		}
	}
}

// touched reports whether Tables lists schema.table already; every
// statement of a group maps its tables again, and a name looked up this way
// costs no string of its own.
func (t *Transaction) touched(schema, table []byte) bool {
	for _, have := range t.Tables {
		if have.Schema == string(schema) && have.Table == string(table) {
			return true
		}
	}
	return false
}

// MariaDBFlags maps the flags byte of a MariaDB GTID event.
func MariaDBFlags(f byte) TxnFlags {
	var flags TxnFlags
	if f&replication.BINLOG_MARIADB_FL_STANDALONE != 0 {
		flags |= FlagStandalone
	}
	if f&replication.BINLOG_MARIADB_FL_TRANSACTIONAL != 0 {
		flags |= FlagTransactional
	}
	if f&replication.BINLOG_MARIADB_FL_ALLOW_PARALLEL != 0 {
		flags |= FlagAllowParallel
	}
	if f&replication.BINLOG_MARIADB_FL_WAITED != 0 {
		flags |= FlagWaited
	}
	if f&replication.BINLOG_MARIADB_FL_DDL != 0 {
		flags |= FlagDDL
	}
	return flags
}

// MySQLFlags maps a MySQL GTID event's commit flag: 1 means the transaction
// may run in parallel with others of its logical-clock interval. MySQL marks
// DDL by the absence of BEGIN, which the decoder sees from the group's shape.
func MySQLFlags(commitFlag uint8) TxnFlags {
	flags := FlagTransactional
	if commitFlag&1 != 0 {
		flags |= FlagAllowParallel
	}
	return flags
}

// MySQLGTIDFromEvent builds a MySQL GTID from a GTID event's fields.
func MySQLGTIDFromEvent(sid []byte, tag string, gno int64) gtid.MySQLGTID {
	var g gtid.MySQLGTID
	copy(g.SID[:], sid)
	g.Tag = tag
	g.GNO = uint64(gno)
	return g
}

// lastTable names the table of the group's last table map, "" when none.
func (t *Transaction) lastTable() string {
	for i := len(t.Events) - 1; i >= 0; i-- {
		if tm, ok := t.Events[i].Data.(*replication.TableMapEvent); ok {
			return string(tm.Schema) + "." + string(tm.Table)
		}
	}
	return ""
}
