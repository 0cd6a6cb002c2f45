package target

import (
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// TestSequenceValues replaces a sequence's row event without all its
// columns (binlog_row_image=MINIMAL) and its table map by a SequenceValue,
// and leaves full images, other tables and statements of several tables.
func TestSequenceValues(t *testing.T) {
	ev := func(typ replication.EventType, d replication.Event) binlog.Event {
		return binlog.Event{Header: &replication.EventHeader{EventType: typ}, Data: d}
	}
	query := func(q string) binlog.Event {
		return ev(replication.QUERY_EVENT, &replication.QueryEvent{Query: []byte(q)})
	}
	tableMap := func(id uint64, table string) binlog.Event {
		return ev(replication.TABLE_MAP_EVENT, &replication.TableMapEvent{TableID: id, Schema: []byte("s"), Table: []byte(table)})
	}
	rows := func(id uint64, table string, bitmap byte, end bool, values ...[]any) binlog.Event {
		e := &replication.RowsEvent{TableID: id, Table: &replication.TableMapEvent{TableID: id, Schema: []byte("s"), Table: []byte(table)},
			ColumnCount: 8, ColumnBitmap1: []byte{bitmap}, Rows: values}
		if end {
			e.Flags = replication.RowsEventStmtEndFlag
		}
		return ev(replication.WRITE_ROWS_EVENTv1, e)
	}
	minimal := []any{int64(31), nil, nil, nil, nil, nil, nil, int64(2)}
	full := []any{int64(31), int64(1), int64(100), int64(1), int64(3), int64(10), int8(0), int64(0)}
	begin, commit, annotate := query("BEGIN"), query("COMMIT"), ev(replication.MARIADB_ANNOTATE_ROWS_EVENT, &replication.MariadbAnnotateRowsEvent{})
	for _, c := range []struct {
		name   string
		events []binlog.Event
		want   []string // a SequenceValue's statement, else the event's type
	}{
		{"minimal image", []binlog.Event{begin, annotate, tableMap(7, "sq"), rows(7, "sq", 0x81, true, minimal), commit},
			[]string{"QueryEvent", "MariadbAnnotateRowsEvent", "DO SETVAL(`s`.`sq`, 31, 0, 2)", "QueryEvent"}},
		{"two rows, then a table", []binlog.Event{begin, tableMap(7, "sq"), rows(7, "sq", 0x01, true, minimal, minimal), tableMap(8, "t"), rows(8, "t", 0x01, true, minimal), commit},
			[]string{"QueryEvent", "DO SETVAL(`s`.`sq`, 31, 0, 2)", "DO SETVAL(`s`.`sq`, 31, 0, 2)", "TableMapEvent", "RowsEvent", "QueryEvent"}},
		{"a statement of two sequences", []binlog.Event{begin, annotate, tableMap(7, "sq"), tableMap(9, "sq2"), rows(7, "sq", 0x81, false, minimal), rows(9, "sq2", 0x81, true, minimal), commit},
			[]string{"QueryEvent", "MariadbAnnotateRowsEvent", "DO SETVAL(`s`.`sq`, 31, 0, 2)", "DO SETVAL(`s`.`sq2`, 31, 0, 2)", "QueryEvent"}},
		{"full image", []binlog.Event{begin, tableMap(7, "sq"), rows(7, "sq", 0xff, true, full), commit},
			[]string{"QueryEvent", "TableMapEvent", "RowsEvent", "QueryEvent"}},
		{"not a sequence", []binlog.Event{begin, tableMap(8, "t"), rows(8, "t", 0x81, true, minimal), commit},
			[]string{"QueryEvent", "TableMapEvent", "RowsEvent", "QueryEvent"}},
		{"a statement of a sequence and a table", []binlog.Event{begin, tableMap(8, "t"), tableMap(7, "sq"), rows(7, "sq", 0x81, false, minimal), rows(8, "t", 0x81, true, minimal), commit},
			[]string{"QueryEvent", "DO SETVAL(`s`.`sq`, 31, 0, 2)", "TableMapEvent", "RowsEvent", "QueryEvent"}},
		{"a statement ended by its sequence's rows", []binlog.Event{begin, tableMap(8, "t"), tableMap(7, "sq"), rows(8, "t", 0x81, false, minimal), rows(7, "sq", 0x81, true, minimal), commit},
			[]string{"QueryEvent", "TableMapEvent", "TableMapEvent", "RowsEvent", "RowsEvent", "QueryEvent"}},
	} {
		e := NewEngines(nil, true)
		e.known[tableName{"s", "sq"}], e.sequences[tableName{"s", "sq"}] = false, true
		e.known[tableName{"s", "sq2"}], e.sequences[tableName{"s", "sq2"}] = false, true
		e.known[tableName{"s", "t"}] = true
		txn := &binlog.Transaction{Flavor: binlog.FlavorMariaDB, Events: slices.Clone(c.events)}
		if err := e.sequenceValues(txn); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, ev := range txn.Events {
			switch d := ev.Data.(type) {
			case *SequenceValue:
				got = append(got, d.Statement())
			case *replication.QueryEvent:
				got = append(got, "QueryEvent")
			case *replication.TableMapEvent:
				got = append(got, "TableMapEvent")
			case *replication.RowsEvent:
				got = append(got, "RowsEvent")
			case *replication.MariadbAnnotateRowsEvent:
				got = append(got, "MariadbAnnotateRowsEvent")
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
