// Benchmarks of Intervals in the shape of MySQL bug #101717: sets of 1, 1 000
// and 1 000 000 alternating GTIDs (1, 3, 5, ...), one interval each.

package gtid

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var benchSizes = []int{1, 1_000, 1_000_000}

// alternating returns {1, 3, 5, ..., 2k-1}: k intervals.
func alternating(k int) Intervals {
	var s Intervals
	for i := range uint64(k) {
		s.Add(2*i + 1)
	}
	return s
}

// xorshift is a tiny inline random number generator, so that picking a
// random position costs next to nothing next to the operation measured.
type xorshift uint64

func (x *xorshift) below(n uint64) uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x) % n
}

// BenchmarkIntervalsAddAtEnd adds last+1, extending the last interval: what
// an applier does for almost every transaction.
func BenchmarkIntervalsAddAtEnd(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			s := alternating(k)
			next := uint64(2 * k)
			for b.Loop() {
				s.Add(next)
				next++
			}
		})
	}
}

// BenchmarkIntervalsAddNewAtEnd adds last+2, starting a new interval at the
// end every time, in the bug's shape. Every 65 536 adds the set goes back to
// its starting size, with the timer stopped.
func BenchmarkIntervalsAddNewAtEnd(b *testing.B) {
	const window = 1 << 16
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			template := alternating(k)
			s := template.Clone()
			start := uint64(2*k + 1)
			next := start
			for i := 1; b.Loop(); i++ {
				s.Add(next)
				next += 2
				if i%window == 0 {
					b.StopTimer()
					s, next = template.Clone(), start
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkIntervalsAddMiddle fills random holes of the alternating set, each
// merging two intervals into one. After half the holes are filled the set is
// refreshed from a clone, whose cost (about two intervals copied per op) is
// included. With one interval there is no hole: it adds a present member.
func BenchmarkIntervalsAddMiddle(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			template := alternating(k)
			holes := make([]uint64, k-1)
			for i := range holes {
				holes[i] = 2 * uint64(i+1)
			}
			rand.New(rand.NewPCG(1, uint64(k))).Shuffle(len(holes), func(i, j int) { holes[i], holes[j] = holes[j], holes[i] })
			window := max(len(holes)/2, 1)
			s := template.Clone()
			next, used := 0, 0
			for b.Loop() {
				if len(holes) == 0 {
					s.Add(1)
					continue
				}
				if used == window {
					s, used = template.Clone(), 0
				}
				s.Add(holes[next])
				next = (next + 1) % len(holes)
				used++
			}
		})
	}
}

// BenchmarkIntervalsContainsAtEnd asks about the newest GTIDs, the one just
// applied and the one not yet.
func BenchmarkIntervalsContainsAtEnd(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			s := alternating(k)
			last := uint64(2*k - 1)
			found := 0
			for i := 0; b.Loop(); i++ {
				if s.Contains(last + uint64(i&1)) {
					found++
				}
			}
			if found == 0 {
				b.Fatal("nothing found")
			}
		})
	}
}

// BenchmarkIntervalsContainsRandom asks about random numbers across the whole
// set, half of them members.
func BenchmarkIntervalsContainsRandom(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			s := alternating(k)
			rng := xorshift(88172645463325252)
			span := uint64(2*k - 1)
			found := 0
			for b.Loop() {
				if s.Contains(1 + rng.below(span)) {
					found++
				}
			}
			if found == 0 {
				b.Fatal("nothing found")
			}
		})
	}
}

// BenchmarkIntervalsClone measures the refresh included in AddMiddle.
func BenchmarkIntervalsClone(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			s := alternating(k)
			for b.Loop() {
				_ = s.Clone()
			}
		})
	}
}

// BenchmarkMySQLSetAddAtEnd adds the next GTID of one source to a set holding
// the bug's shape.
func BenchmarkMySQLSetAddAtEnd(b *testing.B) {
	for _, k := range benchSizes {
		b.Run(fmt.Sprintf("intervals=%d", k), func(b *testing.B) {
			var s MySQLSet
			g := MySQLGTID{SID: [16]byte{1, 2, 3}}
			for i := range uint64(k) {
				g.GNO = 2*i + 1
				s.Add(g)
			}
			g.GNO = uint64(2 * k)
			for b.Loop() {
				s.Add(g)
				g.GNO++
			}
		})
	}
}
