// decoder.go turns the relay log's events into Transactions. It is the only
// place that knows how a source event group maps onto the Transaction
// contract; it skips the groups the target already holds, so everything it
// emits is still to be applied, in relay-log order.
package binlog

import (
	"context"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
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
}

// NewDecoder decodes the relay log from its start, skipping every group that
// applied already contains.
func NewDecoder(log *RelayLog, applied Applied) *Decoder {
	return &Decoder{reader: log.NewReader(), applied: applied}
}

// Close releases the relay log reader.
func (d *Decoder) Close() { d.reader.Close() }

// Next returns the next transaction to apply, blocking until one is whole.
func (d *Decoder) Next(ctx context.Context) (*Transaction, error) {
	for {
		ev, err := d.reader.Next(ctx)
		if err != nil {
			return nil, err
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			d.format = Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event}
			continue
		}
		single := d.groups.state == afterGTID
		cut, err := d.groups.add(ev)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptRelay, err)
		}
		if cut == cutControl {
			continue
		}
		if d.txn == nil {
			d.txn = d.begin(ev)
			continue
		}
		d.txn.add(ev)
		if cut == cutComplete && single && d.txn.Flavor == FlavorMySQL {
			// A MySQL group without BEGIN is one DDL statement.
			d.txn.Flags = d.txn.Flags&^FlagTransactional | FlagDDL | FlagStandalone
		}
		if cut == cutComplete {
			txn := d.txn
			d.txn = nil
			if txn.Flavor == FlavorMariaDB && d.applied.Contains(txn.MariaDB) {
				continue
			}
			return txn, nil
		}
	}
}

// begin opens a transaction at its GTID event.
func (d *Decoder) begin(ev *replication.BinlogEvent) *Transaction {
	txn := &Transaction{
		Begin:      Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event},
		Format:     d.format,
		Size:       len(ev.RawData),
		SourceTime: time.Unix(int64(ev.Header.Timestamp), 0),
	}
	switch g := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		txn.Flavor = FlavorMariaDB
		txn.MariaDB = mariaDBGTID(g)
		txn.CommitID = g.CommitID
		txn.Flags = MariaDBFlags(g.Flags)
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

// add appends one event of the group and notes the schemas and tables it touches.
func (t *Transaction) add(ev *replication.BinlogEvent) {
	t.Events = append(t.Events, Event{Header: ev.Header, Raw: ev.RawData, Data: ev.Event})
	t.Size += len(ev.RawData)
	if ts := time.Unix(int64(ev.Header.Timestamp), 0); ts.After(t.SourceTime) {
		t.SourceTime = ts
	}
	switch e := ev.Event.(type) {
	case *replication.TableMapEvent:
		t.touch(string(e.Schema), string(e.Table))
	case *replication.QueryEvent:
		if !isQuery(e, "BEGIN", "COMMIT", "ROLLBACK") {
			t.touch(string(e.Schema), "")
		}
	}
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
