// Tests of MariaDB GTIDs and positions.

package gtid

import (
	"slices"
	"testing"
)

func TestParseMariaDBGTID(t *testing.T) {
	tests := []struct {
		in      string
		want    MariaDBGTID
		wantErr string
	}{
		{in: "0-1-51253", want: MariaDBGTID{0, 1, 51253}},
		{in: " 4294967295-4294967295-18446744073709551615 ", want: MariaDBGTID{4294967295, 4294967295, 18446744073709551615}},
		{in: "x-1", wantErr: `gtid: bad MariaDB GTID "x-1": domain is not a number`},
		{in: "", wantErr: `gtid: bad MariaDB GTID "": domain is missing`},
		{in: "0", wantErr: `gtid: bad MariaDB GTID "0": missing server id`},
		{in: "0-1", wantErr: `gtid: bad MariaDB GTID "0-1": missing sequence number`},
		{in: "0--5", wantErr: `gtid: bad MariaDB GTID "0--5": server id is missing`},
		{in: "0-1-", wantErr: `gtid: bad MariaDB GTID "0-1-": sequence number is missing`},
		{in: "0-y-5", wantErr: `gtid: bad MariaDB GTID "0-y-5": server id is not a number`},
		{in: "0-1-5-6", wantErr: `gtid: bad MariaDB GTID "0-1-5-6": sequence number is not a number`},
		{in: "0-1-+5", wantErr: `gtid: bad MariaDB GTID "0-1-+5": sequence number is not a number`},
		{in: "-1-1-5", wantErr: `gtid: bad MariaDB GTID "-1-1-5": domain is missing`},
		{in: "4294967296-1-1", wantErr: `gtid: bad MariaDB GTID "4294967296-1-1": domain 4294967296 is out of range (max 4294967295)`},
		{in: "1-4294967296-1", wantErr: `gtid: bad MariaDB GTID "1-4294967296-1": server id 4294967296 is out of range (max 4294967295)`},
		{in: "1-1-18446744073709551616", wantErr: `gtid: bad MariaDB GTID "1-1-18446744073709551616": sequence number 18446744073709551616 is out of range (max 18446744073709551615)`},
	}
	for _, tt := range tests {
		got, err := ParseMariaDBGTID(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseMariaDBGTID(%q) error = %v, want %s", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseMariaDBGTID(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if got := (MariaDBGTID{0, 1, 51253}).String(); got != "0-1-51253" {
		t.Errorf("String()=%q", got)
	}
}

func TestParseMariaDBPosition(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "0-1-51253", want: "0-1-51253"},
		{in: "1-1-10,0-1-51253", want: "0-1-51253,1-1-10"},
		{in: "0-1-5 , 1-2-3,\t2-3-4", want: "0-1-5,1-2-3,2-3-4"},
		{in: "7-1-1,6-1-1,5-1-1,4-1-1,3-1-1,2-1-1,1-1-1", want: "1-1-1,2-1-1,3-1-1,4-1-1,5-1-1,6-1-1,7-1-1"},
		{in: "0-1-5,0-2-6", wantErr: `gtid: bad MariaDB position "0-1-5,0-2-6": domain 0 appears twice`},
		{in: "1-1-1,2-1-1,3-1-1,4-1-1,5-1-1,3-9-9", wantErr: `gtid: bad MariaDB position "1-1-1,2-1-1,3-1-1,4-1-1,5-1-1,3-9-9": domain 3 appears twice`},
		{in: "0-1-5,", wantErr: `gtid: bad MariaDB position "0-1-5,": GTID 2 is empty`},
		{in: ",0-1-5", wantErr: `gtid: bad MariaDB position ",0-1-5": GTID 1 is empty`},
		{in: "0-1-5,x-1", wantErr: `gtid: bad MariaDB position "0-1-5,x-1": GTID "x-1": domain is not a number`},
	}
	for _, tt := range tests {
		p, err := ParseMariaDBPosition(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseMariaDBPosition(%q) error = %v, want %s", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMariaDBPosition(%q): %v", tt.in, err)
			continue
		}
		if got := p.String(); got != tt.want {
			t.Errorf("ParseMariaDBPosition(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMariaDBPositionMethods(t *testing.T) {
	for _, extra := range []int{0, 6} {
		var p MariaDBPosition
		if !p.IsEmpty() || p.String() != "" || p.Len() != 0 {
			t.Fatal("zero position is not empty")
		}
		for d := range extra {
			p.Advance(MariaDBGTID{Domain: uint32(100 + d), Server: 1, Seq: 1})
		}
		p.Advance(MariaDBGTID{Domain: 1, Server: 1, Seq: 10})
		p.Advance(MariaDBGTID{Domain: 0, Server: 2, Seq: 50})
		p.Advance(MariaDBGTID{Domain: 1, Server: 3, Seq: 7})
		if g, ok := p.Get(1); !ok || g != (MariaDBGTID{1, 3, 7}) {
			t.Fatalf("Get(1)=%v,%v after Advance to a lower seq", g, ok)
		}
		if _, ok := p.Get(2); ok {
			t.Fatal("Get(2) found a domain never advanced")
		}
		if p.Len() != 2+extra || p.IsEmpty() {
			t.Fatalf("Len()=%d", p.Len())
		}
		if ds := p.Domains(); ds[0] != 0 || ds[1] != 1 || len(ds) != 2+extra || !slices.IsSorted(ds) {
			t.Fatalf("Domains()=%v", ds)
		}
		for _, c := range []struct {
			g    MariaDBGTID
			want bool
		}{
			{MariaDBGTID{0, 9, 50}, true},
			{MariaDBGTID{0, 2, 51}, false},
			{MariaDBGTID{1, 1, 1}, true},
			{MariaDBGTID{2, 1, 0}, false},
		} {
			if got := p.Contains(c.g); got != c.want {
				t.Errorf("Contains(%v)=%v, want %v", c.g, got, c.want)
			}
		}
		q, _ := ParseMariaDBPosition("0-5-49,1-1-7")
		if !p.Covers(q) || q.Covers(p) {
			t.Errorf("Covers: p=%s q=%s", p, q)
		}
		if !p.Covers(MariaDBPosition{}) || (MariaDBPosition{}).Covers(q) {
			t.Error("Covers with an empty position")
		}
		if p.Equal(q) || !p.Equal(p.Clone()) {
			t.Error("Equal")
		}
		again, err := ParseMariaDBPosition(p.String())
		if err != nil || !again.Equal(p) {
			t.Errorf("round trip of %s gives %s, %v", p, again, err)
		}
		if gs := p.GTIDs(); len(gs) != p.Len() || gs[0] != (MariaDBGTID{0, 2, 50}) {
			t.Errorf("GTIDs()=%v", gs)
		}
	}
}

// TestMariaDBPositionIsAValue checks that copies never see each other's
// changes, whether the domains fit inline or spill.
func TestMariaDBPositionIsAValue(t *testing.T) {
	for _, domains := range []int{1, 4, 5, 9} {
		var p MariaDBPosition
		for d := range domains {
			p.Advance(MariaDBGTID{Domain: uint32(d), Server: 1, Seq: 100})
		}
		before := p.String()
		copied := p
		cloned := p.Clone()
		copied.Advance(MariaDBGTID{Domain: 0, Server: 2, Seq: 200})
		cloned.Advance(MariaDBGTID{Domain: 1000, Server: 3, Seq: 300})
		if p.String() != before {
			t.Fatalf("%d domains: original changed to %s through a copy", domains, p)
		}
		p.Advance(MariaDBGTID{Domain: 0, Server: 4, Seq: 400})
		if g, _ := copied.Get(0); g.Seq != 200 {
			t.Fatalf("%d domains: copy changed through the original: %v", domains, g)
		}
		if _, ok := cloned.Get(1000); !ok || cloned.Len() != domains+1 {
			t.Fatalf("%d domains: clone lost its own change", domains)
		}
	}
}
