// This file owns the B+ tree behind Intervals.
//
// Invariant: intervals live only in leaves, sorted by Start across the whole
// tree, non-overlapping and non-adjacent; all leaves are at the same depth;
// branch.mins[i] is the smallest Start in the subtree branch.kids[i]; no node
// is empty; tree.last is the rightmost leaf and tree.n the number of
// intervals. Nodes hold at most maxNodeItems entries. Ascending appends leave
// full nodes behind them, and a removal merges or refills the child it left
// below minNodeItems(), so nodes stay mostly full and height stays O(log n).

package gtid

import (
	"math"
	"slices"
)

// maxNodeItems is how many intervals a leaf, or children a branch, holds at
// most. It is a variable only so tests can shrink it to build deep trees; a
// leaf of 63 intervals plus one slot of overflow is exactly 1 KiB.
var maxNodeItems = 63

// minNodeItems is the size below which a node is merged with or refilled from
// a sibling after a removal.
func minNodeItems() int { return maxNodeItems / 3 }

type node struct {
	leaf bool
	ivs  []Interval // leaf: the intervals, sorted by Start
	kids []*node    // branch: the children, in order
	mins []uint64   // branch: mins[i] is the smallest Start under kids[i]
}

func newLeaf() *node {
	return &node{leaf: true, ivs: make([]Interval, 0, maxNodeItems+1)}
}

func newBranch() *node {
	return &node{
		kids: make([]*node, 0, maxNodeItems+1),
		mins: make([]uint64, 0, maxNodeItems+1),
	}
}

func (x *node) size() int {
	if x.leaf {
		return len(x.ivs)
	}
	return len(x.kids)
}

func (x *node) min() uint64 {
	if x.leaf {
		return x.ivs[0].Start
	}
	return x.mins[0]
}

// childFor is the index of the child whose subtree holds key or, when key is
// not in the tree, the interval just before it (0 when key precedes all).
// The search has no data-dependent branch, which random lookups would
// mispredict.
func (x *node) childFor(key uint64) int {
	mins := x.mins
	lo, n := 0, len(mins)
	for n > 1 {
		half := n / 2
		if mins[lo+half] <= key {
			lo += half
		}
		n -= half
	}
	return lo
}

// startsAfter is the index of the first interval in the leaf with Start > key.
func (x *node) startsAfter(key uint64) int {
	ivs := x.ivs
	if len(ivs) == 0 {
		return 0
	}
	lo, n := 0, len(ivs)
	for n > 1 {
		half := n / 2
		if ivs[lo+half].Start <= key {
			lo += half
		}
		n -= half
	}
	if ivs[lo].Start <= key {
		lo++
	}
	return lo
}

// insert puts iv into the subtree at x and returns a new right sibling when x
// overflowed and split. rightEdge says x is the last node of its level.
func (x *node) insert(iv Interval, rightEdge bool) *node {
	if x.leaf {
		i := x.startsAfter(iv.Start)
		x.ivs = slices.Insert(x.ivs, i, iv)
		return x.splitIfOverfull(rightEdge && i == len(x.ivs)-1)
	}
	i := x.childFor(iv.Start)
	kid := x.kids[i]
	sibling := kid.insert(iv, rightEdge && i == len(x.kids)-1)
	x.mins[i] = kid.min()
	if sibling == nil {
		return nil
	}
	x.kids = slices.Insert(x.kids, i+1, sibling)
	x.mins = slices.Insert(x.mins, i+1, sibling.min())
	return x.splitIfOverfull(rightEdge && i+1 == len(x.kids)-1)
}

// splitIfOverfull moves the upper part of an overfull x into a new sibling.
// An append at the tree's right edge keeps x full and starts the sibling with
// the one new entry, so that ascending appends fill every node completely.
func (x *node) splitIfOverfull(appendAtRightEdge bool) *node {
	n := x.size()
	if n <= maxNodeItems {
		return nil
	}
	keep := n / 2
	if appendAtRightEdge {
		keep = n - 1
	}
	if x.leaf {
		sibling := newLeaf()
		sibling.ivs = append(sibling.ivs, x.ivs[keep:]...)
		x.ivs = x.ivs[:keep]
		return sibling
	}
	sibling := newBranch()
	sibling.kids = append(sibling.kids, x.kids[keep:]...)
	sibling.mins = append(sibling.mins, x.mins[keep:]...)
	clear(x.kids[keep:])
	x.kids = x.kids[:keep]
	x.mins = x.mins[:keep]
	return sibling
}

// remove deletes the interval that starts at start, which must exist.
func (x *node) remove(start uint64) {
	if x.leaf {
		i := x.startsAfter(start) - 1
		x.ivs = slices.Delete(x.ivs, i, i+1)
		return
	}
	i := x.childFor(start)
	kid := x.kids[i]
	kid.remove(start)
	switch {
	case kid.size() == 0:
		x.kids = slices.Delete(x.kids, i, i+1)
		x.mins = slices.Delete(x.mins, i, i+1)
	case kid.size() < minNodeItems() && len(x.kids) > 1:
		x.rebalance(i)
	default:
		x.mins[i] = kid.min()
	}
}

// rebalance merges the underfull child i with a neighbour, or evens out the
// two when together they would not fit in one node.
func (x *node) rebalance(i int) {
	if i == len(x.kids)-1 {
		i--
	}
	left, right := x.kids[i], x.kids[i+1]
	total := left.size() + right.size()
	if total <= maxNodeItems {
		left.moveFromRight(right, right.size())
		x.kids = slices.Delete(x.kids, i+1, i+2)
		x.mins = slices.Delete(x.mins, i+1, i+2)
	} else {
		if want := total / 2; left.size() < want {
			left.moveFromRight(right, want-left.size())
		} else {
			right.moveFromLeft(left, left.size()-want)
		}
		x.mins[i+1] = right.min()
	}
	x.mins[i] = left.min()
}

// moveFromRight appends the first k entries of right, x's right neighbour, to x.
func (x *node) moveFromRight(right *node, k int) {
	if x.leaf {
		x.ivs = append(x.ivs, right.ivs[:k]...)
		right.ivs = slices.Delete(right.ivs, 0, k)
		return
	}
	x.kids = append(x.kids, right.kids[:k]...)
	x.mins = append(x.mins, right.mins[:k]...)
	right.kids = slices.Delete(right.kids, 0, k)
	right.mins = slices.Delete(right.mins, 0, k)
}

// moveFromLeft prepends the last k entries of left, x's left neighbour, to x.
func (x *node) moveFromLeft(left *node, k int) {
	if x.leaf {
		cut := len(left.ivs) - k
		x.ivs = slices.Insert(x.ivs, 0, left.ivs[cut:]...)
		left.ivs = left.ivs[:cut]
		return
	}
	cut := len(left.kids) - k
	x.kids = slices.Insert(x.kids, 0, left.kids[cut:]...)
	x.mins = slices.Insert(x.mins, 0, left.mins[cut:]...)
	clear(left.kids[cut:])
	left.kids = left.kids[:cut]
	left.mins = left.mins[:cut]
}

func (x *node) rightmostLeaf() *node {
	for !x.leaf {
		x = x.kids[len(x.kids)-1]
	}
	return x
}

func (x *node) clone() *node {
	if x.leaf {
		c := newLeaf()
		c.ivs = append(c.ivs, x.ivs...)
		return c
	}
	c := newBranch()
	c.mins = append(c.mins, x.mins...)
	for _, kid := range x.kids {
		c.kids = append(c.kids, kid.clone())
	}
	return c
}

// eachLeaf calls yield with every leaf's intervals in order until it returns false.
func (x *node) eachLeaf(yield func([]Interval) bool) bool {
	if x.leaf {
		return yield(x.ivs)
	}
	for _, kid := range x.kids {
		if !kid.eachLeaf(yield) {
			return false
		}
	}
	return true
}

// tree is the storage shared by copies of one Intervals value.
type tree struct {
	root *node
	last *node // rightmost leaf, so that appends are O(1)
	n    int   // number of intervals
}

// floor is the interval with the greatest Start <= key, or nil. The pointer
// is valid until the tree's shape next changes.
func (t *tree) floor(key uint64) *Interval {
	if leaf, i := t.floorInLeaf(key); i >= 0 {
		return &leaf.ivs[i]
	}
	return nil
}

// floorInLeaf is the leaf that holds the interval with the greatest
// Start <= key and that interval's index there, -1 when there is none.
func (t *tree) floorInLeaf(key uint64) (*node, int) {
	x := t.root
	if x == nil {
		return nil, -1
	}
	for !x.leaf {
		x = x.kids[x.childFor(key)]
	}
	return x, x.startsAfter(key) - 1
}

func (t *tree) contains(n uint64) bool {
	if t.last == nil {
		return false
	}
	if tail := t.last.ivs[len(t.last.ivs)-1]; n >= tail.Start {
		return n <= tail.End
	}
	p := t.floor(n)
	return p != nil && n <= p.End
}

// add inserts [start, end] (start <= end), merging it with every interval it
// overlaps or touches.
func (t *tree) add(start, end uint64) {
	if t.root == nil {
		leaf := newLeaf()
		leaf.ivs = append(leaf.ivs, Interval{start, end})
		t.root, t.last, t.n = leaf, leaf, 1
		return
	}
	ivs := t.last.ivs
	if tail := &ivs[len(ivs)-1]; start >= tail.Start {
		if start <= tail.End || start-1 == tail.End {
			tail.End = max(tail.End, end)
			return
		}
		if len(ivs) < maxNodeItems {
			t.last.ivs = append(ivs, Interval{start, end})
			t.n++
			return
		}
	}
	if t.addWithinLeaf(start, end) {
		return
	}
	// Absorb, right to left, every interval that overlaps or touches
	// [start, end]; widen the leftmost in place, or insert the union.
	for {
		reach := end
		if reach < math.MaxUint64 {
			reach++
		}
		p := t.floor(reach)
		if p == nil || (start > 0 && p.End < start-1) {
			break
		}
		if p.Start <= start {
			p.End = max(p.End, end)
			return
		}
		end = max(end, p.End)
		t.remove(p.Start)
	}
	t.insert(Interval{start, end})
}

// addWithinLeaf adds [start, end] in the common case where every interval it
// merges with, and its place, lie in one leaf whose first Start, and whose
// size beyond minNodeItems(), do not change: one descent, no rebalancing. It
// reports false, changing nothing, when the case is not that simple.
func (t *tree) addWithinLeaf(start, end uint64) bool {
	reach := end
	if reach < math.MaxUint64 {
		reach++
	}
	leaf, last := t.floorInLeaf(reach)
	if last < 0 {
		return false
	}
	ivs := leaf.ivs
	touches := func(iv Interval) bool { return start == 0 || iv.End >= start-1 }
	if !touches(ivs[last]) {
		if len(ivs) == maxNodeItems {
			return false
		}
		leaf.ivs = slices.Insert(ivs, last+1, Interval{start, end})
		t.n++
		return true
	}
	first := last
	for ivs[first].Start > start && first > 0 && touches(ivs[first-1]) {
		first--
	}
	if ivs[first].Start > start && first == 0 {
		return false
	}
	merged := last - first
	if leaf != t.root && len(ivs)-merged < minNodeItems() {
		return false
	}
	ivs[first] = Interval{min(start, ivs[first].Start), max(end, ivs[last].End)}
	leaf.ivs = slices.Delete(ivs, first+1, last+1)
	t.n -= merged
	return true
}

func (t *tree) insert(iv Interval) {
	if t.root == nil {
		t.add(iv.Start, iv.End)
		return
	}
	if sibling := t.root.insert(iv, true); sibling != nil {
		root := newBranch()
		root.kids = append(root.kids, t.root, sibling)
		root.mins = append(root.mins, t.root.min(), sibling.min())
		t.root = root
	}
	t.n++
	t.last = t.root.rightmostLeaf()
}

func (t *tree) remove(start uint64) {
	t.root.remove(start)
	t.n--
	if t.n == 0 {
		t.root, t.last = nil, nil
		return
	}
	for !t.root.leaf && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
	t.last = t.root.rightmostLeaf()
}

func (t *tree) clone() *tree {
	if t.root == nil {
		return &tree{}
	}
	root := t.root.clone()
	return &tree{root: root, last: root.rightmostLeaf(), n: t.n}
}
