// This file owns Intervals, a set of uint64 sequence numbers, and its algebra.
//
// Invariant: an Intervals is either zero (empty, no storage) or refers to a
// tree holding sorted, non-overlapping, non-adjacent closed intervals.

package gtid

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Interval is the closed range of sequence numbers [Start, End].
type Interval struct {
	Start, End uint64
}

// Intervals is a set of uint64 sequence numbers kept as sorted,
// non-overlapping, non-adjacent closed intervals in a B+ tree: Add and
// Contains are O(log n) in the number of intervals, and O(1) at the end of
// the set, which is where replication adds almost every GTID.
//
// The zero value is an empty set. Like a map, an Intervals refers to its
// storage: a copy of a non-empty Intervals shares it, so Add through one copy
// is seen by the other. Clone gives an independent set. Methods that only
// read are safe for concurrent use; Add and AddRange are not.
type Intervals struct {
	t *tree
}

func (s *Intervals) storage() *tree {
	if s.t == nil {
		s.t = &tree{}
	}
	return s.t
}

// Add puts n into the set.
func (s *Intervals) Add(n uint64) {
	s.storage().add(n, n)
}

// AddRange puts every n with start <= n <= end into the set; it does nothing
// when start > end.
func (s *Intervals) AddRange(start, end uint64) {
	if start > end {
		return
	}
	s.storage().add(start, end)
}

// Contains reports whether n is in the set.
func (s Intervals) Contains(n uint64) bool {
	return s.t != nil && s.t.contains(n)
}

// Len is the number of intervals.
func (s Intervals) Len() int {
	if s.t == nil {
		return 0
	}
	return s.t.n
}

// IsEmpty reports whether the set has no members.
func (s Intervals) IsEmpty() bool { return s.Len() == 0 }

// Count is the number of members, math.MaxUint64 when that does not fit.
func (s Intervals) Count() uint64 {
	var total uint64
	for iv := range s.All() {
		size := iv.End - iv.Start + 1
		if size == 0 {
			return math.MaxUint64
		}
		var carry uint64
		if total, carry = bits.Add64(total, size, 0); carry != 0 {
			return math.MaxUint64
		}
	}
	return total
}

// Last is the highest interval, if the set is not empty.
func (s Intervals) Last() (Interval, bool) {
	if s.Len() == 0 {
		return Interval{}, false
	}
	ivs := s.t.last.ivs
	return ivs[len(ivs)-1], true
}

// All yields the intervals in ascending order. The set must not be changed
// while the iteration runs.
func (s Intervals) All() iter.Seq[Interval] {
	return func(yield func(Interval) bool) {
		if s.Len() == 0 {
			return
		}
		s.t.root.eachLeaf(func(ivs []Interval) bool {
			for _, iv := range ivs {
				if !yield(iv) {
					return false
				}
			}
			return true
		})
	}
}

// Ranges returns a copy of the intervals in ascending order.
func (s Intervals) Ranges() []Interval {
	out := make([]Interval, 0, s.Len())
	if s.Len() > 0 {
		s.t.root.eachLeaf(func(ivs []Interval) bool {
			out = append(out, ivs...)
			return true
		})
	}
	return out
}

// Clone returns an independent copy of the set.
func (s Intervals) Clone() Intervals {
	if s.Len() == 0 {
		return Intervals{}
	}
	return Intervals{t: s.t.clone()}
}

// Equal reports whether both sets have the same members.
func (s Intervals) Equal(t Intervals) bool {
	if s.Len() != t.Len() {
		return false
	}
	if s.Len() == 0 || s.t == t.t {
		return true
	}
	theirs := t.Ranges()
	equal := true
	s.t.root.eachLeaf(func(ivs []Interval) bool {
		for i, iv := range ivs {
			if iv != theirs[i] {
				equal = false
				return false
			}
		}
		theirs = theirs[len(ivs):]
		return true
	})
	return equal
}

// Union returns the numbers in s or t.
func (s Intervals) Union(t Intervals) Intervals {
	a, b := s.Ranges(), t.Ranges()
	var out Intervals
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || (len(a) > 0 && a[0].Start <= b[0].Start) {
			out.AddRange(a[0].Start, a[0].End)
			a = a[1:]
		} else {
			out.AddRange(b[0].Start, b[0].End)
			b = b[1:]
		}
	}
	return out
}

// Intersect returns the numbers in both s and t.
func (s Intervals) Intersect(t Intervals) Intervals {
	a, b := s.Ranges(), t.Ranges()
	var out Intervals
	for len(a) > 0 && len(b) > 0 {
		if lo, hi := max(a[0].Start, b[0].Start), min(a[0].End, b[0].End); lo <= hi {
			out.AddRange(lo, hi)
		}
		if a[0].End < b[0].End {
			a = a[1:]
		} else {
			b = b[1:]
		}
	}
	return out
}

// Subtract returns the numbers in s that are not in t.
func (s Intervals) Subtract(t Intervals) Intervals {
	a, b := s.Ranges(), t.Ranges()
	var out Intervals
	for _, iv := range a {
		for len(b) > 0 && b[0].End < iv.Start {
			b = b[1:]
		}
		from, covered := iv.Start, false
		for _, cut := range b {
			if cut.Start > iv.End {
				break
			}
			if cut.Start > from {
				out.AddRange(from, cut.Start-1)
			}
			if cut.End >= iv.End {
				covered = true
				break
			}
			from = cut.End + 1
		}
		if !covered {
			out.AddRange(from, iv.End)
		}
	}
	return out
}

// String prints the intervals as MySQL prints one UUID's: "1-5:7:9-10", ""
// when empty.
func (s Intervals) String() string {
	return string(s.appendText(make([]byte, 0, 12*s.Len())))
}

func (s Intervals) appendText(b []byte) []byte {
	first := true
	for iv := range s.All() {
		if !first {
			b = append(b, ':')
		}
		first = false
		b = strconv.AppendUint(b, iv.Start, 10)
		if iv.End != iv.Start {
			b = append(b, '-')
			b = strconv.AppendUint(b, iv.End, 10)
		}
	}
	return b
}

// ParseIntervals reads what Intervals.String prints: intervals "a" or "a-b"
// joined by ':', in any order, possibly overlapping; "" is the empty set.
func ParseIntervals(s string) (Intervals, error) {
	var out Intervals
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ":") {
		startText, endText, isRange := strings.Cut(part, "-")
		start, err := strconv.ParseUint(strings.TrimSpace(startText), 10, 64)
		if err != nil {
			return Intervals{}, fmt.Errorf("gtid: bad interval list %s: %q is not a number", quoteInput(s), startText)
		}
		end := start
		if isRange {
			if end, err = strconv.ParseUint(strings.TrimSpace(endText), 10, 64); err != nil {
				return Intervals{}, fmt.Errorf("gtid: bad interval list %s: %q is not a number", quoteInput(s), endText)
			}
		}
		if end < start {
			return Intervals{}, fmt.Errorf("gtid: bad interval list %s: interval %q ends before it starts", quoteInput(s), part)
		}
		out.AddRange(start, end)
	}
	return out, nil
}

// quoteInput quotes a parser's input for an error message, shortened so that
// a GTID set of a million intervals does not end up in a log line.
func quoteInput(s string) string {
	const limit = 80
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}
