package apply

import (
	"log/slog"
	"testing"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

func TestHistogramIsCumulative(t *testing.T) {
	h := newHistogram([]float64{1, 4, 16})
	for _, v := range []float64{1, 2, 3, 16, 100} {
		h.observe(v)
	}
	got := h.read()
	if want := []uint64{1, 3, 4}; !equalCounts(got.Counts, want) || got.Count != 5 || got.Sum != 122 {
		t.Fatalf("histogram %+v, want counts %v, count 5, sum 122", got, want)
	}
}

func equalCounts(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A snapshot before the run has started answers, with nothing running.
func TestSnapshotBeforeTheRun(t *testing.T) {
	r := &Replica{cfg: Config{Stream: "s", Policy: "writeset", CommitOrder: Strict}}
	s := r.Snapshot()
	if s.Started || len(s.Workers) != 0 || s.Stream != "s" || s.BatchSize.Count != 0 {
		t.Fatalf("snapshot before the run: %+v", s)
	}
}

// A worker waiting for its dependency names the transaction it waits for and
// the tables they share; one waiting for its turn names the next to commit.
func TestSnapshotNamesWhatAWorkerWaitsFor(t *testing.T) {
	txn := func(seq uint64, tables ...string) *binlog.Transaction {
		t := &binlog.Transaction{Flavor: binlog.FlavorMariaDB, MariaDB: gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: seq}}
		for _, name := range tables {
			t.Tables = append(t.Tables, binlog.TableRef{Schema: "db", Table: name})
		}
		return t
	}
	r := &Replica{cfg: Config{Stream: "s", Policy: "writeset", CommitOrder: Strict}, clog: newCommitLog(), log: slog.New(slog.DiscardHandler)}
	first := &job{gi: 1, txns: []*binlog.Transaction{txn(11, "a", "b")}}
	second := &job{gi: 2, txns: []*binlog.Transaction{txn(12, "b", "c"), txn(13, "c")}, deps: []int64{1}}
	third := &job{gi: 4, txns: []*binlog.Transaction{txn(14, "d")}}
	w1, w2, w3 := newWorker(r, 0), newWorker(r, 1), newWorker(r, 2)
	w1.setState(StateApplying, first)
	w2.setState(StateWaitingDeps, second)
	w3.setState(StateWaitingCommit, third)
	r.workers = []*worker{w1, w2, w3}
	r.observeDispatch(second, map[int64]*job{1: first}, false)
	r.observeFinished(first, nil)

	s := r.Snapshot()
	if got := s.Workers[1]; got.WaitingFor != "0-1-11" || len(got.On) != 1 || got.On[0] != "db.b" || got.Transactions != 2 {
		t.Errorf("waiting for dependencies: %+v", got)
	}
	if got := s.Workers[2]; got.WaitingFor != "0-1-11" || len(got.On) != 0 {
		t.Errorf("waiting for its turn: %+v", got)
	}
	if s.Workers[0].WaitingFor != "" {
		t.Errorf("an applying worker waits for nothing: %+v", s.Workers[0])
	}
	if s.Serialized["db.b"] != 2 || s.Conflicts[ConflictDependency] != 2 {
		t.Errorf("serialized %v, conflicts %v", s.Serialized, s.Conflicts)
	}
	if s.BatchSize.Count != 1 || s.CommitSeconds.Count != 0 {
		t.Errorf("a job finished without dispatch has a size but no latency: %+v %+v", s.BatchSize, s.CommitSeconds)
	}
	r.retriedAfter(1213)
	r.retried(RetryYield)
	r.brokeLockWait(true)
	s = r.Snapshot()
	if s.Retries[RetryDeadlock] != 1 || s.Retries[RetryYield] != 1 || s.WatchdogKills != 1 || s.Conflicts[ConflictLockWait] != 1 {
		t.Errorf("retries %v, kills %d, conflicts %v", s.Retries, s.WatchdogKills, s.Conflicts)
	}
}

// A batch whose members wait for the same transactions, held by two jobs
// in flight, counts each table it shares with them once per dispatch.
func TestObserveDispatchSharedTables(t *testing.T) {
	txn := func(tables ...string) *binlog.Transaction {
		t := &binlog.Transaction{Flavor: binlog.FlavorMariaDB}
		for _, name := range tables {
			t.Tables = append(t.Tables, binlog.TableRef{Schema: "db", Table: name})
		}
		return t
	}
	r := &Replica{cfg: Config{Stream: "s", Policy: "writeset", CommitOrder: Strict}, clog: newCommitLog(), log: slog.New(slog.DiscardHandler)}
	first := &job{gi: 1, txns: []*binlog.Transaction{txn("a", "b")}}
	other := &job{gi: 5, txns: []*binlog.Transaction{txn("e"), txn("f", "g")}}
	batch := &job{gi: 7, txns: []*binlog.Transaction{txn("b", "f"), txn("b"), txn("x")}, deps: []int64{1, 6, 1, 6, 3}}
	r.observeDispatch(batch, map[int64]*job{1: first, 5: other}, false)
	s := r.Snapshot()
	if len(s.Serialized) != 2 || s.Serialized["db.b"] != 3 || s.Serialized["db.f"] != 3 {
		t.Errorf("serialized %v, want db.b and db.f 3 each", s.Serialized)
	}
}
