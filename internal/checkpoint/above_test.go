package checkpoint

import (
	"slices"
	"strings"
	"testing"

	"gapless/internal/gtid"
)

func TestAboveRuns(t *testing.T) {
	g := func(d, s uint32, seq uint64) gtid.MariaDBGTID {
		return gtid.MariaDBGTID{Domain: d, Server: s, Seq: seq}
	}
	var batch []gtid.MariaDBGTID
	for seq := uint64(1000); seq < 2023; seq++ {
		batch = append(batch, g(0, 1, seq))
	}
	for _, tc := range []struct {
		name  string
		above []gtid.MariaDBGTID
		want  string
	}{
		{"empty", nil, ""},
		{"one", []gtid.MariaDBGTID{g(3, 7, 44)}, "3-7-44"},
		{"a batch of 1023 is one entry", batch, "0-1-1000..2022"},
		{"sorted, runs split by gaps, servers and domains", []gtid.MariaDBGTID{g(0, 1, 9), g(0, 1, 7), g(0, 2, 8), g(0, 1, 6), g(1, 1, 10), g(0, 1, 10), g(0, 1, 6)},
			"0-1-6..7,0-1-9..10,0-2-8,1-1-10"},
		{"the largest numbers", []gtid.MariaDBGTID{g(4294967295, 4294967295, 18446744073709551615), g(4294967295, 4294967295, 18446744073709551614)},
			"4294967295-4294967295-18446744073709551614..18446744073709551615"},
	} {
		got := encodeAbove(tc.above)
		if got != tc.want {
			t.Errorf("%s: encoded %q, want %q", tc.name, got, tc.want)
			continue
		}
		back, err := decodeAbove(got)
		if err != nil {
			t.Errorf("%s: decoding %q: %v", tc.name, got, err)
			continue
		}
		want := slices.Clone(tc.above)
		slices.SortFunc(want, func(a, b gtid.MariaDBGTID) int { return strings.Compare(a.String(), b.String()) })
		want = slices.Compact(want)
		slices.SortFunc(back, func(a, b gtid.MariaDBGTID) int { return strings.Compare(a.String(), b.String()) })
		if !slices.Equal(back, want) {
			t.Errorf("%s: %q read back as %v, want %v", tc.name, got, back, want)
		}
	}
	// Rows written one GTID per entry read the same.
	if back, err := decodeAbove("0-1-5,0-1-6,2-3-4"); err != nil || !slices.Equal(back, []gtid.MariaDBGTID{g(0, 1, 5), g(0, 1, 6), g(2, 3, 4)}) {
		t.Errorf("one GTID per entry: %v, %v", back, err)
	}
	for _, bad := range []string{"0-1-7..5", "0-1-5..x", "0-1-0..18446744073709551615", "0-1..5", "x"} {
		if back, err := decodeAbove(bad); err == nil {
			t.Errorf("%q read as %v, want an error", bad, back)
		}
	}
}
