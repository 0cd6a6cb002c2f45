// Tests that the simulation of gapless's scheduling predicts what its rules
// imply on synthetic streams: a fully serial stream gains nothing under any
// policy, independent transactions scale with the workers, and the source's
// commit groups bound commit-id.
package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// executionBound is a cost model where the serial COMMIT is negligible, so
// that the ideal speedup is min(workers, independent transactions).
var executionBound = CostModel{Commit: time.Microsecond, Txn: time.Millisecond}

// synthetic describes one made-up row transaction.
type synthetic struct {
	commitID uint64
	domain   uint32
	schema   string
	table    string
	ids      []int32
	ddl      string // when set, the transaction is this DDL statement instead
	mysql    *[2]int64
	// batchable ends the transaction with an XID event, as the server
	// writes row transactions: gapless may then batch it with its neighbours.
	batchable bool
	// nonTransactional: the source did not flag it transactional (a MyISAM
	// write), so it applies alone, in a run with the like of it.
	nonTransactional bool
	// statements writes each id in a statement of its own (a table map and
	// a row event that ends the statement), as the server logs them.
	statements bool
}

func tableMap(schema, table string) *replication.TableMapEvent {
	return &replication.TableMapEvent{
		Schema: []byte(schema), Table: []byte(table), ColumnCount: 2,
		ColumnType:       []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_VARCHAR},
		ColumnMeta:       []uint16{0, 80},
		ColumnName:       [][]byte{[]byte("id"), []byte("v")},
		PrimaryKey:       []uint64{0},
		PrimaryKeyPrefix: []uint64{0},
	}
}

func (s synthetic) txn(seq uint64) *txnInfo {
	txn := &binlog.Transaction{
		Flavor:     binlog.FlavorMariaDB,
		MariaDB:    gtid.MariaDBGTID{Domain: s.domain, Server: 1, Seq: seq},
		CommitID:   s.commitID,
		Flags:      binlog.FlagTransactional | binlog.FlagAllowParallel,
		Size:       500,
		SourceTime: time.Unix(1_700_000_000+int64(seq)/1000, 0),
	}
	if s.mysql != nil {
		txn.Flavor = binlog.FlavorMySQL
		txn.MySQL = gtid.MySQLGTID{SID: [16]byte{1}, GNO: seq}
		txn.LastCommitted, txn.SequenceNumber = s.mysql[0], s.mysql[1]
		txn.Flags = binlog.FlagTransactional | binlog.FlagAllowParallel
	}
	if s.nonTransactional {
		txn.Flags = binlog.FlagAllowParallel
	}
	t := &txnInfo{txn: txn, file: "synthetic", pos: int64(seq)}
	if s.ddl != "" {
		txn.Flags = binlog.FlagDDL | binlog.FlagStandalone | binlog.FlagAllowParallel
		q := &replication.QueryEvent{Schema: []byte(s.schema), Query: []byte(s.ddl)}
		t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: q}, nil)
		return t
	}
	tm := tableMap(s.schema, s.table)
	if s.statements {
		t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.QueryEvent{Query: []byte("BEGIN")}}, nil)
		for _, id := range s.ids {
			rows := &replication.RowsEvent{Table: tm, ColumnCount: 2, ColumnBitmap1: []byte{3}, Flags: replication.RowsEventStmtEndFlag, Rows: [][]any{{id, "v"}}}
			t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: tm}, make([]byte, 40))
			t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: rows}, make([]byte, 60))
		}
		t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.XIDEvent{}}, nil)
		return t
	}
	t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: tm}, nil)
	rows := &replication.RowsEvent{Table: tm, ColumnCount: 2, ColumnBitmap1: []byte{3}}
	for _, id := range s.ids {
		rows.Rows = append(rows.Rows, []interface{}{id, "v"})
	}
	t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: rows}, nil)
	if s.batchable {
		t.addEvent(&replication.BinlogEvent{Header: &replication.EventHeader{}, Event: &replication.XIDEvent{}}, nil)
	}
	return t
}

// analyzeSynthetic runs the in-order stages over made-up transactions.
func analyzeSynthetic(t *testing.T, cost CostModel, stream []synthetic) *Report {
	t.Helper()
	return analyzeWith(t, Options{Cost: cost}, stream)
}

func analyzeWith(t *testing.T, opts Options, stream []synthetic) *Report {
	t.Helper()
	a, err := newAnalyzer(opts)
	if err != nil {
		t.Fatal(err)
	}
	keys := tableKeyCache{}
	for i, s := range stream {
		txn := s.txn(uint64(i + 1))
		a.prepare(txn, keys)
		if err := a.add(txn); err != nil {
			t.Fatal(err)
		}
	}
	return a.report(&groupCutter{})
}

func checkSpeedup(t *testing.T, r *Report, policy string, workers int, want, tolerance float64) {
	t.Helper()
	got, ok := r.PredictedSpeedup[policy][fmt.Sprint(workers)]
	if !ok {
		t.Fatalf("no prediction for %s at %d workers: %v", policy, workers, r.PredictedSpeedup)
	}
	if math.Abs(got-want) > tolerance {
		t.Errorf("%s at %d workers: speedup %.3f, want %.3f ± %.3f", policy, workers, got, want, tolerance)
	}
}

func TestSerialStreamGainsNothing(t *testing.T) {
	var stream []synthetic
	for range 200 {
		// One row, one schema, one domain, each transaction its own group.
		stream = append(stream, synthetic{schema: "db", table: "t", ids: []int32{1}})
	}
	for _, cost := range []CostModel{DefaultCostModel, executionBound} {
		r := analyzeSynthetic(t, cost, stream)
		if r.Transactions != len(stream) {
			t.Fatalf("%d transactions, want %d", r.Transactions, len(stream))
		}
		for _, policy := range DefaultPolicies {
			for _, w := range DefaultWorkers {
				checkSpeedup(t, r, policy, w, 1, 1e-9)
			}
			if p := r.policy(policy); p.Longest.Length != len(stream) {
				t.Errorf("%s: longest chain %d, want the whole stream (%d)", policy, p.Longest.Length, len(stream))
			}
		}
	}
}

func TestIndependentTransactionsScaleWithWorkers(t *testing.T) {
	for _, n := range []int{8, 64} {
		var stream []synthetic
		for i := range n {
			// One source commit group; each its own row, schema and domain.
			stream = append(stream, synthetic{commitID: 7, domain: uint32(i), schema: fmt.Sprintf("db%d", i), table: "t", ids: []int32{int32(i)}})
		}
		r := analyzeSynthetic(t, executionBound, stream)
		for _, policy := range DefaultPolicies {
			for _, w := range DefaultWorkers {
				ideal := float64(min(w, n))
				checkSpeedup(t, r, policy, w, ideal, 0.05*ideal)
			}
		}
	}
}

func TestCommitGroupsOfFourBoundCommitID(t *testing.T) {
	var maria, mysqlStream []synthetic
	for i := range 400 {
		// Groups of 4 on the source, all on one row: only commit-id sees them as parallel.
		maria = append(maria, synthetic{commitID: uint64(100 + i/4), schema: "db", table: "t", ids: []int32{1}})
		seq := int64(i + 1)
		mysqlStream = append(mysqlStream, synthetic{schema: "db", table: "t", ids: []int32{1}, mysql: &[2]int64{4 * ((seq - 1) / 4), seq}})
	}
	for name, stream := range map[string][]synthetic{"mariadb": maria, "mysql": mysqlStream} {
		t.Run(name, func(t *testing.T) {
			r := analyzeSynthetic(t, executionBound, stream)
			checkSpeedup(t, r, "commit-id", 1, 1, 1e-9)
			checkSpeedup(t, r, "commit-id", 2, 2, 0.05)
			for _, w := range []int{4, 8, 16, 32} {
				checkSpeedup(t, r, "commit-id", w, 4, 0.2)
			}
			checkSpeedup(t, r, "writeset", 32, 1, 1e-9)
			g := r.GroupCommit
			if g.Groups != 100 || g.MeanSize != 4 {
				t.Errorf("commit groups: %d of mean size %.2f, want 100 of 4", g.Groups, g.MeanSize)
			}
			for _, b := range g.Histogram {
				if want := map[bool]int{true: 100, false: 0}[b.Min <= 4 && 4 <= b.Max]; b.Groups != want {
					t.Errorf("histogram bucket %s: %d groups, want %d", bucketLabel(b), b.Groups, want)
				}
			}
		})
	}
}

func TestBarrierEmptiesThePipeline(t *testing.T) {
	var stream []synthetic
	for i := range 64 {
		if i == 32 {
			stream = append(stream, synthetic{schema: "db", ddl: "ALTER TABLE t ADD COLUMN w INT"})
			continue
		}
		stream = append(stream, synthetic{schema: "db", table: "t", ids: []int32{int32(i)}})
	}
	r := analyzeSynthetic(t, executionBound, stream)
	if len(r.Barriers) != 1 || r.Barriers[0].Note != "ddl" || r.Barriers[0].Transactions != 1 {
		t.Fatalf("barriers %+v, want one DDL", r.Barriers)
	}
	// 32 independent, the DDL alone, 31 independent: three rounds at 32 workers.
	serial := 64.0
	checkSpeedup(t, r, "writeset", 32, serial/3, 0.1*serial/3)
	if r.Waits == nil || r.Waits.AfterBarrier == 0 {
		t.Errorf("writeset waits %+v: want waits after the barrier", r.Waits)
	}
}

func TestHotRowIsNamed(t *testing.T) {
	var stream []synthetic
	for i := range 100 {
		ids := []int32{int32(1000 + i)}
		if i%2 == 0 {
			ids = append(ids, 42)
		}
		stream = append(stream, synthetic{schema: "db", table: "t", ids: ids})
	}
	r := analyzeSynthetic(t, executionBound, stream)
	if r.Waits == nil || len(r.Waits.ByKey) == 0 {
		t.Fatalf("no writeset waits by key: %+v", r.Waits)
	}
	if top := r.Waits.ByKey[0]; top.Name != "db.t PRIMARY(id=42)" || top.Transactions != 49 {
		t.Errorf("hottest key %+v, want db.t PRIMARY(id=42) for 49 transactions", top)
	}
}

func TestLargeTransactionHoldsOthersBack(t *testing.T) {
	var stream []synthetic
	for i := range 64 {
		ids := []int32{int32(i)}
		if i == 10 {
			for j := range 1000 {
				ids = append(ids, int32(10_000+j))
			}
		}
		stream = append(stream, synthetic{schema: "db", table: "t", ids: ids})
	}
	r := analyzeSynthetic(t, CostModel{Commit: time.Microsecond, Txn: time.Millisecond, Row: 100 * time.Microsecond}, stream)
	p := r.policy("writeset")
	if len(p.HeldBack) == 0 || p.HeldBack[0].GTID != "0-1-11" || p.HeldBack[0].Transactions != r.ReferenceWorkers-1 {
		t.Fatalf("held back %+v, want 0-1-11 holding %d transactions", p.HeldBack, r.ReferenceWorkers-1)
	}
	if r.LargeTransactions[0].GTID != "0-1-11" || r.LargeTransactions[0].Rows != 1001 {
		t.Errorf("largest %+v, want 0-1-11 with 1001 rows", r.LargeTransactions[0])
	}
}

func TestOutputs(t *testing.T) {
	var stream []synthetic
	for i := range 50 {
		stream = append(stream, synthetic{commitID: uint64(i / 5), schema: fmt.Sprintf("db%d", i%2), table: "t", ids: []int32{int32(i)}})
	}
	r := analyzeSynthetic(t, DefaultCostModel, stream)
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Transactions     int                           `json:"transactions"`
		PredictedSpeedup map[string]map[string]float64 `json:"predicted_speedup"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Transactions != 50 || len(decoded.PredictedSpeedup) != 4 || decoded.PredictedSpeedup["writeset"]["32"] <= 1 {
		t.Errorf("JSON %s: want 50 transactions and speedups of 4 policies keyed by worker count", js.String())
	}
	var text, page bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Predicted speedup", "commit-id", "Advice", "--policy"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), "<svg"); n != 2 {
		t.Errorf("HTML report has %d charts, want 2", n)
	}
}
