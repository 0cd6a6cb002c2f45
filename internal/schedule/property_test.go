// property_test.go proves, over random streams of transactions, that the
// writeset and schema policies never let two transactions that write a
// common key overlap when a scheduler starts whatever has its dependencies
// committed and commits in any order (causal commit order, 16 in flight,
// barriers alone): the later one always starts after the earlier committed.
package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gapless/internal/binlog"
)

// genTxn is a random transaction with the keys it truly writes, worked out
// apart from the policy: rows by primary key and unique value (folded as a
// case-insensitive collation does), the parent a child row refers to, one key
// for a table without keys, one for a database, and "*" for a DDL. Some are
// groups of statements (under MIXED): those that say their rows write
// those; those that do not may write every row of their table.
type genTxn struct {
	txn  *binlog.Transaction
	keys []string
}

var propSchemas = []string{"s0", "s1", "s2"}

func propCatalog() *fakeCatalog {
	c := &fakeCatalog{tables: map[string]*TableInfo{}}
	for _, s := range propSchemas {
		c.tables[s+".a"] = table(key("PRIMARY", 0), ciKey("u", 1))
		c.tables[s+".b"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)},
			Columns: []Column{{Name: "id", IntegerBits: 32, Plain: true}, {Name: "v", Plain: true}}}
		c.tables[s+".heap"] = &TableInfo{}
		c.tables[s+".parent"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}, ForeignKeys: true}
		c.tables[s+".child"] = &TableInfo{Keys: []UniqueKey{key("PRIMARY", 0)}, ForeignKeys: true}
	}
	return c
}

func genStream(r *rand.Rand, n int) []genTxn {
	spellings := func(v int) string {
		s := fmt.Sprintf("k%d", v)
		switch r.IntN(3) {
		case 0:
			return strings.ToUpper(s)
		case 1:
			return s + "  "
		}
		return s
	}
	out := make([]genTxn, n)
	for i := range out {
		if r.IntN(40) == 0 {
			out[i] = genTxn{txn: ddl("ALTER TABLE s0.a ADD c INT"), keys: []string{"*"}}
			continue
		}
		var events []binlog.Event
		var keys []string
		var statements []string // in database s0
		add := func(schema string, k ...string) {
			keys = append(keys, "schema:"+schema)
			for _, x := range k {
				keys = append(keys, schema+"."+x)
			}
		}
		mixed := r.IntN(3) == 0 // a group of statements, and maybe rows
		for range 1 + r.IntN(4) {
			s := propSchemas[r.IntN(len(propSchemas))]
			id, id2 := r.IntN(8), r.IntN(8)
			kind := r.IntN(7)
			if mixed && r.IntN(4) != 0 {
				kind = 7 + r.IntN(6)
				s = "s0"
			}
			switch kind {
			case 0, 1:
				u := r.IntN(6)
				events = append(events, rows(s, "a", row(int64(id), spellings(u))))
				add(s, fmt.Sprint("a.pk:", id), fmt.Sprint("a.u:", u))
			case 2:
				u, u2 := r.IntN(6), r.IntN(6)
				events = append(events, rows(s, "a", row(int64(id), spellings(u)), row(int64(id2), spellings(u2))))
				add(s, fmt.Sprint("a.pk:", id), fmt.Sprint("a.u:", u), fmt.Sprint("a.pk:", id2), fmt.Sprint("a.u:", u2))
			case 3:
				events = append(events, rows(s, "a", row(int64(id), nil)))
				add(s, fmt.Sprint("a.pk:", id))
			case 4:
				events = append(events, rows(s, "b", row(uint32(id), "x"), row(uint32(id2), "y")))
				add(s, fmt.Sprint("b.pk:", id), fmt.Sprint("b.pk:", id2))
			case 5:
				events = append(events, rows(s, "heap", row(id)))
				add(s, "heap")
			case 6:
				if r.IntN(2) == 0 {
					events = append(events, rows(s, "parent", row(int64(id))))
				} else {
					events = append(events, rows(s, "child", row(int64(100+id2), int64(id))))
					add(s, fmt.Sprint("child.pk:", 100+id2))
				}
				add(s, fmt.Sprint("parent.pk:", id))
			// statements on s0 (ids 0 to 7; a 0 the policy must take whole)
			case 7:
				statements = append(statements, fmt.Sprintf("UPDATE b SET v = CONCAT(v, 'x') WHERE id = %d", id))
				add(s, fmt.Sprint("b.pk:", id))
			case 8:
				statements = append(statements, fmt.Sprintf("DELETE FROM b WHERE id = %d", id))
				add(s, fmt.Sprint("b.pk:", id))
			case 9:
				statements = append(statements, fmt.Sprintf("INSERT INTO b (id, v) VALUES (%d, 'x'), (%d, 'y')", id, id2))
				add(s, fmt.Sprint("b.pk:", id), fmt.Sprint("b.pk:", id2))
			case 10:
				statements = append(statements, fmt.Sprintf("UPDATE b SET v = 'z' WHERE id > %d", id))
				for k := range 8 {
					add(s, fmt.Sprint("b.pk:", k))
				}
			case 11:
				// a's second unique key is a string: whole
				statements = append(statements, fmt.Sprintf("UPDATE a SET v = 1 WHERE id = %d", id))
				for k := range 8 {
					add(s, fmt.Sprint("a.pk:", k))
				}
				for u := range 6 {
					add(s, fmt.Sprint("a.u:", u))
				}
			case 12:
				statements = append(statements, fmt.Sprintf("REPLACE INTO b (id, v) VALUES (%d, 'r')", id))
				add(s, fmt.Sprint("b.pk:", id))
			}
		}
		txn := dml(events...)
		if len(statements) > 0 {
			txn.Events = txn.Events[:len(txn.Events)-1]
			addStatements(txn, "s0", statements...)
			txn.Events = append(txn.Events, query("COMMIT"))
			if !slices.Contains(txn.Schemas, "s0") {
				txn.Schemas = append(txn.Schemas, "s0")
			}
		}
		out[i] = genTxn{txn: txn, keys: keys}
	}
	return out
}

// rowKeys keeps the row keys, what the writeset policy promises; schemaKeys
// the database keys, what the schema policy promises.
func rowKeys(stream []genTxn) []genTxn    { return filterKeys(stream, false) }
func schemaKeys(stream []genTxn) []genTxn { return filterKeys(stream, true) }

func filterKeys(stream []genTxn, schemas bool) []genTxn {
	out := make([]genTxn, len(stream))
	for i, g := range stream {
		out[i].txn = g.txn
		for _, k := range g.keys {
			if k == "*" || strings.HasPrefix(k, "schema:") == schemas {
				out[i].keys = append(out[i].keys, k)
			}
		}
	}
	return out
}

// simulate runs the stream through p as the coordinator does with causal
// commit order, choosing at random what to admit, start and commit, and
// returns when each transaction started and committed.
func simulate(t *testing.T, r *rand.Rand, p Policy, stream []genTxn, workers int) (start, end []int) {
	n := len(stream)
	start, end = make([]int, n+1), make([]int, n+1)
	deps := make([]Deps, n+1)
	committed := make([]bool, n+1)
	var admitted, barrier int64
	var waiting, running []int64
	for clock := 1; ; clock++ {
		inFlight := len(waiting) + len(running)
		if admitted == int64(n) && inFlight == 0 {
			return start, end
		}
		var ready []int
		for i, g := range waiting {
			if !slices.ContainsFunc(deps[g], func(d int64) bool { return !committed[d] }) {
				ready = append(ready, i)
			}
		}
		canAdmit := admitted < int64(n) && inFlight < workers && barrier == 0
		switch choice := r.IntN(3); {
		case canAdmit && (choice == 0 || len(ready) == 0 && len(running) == 0):
			admitted++
			d, err := p.Admit(admitted, stream[admitted-1].txn)
			if err != nil {
				t.Fatalf("Admit(%d): %v", admitted, err)
			}
			for _, x := range d {
				if x <= 0 || x >= admitted {
					t.Fatalf("Admit(%d) = %v: a dependency outside 1..%d", admitted, d, admitted-1)
				}
			}
			deps[admitted] = d
			if p.Barrier() {
				barrier = admitted
			}
			waiting = append(waiting, admitted)
		case len(ready) > 0 && (choice == 1 || len(running) == 0):
			i := ready[r.IntN(len(ready))]
			g := waiting[i]
			waiting = slices.Delete(waiting, i, i+1)
			start[g] = clock
			running = append(running, g)
		case len(running) > 0:
			i := r.IntN(len(running))
			g := running[i]
			running = slices.Delete(running, i, i+1)
			end[g] = clock
			committed[g] = true
			p.Committed(g)
			if g == barrier {
				barrier = 0
			}
		default:
			t.Fatalf("stuck: waiting %v (deps %v), nothing running", waiting, deps[waiting[0]])
		}
	}
}

func TestNoOverlapOnCommonKeys(t *testing.T) {
	policies := []struct {
		name string
		new  func() Policy
		keys func([]genTxn) []genTxn
	}{
		{"writeset", func() Policy { return NewWriteset(propCatalog()) }, rowKeys},
		{"schema", func() Policy { return NewSchema() }, schemaKeys},
	}
	for _, pol := range policies {
		t.Run(pol.name, func(t *testing.T) {
			var overlaps, near int
			for seed := range uint64(40) {
				r := rand.New(rand.NewPCG(seed, 17))
				stream := pol.keys(genStream(r, 300))
				start, end := simulate(t, r, pol.new(), stream, 16)
				for j := range stream {
					for i := range j {
						a, b := i+1, j+1
						if j-i < 16 && sharesKey(stream[i].keys, stream[j].keys) {
							near++
						}
						if start[b] > end[a] {
							continue
						}
						overlaps++
						if sharesKey(stream[i].keys, stream[j].keys) {
							t.Fatalf("seed %d: %d (keys %v) started at %d before %d (keys %v) committed at %d",
								seed, b, stream[j].keys, start[b], a, stream[i].keys, end[a])
						}
					}
				}
			}
			if overlaps == 0 || near == 0 {
				t.Fatalf("the streams tested nothing: %d overlaps, %d conflicting pairs", overlaps, near)
			}
			t.Logf("%d overlapping pairs, %d conflicting pairs within 16", overlaps, near)
		})
	}
}

func sharesKey(a, b []string) bool {
	if slices.Contains(a, "*") || slices.Contains(b, "*") {
		return len(a) > 0 && len(b) > 0
	}
	for _, k := range a {
		if slices.Contains(b, k) {
			return true
		}
	}
	return false
}
