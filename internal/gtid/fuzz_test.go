// Fuzz targets: set algebra against the model set, and parse/print round
// trips of both flavours.

package gtid

import (
	"math"
	"strings"
	"testing"
)

// FuzzIntervalsAlgebra runs Add, AddRange, Union, Subtract, Intersect and
// Clone, encoded in the input, against modelSet. The first byte picks the
// node size (so trees get deep) and whether numbers sit at 0 or at the top of
// the uint64 range.
func FuzzIntervalsAlgebra(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 3, 0, 0, 2, 0})
	f.Add([]byte{1, 1, 10, 20, 3, 15, 30, 5, 0, 0, 4, 0, 0, 6, 0, 0})
	f.Add([]byte{2, 0, 255, 0, 1, 250, 31, 2, 254, 0, 5, 0, 0, 7, 3, 0, 8, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		withNodeSize(t, []int{3, 4, 6, 63}[data[0]%4])
		base := uint64(0)
		if data[0]&4 != 0 {
			base = math.MaxUint64 - 255
		}
		runIntervalOps(t, base, data[1:])
	})
}

// FuzzMariaDBPositionRoundTrip checks that whatever ParseMariaDBPosition
// accepts prints in a form that parses back to the same position and prints
// the same again.
func FuzzMariaDBPositionRoundTrip(f *testing.F) {
	for _, s := range []string{"", "0-1-51253", "0-1-51253,1-1-10", " 1-2-3 , 0-0-0", "5-1-1,4-1-1,3-1-1,2-1-1,1-1-1", "0-1-5,0-1-6", "x-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseMariaDBPosition(s)
		if err != nil {
			return
		}
		printed := p.String()
		again, err := ParseMariaDBPosition(printed)
		if err != nil {
			t.Fatalf("%q parsed, printed as %q, which does not parse: %v", s, printed, err)
		}
		if !again.Equal(p) || again.String() != printed {
			t.Fatalf("%q parsed, printed as %q, parsed back as %q", s, printed, again)
		}
		for _, g := range p.GTIDs() {
			if !p.Contains(g) {
				t.Fatalf("%q does not contain its own %s", printed, g)
			}
			if one, err := ParseMariaDBGTID(g.String()); err != nil || one != g {
				t.Fatalf("GTID %s round trips to %v, %v", g, one, err)
			}
		}
	})
}

// FuzzMySQLSetRoundTrip checks that whatever ParseMySQLSet accepts prints in
// a form that parses back to the same set and prints the same again; and the
// same for single GTIDs.
func FuzzMySQLSetRoundTrip(f *testing.F) {
	for _, s := range []string{
		"",
		uuidA + ":1-5:11-18",
		uuidA + ":1-5:11-18,\n" + uuidB + ":1-3",
		uuidA + ":domain_1:1-3:15-21:Domain_2:8-52",
		uuidA + ":1-4:aaaa:1:abc:1-3," + uuidB + ":x:1",
		strings.ToUpper(uuidB) + " : 7 , ,",
		uuidA + ":9223372036854775806",
		uuidA + ":tag:5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := ParseMySQLGTID(s); err == nil {
			printed := g.String()
			if again, err := ParseMySQLGTID(printed); err != nil || again != g {
				t.Fatalf("GTID %q printed as %q parses back as %+v, %v", s, printed, again, err)
			}
		}
		set, err := ParseMySQLSet(s)
		if err != nil {
			return
		}
		printed := set.String()
		again, err := ParseMySQLSet(printed)
		if err != nil {
			t.Fatalf("%q parsed, printed as %q, which does not parse: %v", s, printed, err)
		}
		if !again.Equal(set) || again.String() != printed {
			t.Fatalf("%q parsed, printed as %q, parsed back as %q", s, printed, again)
		}
		if !set.Union(again).Equal(set) || !set.Subtract(again).IsEmpty() || !set.Intersect(again).Equal(set) {
			t.Fatalf("algebra of %q with itself is wrong", printed)
		}
	})
}
