// hotpath_bench_test.go measures gapless's own CPU per row change on the
// apply path, without servers, over binlogs recorded from a sandbox
// primary (hotpath_record_test.go):
//
//	go test -run '^$' -bench HotPath -benchtime 20x ./internal/target
//
// Stages, each alone and all three in a row (all):
//   - decode: the relay reader and decoder, events -> *binlog.Transaction
//     (internal/binlog), as the decode stage runs them;
//   - schedule: the writeset policy's Admit and Committed, 16 transactions
//     in flight, with the tables' keys as the target's catalog gives them;
//   - statements: the script a Session makes for each job: runs of up to
//     1024 Batchable transactions as one batch (batchScript), any other
//     group alone (script), with the source's GTIDs kept and the binlog
//     written.
//
// Each reports ns/row and allocs/row (per row change: an UPDATE's before
// and after image count once), and rows, the binlog's row changes.
// Receiving, the relay log's writes, the wire and the target are not in it.
//
// Instructions per row change, the same on every run to about 0.2% on a
// busy machine: callgrind over the test binary, the collector stopping
// the world (its work then runs on the benchmark's thread, not timed by
// wall clock), one P, and the difference between five runs of a stage
// and one (the setup cancels out), divided by 4 and by rows:
//
//	go test -c -o /tmp/hp.test ./internal/target && cd internal/target
//	GODEBUG=asyncpreemptoff=1,gcstoptheworld=1 GOMAXPROCS=1 valgrind --tool=callgrind \
//	    /tmp/hp.test -test.run '^$' -test.bench 'HotPath/orderentry/all$' -test.benchtime 5x
//	(the same with -test.benchtime 1x)
//
// (asyncpreemptoff: callgrind stops at the preemption signal.)
package target

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
)

// hotPathFiles are the recorded workloads: order entry (11 to 29 row
// changes per new order) and W1 (sysbench oltp_write_only, 4 per transaction).
var hotPathFiles = []struct{ name, file string }{
	{"orderentry", "hotpath-orderentry.bin"},
	{"w1", "hotpath-w1.bin"},
}

// hotPathTables are the keys of the recorded tables, as Catalog reads them
// from a target: the primary key, then unique keys (customer's c_email, a
// case-insensitive VARCHAR). Columns by position, 0-based.
func hotPathTables() map[string]*schedule.TableInfo {
	ints := func(cols ...int) schedule.UniqueKey {
		return schedule.UniqueKey{Name: "PRIMARY", Columns: cols, Fold: make([]bool, len(cols)), Pad: make([]bool, len(cols)), Prefix: make([]int, len(cols))}
	}
	t := map[string]*schedule.TableInfo{
		"warehouse":  {Keys: []schedule.UniqueKey{ints(0)}},
		"district":   {Keys: []schedule.UniqueKey{ints(0, 1)}},
		"customer":   {Keys: []schedule.UniqueKey{ints(0, 1, 2), {Name: "c_email", Columns: []int{5}, Fold: []bool{true}, Pad: []bool{true}, Prefix: []int{0}}}},
		"orders":     {Keys: []schedule.UniqueKey{ints(0, 1, 2)}},
		"new_orders": {Keys: []schedule.UniqueKey{ints(0, 1, 2)}},
		"order_line": {Keys: []schedule.UniqueKey{ints(0, 1, 2, 3)}},
		"stock":      {Keys: []schedule.UniqueKey{ints(0, 1)}},
		"history":    {Keys: []schedule.UniqueKey{ints(0)}},
	}
	for i := 1; i <= 4; i++ {
		t[fmt.Sprintf("sbtest%d", i)] = &schedule.TableInfo{Keys: []schedule.UniqueKey{ints(0)}}
	}
	return t
}

type hotPathCatalog map[string]*schedule.TableInfo

func (c hotPathCatalog) Table(schema, table string) (*schedule.TableInfo, error) {
	if schema != "bench" {
		return nil, nil
	}
	return c[table], nil
}
func (c hotPathCatalog) Invalidate() {}

// noneApplied is a target that holds none of the groups.
type noneApplied struct{}

func (noneApplied) Contains(gtid.MariaDBGTID) bool { return false }

var hotPathCanceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// hotPathRelay makes a relay log whose one segment is the recorded binlog.
func hotPathRelay(b testing.TB, file string) *binlog.RelayLog {
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := binlog.OpenRelay(binlog.RelayOptions{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// hotPathRowChanges counts the row changes of a binlog file, read by
// go-mysql's own parser: the figure every stage divides by.
func hotPathRowChanges(b *testing.B, file string) int {
	n := 0
	p := replication.NewBinlogParser()
	err := p.ParseFile(filepath.Join("testdata", file), 0, func(ev *replication.BinlogEvent) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			if re.Type() == replication.EnumRowsEventTypeUpdate {
				n += len(re.Rows) / 2
			} else {
				n += len(re.Rows)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func decodeHotPath(b testing.TB, l *binlog.RelayLog) []*binlog.Transaction {
	d := binlog.NewDecoder(l, noneApplied{})
	defer d.Close()
	var txns []*binlog.Transaction
	for {
		txn, err := d.Next(hotPathCanceled)
		if err == context.Canceled {
			return txns
		}
		if err != nil {
			b.Fatal(err)
		}
		txns = append(txns, txn)
	}
}

const hotPathInFlight = 16

func scheduleHotPath(b *testing.B, txns []*binlog.Transaction) {
	p := schedule.NewWriteset(hotPathCatalog(hotPathTables()))
	for i, txn := range txns {
		gi := int64(i + 1)
		if _, err := p.Admit(gi, txn); err != nil {
			b.Fatal(err)
		}
		if gi > hotPathInFlight {
			p.Committed(gi - hotPathInFlight)
		}
	}
}

// hotPathBatch is replicate's --batch default (analyze.DefaultBatch).
const hotPathBatch = 1024

const hotPathCheckpoint = "INSERT INTO gapless.gapless_position (stream, domain_id, slot, gtid) VALUES ('default', 0, 0, '0-1-1') ON DUPLICATE KEY UPDATE gtid=VALUES(gtid)"

// statementsHotPath makes the script of every job, as the coordinator
// would cut them on a queue that never runs dry.
func statementsHotPath(b *testing.B, txns []*binlog.Transaction) (statements int) {
	s := &Session{opts: Options{KeepGTID: true, WriteBinlog: true}, maxStatement: 1 << 30}
	for i := 0; i < len(txns); {
		j := i + 1
		if Batchable(txns[i]) {
			for j < len(txns) && j-i < hotPathBatch && Batchable(txns[j]) {
				j++
			}
		}
		var body, tail []string
		var err error
		if j-i == 1 {
			body, tail, err = s.script(txns[i], hotPathCheckpoint)
		} else {
			body, tail, err = s.batchScript(txns[i:j], nil, hotPathCheckpoint)
		}
		if err != nil {
			b.Fatal(err)
		}
		statements += len(body) + len(tail)
		i = j
	}
	return statements
}

func BenchmarkHotPath(b *testing.B) {
	for _, f := range hotPathFiles {
		b.Run(f.name, func(b *testing.B) { benchmarkHotPath(b, f.file) })
	}
}

// benchmarkHotPath runs the stages over one recorded binlog; its setup
// runs only when a stage of this file is asked for.
func benchmarkHotPath(b *testing.B, file string) {
	l := hotPathRelay(b, file)
	rows := hotPathRowChanges(b, file)
	txns := decodeHotPath(b, l)
	if len(txns) == 0 || rows == 0 {
		b.Fatalf("%s: %d transactions, %d row changes", file, len(txns), rows)
	}
	stages := []struct {
		name string
		run  func()
	}{
		{"decode", func() { decodeHotPath(b, l) }},
		{"schedule", func() { scheduleHotPath(b, txns) }},
		{"statements", func() { statementsHotPath(b, txns) }},
		{"all", func() {
			decoded := decodeHotPath(b, l)
			scheduleHotPath(b, decoded)
			statementsHotPath(b, decoded)
		}},
	}
	for _, stage := range stages {
		b.Run(stage.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n := 0
			for b.Loop() {
				stage.run()
				n++
			}
			runtime.ReadMemStats(&after)
			changes := float64(n * rows)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/changes, "ns/row")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/changes, "allocs/row")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/changes, "B/row")
			b.ReportMetric(float64(rows)/float64(len(txns)), "rows/txn")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// TestHotPathKeysAsDecoded checks, over the recorded binlogs, that the
// writeset policy finds the same keys in row images read for their key
// columns alone as in rows decoded in full: a policy that reads every
// other transaction's images finds the dependencies of one that reads
// decoded rows alone. Nothing commits, so every key stays with the last
// transaction that took it, and a key hashed otherwise in either way
// loses a dependency on the hot rows.
func TestHotPathKeysAsDecoded(t *testing.T) {
	for _, f := range hotPathFiles {
		t.Run(f.name, func(t *testing.T) {
			pending, decoded := decodeHotPathT(t, f.file), decodeHotPathT(t, f.file)
			for _, txn := range decoded {
				for i := range txn.Events {
					if err := txn.Events[i].DecodeRows(); err != nil {
						t.Fatal(err)
					}
					if txn.Events[i].RowsPending() {
						t.Fatalf("%s: rows still pending after DecodeRows", txn)
					}
				}
			}
			images := 0
			for _, txn := range pending {
				for _, ev := range txn.Events {
					if ev.RowsPending() {
						images++
					}
				}
			}
			if images == 0 {
				t.Fatal("no row event's rows were left pending")
			}
			a, b := schedule.NewWriteset(hotPathCatalog(hotPathTables())), schedule.NewWriteset(hotPathCatalog(hotPathTables()))
			for i := range pending {
				gi := int64(i + 1)
				mixed := pending[i]
				if i%2 == 1 {
					mixed = decoded[i]
				}
				da, err := a.Admit(gi, mixed)
				if err != nil {
					t.Fatal(err)
				}
				db, err := b.Admit(gi, decoded[i])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(da, db) {
					t.Fatalf("%s: deps %v from images, %v from decoded rows", pending[i], da, db)
				}
			}
			if a.KeysSeen() != b.KeysSeen() || a.KeysSeen() == 0 {
				t.Fatalf("%d keys from images, %d from decoded rows", a.KeysSeen(), b.KeysSeen())
			}
		})
	}
}

func decodeHotPathT(t *testing.T, file string) []*binlog.Transaction {
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "relay-000001.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := binlog.OpenRelay(binlog.RelayOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := binlog.NewDecoder(l, noneApplied{})
	defer d.Close()
	var txns []*binlog.Transaction
	for {
		txn, err := d.Next(hotPathCanceled)
		if err == context.Canceled {
			return txns
		}
		if err != nil {
			t.Fatal(err)
		}
		txns = append(txns, txn)
	}
}
