// bench_test.go measures what scheduling costs per transaction: Admit and
// Committed for each policy, 16 transactions in flight (the oldest commits
// as each new one is admitted), transactions of 1, 10 and 100 row changes
// over a large key space and over a hot one; and the writeset policy with
// tens of thousands of keys in flight (BenchmarkAdmitCommittedManyKeys).
package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gapless/internal/binlog"
)

const benchInFlight = 16

// benchStream is a ring of update transactions of n row changes each (before
// and after image), keys drawn from space, in 4 databases, 4 domains, commit
// ids shared by 8 consecutive transactions and a MySQL clock to match.
func benchStream(flavor binlog.Flavor, n, space int) []*binlog.Transaction {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]*binlog.Transaction, 1024)
	for i := range out {
		db := fmt.Sprintf("db%d", i%4)
		images := make([][]any, 0, 2*n)
		for range n {
			id := int64(r.IntN(space))
			u := fmt.Sprintf("user-%d@example.com", id)
			images = append(images, row(id, u, int64(i)), row(id, u, int64(i+1)))
		}
		t := dml(rows(db, "t", images...))
		t.CommitID = uint64(i/8 + 1)
		t.MariaDB.Domain = uint32(i % 4)
		if flavor == binlog.FlavorMySQL {
			t.Flavor = binlog.FlavorMySQL
			t.SequenceNumber = int64(i + 1)
			t.LastCommitted = int64(i/8) * 8
		}
		out[i] = t
	}
	return out
}

func benchCatalog() *fakeCatalog {
	c := &fakeCatalog{tables: map[string]*TableInfo{}}
	for i := range 4 {
		c.tables[fmt.Sprintf("db%d.t", i)] = table(key("PRIMARY", 0), ciKey("email", 1))
	}
	return c
}

// admitCommitted admits the stream's transactions, over and over, for as
// long as b runs, with inFlight of them uncommitted: the oldest commits as
// each new one is admitted.
func admitCommitted(b *testing.B, p Policy, stream []*binlog.Transaction, inFlight int64) {
	b.ReportAllocs()
	for gi := int64(1); b.Loop(); gi++ {
		if _, err := p.Admit(gi, stream[gi%int64(len(stream))]); err != nil {
			b.Fatal(err)
		}
		if gi > inFlight {
			p.Committed(gi - inFlight)
		}
	}
}

func BenchmarkAdmitCommitted(b *testing.B) {
	policies := []struct {
		name   string
		flavor binlog.Flavor
		new    func() Policy
	}{
		{"serial", binlog.FlavorMariaDB, func() Policy { return NewSerial() }},
		{"commit-id", binlog.FlavorMariaDB, func() Policy { return NewCommitID() }},
		{"commit-id-mysql", binlog.FlavorMySQL, func() Policy { return NewCommitID() }},
		{"writeset", binlog.FlavorMariaDB, func() Policy { return NewWriteset(benchCatalog()) }},
		{"schema", binlog.FlavorMariaDB, func() Policy { return NewSchema() }},
		{"domain", binlog.FlavorMariaDB, func() Policy { return NewDomain() }},
	}
	spaces := []struct {
		name string
		size int
	}{{"large", 1 << 30}, {"hot", 16}}
	for _, pol := range policies {
		for _, n := range []int{1, 10, 100} {
			for _, space := range spaces {
				stream := benchStream(pol.flavor, n, space.size)
				b.Run(fmt.Sprintf("%s/rows=%d/%s", pol.name, n, space.name), func(b *testing.B) {
					p := pol.new()
					admitCommitted(b, p, stream, benchInFlight)
				})
			}
		}
	}
}

// BenchmarkAdmitCommittedManyKeys is the writeset policy with as many row
// keys in flight as a real run holds: 256 transactions of 100 row changes
// over a million rows, some 50 000 keys (primary and unique) uncommitted at
// any time, so that the ledger's lookups miss the cache as they do there.
func BenchmarkAdmitCommittedManyKeys(b *testing.B) {
	const inFlight = 256
	stream := benchStream(binlog.FlavorMariaDB, 100, 1_000_000)
	p := NewWriteset(benchCatalog())
	admitCommitted(b, p, stream, inFlight)
}

// BenchmarkAdmitStatements is the writeset policy on sysbench's
// oltp_write_only transactions logged as statements (MIXED): two updates,
// a delete and an insert by primary key on 4 tables, each taking row keys.
func BenchmarkAdmitStatements(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	stream := make([]*binlog.Transaction, 1024)
	for i := range stream {
		id, tbl := 1+r.IntN(10000), func() string { return fmt.Sprintf("sbtest%d", 1+r.IntN(4)) }
		t := tbl()
		stream[i] = stmts(
			fmt.Sprintf("UPDATE %s SET k=k+1 WHERE id=%d", tbl(), 1+r.IntN(10000)),
			fmt.Sprintf("UPDATE %s SET c='%d-%d' WHERE id=%d", tbl(), i, id, 1+r.IntN(10000)),
			fmt.Sprintf("DELETE FROM %s WHERE id=%d", t, id),
			fmt.Sprintf("INSERT INTO %s (id, k, c, pad) VALUES (%d, %d, '%d', 'pad')", t, id, r.IntN(10000), i))
	}
	c := rowCatalog()
	for i := 1; i <= 4; i++ {
		c.tables[fmt.Sprintf("db.sbtest%d", i)] = c.tables["db.sb"]
	}
	p := NewWriteset(c)
	admitCommitted(b, p, stream, benchInFlight)
	if rows, whole := p.StatementTables(); rows == 0 || whole != 0 {
		b.Fatalf("tables by row keys %d, whole %d", rows, whole)
	}
}

// BenchmarkCommittedFarAhead is the writeset policy with many transactions
// in flight, as when the coordinator runs far ahead of the commits (its
// byte budget holds thousands of small ones): every transaction takes its
// table shared, so that table's holders list them all, and commits come in
// order. A commit's cost must not grow with how many are in flight.
func BenchmarkCommittedFarAhead(b *testing.B) {
	stream := benchStream(binlog.FlavorMariaDB, 1, 1<<30)
	for _, inFlight := range []int64{16, 1024, 8192} {
		b.Run(fmt.Sprintf("in-flight=%d", inFlight), func(b *testing.B) {
			p := NewWriteset(benchCatalog())
			admitCommitted(b, p, stream, inFlight)
		})
	}
}
