// resources.go is the bookkeeping shared by the policies: named resources a
// transaction takes shared or exclusively, and the uncommitted transactions
// that hold them.
//
// Invariant: for every resource, exclusive is the newest uncommitted
// transaction that took it exclusively (0 when none), and shared lists the
// uncommitted transactions that took it shared since then. A transaction
// waits for the holders it conflicts with: exclusive waits for both,
// shared waits for exclusive. Waiting for the newest exclusive holder is
// enough, since that one waited for the holders before it.
//
// The resources are kept in a table of their own (table.go).
package schedule

import (
	"slices"
)

// ledger tracks resources (hashed names) and the uncommitted transactions holding them.
type ledger struct {
	resources *resourceTable
	held      map[int64][]uint64 // gi -> resources it took, for release at commit
	// uncommitted transactions, in gi order, for barriers
	uncommitted []int64
	lastBarrier int64
	freeHeld    [][]uint64 // released held lists, emptied, for reuse
	// taking is the transaction whose resources take records now, and
	// takingList its list, kept out of held until another transaction
	// takes or one is released (settle): the held map is then touched
	// once per transaction, not twice per resource.
	taking     int64
	takingList []uint64
}

func newLedger() *ledger {
	return &ledger{resources: newResourceTable(), held: make(map[int64][]uint64)}
}

// take records that gi takes resource r and adds what it must wait for to deps.
func (l *ledger) take(gi int64, r uint64, exclusive bool, deps Deps) Deps {
	h := l.resources.at(r)
	shared := l.resources.shared(h)
	if h.exclusive == gi || !exclusive && len(shared) > 0 && shared[len(shared)-1] == gi {
		return deps // taken already: by the same transaction, in the same or a stronger mode
	}
	if h.exclusive != 0 {
		deps = append(deps, h.exclusive)
	}
	if exclusive {
		for _, s := range shared {
			if s != gi {
				deps = append(deps, s)
			}
		}
		h.exclusive = gi
		l.resources.setShared(h, nil)
	} else {
		l.resources.share(h, gi)
	}
	if gi != l.taking {
		l.settle()
		l.taking = gi
		list, ok := l.held[gi]
		if !ok {
			if n := len(l.freeHeld); n > 0 {
				list, l.freeHeld = l.freeHeld[n-1], l.freeHeld[:n-1]
			}
		}
		l.takingList = list
	}
	l.takingList = append(l.takingList, r)
	return deps
}

// settle puts the list of the transaction taking resources into held.
func (l *ledger) settle() {
	if l.taking != 0 {
		l.held[l.taking] = l.takingList
		l.taking, l.takingList = 0, nil
	}
}

// admit records gi as uncommitted and makes it wait for the last barrier; a
// barrier waits for every uncommitted transaction.
func (l *ledger) admit(gi int64, barrier bool, deps Deps) Deps {
	if barrier {
		deps = append(deps, l.uncommitted...)
		l.lastBarrier = gi
	} else if l.lastBarrier != 0 {
		deps = append(deps, l.lastBarrier)
	}
	l.uncommitted = append(l.uncommitted, gi)
	return deps
}

// release forgets gi once committed.
func (l *ledger) release(gi int64) {
	l.settle()
	for _, r := range l.held[gi] {
		i, ok := l.resources.find(r)
		if !ok {
			continue // listed twice, and released already
		}
		h := &l.resources.slots[i]
		if h.exclusive == gi {
			h.exclusive = 0
		}
		l.resources.setShared(h, forget(l.resources.shared(h), gi))
		if h.exclusive == 0 && h.list == 0 {
			l.resources.remove(i)
		}
	}
	if list, ok := l.held[gi]; ok && cap(list) <= maxKeptHeld {
		l.freeHeld = append(l.freeHeld, list[:0])
	}
	delete(l.held, gi)
	l.uncommitted = forget(l.uncommitted, gi)
	if l.lastBarrier == gi {
		l.lastBarrier = 0
	}
}

// forget removes gi from list, a list of transactions in gi order. A
// transaction that commits in order is the list's first: it is dropped
// from the front, without moving the rest (a table every transaction takes
// shared lists thousands), and append moves only what is left when it
// grows the list again.
func forget(list []int64, gi int64) []int64 {
	switch i := slices.Index(list, gi); {
	case i == 0:
		return list[1:]
	case i > 0:
		return slices.Delete(list, i, i+1)
	}
	return list
}

// maxKeptHeld bounds the lists of resources kept for reuse: a transaction
// that took more gets a list of its own.
const maxKeptHeld = 1024

// tidy sorts deps and drops repeats.
func tidy(deps Deps) Deps {
	slices.Sort(deps)
	return slices.Compact(deps)
}
