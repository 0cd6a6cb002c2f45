// stats.go keeps the statistics that need the transactions in source order
// but no policy: volumes, the source's commit groups, the commit rate and
// the writers behind it, barriers, tables and their keys, large
// transactions.
//
// Invariant: every transaction is added once, in source order, and nothing
// here keeps a transaction after add returns.
package analyze

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// barrierKind is why a transaction runs alone (under every policy but
// domain); the rule is schedule.isBarrier's, with the reason kept.
type barrierKind uint8

const (
	notBarrier barrierKind = iota
	barrierDDL
	barrierStatement
	barrierStandalone
	barrierSkipParallel
	barrierKinds
)

var barrierNames = [barrierKinds]string{"", "DDL", "statement-format (binlog_format is not ROW, or a statement logged as such)", "standalone statement outside BEGIN/COMMIT", "skip_parallel_replication set on the source"}

func barrierOf(t *txnInfo) barrierKind {
	txn := t.txn
	switch {
	case txn.Has(binlog.FlagDDL):
		return barrierDDL
	case t.statement != "" && !txn.Has(binlog.FlagKnownStatements):
		return barrierStatement
	case txn.Has(binlog.FlagStandalone):
		return barrierStandalone
	case txn.Flavor == binlog.FlavorMariaDB && !txn.Has(binlog.FlagAllowParallel):
		return barrierSkipParallel
	}
	return notBarrier
}

// groupBuckets are the upper bounds of the group size histogram's buckets.
var groupBuckets = []int{1, 2, 4, 8, 16, 32, 64, 1 << 62}

type tableStat struct {
	transactions int
	rows         int64
	keys         *tableKeys
}

type secondStat struct {
	commits int
	writers []uint32 // distinct thread ids, at most maxWritersTracked
}

const maxWritersTracked = 256

type statistics struct {
	lookup *keyLookup

	transactions int
	bytes        int64
	rows         int64
	cost         float64
	first, last  time.Time
	flavor       binlog.Flavor

	seconds  map[int64]*secondStat
	threaded int // transactions whose events name the connection that wrote them

	runKey    uint64
	runLen    int
	groups    []GroupBucket
	groupRuns int

	barriers [barrierKinds]int
	examples []BarrierExample

	domains map[string]int
	schemas map[string]int
	tables  map[binlog.TableRef]*tableStat
	large   []HeldBack

	partialImages int
}

func newStatistics(lookup *keyLookup) *statistics {
	s := &statistics{
		lookup:  lookup,
		seconds: map[int64]*secondStat{},
		domains: map[string]int{},
		schemas: map[string]int{},
		tables:  map[binlog.TableRef]*tableStat{},
	}
	lo := 1
	for _, hi := range groupBuckets {
		s.groups = append(s.groups, GroupBucket{Min: lo, Max: hi})
		lo = hi + 1
	}
	return s
}

func (s *statistics) add(t *txnInfo) {
	txn := t.txn
	s.transactions++
	s.bytes += int64(txn.Size)
	s.rows += int64(t.rows)
	s.cost += t.execCost + t.commit
	s.flavor = txn.Flavor
	if s.first.IsZero() || txn.SourceTime.Before(s.first) {
		s.first = txn.SourceTime
	}
	if txn.SourceTime.After(s.last) {
		s.last = txn.SourceTime
	}

	sec := s.seconds[txn.SourceTime.Unix()]
	if sec == nil {
		sec = &secondStat{}
		s.seconds[txn.SourceTime.Unix()] = sec
	}
	sec.commits++
	if t.threadID != 0 {
		s.threaded++
	}
	if t.threadID != 0 && len(sec.writers) < maxWritersTracked && !slices.Contains(sec.writers, t.threadID) {
		sec.writers = append(sec.writers, t.threadID)
	}

	s.groupRun(txn)

	if t.barrier != notBarrier {
		s.barriers[t.barrier]++
		if len(s.examples) < 10 && s.examplesOf(t.barrier) < 3 {
			s.examples = append(s.examples, BarrierExample{Kind: shortBarrierName(t.barrier), GTID: txn.GTID(), Statement: abbreviate(t.statement, 120)})
		}
	}

	if txn.Flavor == binlog.FlavorMariaDB {
		s.domains[strconv.FormatUint(uint64(txn.MariaDB.Domain), 10)]++
	} else {
		id := txn.MySQL
		id.GNO = 0
		s.domains[strings.TrimSuffix(id.String(), ":0")]++
	}
	for _, schema := range txn.Schemas {
		s.schemas[schema]++
	}
	s.lookup.current = t
	for _, ref := range txn.Tables {
		ts := s.tables[ref]
		if ts == nil {
			ts = &tableStat{}
			s.tables[ref] = ts
		}
		ts.transactions++
		if k, err := s.lookup.keys(ref.Schema, ref.Table); err == nil {
			ts.keys = k
		}
	}
	partial := false
	for _, ev := range txn.Events {
		rows, ok := ev.Data.(*replication.RowsEvent)
		if !ok || rows.Table == nil {
			continue
		}
		if ts := s.tables[binlog.TableRef{Schema: string(rows.Table.Schema), Table: string(rows.Table.Table)}]; ts != nil {
			ts.rows += int64(rowChanges(rows))
		}
		if rows.Type() != replication.EnumRowsEventTypeInsert && !allSet(rows.ColumnBitmap1, int(rows.ColumnCount)) {
			partial = true
		}
	}
	if partial {
		s.partialImages++
	}
	s.keepLarge(t)
}

// groupRun follows the source's commit groups: MariaDB transactions of one
// binlog group commit share a commit_id; MySQL ones a last_committed.
func (s *statistics) groupRun(txn *binlog.Transaction) {
	key, grouped := txn.CommitID, txn.CommitID != 0
	if txn.Flavor == binlog.FlavorMySQL {
		key, grouped = uint64(txn.LastCommitted), true
	}
	if s.runLen > 0 && grouped && key == s.runKey {
		s.runLen++
		return
	}
	s.closeRun()
	s.runKey, s.runLen = key, 1
	if !grouped {
		s.runKey = 0
	}
}

func (s *statistics) closeRun() {
	if s.runLen == 0 {
		return
	}
	for i := range s.groups {
		if s.runLen <= s.groups[i].Max {
			s.groups[i].Groups++
			s.groups[i].Transactions += s.runLen
			break
		}
	}
	s.groupRuns++
	s.runLen = 0
}

func (s *statistics) examplesOf(k barrierKind) int {
	n := 0
	for _, e := range s.examples {
		if e.Kind == shortBarrierName(k) {
			n++
		}
	}
	return n
}

func (s *statistics) keepLarge(t *txnInfo) {
	cost := (t.execCost + t.commit) / 1000
	const keep = 5
	if len(s.large) == keep && s.large[keep-1].CostMS >= cost {
		return
	}
	h := HeldBack{GTID: t.txn.GTID(), File: t.file, Position: t.pos, Bytes: t.txn.Size, Rows: t.rows, CostMS: cost}
	i := sort.Search(len(s.large), func(i int) bool { return s.large[i].CostMS < cost })
	s.large = slices.Insert(s.large, i, h)
	if len(s.large) > keep {
		s.large = s.large[:keep]
	}
}

func allSet(bitmap []byte, columns int) bool {
	for i := range columns {
		if i/8 >= len(bitmap) || bitmap[i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}

func shortBarrierName(k barrierKind) string {
	return [barrierKinds]string{"", "ddl", "statement", "standalone", "skip-parallel"}[k]
}

func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
