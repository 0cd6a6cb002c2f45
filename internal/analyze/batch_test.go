// Tests of what limits gapless beyond the policies' dependencies: batches
// (consecutive row transactions in one target transaction, a conflict of
// any member holding the whole batch), and the target's capacity (a 2-core
// target does not run 8 workers 8 times as fast as one).
package analyze

import (
	"math"
	"strings"
	"testing"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// independent is n batchable row transactions of one source commit group,
// each on its own row of db.t, in domain 0.
func independent(n int) []synthetic {
	var stream []synthetic
	for i := range n {
		stream = append(stream, synthetic{commitID: 7, schema: "db", table: "t", ids: []int32{int32(i)}, batchable: true})
	}
	return stream
}

func TestBatchesShareOneTargetTransaction(t *testing.T) {
	r := analyzeWith(t, Options{Cost: executionBound, Batch: 8}, independent(64))
	// 8 batches of 8: the per-transaction cost (1 ms) is paid 8 times, not 64.
	if want := 8 * 1.001; math.Abs(r.TotalCostMS-want) > 1e-6 {
		t.Errorf("serial apply %.3f ms, want %.3f (8 target transactions)", r.TotalCostMS, want)
	}
	if r.Batch != 8 {
		t.Errorf("report says batches of %d, want 8", r.Batch)
	}
	for _, policy := range []string{"writeset", "commit-id"} {
		for _, w := range DefaultWorkers {
			// Only 8 batches to run at once, however many workers.
			ideal := float64(min(w, 8))
			checkSpeedup(t, r, policy, w, ideal, 0.05*ideal)
		}
	}
	// One schema, one domain: each batch waits for the one before.
	checkSpeedup(t, r, "schema", 8, 1, 1e-9)
	checkSpeedup(t, r, "domain", 8, 1, 1e-9)

	unbatched := analyzeWith(t, Options{Cost: executionBound, Batch: 1}, independent(64))
	if want := 64 * 1.001; math.Abs(unbatched.TotalCostMS-want) > 1e-6 {
		t.Errorf("--batch 1: serial apply %.3f ms, want %.3f", unbatched.TotalCostMS, want)
	}
	checkSpeedup(t, unbatched, "writeset", 32, 32, 0.05*32)
}

func TestConflictHoldsTheWholeBatch(t *testing.T) {
	// Every transaction of the second batch writes a row the first batch
	// wrote: the whole second batch waits for the first to commit, and the
	// batches after it, executed, wait for their commit turn behind it.
	stream := independent(64)
	for i := 8; i < 16; i++ {
		stream[i].ids = []int32{int32(i - 8)}
	}
	r := analyzeWith(t, Options{Cost: executionBound, Batch: 8}, stream)
	serial := 8 * 1001.0
	checkSpeedup(t, r, "writeset", 8, serial/(2*1001+6), 0.05)

	// Only transaction 9, the second batch's first, does: the other seven
	// run ahead, and with them the batch's own cost, from its dispatch;
	// transaction 9, which costs nothing here, follows once the first
	// batch has committed. Nothing holds the commit line.
	stream = independent(64)
	stream[8].ids = []int32{0}
	r = analyzeWith(t, Options{Cost: executionBound, Batch: 8}, stream)
	checkSpeedup(t, r, "writeset", 8, serial/(1001+8), 0.05)

	// The same conflict inside one batch costs nothing: the batch applies
	// its members in order.
	stream = independent(64)
	stream[1].ids = []int32{0}
	r = analyzeWith(t, Options{Cost: executionBound, Batch: 8}, stream)
	checkSpeedup(t, r, "writeset", 8, 8, 0.05*8)
}

func TestBatchesEndAtBarriersAndDomains(t *testing.T) {
	var stream []synthetic
	stream = append(stream, independent(10)...)
	stream = append(stream, synthetic{schema: "db", ddl: "ALTER TABLE t ADD COLUMN w INT"})
	stream = append(stream, independent(10)...)
	for _, s := range independent(10) {
		s.domain = 1
		stream = append(stream, s)
	}
	// A transaction without its XID (not a plain row transaction) goes alone too.
	stream = append(stream, synthetic{schema: "db", table: "t", ids: []int32{99}}, synthetic{schema: "db", table: "t", ids: []int32{98}})
	r := analyzeWith(t, Options{Cost: executionBound, Batch: 32}, stream)
	// [1..10] [DDL] [12..21] [22..31, domain 1] [32] [33]
	if want := 6 * 1.001; math.Abs(r.TotalCostMS-want) > 1e-6 {
		t.Errorf("serial apply %.3f ms, want %.3f (6 target transactions)", r.TotalCostMS, want)
	}
}

func TestCapacityBoundsTheSpeedup(t *testing.T) {
	cost := executionBound
	cost.Capacity = 2
	r := analyzeWith(t, Options{Cost: cost, Batch: 1}, independent(64))
	for _, policy := range []string{"writeset", "commit-id"} {
		checkSpeedup(t, r, policy, 1, 1, 1e-9)
		checkSpeedup(t, r, policy, 2, 2, 0.05)
		for _, w := range []int{4, 8, 16, 32} {
			checkSpeedup(t, r, policy, w, 2, 0.1)
		}
	}

	// One worker uses the target alone: a capacity above 1 changes nothing.
	cost.Capacity = 1.5
	r = analyzeWith(t, Options{Cost: cost, Batch: 1, Workers: []int{1}}, independent(64))
	checkSpeedup(t, r, "writeset", 1, 1, 1e-9)

	cost.Capacity = 0.5
	if _, err := newAnalyzer(Options{Cost: cost}); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("capacity 0.5: error %v, want one naming the capacity", err)
	}
}

func TestCapacityProfile(t *testing.T) {
	// Three transactions of 1 ms each start at once on a target of capacity
	// 1.5: the first runs at full speed, the second gets half the target
	// until the first is done, the third what is left after both.
	p := capacityProfile{capacity: 1.5}
	var done []float64
	for range 3 {
		done = append(done, p.run(0, 1000, 0))
	}
	for i, want := range []float64{1000, 1500, 2250} {
		if math.Abs(done[i]-want) > 1e-6 {
			t.Errorf("transaction %d done at %.1fµs, want %.1f (all: %v)", i+1, done[i], want, done)
		}
	}
	// A later one, once the target is free, runs at full speed.
	if got := p.run(3000, 500, 3000); math.Abs(got-3500) > 1e-6 {
		t.Errorf("after the others: done at %.1fµs, want 3500", got)
	}
	if len(p.times) > 3 {
		t.Errorf("profile kept %d segments before the dispatch clock: %v", len(p.times), p.times)
	}
	unlimited := capacityProfile{}
	if got := unlimited.run(10, 5, 0); got != 15 {
		t.Errorf("unlimited: done at %v, want 15", got)
	}
}

func TestFromUntil(t *testing.T) {
	maria := func(domain uint32, seq uint64) *binlog.Transaction {
		return &binlog.Transaction{Flavor: binlog.FlavorMariaDB, MariaDB: gtid.MariaDBGTID{Domain: domain, Server: 1, Seq: seq}}
	}
	opts := Options{From: "0-1-10", Until: "0-1-20,1-1-5"}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		txn  *binlog.Transaction
		keep bool
	}{
		{maria(0, 10), false}, {maria(0, 11), true}, {maria(0, 20), true}, {maria(0, 21), false},
		{maria(1, 5), true}, {maria(1, 6), false}, {maria(2, 1), false},
		{&binlog.Transaction{Flavor: binlog.FlavorMySQL, MySQL: gtid.MySQLGTID{GNO: 1}}, false},
	} {
		if got := opts.keep.keeps(c.txn); got != c.keep {
			t.Errorf("%s: kept %v, want %v", c.txn.GTID(), got, c.keep)
		}
	}

	mysql := Options{From: "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"}
	if err := mysql.defaults(); err != nil {
		t.Fatal(err)
	}
	sid, _ := gtid.ParseSID("3E11FA47-71CA-11E1-9E33-C80AA9429562")
	for gno, keep := range map[uint64]bool{5: false, 6: true} {
		txn := &binlog.Transaction{Flavor: binlog.FlavorMySQL, MySQL: gtid.MySQLGTID{SID: sid, GNO: gno}}
		if got := mysql.keep.keeps(txn); got != keep {
			t.Errorf("MySQL %s: kept %v, want %v", txn.GTID(), got, keep)
		}
	}

	bad := Options{Until: "banana"}
	if err := bad.defaults(); err == nil || !strings.Contains(err.Error(), `--until "banana"`) {
		t.Errorf("bad --until: error %v, want one naming it", err)
	}
}

// TestRunsOfGroupsAppliedAlone: consecutive non-transactional groups go to
// one worker as one job of up to --batch, which shares its round trips
// (one per-transaction cost) but commits each group on its own.
func TestRunsOfGroupsAppliedAlone(t *testing.T) {
	var stream []synthetic
	for i := range 20 {
		stream = append(stream, synthetic{schema: "db", table: "m", ids: []int32{int32(i)}, nonTransactional: true})
	}
	stream = append(stream, independent(4)...)
	r := analyzeWith(t, Options{Cost: executionBound, Batch: 8}, stream)
	// [1..8] [9..16] [17..20], each a per-transaction cost and a commit per
	// group, then the four row transactions in one batch.
	if want := 3*1.0 + 20*0.001 + 1.001; math.Abs(r.TotalCostMS-want) > 1e-6 {
		t.Errorf("serial apply %.3f ms, want %.3f (three runs of 20 groups, one batch)", r.TotalCostMS, want)
	}
}

// TestStatementsRunAheadOfWhatTheirBatchWaitsFor: every transaction writes
// the hot row 0 and a row of its own, each in a statement of its own. Every
// batch then waits for the one before on row 0; its statements on rows of
// their own run ahead meanwhile (coordinator.cut), so only half of each
// batch's work is in the chain of batches. Written as one statement, the
// same transactions run one batch at a time.
func TestStatementsRunAheadOfWhatTheirBatchWaitsFor(t *testing.T) {
	stream := func(statements bool) []synthetic {
		var s []synthetic
		for i := range 64 {
			s = append(s, synthetic{commitID: 7, schema: "db", table: "t", ids: []int32{0, int32(1 + i)}, batchable: true, statements: statements})
		}
		return s
	}
	cost := CostModel{Row: time.Millisecond}
	whole := analyzeWith(t, Options{Cost: cost, Batch: 8}, stream(false))
	checkSpeedup(t, whole, "writeset", 8, 1, 0.05)
	// The first batch whole (16 ms), then 7 batches of 8 ms each in
	// the chain: 128 ms of work in 72 ms.
	inPart := analyzeWith(t, Options{Cost: cost, Batch: 8}, stream(true))
	checkSpeedup(t, inPart, "writeset", 8, 128.0/72, 0.1)
}
