// Tests that the decoder turns relay log groups into Transactions carrying
// the source's GTID, group commit id or logical clock, flags, schemas and
// tables, events, size, format description and time, and that it skips the
// groups the applied position already holds.
package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// decodeAll returns every transaction the decoder can return without waiting.
func decodeAll(t testing.TB, l *RelayLog, applied gtid.MariaDBPosition) []*Transaction {
	t.Helper()
	d := NewDecoder(l, applied)
	defer d.Close()
	var txns []*Transaction
	for {
		txn, err := d.Next(canceledCtx)
		if errors.Is(err, context.Canceled) {
			return txns
		}
		if err != nil {
			t.Fatal(err)
		}
		txns = append(txns, txn)
	}
}

// decodeRows decodes the rows of txn's row events that are pending.
func decodeRows(t testing.TB, txn *Transaction) {
	t.Helper()
	for i := range txn.Events {
		if err := txn.Events[i].DecodeRows(); err != nil {
			t.Fatal(err)
		}
	}
}

func refs(names ...string) []TableRef {
	var out []TableRef
	for i := 0; i+1 < len(names); i += 2 {
		out = append(out, TableRef{names[i], names[i+1]})
	}
	return out
}

func checkTxnEvents(t testing.TB, txn *Transaction, group [][]byte, format []byte) {
	t.Helper()
	if !bytes.Equal(txn.Begin.Raw, group[0]) {
		t.Errorf("%s: Begin is not the GTID event", txn.GTID())
	}
	if txn.Begin.Header == nil || txn.Begin.Data == nil {
		t.Errorf("%s: Begin is not decoded", txn.GTID())
	}
	if len(txn.Events) != len(group)-1 {
		t.Fatalf("%s: %d events, want %d", txn.GTID(), len(txn.Events), len(group)-1)
	}
	for i, ev := range txn.Events {
		if !bytes.Equal(ev.Raw, group[i+1]) || ev.Header == nil || ev.Data == nil {
			t.Errorf("%s: event %d differs from the source's", txn.GTID(), i)
		}
	}
	if want := len(joinEvents(group)); txn.Size != want {
		t.Errorf("%s: Size %d, want %d", txn.GTID(), txn.Size, want)
	}
	if !bytes.Equal(txn.Format.Raw, format) {
		t.Errorf("%s: Format is not the segment's format description", txn.GTID())
	}
	if _, ok := txn.Format.Data.(*replication.FormatDescriptionEvent); !ok {
		t.Errorf("%s: Format holds %T", txn.GTID(), txn.Format.Data)
	}
}

func TestDecoderTransactions(t *testing.T) {
	e := newEncoder()
	format := e.format()
	at := func(ts uint32) { e.when = 1_700_000_000 + ts }

	at(10)
	multi := [][]byte{
		e.mariaGTID(1, 0, gtidTransactional|gtidAllowParallel|gtidWaited, 0),
		e.tableMap(70, "shop", "orders"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 1),
	}
	at(13)
	multi = append(multi,
		e.tableMap(71, "shop", "items"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 71, 2, 3),
		e.tableMap(72, "crm", "users"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 72, 4),
	)
	at(12)
	multi = append(multi, e.tableMap(70, "shop", "orders"), e.writeRows(replication.WRITE_ROWS_EVENTv1, 70, 5), e.xid(77))
	at(20)
	committed := e.mariaTxn(0, 2, 42, "shop", "orders", 6)
	e.server = 2
	at(21)
	ddl := e.mariaDDL(1, 7, "crm", "CREATE TABLE crm.notes (a INT)")
	at(22)
	stmt := e.mariaStatementTxn(1, 8, "shop", "INSERT INTO log VALUES (1)")

	tests := []struct {
		gtid     string
		group    [][]byte
		commitID uint64
		flags    TxnFlags
		schemas  []string
		tables   []TableRef
		rows     int
		time     uint32
	}{
		{"0-1-1", multi, 0, FlagTransactional | FlagAllowParallel | FlagWaited,
			[]string{"shop", "crm"}, refs("shop", "orders", "shop", "items", "crm", "users"), 4, 13},
		{"0-1-2", committed, 42, FlagTransactional | FlagAllowParallel, []string{"shop"}, refs("shop", "orders"), 1, 20},
		{"1-2-7", ddl, 0, FlagDDL | FlagStandalone | FlagAllowParallel, []string{"crm"}, nil, 0, 21},
		{"1-2-8", stmt, 0, FlagAllowParallel, []string{"shop"}, nil, 0, 22},
	}
	var groups []testGroup
	for _, tt := range tests {
		groups = append(groups, testGroup{id: mustGTID(t, tt.gtid), events: tt.group})
	}
	l := openTestRelay(t, t.TempDir(), 300)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	if len(l.Segments()) < len(groups) {
		t.Fatalf("%d segments; every group should start one", len(l.Segments()))
	}

	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != len(tests) {
		t.Fatalf("%d transactions, want %d", len(txns), len(tests))
	}
	for i, tt := range tests {
		txn := txns[i]
		t.Run(tt.gtid, func(t *testing.T) {
			if txn.Flavor != FlavorMariaDB || txn.GTID() != tt.gtid || txn.MariaDB != mustGTID(t, tt.gtid) {
				t.Errorf("%s transaction %s, want mariadb %s", txn.Flavor, txn.GTID(), tt.gtid)
			}
			if txn.CommitID != tt.commitID {
				t.Errorf("CommitID %d, want %d", txn.CommitID, tt.commitID)
			}
			if txn.Flags != tt.flags {
				t.Errorf("Flags %05b, want %05b", txn.Flags, tt.flags)
			}
			if !slices.Equal(txn.Schemas, tt.schemas) {
				t.Errorf("Schemas %q, want %q", txn.Schemas, tt.schemas)
			}
			if !slices.Equal(txn.Tables, tt.tables) {
				t.Errorf("Tables %v, want %v", txn.Tables, tt.tables)
			}
			if n := len(txn.RowEvents()); n != tt.rows {
				t.Errorf("%d row events, want %d", n, tt.rows)
			}
			if want := time.Unix(int64(1_700_000_000+tt.time), 0); !txn.SourceTime.Equal(want) {
				t.Errorf("SourceTime %s, want %s", txn.SourceTime, want)
			}
			checkTxnEvents(t, txn, tt.group, format)
		})
	}
	decodeRows(t, txns[0])
	if rows := txns[0].RowEvents(); len(rows[1].Rows) != 2 || rows[1].Rows[1][0] != int32(3) {
		t.Errorf("rows of the second row event: %v", rows[1].Rows)
	}
}

func TestDecoderSkipsApplied(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 12, map[uint32]uint64{})
	l := openTestRelay(t, t.TempDir(), 800)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	tests := []struct {
		applied string
		want    []string
	}{
		{"", []string{"0-1-1", "1-1-1", "0-1-2", "1-1-2", "0-1-3", "1-1-3", "0-1-4", "1-1-4", "0-1-5", "1-1-5", "0-1-6", "1-1-6"}},
		{"0-1-4,1-1-2", []string{"1-1-3", "1-1-4", "0-1-5", "1-1-5", "0-1-6", "1-1-6"}},
		{"1-1-5", []string{"0-1-1", "0-1-2", "0-1-3", "0-1-4", "0-1-5", "0-1-6", "1-1-6"}},
		{"0-9-3,7-1-100", []string{"1-1-1", "1-1-2", "1-1-3", "0-1-4", "1-1-4", "0-1-5", "1-1-5", "0-1-6", "1-1-6"}},
		{"0-1-6,1-1-6", nil},
		{"0-1-60,1-1-60", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, txn := range decodeAll(t, l, mustPosition(t, tt.applied)) {
			got = append(got, txn.GTID())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("applied %q: decoded %v, want %v", tt.applied, got, tt.want)
		}
	}
}

func TestDecoderWaitsForWholeGroups(t *testing.T) {
	e := newEncoder()
	groups := makeGroups(e, 3, map[uint32]uint64{})
	l := openTestRelay(t, t.TempDir(), 0)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(l, gtid.MariaDBPosition{})
	defer d.Close()
	got := make(chan *Transaction, len(groups))
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			txn, err := d.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			got <- txn
		}
	}()
	for _, g := range groups {
		select {
		case txn := <-got:
			t.Fatalf("decoder returned %s before it was appended", txn.GTID())
		case <-time.After(20 * time.Millisecond):
		}
		appendGroups(t, l, []testGroup{g})
		select {
		case txn := <-got:
			if txn.MariaDB != g.id {
				t.Fatalf("decoded %s, want %s", txn.GTID(), g.id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("decoder did not return %s", g.id)
		}
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled decoder returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("canceling the context did not stop the decoder")
	}
}

func TestDecoderMySQL(t *testing.T) {
	sid, err := gtid.ParseSID("3E11FA47-71CA-11E1-9E33-C80AA9429562")
	if err != nil {
		t.Fatal(err)
	}
	e := newEncoder()
	format := e.mysqlFormat()
	tests := []struct {
		group                   [][]byte
		gno, last, seq          int64
		flags                   TxnFlags
		schemas                 []string
		tables                  []TableRef
		rows                    int
		beginEvent, commitEvent replication.EventType
	}{
		{e.mysqlTxn(sid, 23, 20, 23, "shop", "orders", 1, 2), 23, 20, 23, FlagTransactional | FlagAllowParallel,
			[]string{"shop"}, refs("shop", "orders"), 1, replication.QUERY_EVENT, replication.XID_EVENT},
		{e.mysqlDDL(sid, 24, 23, 24, "shop", "CREATE TABLE shop.notes (a INT)"), 24, 23, 24, FlagDDL | FlagStandalone | FlagAllowParallel,
			[]string{"shop"}, nil, 0, replication.QUERY_EVENT, replication.QUERY_EVENT},
		{e.mysqlTxn(sid, 25, 24, 26, "crm", "users", 3), 25, 24, 26, FlagTransactional | FlagAllowParallel,
			[]string{"crm"}, refs("crm", "users"), 1, replication.QUERY_EVENT, replication.XID_EVENT},
	}
	l := openTestRelay(t, t.TempDir(), 0)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if err := l.Append(tt.group, gtid.MariaDBGTID{}); err != nil {
			t.Fatal(err)
		}
	}
	txns := decodeAll(t, l, mustPosition(t, "0-1-100"))
	if len(txns) != len(tests) {
		t.Fatalf("%d transactions, want %d", len(txns), len(tests))
	}
	for i, tt := range tests {
		txn := txns[i]
		want := "3e11fa47-71ca-11e1-9e33-c80aa9429562:" + strconv.FormatInt(tt.gno, 10)
		t.Run(want, func(t *testing.T) {
			if txn.Flavor != FlavorMySQL || txn.GTID() != want || txn.MySQL.SID != sid || txn.MySQL.GNO != uint64(tt.gno) || txn.MySQL.Tag != "" {
				t.Errorf("%s transaction %s, want mysql %s", txn.Flavor, txn.GTID(), want)
			}
			if txn.LastCommitted != tt.last || txn.SequenceNumber != tt.seq {
				t.Errorf("logical clock %d/%d, want %d/%d", txn.LastCommitted, txn.SequenceNumber, tt.last, tt.seq)
			}
			if txn.Flags != tt.flags {
				t.Errorf("Flags %05b, want %05b", txn.Flags, tt.flags)
			}
			if !slices.Equal(txn.Schemas, tt.schemas) || !slices.Equal(txn.Tables, tt.tables) {
				t.Errorf("Schemas %q Tables %v, want %q %v", txn.Schemas, txn.Tables, tt.schemas, tt.tables)
			}
			if rows := txn.RowEvents(); len(rows) != tt.rows || (tt.rows > 0 && rows[0].Version != 2) {
				t.Errorf("%d row events, want %d of version 2", len(rows), tt.rows)
			}
			first, last := txn.Events[0].Header.EventType, txn.Events[len(txn.Events)-1].Header.EventType
			if first != tt.beginEvent || last != tt.commitEvent {
				t.Errorf("events run from %s to %s", first, last)
			}
			if txn.MariaDB != (gtid.MariaDBGTID{}) {
				t.Errorf("MySQL transaction carries MariaDB GTID %s", txn.MariaDB)
			}
			checkTxnEvents(t, txn, tt.group, format)
		})
	}
}

func TestDecoderRealBinlog(t *testing.T) {
	data := readFixture(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	l := openTestRelay(t, dir, 0)
	ddl := FlagDDL | FlagStandalone | FlagAllowParallel
	innodb := FlagTransactional | FlagAllowParallel
	tests := []struct {
		gtid   string
		flags  TxnFlags
		tables []TableRef
		rows   int
		events int
		last   replication.EventType
	}{
		{"0-1-1", ddl, nil, 0, 1, replication.QUERY_EVENT},
		{"0-1-2", ddl, nil, 0, 1, replication.QUERY_EVENT},
		{"0-1-3", innodb, refs("d1", "t"), 1, 4, replication.XID_EVENT},
		{"0-1-4", innodb, refs("d1", "t"), 2, 7, replication.XID_EVENT},
		{"1-1-1", ddl, nil, 0, 1, replication.QUERY_EVENT},
		{"1-1-2", FlagAllowParallel, refs("d1", "m"), 1, 4, replication.QUERY_EVENT},
		{"1-1-3", FlagAllowParallel, nil, 0, 2, replication.QUERY_EVENT},
		// a statement the decoder reads: plain DML on d1.t
		{"0-1-5", innodb | FlagKnownStatements, refs("d1", "t"), 0, 2, replication.XID_EVENT},
	}
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != len(tests) {
		t.Fatalf("%d transactions, want %d", len(txns), len(tests))
	}
	format := data[4 : 4+252]
	size := 0
	for i, tt := range tests {
		txn := txns[i]
		if txn.GTID() != tt.gtid || txn.Flags != tt.flags || !slices.Equal(txn.Tables, tt.tables) {
			t.Errorf("transaction %d: %s flags %05b tables %v; want %s %05b %v", i, txn.GTID(), txn.Flags, txn.Tables, tt.gtid, tt.flags, tt.tables)
		}
		if len(txn.RowEvents()) != tt.rows || len(txn.Events) != tt.events || txn.Events[len(txn.Events)-1].Header.EventType != tt.last {
			t.Errorf("%s: %d events, %d row events, ending with %s", tt.gtid, len(txn.Events), len(txn.RowEvents()), txn.Events[len(txn.Events)-1].Header.EventType)
		}
		if !bytes.Equal(txn.Format.Raw, format) {
			t.Errorf("%s: Format is not the binlog's format description", tt.gtid)
		}
		raw := txn.Begin.Raw
		for _, ev := range txn.Events {
			raw = append(bytes.Clone(raw), ev.Raw...)
		}
		if txn.Size != len(raw) || !bytes.Contains(data, raw) {
			t.Errorf("%s: the events are not the binlog's bytes", tt.gtid)
		}
		size += txn.Size
	}
	decodeRows(t, txns[3])
	if rows := txns[3].RowEvents(); len(rows) == 2 && (len(rows[1].Rows) != 2 || rows[1].Rows[1][1] != "z") {
		t.Errorf("update rows: %v", rows[1].Rows)
	}
	if size != 1664 {
		t.Errorf("transactions hold %d bytes, the binlog's groups 1664", size)
	}
	if got := decodeAll(t, l, mustPosition(t, "0-1-4,1-1-2")); len(got) != 2 || got[0].GTID() != "1-1-3" || got[1].GTID() != "0-1-5" {
		t.Errorf("after 0-1-4,1-1-2 the decoder returned %d transactions", len(got))
	}
}

// TestDecoderLeavesTheRowsOfLargeTransactions: a transaction larger than
// decodeRowsUpTo comes out with every event whole but no row decoded
// (OpaqueRows, each row event's Undecoded saying why); the transactions
// around it have their rows.
func TestDecoderLeavesTheRowsOfLargeTransactions(t *testing.T) {
	e := newEncoder()
	format := e.format()
	small := makeGroups(e, 2, map[uint32]uint64{})
	big := bigTxn(e, 10, decodeRowsUpTo/8000+100)
	after := makeGroups(e, 2, map[uint32]uint64{0: 20, 1: 20})
	l := openTestRelay(t, t.TempDir(), 0)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, small)
	appendGroups(t, l, []testGroup{big})
	appendGroups(t, l, after)
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != 5 {
		t.Fatalf("decoded %d transactions, want 5", len(txns))
	}
	for i, txn := range txns {
		large := i == 2
		if txn.Size <= decodeRowsUpTo == large || txn.OpaqueRows != large {
			t.Errorf("%s: %d bytes, OpaqueRows %v", txn, txn.Size, txn.OpaqueRows)
		}
		rowEvents := 0
		for j, ev := range txn.Events {
			re, ok := ev.Data.(*replication.RowsEvent)
			if !ok {
				continue
			}
			rowEvents++
			if large && (len(re.Rows) != 0 || !errors.Is(ev.Undecoded, errLargeTransaction) || re.Table == nil) {
				t.Fatalf("%s: a row event with %d rows, table %v, Undecoded %v; want its header only", txn, len(re.Rows), re.Table, ev.Undecoded)
			}
			if !large && (!ev.RowsPending() || txn.Events[j].DecodeRows() != nil || len(re.Rows) == 0 || ev.Undecoded != nil) {
				t.Fatalf("%s: a row event with %d rows, Undecoded %v; want them decoded", txn, len(re.Rows), ev.Undecoded)
			}
		}
		if large {
			checkTxnEvents(t, txn, big.events, format)
			if rowEvents != (len(big.events)-2)/2 {
				t.Errorf("%s: %d row events, want %d", txn, rowEvents, (len(big.events)-2)/2)
			}
		}
	}
}

// TestDecoderCountsSourceStarts checks Transaction.SourceStarts: a format
// description with its creation time set (the source started) counts once,
// however many segments the relay log rotated into for their size after
// it, and one without it (a reconnection) not at all.
func TestDecoderCountsSourceStarts(t *testing.T) {
	e := newEncoder()
	created := func(ts uint32) []byte {
		f := e.format()
		binary.LittleEndian.PutUint32(f[createdAt:], ts)
		return withChecksum(f)
	}
	seq := map[uint32]uint64{}
	sessions := []struct {
		format []byte
		groups []testGroup
		starts int
	}{
		{created(1_700_000_000), makeGroups(e, 12, seq), 1},
		{e.format(), makeGroups(e, 6, seq), 1},
		{created(1_700_000_500), makeGroups(e, 12, seq), 2},
		{created(1_700_000_500), makeGroups(e, 4, seq), 3}, // the same second: a start all the same
	}
	l := openTestRelay(t, t.TempDir(), 512) // rotated for size every few groups
	var want []int
	for _, s := range sessions {
		if err := l.BeginSession(s.format); err != nil {
			t.Fatal(err)
		}
		appendGroups(t, l, s.groups)
		for range s.groups {
			want = append(want, s.starts)
		}
	}
	if n := len(l.segments); n < 8 {
		t.Fatalf("only %d segments: the test wants rotations for size", n)
	}
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	var got []int
	for _, txn := range txns {
		got = append(got, txn.SourceStarts)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SourceStarts %v, want %v", got, want)
	}
}

// TestDecoderStopsAtAnIncident: an incident the receiver wrote between
// groups (RelayLog.AddControl) ends the decoder there, after the groups
// before it, with an IncidentError naming the last of them.
func TestDecoderStopsAtAnIncident(t *testing.T) {
	e := newEncoder()
	seq := map[uint32]uint64{}
	before, after := makeGroups(e, 4, seq), makeGroups(e, 2, seq)
	l := openTestRelay(t, t.TempDir(), 0)
	if err := l.BeginSession(e.format()); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, before)
	msg := "error writing to the binary log"
	body := append(binary.LittleEndian.AppendUint16(nil, incidentLostEvents), byte(len(msg)))
	if err := l.AddControl(e.event(replication.INCIDENT_EVENT, 0, body, []byte(msg))); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, after)
	d := NewDecoder(l, gtid.MariaDBPosition{})
	defer d.Close()
	var got []string
	for {
		txn, err := d.Next(canceledCtx)
		if err != nil {
			var ie *IncidentError
			if !errors.As(err, &ie) {
				t.Fatalf("after %v: %v, want the incident", got, err)
			}
			if want := before[len(before)-1].id.String(); ie.After != want || ie.Number != incidentLostEvents || ie.Message != msg {
				t.Fatalf("incident after %q (%d, %q), want after %q (%d, %q)", ie.After, ie.Number, ie.Message, want, incidentLostEvents, msg)
			}
			break
		}
		got = append(got, txn.GTID())
	}
	if len(got) != len(before) {
		t.Fatalf("decoded %v before the incident, want the %d groups before it", got, len(before))
	}
}

// TestDecoderReadsGTIDFlags checks that the decoder keeps each MariaDB GTID
// event's flags2 and flags_extra, past a commit id and an XA transaction's
// XID, as MariaDBGTIDFlags reads them from the event's bytes.
func TestDecoderReadsGTIDFlags(t *testing.T) {
	e := newEncoder()
	format := e.format()
	gtidEvent := func(seq uint64, flags2 byte, rest ...[]byte) []byte {
		body := binary.LittleEndian.AppendUint64(nil, seq)
		body = binary.LittleEndian.AppendUint32(body, 0)
		body = append(body, flags2)
		for _, r := range rest {
			body = append(body, r...)
		}
		return e.event(replication.MARIADB_GTID_EVENT, logEventSuppressUse, body)
	}
	xid := []byte{1, 0, 0, 0, 3, 2, 'a', 'b', 'c', 'd', 'e'} // format id 1, gtrid "abc", bqual "de"
	tests := []struct {
		gtid          string
		begin         []byte
		flags2, extra byte
	}{
		{"0-1-1", gtidEvent(1, gtidTransactional, make([]byte, 6)), gtidTransactional, 0},
		{"0-1-2", gtidEvent(2, gtidTransactional|gtidGroupCommitID, binary.LittleEndian.AppendUint64(nil, 99), []byte{0x02}), gtidTransactional | gtidGroupCommitID, 0x02},
		{"0-1-3", gtidEvent(3, gtidTransactional|0x80, xid, []byte{0x08}), gtidTransactional | 0x80, 0x08},
	}
	var groups []testGroup
	for _, tt := range tests {
		group := e.mariaTxn(0, 0, 0, "shop", "orders", 1)
		group[0] = tt.begin
		groups = append(groups, testGroup{id: mustGTID(t, tt.gtid), events: group})
	}
	l := openTestRelay(t, t.TempDir(), 1<<20)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != len(tests) {
		t.Fatalf("%d transactions, want %d", len(txns), len(tests))
	}
	for i, tt := range tests {
		txn := txns[i]
		if !txn.decoded {
			t.Fatalf("%s: the decoder did not keep its GTID event's flags", tt.gtid)
		}
		flags2, extra := txn.GTIDFlags()
		if flags2 != tt.flags2 || extra != tt.extra {
			t.Errorf("%s: flags2 %#x, flags_extra %#x; want %#x, %#x", tt.gtid, flags2, extra, tt.flags2, tt.extra)
		}
		if f2, x := MariaDBGTIDFlags(txn.Begin.Raw, txn.Format); f2 != flags2 || x != extra {
			t.Errorf("%s: read from the event's bytes %#x, %#x; kept %#x, %#x", tt.gtid, f2, x, flags2, extra)
		}
	}
}

// TestDecoderKnowsGroupsWithoutQueries checks MayHoldQueries: false only
// for a group the decoder made of no query event; a group of statements,
// or one made elsewhere, may hold them.
func TestDecoderKnowsGroupsWithoutQueries(t *testing.T) {
	e := newEncoder()
	format := e.format()
	groups := []testGroup{
		{id: mustGTID(t, "0-1-1"), events: e.mariaTxn(0, 1, 0, "shop", "orders", 1)},
		{id: mustGTID(t, "0-1-2"), events: e.mariaStatementTxn(0, 2, "shop", "INSERT INTO log VALUES (1)")},
		{id: mustGTID(t, "0-1-3"), events: e.mariaDDL(0, 3, "shop", "CREATE TABLE shop.notes (a INT)")},
	}
	l := openTestRelay(t, t.TempDir(), 1<<20)
	if err := l.BeginSession(format); err != nil {
		t.Fatal(err)
	}
	appendGroups(t, l, groups)
	txns := decodeAll(t, l, gtid.MariaDBPosition{})
	if len(txns) != 3 {
		t.Fatalf("%d transactions, want 3", len(txns))
	}
	for i, want := range []bool{false, true, true} {
		if got := txns[i].MayHoldQueries(); got != want {
			t.Errorf("%s: MayHoldQueries %v, want %v", txns[i], got, want)
		}
	}
	if !(&Transaction{Events: txns[1].Events}).MayHoldQueries() {
		t.Error("a group the decoder did not make may hold queries")
	}
}
