// sequences.go applies the row events that set a sequence's next value as
// MariaDB's own replica does: as SETVAL, the next value and round alone.
//
// A source with binlog_row_image=MINIMAL logs a sequence's new cache of
// values (NEXTVAL past the cached ones, SETVAL) as a row event of its
// next_not_cached_value and cycle_count columns only. Applied by a BINLOG
// statement, the server writes the row with the other columns at their
// defaults and refuses it: "4085: Sequence 'db.s' has out of range value for
// options". Its replica does not write such a row outside a DDL's group: it
// takes the event's next value and round and leaves the options as they
// are (SETVAL's way, which never moves a sequence back). The source also
// flags some groups of NEXTVAL alone as DDL, and on those MariaDB's replica
// writes the row and stops with the same 4085 (checked on a binlog of the
// random load); gapless sets those as SETVAL too: no statement of theirs
// changed the options. Engines.Mark puts a SequenceValue in place of such a
// row event, and the session runs DO SETVAL(s, next, 0, round) for it. Row
// events that carry every column (binlog_row_image FULL or NOBLOB) still go
// as BINLOG statements.
package target

import (
	"fmt"
	"io"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// SequenceValue stands in a transaction's events for a row of a sequence's
// row event: its next value (next_not_cached_value) and round
// (cycle_count).
type SequenceValue struct {
	Schema, Table string
	Next, Round   int64
}

// Statement sets the sequence as its row event would on MariaDB's replica.
// The next value is not used (0): NEXTVAL returns it next, as it would
// after a restart of the source.
func (v *SequenceValue) Statement() string {
	return fmt.Sprintf("DO SETVAL(%s.%s, %d, 0, %d)", quoteName(v.Schema), quoteName(v.Table), v.Next, v.Round)
}

// Dump writes the value as binlog tools print events.
func (v *SequenceValue) Dump(w io.Writer) {
	fmt.Fprintf(w, "Sequence value: %s.%s next %d round %d\n", v.Schema, v.Table, v.Next, v.Round)
}

// Decode is never called: a SequenceValue is made, not read.
func (v *SequenceValue) Decode([]byte) error { return nil }

// The columns of a sequence's row, as CREATE SEQUENCE makes it.
const (
	sequenceNextColumn  = 0 // next_not_cached_value
	sequenceRoundColumn = 7 // cycle_count
	sequenceColumns     = 8
)

// sequenceValues puts SequenceValues in place of the row events that write
// sequences of the target without all their columns (statementSequenceValues).
func (e *Engines) sequenceValues(txn *binlog.Transaction) error {
	// Nearly every group stops here: the decoder saw no partial image, or
	// one look at the row events finds none of a sequence's.
	if !txn.MayHoldPartialRows() || !slices.ContainsFunc(txn.Events, mayBeSequenceValues) {
		return nil
	}
	var events []binlog.Event // nil until a statement is replaced
	for i := 0; i < len(txn.Events); {
		end := rowStatementEnd(txn.Events, i)
		if end == i {
			if events != nil {
				events = append(events, txn.Events[i])
			}
			i++
			continue
		}
		values, err := e.statementSequenceValues(txn, txn.Events[i:end])
		if err != nil {
			return err
		}
		switch {
		case values != nil && events == nil:
			events = append(txn.Events[:i:i], values...)
		case values != nil:
			events = append(events, values...)
		case events != nil:
			events = append(events, txn.Events[i:end]...)
		}
		i = end
	}
	if events != nil {
		txn.Events = events
	}
	return nil
}

// rowStatementEnd returns the end of the row statement that starts at
// events[i]: its table maps and row events, up to one with the
// statement-end flag; i when no row statement starts there.
func rowStatementEnd(events []binlog.Event, i int) int {
	for j := i; j < len(events); j++ {
		switch e := events[j].Data.(type) {
		case *replication.TableMapEvent:
		case *replication.RowsEvent:
			if e.Flags&replication.RowsEventStmtEndFlag != 0 {
				return j + 1
			}
		default:
			return j
		}
	}
	return len(events)
}

// statementSequenceValues returns a row statement with the SequenceValues
// of its row events that write sequences of the target without all their
// columns first, and its other events after them, less the table maps no
// row event left uses; nil when it has no such row event, or when one of
// them ends a statement that has other rows (the rest would not end).
func (e *Engines) statementSequenceValues(txn *binlog.Transaction, statement []binlog.Event) ([]binlog.Event, error) {
	// Without a look at the target when no row event can be one.
	if !slices.ContainsFunc(statement, mayBeSequenceValues) {
		return nil, nil
	}
	var values []binlog.Event
	replaced := make([]bool, len(statement))
	rowsLeft := map[uint64]bool{} // table ids of the row events left
	for i, ev := range statement {
		re, ok := ev.Data.(*replication.RowsEvent)
		if !ok {
			continue
		}
		if !mayBeSequenceValues(ev) {
			rowsLeft[re.TableID] = true
			continue
		}
		schema, table := string(re.Table.Schema), string(re.Table.Table)
		sequence, err := e.isSequence(schema, table)
		if err != nil {
			return nil, err
		}
		if !sequence {
			rowsLeft[re.TableID] = true
			continue
		}
		if err := statement[i].DecodeRows(); err != nil {
			return nil, fmt.Errorf("%s: the rows of sequence %s.%s: %w", txn, schema, table, err)
		}
		rows, ok := sequenceRows(re, schema, table)
		if !ok {
			return nil, fmt.Errorf("%s: a row event of sequence %s.%s lacks its next value (next_not_cached_value), and gapless cannot apply it; log full row images on the source (binlog_row_image=FULL) and rebuild the target", txn, schema, table)
		}
		for _, v := range rows {
			values = append(values, binlog.Event{Header: ev.Header, Data: v})
		}
		replaced[i] = true
	}
	if len(values) == 0 {
		return nil, nil
	}
	if replaced[len(statement)-1] && len(rowsLeft) > 0 {
		return nil, nil
	}
	for i, ev := range statement {
		if tm, ok := ev.Data.(*replication.TableMapEvent); ok && !rowsLeft[tm.TableID] || replaced[i] {
			continue
		}
		values = append(values, ev)
	}
	return values, nil
}

// mayBeSequenceValues reports whether ev could be a row event of a
// sequence's new values without all its columns: decoded rows written to a
// table of a sequence's column count, some column left out.
func mayBeSequenceValues(ev binlog.Event) bool {
	re, ok := ev.Data.(*replication.RowsEvent)
	return ok && ev.Undecoded == nil && re.Table != nil && writesRows(ev.Header) &&
		re.ColumnCount == sequenceColumns && !allColumns(re.ColumnBitmap1, int(re.ColumnCount))
}

// writesRows reports whether h is a write (insert) row event's.
func writesRows(h *replication.EventHeader) bool {
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

// sequenceRows reads the rows of a sequence's row event; false when a row
// lacks its next value. A row without its round has round 0, as on
// MariaDB's replica (the column's default).
func sequenceRows(re *replication.RowsEvent, schema, table string) ([]*SequenceValue, bool) {
	values := make([]*SequenceValue, 0, len(re.Rows))
	for _, row := range re.Rows {
		if len(row) != sequenceColumns {
			return nil, false
		}
		next, ok := integer(row[sequenceNextColumn])
		if !ok {
			return nil, false
		}
		round, _ := integer(row[sequenceRoundColumn])
		values = append(values, &SequenceValue{Schema: schema, Table: table, Next: next, Round: round})
	}
	return values, len(values) > 0
}

// integer is a decoded BIGINT column's value.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	}
	return 0, false
}

// allColumns reports whether bitmap has the first n bits set.
func allColumns(bitmap []byte, n int) bool {
	for i := range n {
		if i/8 >= len(bitmap) || bitmap[i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}
