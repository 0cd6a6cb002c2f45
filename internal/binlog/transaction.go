// Package binlog owns everything between the source's binlog and the applier:
// the receiver (binlog dump as a replica), the relay log (segment files in
// binlog file format), and the decoder that turns relay events into
// Transactions.
//
// Transaction is the one contract between this package and the applier: a
// complete source event group, with everything the applier and the scheduling
// policies need, and nothing that depends on how it will be applied.
package binlog

import (
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
	"gapless/internal/statement"
)

// Flavor is the kind of server that wrote the binlog.
type Flavor uint8

const (
	FlavorMariaDB Flavor = iota
	FlavorMySQL
)

func (f Flavor) String() string {
	if f == FlavorMySQL {
		return "mysql"
	}
	return "mariadb"
}

// TxnFlags are the properties the source recorded for an event group.
type TxnFlags uint8

const (
	FlagDDL           TxnFlags = 1 << iota // the group holds a DDL statement
	FlagStandalone                         // a single statement with no BEGIN/COMMIT around it
	FlagTransactional                      // can be rolled back (no non-transactional table written)
	FlagAllowParallel                      // the source did not set skip_parallel_replication
	FlagWaited                             // the source saw a row lock wait while running it
	// FlagKnownStatements: the group holds statements, and every one is
	// plain DML (INSERT, REPLACE, UPDATE, DELETE) that names only tables
	// listed in Tables, none of them one a source session may hold as a
	// temporary table, and that reads no session state but what its events
	// carry; the group is flagged transactional and may run in parallel on
	// the source. Set by the decoder from the statements' text; the applier
	// clears it when the target says otherwise of a table (a view, another
	// engine, triggers). Such a group may run on any apply session, keyed
	// by its tables (see internal/statement).
	FlagKnownStatements
)

// TableRef names one table a transaction touched.
type TableRef struct {
	Schema string
	Table  string
}

func (t TableRef) String() string { return t.Schema + "." + t.Table }

// StatementWrites is what one plain DML statement writes.
type StatementWrites struct {
	// Tables it names, with the default database filled in.
	Tables []TableRef
	// Rows are the rows it may write, when its text says them (then it
	// names one table); nil when it may write any row of its tables.
	Rows *statement.Rows
	// Values[r*len(Rows.Columns)+c] is row r's value of Rows.Columns[c],
	// from the text; -1 when the text gives no plain number below 2^63
	// for it.
	Values []int64
}

// Event is one binlog event of a transaction: the exact bytes the source sent
// (header, body and checksum) and their decoded form.
type Event struct {
	Header *replication.EventHeader
	Raw    []byte
	Data   replication.Event
	// Undecoded says why a row event's rows could not be decoded here (a
	// column type or layout the row decoder does not know); nil when they
	// were. Data is then a *replication.RowsEvent with its header (table,
	// columns, bitmaps) and no Rows; Raw is whole, and the target decodes it.
	Undecoded error
	// pending holds a row event's row images while its rows are pending
	// (rowimages.go): Data's Rows are nil until DecodeRows, and EachImage
	// reads chosen columns. nil once decoded, and for every other event.
	// (A pointer, so that an Event, copied by every loop over a group's
	// events, stays small.)
	pending *PendingRows
}

// Transaction is one source event group, from its GTID event to its commit.
type Transaction struct {
	Flavor Flavor
	// MariaDB is the GTID of a MariaDB source; Domain doubles as the stream of
	// in-order transactions for the domain policy.
	MariaDB gtid.MariaDBGTID
	// MySQL is the GTID of a MySQL source.
	MySQL gtid.MySQLGTID
	// CommitID is MariaDB's group commit id (0 when the group committed alone).
	CommitID uint64
	// LastCommitted and SequenceNumber are MySQL's logical clock.
	LastCommitted, SequenceNumber int64
	Flags                         TxnFlags

	// Schemas and Tables touched, in first-seen order, without repeats.
	Schemas []string
	Tables  []TableRef
	// tablesRoom and schemasRoom are where Tables and Schemas begin, so
	// that a group of a few tables costs no allocation of its own for them.
	tablesRoom  [4]TableRef
	schemasRoom [1]string

	// Begin is the GTID event. Events are the rest of the group in source
	// order, including BEGIN and the terminating XID or COMMIT when present.
	Begin  Event
	Events []Event
	// Format is the format description event the group was written under;
	// the applier needs it to replay row events.
	Format Event

	Size       int       // bytes of all events, GTID event included
	SourceTime time.Time // when the source wrote the group

	// decoded: the Decoder made the group, and says of it, while its bytes
	// are at hand, what is asked of every transaction several times, in
	// other goroutines, long after: Begin's flags (flags2, flagsExtra), and
	// whether any event is a query event (queries; see MayHoldQueries),
	// and whether a row event's images lack a column (partialRows; see
	// MayHoldPartialRows).
	decoded            bool
	flags2, flagsExtra byte
	queries            bool
	partialRows        bool

	// Filtered is true when the replication filters leave nothing of the
	// group to apply: it only advances the position.
	Filtered bool
	// AppliedAhead is true, with Filtered, for a group that a run before
	// applied past a gap (causal commit order): it passes like a filtered
	// one, but is not counted as filtered.
	AppliedAhead bool

	// RolledBack is true, with Filtered, for a group that ends in ROLLBACK
	// and whose row events are all on tables transactional on the target
	// (target.Engines.Mark): it changed nothing that stays, and passes like
	// a filtered one, not counted as filtered.
	RolledBack bool

	// WritesSequence is true for a group that writes a table the target
	// holds as a SEQUENCE (target.Engines.Mark). MariaDB answers a
	// sequence's change before its redo is on disk, so such a group's
	// position is written at once, its commit making the change durable.
	WritesSequence bool
	// SequencesOnly is true, with WritesSequence, when the group's row
	// events write sequences alone and it holds no statement: applying it
	// again sets the same values (target.Session.EndBinlogged).
	SequencesOnly bool

	// MayUseTemporary is set by StatementReader.Read when a statement of
	// the group (XA statements aside) may create, drop or use a table that
	// a source session holds as temporary: it says TEMPORARY, or the table
	// part of a held name, or the held names are not known; or the group
	// loads a file (LOAD DATA). Row events never use one.
	MayUseTemporary bool

	// SourceStarts is how many times the source's binlog said, before the
	// group and since the decoder began (or since the last group it passed
	// as held by the target already), that the source had started (a
	// format description event with its creation time set: the first
	// binlog a server writes after it starts). A start ended every session
	// of the source, and their temporary tables with them, without a DROP
	// TEMPORARY TABLE in the binlog.
	SourceStarts int

	// Statements are what the statements of a FlagKnownStatements group
	// write, in order: per statement, the tables it names and, when its
	// text says them plainly, its rows (meaningless without the flag).
	Statements []StatementWrites

	// OpaqueRows is true when some row event's rows could not be decoded
	// (see Event.Undecoded): the transaction applies like any other, but its
	// row values are unknown, so nothing may rely on them. A scheduling
	// policy that derives conflicts from row values must treat each table
	// it writes as written whole.
	OpaqueRows bool
}

// GTID prints the transaction's GTID as the source prints it.
func (t *Transaction) GTID() string {
	if t.Flavor == FlavorMySQL {
		return t.MySQL.String()
	}
	return t.MariaDB.String()
}

func (t *Transaction) String() string {
	return fmt.Sprintf("transaction %s (%d events, %d bytes)", t.GTID(), len(t.Events)+1, t.Size)
}

// Has reports whether all of f is set.
func (t *Transaction) Has(f TxnFlags) bool { return t.Flags&f == f }

// RowEvents returns the row events in source order; their Rows are nil
// while pending (Event.RowsPending: Event.DecodeRows decodes them).
func (t *Transaction) RowEvents() []*replication.RowsEvent {
	var rows []*replication.RowsEvent
	for _, ev := range t.Events {
		if r, ok := ev.Data.(*replication.RowsEvent); ok {
			rows = append(rows, r)
		}
	}
	return rows
}

func (t *Transaction) touch(schema, table string) {
	if schema == "" {
		return
	}
	seen := false
	for _, s := range t.Schemas {
		if s == schema {
			seen = true
			break
		}
	}
	if !seen {
		t.Schemas = append(t.Schemas, schema)
	}
	if table == "" {
		return
	}
	ref := TableRef{schema, table}
	for _, have := range t.Tables {
		if have == ref {
			return
		}
	}
	t.Tables = append(t.Tables, ref)
}

// GTIDFlags returns the flags2 and flags_extra bytes of a MariaDB GTID
// event group's GTID event (MariaDBGTIDFlags): as the decoder read them, or
// read from Begin now.
func (t *Transaction) GTIDFlags() (flags2, extra byte) {
	if t.decoded && t.Flavor == FlavorMariaDB {
		return t.flags2, t.flagsExtra
	}
	return MariaDBGTIDFlags(t.Begin.Raw, t.Format)
}

// MariaDBGTIDFlags returns the flags2 and flags_extra bytes of a MariaDB
// GTID event, raw, under the format description format. Layout: seq_no
// (8), domain_id (4), flags2 (1), commit_id (8) if flags2 has
// FL_GROUP_COMMIT_ID, an XID (format id 4, gtrid length 1, bqual length
// 1, data) when flags2 has FL_PREPARED_XA or FL_COMPLETED_XA, then, when
// bytes remain, flags_extra.
func MariaDBGTIDFlags(raw []byte, format Event) (flags2, extra byte) {
	const preparedXA, completedXA = 0x40, 0x80 // flags2 bits go-mysql does not name
	body := Payload(raw, format)
	if len(body) < 13 {
		return 0, 0
	}
	flags2 = body[12]
	pos := 13
	if flags2&replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID != 0 {
		pos += 8
	}
	if flags2&(preparedXA|completedXA) != 0 {
		if pos+6 > len(body) {
			return flags2, 0
		}
		pos += 6 + int(body[pos+4]) + int(body[pos+5])
	}
	if pos < len(body) {
		extra = body[pos]
	}
	return flags2, extra
}

// MayHoldQueries reports whether any of the group's events may be a query
// event or an execute-load-query event: false only for a group the Decoder
// made and met none in (events taken out since, as filters do, leave that
// true). A search of a group's events for statements asks it first.
func (t *Transaction) MayHoldQueries() bool { return !t.decoded || t.queries }

// MayHoldPartialRows reports whether a row event of the group may lack a
// column of its table in its (first) images: false only for a group the
// Decoder made and met none in. A search of a group's row events for
// partial images asks it first: it costs no look at the events, which
// by then have left the processor's caches.
func (t *Transaction) MayHoldPartialRows() bool { return !t.decoded || t.partialRows }
