// Tests of Intervals and the B+ tree under it, against a plain model set.

package gtid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// withNodeSize shrinks tree nodes for the rest of the test, so that a few
// hundred intervals make a tree several levels deep.
func withNodeSize(tb testing.TB, size int) {
	tb.Helper()
	old := maxNodeItems
	maxNodeItems = size
	tb.Cleanup(func() { maxNodeItems = old })
}

// checkTree fails tb unless s keeps every invariant of its tree.
func checkTree(tb testing.TB, s Intervals) {
	tb.Helper()
	if s.t == nil || s.t.root == nil {
		if s.t != nil && (s.t.n != 0 || s.t.last != nil) {
			tb.Fatalf("empty tree with n=%d last=%p", s.t.n, s.t.last)
		}
		return
	}
	var all []Interval
	leafDepth := -1
	var walk func(x *node, depth int, isRoot bool)
	walk = func(x *node, depth int, isRoot bool) {
		if x.size() == 0 {
			tb.Fatalf("empty node at depth %d", depth)
		}
		if x.size() > maxNodeItems {
			tb.Fatalf("node of %d entries, max %d", x.size(), maxNodeItems)
		}
		if x.leaf {
			if leafDepth == -1 {
				leafDepth = depth
			} else if leafDepth != depth {
				tb.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			all = append(all, x.ivs...)
			return
		}
		if len(x.mins) != len(x.kids) {
			tb.Fatalf("branch with %d kids and %d mins", len(x.kids), len(x.mins))
		}
		if isRoot && len(x.kids) < 2 {
			tb.Fatalf("root branch with %d kids", len(x.kids))
		}
		for i, kid := range x.kids {
			if got := kid.min(); got != x.mins[i] {
				tb.Fatalf("mins[%d]=%d but the kid's smallest start is %d", i, x.mins[i], got)
			}
			walk(kid, depth+1, false)
		}
	}
	walk(s.t.root, 0, true)
	if len(all) != s.t.n {
		tb.Fatalf("tree holds %d intervals, n=%d", len(all), s.t.n)
	}
	if s.t.last != s.t.root.rightmostLeaf() {
		tb.Fatalf("last is not the rightmost leaf")
	}
	for i, iv := range all {
		if iv.Start > iv.End {
			tb.Fatalf("interval %d is %v", i, iv)
		}
		if i > 0 && all[i-1].End >= iv.Start-1 {
			tb.Fatalf("intervals %v and %v overlap or touch", all[i-1], iv)
		}
	}
}

// modelSet is the obviously correct set that Intervals is checked against:
// members are base+offset for the offsets marked true.
type modelSet struct {
	base    uint64
	members [256]bool
}

func (m *modelSet) addRange(from, to uint8) {
	for v := int(from); v <= int(to); v++ {
		m.members[v] = true
	}
}

func (m *modelSet) ranges() []Interval {
	var out []Interval
	for v := 0; v < 256; v++ {
		if !m.members[v] {
			continue
		}
		n := m.base + uint64(v)
		if len(out) > 0 && out[len(out)-1].End == n-1 && v > 0 && m.members[v-1] {
			out[len(out)-1].End = n
		} else {
			out = append(out, Interval{n, n})
		}
	}
	return out
}

// checkAgainst fails tb unless s has exactly the members of m.
func checkAgainst(tb testing.TB, s Intervals, m *modelSet) {
	tb.Helper()
	checkTree(tb, s)
	var count uint64
	for v := 0; v < 256; v++ {
		if got := s.Contains(m.base + uint64(v)); got != m.members[v] {
			tb.Fatalf("Contains(base+%d)=%v, want %v; set %s", v, got, m.members[v], s)
		}
		if m.members[v] {
			count++
		}
	}
	if m.base > 0 && s.Contains(m.base-1) {
		tb.Fatalf("Contains(base-1) is true")
	}
	if m.base+256 > m.base && s.Contains(m.base+256) {
		tb.Fatalf("Contains(base+256) is true")
	}
	if got := s.Count(); got != count {
		tb.Fatalf("Count()=%d, want %d", got, count)
	}
	want := m.ranges()
	if got := s.Ranges(); !slices.Equal(got, want) {
		tb.Fatalf("Ranges()=%v, want %v", got, want)
	}
	if s.Len() != len(want) {
		tb.Fatalf("Len()=%d, want %d", s.Len(), len(want))
	}
	var collected []Interval
	for iv := range s.All() {
		collected = append(collected, iv)
	}
	if !slices.Equal(collected, want) {
		tb.Fatalf("All() yields %v, want %v", collected, want)
	}
	if last, ok := s.Last(); ok != (len(want) > 0) || (ok && last != want[len(want)-1]) {
		tb.Fatalf("Last()=%v,%v", last, ok)
	}
}

// runIntervalOps applies the operations encoded in ops to two sets and their
// models, checking after every step.
func runIntervalOps(tb testing.TB, base uint64, ops []byte) {
	var a, b Intervals
	ma, mb := &modelSet{base: base}, &modelSet{base: base}
	for len(ops) >= 3 {
		op, v, w := ops[0], ops[1], ops[2]
		ops = ops[3:]
		hi := uint8(min(int(v)+int(w%32), 255))
		switch op % 9 {
		case 0:
			a.Add(base + uint64(v))
			ma.addRange(v, v)
		case 1:
			a.AddRange(base+uint64(v), base+uint64(hi))
			ma.addRange(v, hi)
		case 2:
			b.Add(base + uint64(v))
			mb.addRange(v, v)
		case 3:
			b.AddRange(base+uint64(v), base+uint64(hi))
			mb.addRange(v, hi)
		case 4:
			a = a.Union(b)
			for i := range ma.members {
				ma.members[i] = ma.members[i] || mb.members[i]
			}
		case 5:
			a = a.Subtract(b)
			for i := range ma.members {
				ma.members[i] = ma.members[i] && !mb.members[i]
			}
		case 6:
			a = a.Intersect(b)
			for i := range ma.members {
				ma.members[i] = ma.members[i] && mb.members[i]
			}
		case 7:
			b = a.Clone()
			*mb = *ma
			b.Add(base + uint64(v))
			mb.addRange(v, v)
		case 8:
			a, b = b, a
			ma, mb = mb, ma
		}
		checkAgainst(tb, a, ma)
		checkAgainst(tb, b, mb)
		if got, want := a.Equal(b), ma.members == mb.members; got != want {
			tb.Fatalf("Equal()=%v, want %v", got, want)
		}
	}
}

func TestIntervalsRandomOpsAgainstModel(t *testing.T) {
	for _, size := range []int{3, 4, 6, 63} {
		for _, base := range []uint64{0, 1 << 40, math.MaxUint64 - 255} {
			t.Run(fmt.Sprintf("node=%d/base=%d", size, base), func(t *testing.T) {
				withNodeSize(t, size)
				rng := rand.New(rand.NewPCG(uint64(size), base))
				ops := make([]byte, 3*3000)
				for i := range ops {
					ops[i] = byte(rng.IntN(256))
				}
				runIntervalOps(t, base, ops)
			})
		}
	}
}

// TestIntervalsLargeRandom grows and shrinks a set of thousands of intervals
// in small nodes, so that branches split, merge and refill at every level.
func TestIntervalsLargeRandom(t *testing.T) {
	withNodeSize(t, 4)
	const universe = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	var s Intervals
	model := make([]bool, universe)
	check := func() {
		t.Helper()
		checkTree(t, s)
		for v := range uint64(universe) {
			if s.Contains(v) != model[v] {
				t.Fatalf("Contains(%d)=%v, want %v", v, !model[v], model[v])
			}
		}
	}
	for v := uint64(0); v < universe; v += 2 {
		s.Add(v)
		model[v] = true
	}
	check()
	for round := range 20 {
		for range 2000 {
			v := rng.Uint64N(universe)
			if round%2 == 0 {
				s.Add(v)
				model[v] = true
			} else {
				end := min(v+rng.Uint64N(8), universe-1)
				s.AddRange(v, end)
				for n := v; n <= end; n++ {
					model[n] = true
				}
			}
		}
		check()
		var holes Intervals
		for range 3000 {
			v := rng.Uint64N(universe)
			holes.Add(v)
			model[v] = false
		}
		s = s.Subtract(holes)
		check()
	}
}

func TestIntervalsString(t *testing.T) {
	tests := []struct {
		name   string
		ranges [][2]uint64
		want   string
	}{
		{"empty", nil, ""},
		{"single", [][2]uint64{{7, 7}}, "7"},
		{"mysql example", [][2]uint64{{1, 5}, {7, 7}, {9, 10}}, "1-5:7:9-10"},
		{"adjacent ranges merge", [][2]uint64{{1, 3}, {4, 6}}, "1-6"},
		{"out of order", [][2]uint64{{9, 10}, {1, 5}, {7, 7}}, "1-5:7:9-10"},
		{"filling a hole merges both sides", [][2]uint64{{1, 1}, {3, 3}, {2, 2}}, "1-3"},
		{"overlap", [][2]uint64{{5, 10}, {1, 6}, {8, 20}}, "1-20"},
		{"range swallows many", [][2]uint64{{2, 2}, {4, 4}, {6, 6}, {1, 7}}, "1-7"},
		{"zero", [][2]uint64{{0, 0}, {1, 1}}, "0-1"},
		{"max", [][2]uint64{{math.MaxUint64, math.MaxUint64}, {math.MaxUint64 - 1, math.MaxUint64 - 1}}, "18446744073709551614-18446744073709551615"},
		{"everything", [][2]uint64{{0, math.MaxUint64}, {5, 6}}, "0-18446744073709551615"},
		{"empty range ignored", [][2]uint64{{5, 4}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Intervals
			for _, r := range tt.ranges {
				s.AddRange(r[0], r[1])
			}
			checkTree(t, s)
			if got := s.String(); got != tt.want {
				t.Fatalf("String()=%q, want %q", got, tt.want)
			}
			parsed, err := ParseIntervals(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if !parsed.Equal(s) {
				t.Fatalf("ParseIntervals(%q)=%s", tt.want, parsed)
			}
		})
	}
}

func TestIntervalsCount(t *testing.T) {
	var s Intervals
	if s.Count() != 0 || !s.IsEmpty() || s.Len() != 0 {
		t.Fatal("zero value is not empty")
	}
	s.AddRange(1, 10)
	s.Add(20)
	if got := s.Count(); got != 11 {
		t.Fatalf("Count()=%d, want 11", got)
	}
	s.AddRange(0, math.MaxUint64)
	if got := s.Count(); got != math.MaxUint64 {
		t.Fatalf("Count() of everything=%d, want saturation", got)
	}
	var two Intervals
	two.AddRange(0, math.MaxUint64-5)
	two.AddRange(math.MaxUint64-3, math.MaxUint64)
	if got := two.Count(); got != math.MaxUint64 {
		t.Fatalf("Count()=%d, want saturation", got)
	}
}

func TestIntervalsCopiesShareAndClonesDoNot(t *testing.T) {
	var s Intervals
	s.Add(1)
	shared := s
	clone := s.Clone()
	s.Add(2)
	if !shared.Contains(2) {
		t.Fatal("a copy does not share its storage")
	}
	if clone.Contains(2) {
		t.Fatal("a clone shares storage")
	}
	clone.Add(5)
	if s.Contains(5) {
		t.Fatal("a clone changed its original")
	}
}

func TestIntervalsAppendsFillNodes(t *testing.T) {
	var s Intervals
	for n := uint64(1); n < 2_000_000; n += 2 {
		s.Add(n)
	}
	checkTree(t, s)
	leaves, items := 0, 0
	s.t.root.eachLeaf(func(ivs []Interval) bool {
		leaves++
		items += len(ivs)
		return true
	})
	if full := float64(items) / float64(leaves*maxNodeItems); full < 0.99 {
		t.Fatalf("ascending appends left leaves %.0f%% full", 100*full)
	}
}

func TestParseIntervalsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1-x", `gtid: bad interval list "1-x": "x" is not a number`},
		{"1::3", `gtid: bad interval list "1::3": "" is not a number`},
		{"5-3", `gtid: bad interval list "5-3": interval "5-3" ends before it starts`},
		{"-3", `gtid: bad interval list "-3": "" is not a number`},
		{"1-2-3", `gtid: bad interval list "1-2-3": "2-3" is not a number`},
		{strings.Repeat("1:", 50) + "x", `gtid: bad interval list "` + strings.Repeat("1:", 40) + `"...: "x" is not a number`},
	}
	for _, tt := range tests {
		_, err := ParseIntervals(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseIntervals(%q) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}
