// helpers_test.go builds the transactions, row events and catalog the tests of
// this package feed to the policies, and checks what Admit answers against
// what must hold: the set of uncommitted transactions a new one waits for,
// directly or through the ones it waits for.
package schedule

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

type fakeCatalog struct {
	tables      map[string]*TableInfo
	invalidated int
}

func (c *fakeCatalog) Table(schema, table string) (*TableInfo, error) {
	return c.tables[schema+"."+table], nil
}

func (c *fakeCatalog) Invalidate() { c.invalidated++ }

// key is a unique key over the given columns, compared as a binary collation does.
func key(name string, cols ...int) UniqueKey {
	return UniqueKey{Name: name, Columns: cols, Fold: make([]bool, len(cols)), Pad: make([]bool, len(cols)), Prefix: make([]int, len(cols))}
}

// ciKey is a unique key over the given columns, compared as a case- and
// accent-insensitive PAD SPACE collation does.
func ciKey(name string, cols ...int) UniqueKey {
	k := key(name, cols...)
	for i := range cols {
		k.Fold[i], k.Pad[i] = true, true
	}
	return k
}

func prefixKey(name string, col, prefix int) UniqueKey {
	k := ciKey(name, col)
	k.Prefix[0] = prefix
	return k
}

func table(keys ...UniqueKey) *TableInfo { return &TableInfo{Keys: keys} }

func rowsEvent(schema, tbl string, rows ...[]any) *replication.RowsEvent {
	ev := &replication.RowsEvent{Table: &replication.TableMapEvent{Schema: []byte(schema), Table: []byte(tbl)}}
	for _, r := range rows {
		ev.Rows = append(ev.Rows, r)
		ev.SkippedColumns = append(ev.SkippedColumns, nil)
	}
	return ev
}

// rows is a row event: one image per row for inserts and deletes, before and
// after images alternating for updates.
func rows(schema, tbl string, images ...[]any) binlog.Event {
	return binlog.Event{Data: rowsEvent(schema, tbl, images...)}
}

// partial is a row event whose images lack the columns in skipped, as with
// binlog_row_image MINIMAL or NOBLOB; the decoder leaves those values nil.
func partial(schema, tbl string, skipped [][]int, images ...[]any) binlog.Event {
	ev := rowsEvent(schema, tbl, images...)
	ev.SkippedColumns = skipped
	for i, cols := range skipped {
		for _, c := range cols {
			ev.Rows[i][c] = nil
		}
	}
	return binlog.Event{Data: ev}
}

// opaque marks a transaction's rows as not decoded, as the decoder does when
// a column type is unknown to it: its row events keep their table, not their rows.
func opaque(txn *binlog.Transaction) *binlog.Transaction {
	txn.OpaqueRows = true
	for i, ev := range txn.Events {
		if r, ok := ev.Data.(*replication.RowsEvent); ok {
			r.Rows, r.SkippedColumns = nil, nil
			txn.Events[i].Undecoded = errors.New("unsupported type 140")
		}
	}
	return txn
}

func query(q string) binlog.Event {
	return binlog.Event{Data: &replication.QueryEvent{Query: []byte(q)}}
}

func row(v ...any) []any { return v }

// mariadb is a MariaDB transaction of the given events that the source let
// run in parallel.
func mariadb(commitID uint64, events ...binlog.Event) *binlog.Transaction {
	t := &binlog.Transaction{
		Flavor:   binlog.FlavorMariaDB,
		MariaDB:  gtid.MariaDBGTID{Domain: 0, Server: 1},
		CommitID: commitID,
		Flags:    binlog.FlagTransactional | binlog.FlagAllowParallel,
		Events:   events,
	}
	for _, ev := range events {
		if r, ok := ev.Data.(*replication.RowsEvent); ok {
			s, tb := string(r.Table.Schema), string(r.Table.Table)
			if !slices.Contains(t.Schemas, s) {
				t.Schemas = append(t.Schemas, s)
			}
			if ref := (binlog.TableRef{Schema: s, Table: tb}); !slices.Contains(t.Tables, ref) {
				t.Tables = append(t.Tables, ref)
			}
		}
	}
	return t
}

// dml is a parallel MariaDB transaction of row events, BEGIN and COMMIT around them.
func dml(events ...binlog.Event) *binlog.Transaction {
	all := append([]binlog.Event{query("BEGIN")}, events...)
	return mariadb(0, append(all, query("COMMIT"))...)
}

func ddl(q string) *binlog.Transaction {
	t := mariadb(0, query(q))
	t.Flags |= binlog.FlagDDL | binlog.FlagStandalone
	return t
}

func mysqlClock(lastCommitted, sequence int64) *binlog.Transaction {
	return &binlog.Transaction{Flavor: binlog.FlavorMySQL, LastCommitted: lastCommitted, SequenceNumber: sequence, Flags: binlog.FlagTransactional}
}

func inSchemas(schemas ...string) *binlog.Transaction {
	t := mariadb(0)
	t.Schemas = schemas
	return t
}

func inDomain(domain uint32) *binlog.Transaction {
	t := mariadb(0)
	t.MariaDB.Domain = domain
	return t
}

// step admits txn (want: what it must wait for, at least transitively, among
// the uncommitted; barrier: what Barrier must then say), or, when txn is nil,
// commits the group indexes in commit.
type step struct {
	txn     *binlog.Transaction
	want    []int64
	barrier bool
	commit  []int64
}

func admit(txn *binlog.Transaction, want ...int64) step { return step{txn: txn, want: want} }
func admitBarrier(txn *binlog.Transaction, want ...int64) step {
	return step{txn: txn, want: want, barrier: true}
}
func commit(gis ...int64) step { return step{commit: gis} }

// tracker records what a policy answered, to tell what a transaction waits
// for through the transactions it waits for.
type tracker struct {
	deps      map[int64]Deps
	committed map[int64]bool
}

func newTracker() *tracker {
	return &tracker{deps: map[int64]Deps{}, committed: map[int64]bool{}}
}

// waitsFor is every uncommitted transaction that must commit before one
// with these deps may start.
func (tr *tracker) waitsFor(deps Deps) []int64 {
	seen := map[int64]bool{}
	stack := slices.Clone(deps)
	for len(stack) > 0 {
		g := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[g] || tr.committed[g] {
			continue
		}
		seen[g] = true
		stack = append(stack, tr.deps[g]...)
	}
	out := []int64{}
	for g := range seen {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

func run(t *testing.T, p Policy, steps []step) {
	t.Helper()
	tr := newTracker()
	var gi int64
	for n, s := range steps {
		if s.txn == nil {
			for _, g := range s.commit {
				for _, d := range tr.deps[g] {
					if !tr.committed[d] {
						t.Fatalf("step %d: test commits %d before its dependency %d", n, g, d)
					}
				}
				p.Committed(g)
				tr.committed[g] = true
			}
			continue
		}
		gi++
		deps, err := p.Admit(gi, s.txn)
		if err != nil {
			t.Fatalf("step %d: Admit(%d): %v", n, gi, err)
		}
		for _, d := range deps {
			if d <= 0 || d >= gi {
				t.Fatalf("step %d: Admit(%d) = %v: a dependency outside 1..%d", n, gi, deps, gi-1)
			}
		}
		tr.deps[gi] = deps
		got := tr.waitsFor(deps)
		want := tr.waitsFor(s.want)
		if !slices.Equal(got, want) {
			t.Errorf("step %d: Admit(%d) = %v: waits for %v, want %v", n, gi, deps, got, want)
		}
		if b := p.Barrier(); b != s.barrier {
			t.Errorf("step %d: after Admit(%d), Barrier() = %v, want %v", n, gi, b, s.barrier)
		}
	}
}
