// resources_test.go checks the ledger against the plainest keeping of its
// invariant, in Go maps: over random takes and commits, every take must
// answer the same dependencies, in the same order.
package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// mapLedger is the invariant of resources.go kept in maps.
type mapLedger struct {
	exclusive map[uint64]int64
	shared    map[uint64][]int64
	held      map[int64][]uint64
}

func (l *mapLedger) take(gi int64, r uint64, exclusive bool, deps Deps) Deps {
	x, shared := l.exclusive[r], l.shared[r]
	if x == gi || !exclusive && len(shared) > 0 && shared[len(shared)-1] == gi {
		return deps
	}
	if x != 0 {
		deps = append(deps, x)
	}
	if exclusive {
		for _, s := range shared {
			if s != gi {
				deps = append(deps, s)
			}
		}
		l.exclusive[r] = gi
		delete(l.shared, r)
	} else {
		l.shared[r] = append(shared, gi)
	}
	l.held[gi] = append(l.held[gi], r)
	return deps
}

func (l *mapLedger) release(gi int64) {
	for _, r := range l.held[gi] {
		if l.exclusive[r] == gi {
			delete(l.exclusive, r)
		}
		if shared := slices.DeleteFunc(l.shared[r], func(s int64) bool { return s == gi }); len(shared) > 0 {
			l.shared[r] = shared
		} else {
			delete(l.shared, r)
		}
	}
	delete(l.held, gi)
}

func TestLedgerAgainstMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	l := newLedger()
	ref := &mapLedger{exclusive: map[uint64]int64{}, shared: map[uint64][]int64{}, held: map[int64][]uint64{}}
	var inFlight []int64
	for gi := int64(1); gi <= 20_000; gi++ {
		// a few hot resources (key 0 among them) taken shared or
		// exclusively, and row keys from a space that changes size, so
		// that the table grows and shrinks
		space := uint64([]int{16, 1 << 10, 1 << 16}[gi/2000%3])
		for range r.IntN(40) {
			res, exclusive := r.Uint64N(space), true
			if r.IntN(3) == 0 {
				res, exclusive = r.Uint64N(4), r.IntN(4) == 0
			}
			got, want := l.take(gi, res, exclusive, nil), ref.take(gi, res, exclusive, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("gi %d takes %d (exclusive %v): deps %v, want %v", gi, res, exclusive, got, want)
			}
		}
		inFlight = append(inFlight, gi)
		for len(inFlight) > 0 && r.IntN(len(inFlight)+1) > 8 {
			i := 0 // mostly in order, as commits come
			if r.IntN(4) == 0 {
				i = r.IntN(len(inFlight))
			}
			l.release(inFlight[i])
			ref.release(inFlight[i])
			inFlight = slices.Delete(inFlight, i, i+1)
		}
	}
	for _, gi := range inFlight {
		l.release(gi)
	}
	if l.resources.count != 0 || len(l.resources.slots) != minSlots {
		t.Errorf("all released: %d resources left in %d slots", l.resources.count, len(l.resources.slots))
	}
}
