// table.go holds the ledger's resources: a hash table from a resource (a
// 64-bit hash of a row key or a table) to its holders, with open addressing
// and linear probing, so that a lookup reads one or two adjacent slots of
// one array instead of chasing a map bucket and then a pointer.
//
// Invariants:
//   - len(slots) is a power of two, at least minSlots, and at most 3/4 of
//     the slots are used; a table drained to under 1/16 halves. Its memory
//     follows the resources in flight: a burst (a transaction of a million
//     rows) grows it, and the commits after it give the memory back.
//   - A key is in at most one slot, and every slot from the key's home
//     (home) up to the one holding it is used: a lookup stops at the first
//     free slot. Removing a key shifts the later slots of its probe chain
//     back (backward shift), so no dead slot is ever left behind and a free
//     slot ends every chain.
//   - used marks a slot in use, so that 0 is a key like any other.
//   - list is 0 when the resource has no shared holders, else one more than
//     the index of their list in lists. The lists of released slots stay
//     in lists, emptied, for reuse (freeLists).
package schedule

import "math/bits"

// slot is one resource and its holders (see the invariant in resources.go).
// It holds no pointer, so the collector does not scan the table.
type slot struct {
	key       uint64
	exclusive int64
	list      uint32
	used      bool
}

// resourceTable maps a resource to its holders; see the invariants above.
type resourceTable struct {
	slots     []slot
	shift     uint // 64 - log2(len(slots)), for home
	count     int  // used slots
	lists     [][]int64
	freeLists []uint32 // indexes in lists free for reuse
}

const minSlots = 64

func newResourceTable() *resourceTable {
	t := &resourceTable{}
	t.resize(minSlots)
	return t
}

// home is the first slot probed for key. The keys are FNV-1a hashes, whose
// low bits are mixed the least (bit i depends on bits 0 to i of the bytes
// hashed alone), so the home is taken from the high bits of the key times
// 2^64 divided by the golden ratio (Fibonacci hashing), which every bit of
// the key moves. On primary keys whose low byte is the same in every row
// (ids a multiple of 256), key & mask probes 5.1 slots per lookup at 3/4
// load, this 1.8; on random ids both probe 1.6.
func (t *resourceTable) home(key uint64) int {
	return int((key * 0x9e3779b97f4a7c15) >> t.shift)
}

// find returns the slot holding key, or the free slot ending its probe chain
// and false.
func (t *resourceTable) find(key uint64) (int, bool) {
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			return i, false
		}
		if s.key == key {
			return i, true
		}
	}
}

// at returns key's slot, adding one without holders when key has none.
// The pointer stands until the next at or remove.
func (t *resourceTable) at(key uint64) *slot {
	i, ok := t.find(key)
	if !ok {
		if (t.count+1)*4 > len(t.slots)*3 {
			t.resize(2 * len(t.slots))
			i, _ = t.find(key)
		}
		t.slots[i] = slot{key: key, used: true}
		t.count++
	}
	return &t.slots[i]
}

// remove frees slot i, and its shared list, and shifts back the slots after
// it in its probe chain that may move closer to their home.
func (t *resourceTable) remove(i int) {
	t.setShared(&t.slots[i], nil)
	mask := len(t.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		if !t.slots[j].used {
			break
		}
		// The slot at j may fill i when i is between its home and j.
		if (j-t.home(t.slots[j].key))&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.count--
	if len(t.slots) > minSlots && t.count*16 < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

// resize moves the used slots into n slots.
func (t *resourceTable) resize(n int) {
	old := t.slots
	t.slots = make([]slot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.used {
			i, _ := t.find(s.key)
			t.slots[i] = s
		}
	}
}

// shared returns the transactions holding s shared.
func (t *resourceTable) shared(s *slot) []int64 {
	if s.list == 0 {
		return nil
	}
	return t.lists[s.list-1]
}

// share adds gi to the transactions holding s shared.
func (t *resourceTable) share(s *slot, gi int64) {
	if s.list == 0 {
		if n := len(t.freeLists); n > 0 {
			s.list, t.freeLists = t.freeLists[n-1], t.freeLists[:n-1]
		} else {
			t.lists = append(t.lists, nil)
			s.list = uint32(len(t.lists))
		}
	}
	t.lists[s.list-1] = append(t.lists[s.list-1], gi)
}

// setShared sets the shared holders of s to list, which shared returned
// and the caller cut down (emptied, or forget); an empty list is released.
func (t *resourceTable) setShared(s *slot, list []int64) {
	if s.list == 0 {
		return
	}
	if len(list) > 0 {
		t.lists[s.list-1] = list
		return
	}
	t.lists[s.list-1] = t.lists[s.list-1][:0]
	t.freeLists = append(t.freeLists, s.list)
	s.list = 0
}
