// table_test.go checks the resource table against a Go map over random
// operations, with keys chosen to share their home slot, key 0, and probe
// chains that wrap around the end of the slots.
package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sameHome returns keys whose home is the same in every table of up to
// 2^20 slots: their products by the home multiplier share the top 20 bits.
func sameHome(r *rand.Rand, top uint64, n int) []uint64 {
	inverse := uint64(0x9e3779b97f4a7c15) // Newton's iteration: the multiplier's inverse modulo 2^64
	for range 6 {
		inverse *= 2 - 0x9e3779b97f4a7c15*inverse
	}
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = (top<<44 | r.Uint64()>>20) * inverse
	}
	return keys
}

type wantHolders struct {
	exclusive int64
	shared    []int64
}

func TestTableAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// keys: a pool with many sharing a home (the first slot, the last one,
	// one between), key 0, and random ones.
	var pool []uint64
	pool = append(pool, 0)
	pool = append(pool, sameHome(r, 0, 40)...)
	pool = append(pool, sameHome(r, 1<<20-1, 40)...)
	pool = append(pool, sameHome(r, 12345, 40)...)
	for range 2000 {
		pool = append(pool, r.Uint64())
	}
	if (pool[1]*0x9e3779b97f4a7c15)>>44 != (pool[2]*0x9e3779b97f4a7c15)>>44 {
		t.Fatal("sameHome keys differ in their home")
	}
	tb := newResourceTable()
	want := map[uint64]*wantHolders{}
	grown, shrunk := false, false
	for step := range 200_000 {
		// phases of mostly adding, of adding and removing, and of draining,
		// so that the table grows, and shrinks back to its least
		add, remove := [3]int{70, 40, 0}[step/20_000%3], [3]int{15, 40, 80}[step/20_000%3]
		key := pool[r.IntN(len(pool))]
		gi := int64(step + 1)
		switch op := r.IntN(100); {
		case op < add:
			s := tb.at(key)
			w := want[key]
			if w == nil {
				w = &wantHolders{}
				want[key] = w
			}
			if r.IntN(2) == 0 {
				s.exclusive, w.exclusive = gi, gi
				tb.setShared(s, nil)
				w.shared = nil
			} else {
				tb.share(s, gi)
				w.shared = append(w.shared, gi)
			}
		case op < add+remove:
			i, ok := tb.find(key)
			if _, in := want[key]; ok != in {
				t.Fatalf("step %d: find(%#x) = %v, want %v", step, key, ok, in)
			}
			if ok {
				tb.remove(i)
				delete(want, key)
			}
		default:
			// drop a shared holder from the front or from the middle
			i, ok := tb.find(key)
			if !ok || len(want[key].shared) == 0 {
				continue
			}
			w, s := want[key], &tb.slots[i]
			holder := w.shared[r.IntN(len(w.shared))]
			if r.IntN(2) == 0 {
				holder = w.shared[0]
			}
			tb.setShared(s, forget(tb.shared(s), holder))
			w.shared = slices.DeleteFunc(w.shared, func(x int64) bool { return x == holder })
		}
		grown = grown || len(tb.slots) > 1024
		shrunk = shrunk || grown && len(tb.slots) == minSlots
		if step%97 == 0 || len(want) < 50 {
			checkTable(t, step, tb, want)
		}
	}
	checkTable(t, -1, tb, want)
	if !grown || !shrunk {
		t.Errorf("the table did not grow past 1024 slots and shrink back (grown %v, shrunk %v)", grown, shrunk)
	}
}

// checkTable checks the table's invariants and that it holds what want does.
func checkTable(t *testing.T, step int, tb *resourceTable, want map[uint64]*wantHolders) {
	t.Helper()
	n := len(tb.slots)
	if n < minSlots || n&(n-1) != 0 {
		t.Fatalf("step %d: %d slots", step, n)
	}
	if tb.count*4 > n*3 || n > minSlots && tb.count*16 < n {
		t.Fatalf("step %d: %d of %d slots used", step, tb.count, n)
	}
	used, lists := 0, 0
	for i, s := range tb.slots {
		if !s.used {
			if s != (slot{}) {
				t.Fatalf("step %d: free slot %d holds %+v", step, i, s)
			}
			continue
		}
		used++
		for j := tb.home(s.key); j != i; j = (j + 1) & (n - 1) {
			if !tb.slots[j].used {
				t.Fatalf("step %d: key %#x at %d after a free slot %d", step, s.key, i, j)
			}
		}
		w := want[s.key]
		if w == nil {
			t.Fatalf("step %d: key %#x in the table, not in the map", step, s.key)
		}
		if s.list != 0 {
			lists++
		}
		if s.exclusive != w.exclusive || !slices.Equal(tb.shared(&tb.slots[i]), w.shared) {
			t.Fatalf("step %d: key %#x holds %d %v, want %d %v", step, s.key, s.exclusive, tb.shared(&tb.slots[i]), w.exclusive, w.shared)
		}
		if (s.list != 0) != (len(w.shared) > 0) {
			t.Fatalf("step %d: key %#x has list %d for %v", step, s.key, s.list, w.shared)
		}
	}
	if used != tb.count || used != len(want) {
		t.Fatalf("step %d: %d slots used, count %d, map %d", step, used, tb.count, len(want))
	}
	if lists+len(tb.freeLists) != len(tb.lists) {
		t.Fatalf("step %d: %d lists in use and %d free of %d", step, lists, len(tb.freeLists), len(tb.lists))
	}
	for k := range want {
		if i, ok := tb.find(k); !ok || tb.slots[i].key != k {
			t.Fatalf("step %d: key %#x not found", step, k)
		}
	}
}
