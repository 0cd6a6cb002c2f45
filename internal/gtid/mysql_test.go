// Tests of MySQL GTIDs and GTID sets.

package gtid

import (
	"strconv"
	"strings"
	"testing"
)

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "896e7882-18fe-11ef-ab88-22222d34d411"
)

func mustSID(t *testing.T, s string) [16]byte {
	t.Helper()
	sid, err := ParseSID(s)
	if err != nil {
		t.Fatal(err)
	}
	return sid
}

func TestParseMySQLGTID(t *testing.T) {
	sidA := [16]byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	tests := []struct {
		in, print string
		want      MySQLGTID
		wantErr   string
	}{
		{in: uuidA + ":23", print: uuidA + ":23", want: MySQLGTID{SID: sidA, GNO: 23}},
		{in: strings.ToUpper(uuidA) + ":23", print: uuidA + ":23", want: MySQLGTID{SID: sidA, GNO: 23}},
		{in: uuidA + ":Domain_1:7", print: uuidA + ":domain_1:7", want: MySQLGTID{SID: sidA, Tag: "domain_1", GNO: 7}},
		{in: " " + uuidA + " : _x : 9223372036854775806 ", print: uuidA + ":_x:9223372036854775806", want: MySQLGTID{SID: sidA, Tag: "_x", GNO: 9223372036854775806}},
		{in: uuidA + ":" + strings.Repeat("t", 32) + ":1", print: uuidA + ":" + strings.Repeat("t", 32) + ":1", want: MySQLGTID{SID: sidA, Tag: strings.Repeat("t", 32), GNO: 1}},
		{in: uuidA, wantErr: `gtid: bad MySQL GTID "` + uuidA + `": expected ':', found the end`},
		{in: uuidA + ":0", wantErr: `gtid: bad MySQL GTID "` + uuidA + `:0": transaction number 0 is not allowed (they start at 1)`},
		{in: uuidA + ":9223372036854775807", wantErr: `gtid: bad MySQL GTID "` + uuidA + `:9223372036854775807": transaction number 9223372036854775807 is out of range (max 9223372036854775806)`},
		{in: uuidA + ":1-5", wantErr: `gtid: bad MySQL GTID "` + uuidA + `:1-5": unexpected "-5" after the transaction number`},
		{in: uuidA + ":tag", wantErr: `gtid: bad MySQL GTID "` + uuidA + `:tag": expected ':', found the end`},
		{in: uuidA + ":" + strings.Repeat("t", 33) + ":1", wantErr: `gtid: bad MySQL GTID "` + uuidA + ":" + strings.Repeat("t", 33) + `:1": tag is longer than 32 characters`},
		{in: uuidA + ":-1", wantErr: `gtid: bad MySQL GTID "` + uuidA + `:-1": expected a transaction number, found "-1"`},
		{in: "3e11fa47-71ca-11e1-9e33-c80aa942956:1", wantErr: `gtid: bad MySQL GTID "3e11fa47-71ca-11e1-9e33-c80aa942956:1": expected a uuid, found "3e11fa47-71c..."`},
		{in: "3e11fa4771ca11e19e33c80aa9429562:1", wantErr: `gtid: bad MySQL GTID "3e11fa4771ca11e19e33c80aa9429562:1": expected a uuid, found "3e11fa4771ca..."`},
		{in: "3e11fa47-71ca-11e1-9e33-c80aa942956g:1", wantErr: `gtid: bad MySQL GTID "3e11fa47-71ca-11e1-9e33-c80aa942956g:1": expected a uuid, found "3e11fa47-71c..."`},
	}
	for _, tt := range tests {
		got, err := ParseMySQLGTID(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseMySQLGTID(%q) error = %v\nwant %s", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseMySQLGTID(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.print {
			t.Errorf("String() = %q, want %q", s, tt.print)
		}
	}
}

func TestParseMySQLSet(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"only whitespace and commas", " ,\n, ", ""},
		{"manual example", uuidA + ":1-5:11-18", uuidA + ":1-5:11-18"},
		{"as @@gtid_executed prints two uuids", uuidB + ":1-3,\n" + uuidA + ":1-5", uuidA + ":1-5," + uuidB + ":1-3"},
		{"upper case", strings.ToUpper(uuidA) + ":1-5", uuidA + ":1-5"},
		{"single numbers", uuidA + ":1:3:5-5", uuidA + ":1:3:5"},
		{"unsorted and overlapping", uuidA + ":11-18:1-5:4-12", uuidA + ":1-18"},
		{"adjacent merge", uuidA + ":1-5:6-8:9", uuidA + ":1-9"},
		{"uuid repeated", uuidA + ":1-2," + uuidA + ":3-4", uuidA + ":1-4"},
		{"uuid without intervals", uuidA + "," + uuidB + ":1", uuidB + ":1"},
		{"whitespace everywhere", "  " + uuidA + " : 1 - 5 : 7 ,\n\t" + uuidB + " :2 ", uuidA + ":1-5:7," + uuidB + ":2"},
		{"tagged", uuidA + ":domain_1:1-3:15-21:domain_2:8-52", uuidA + ":domain_1:1-3:15-21:domain_2:8-52"},
		{"docs form of tags, one uuid per tag", uuidA + ":Domain_2:8-52,\n" + uuidA + ":Domain_1:1-3:15-21", uuidA + ":domain_1:1-3:15-21:domain_2:8-52"},
		{"untagged first then tags sorted", uuidA + ":bb:1:aa:2," + uuidA + ":1-4", uuidA + ":1-4:aa:2:bb:1"},
		{"tag order is byte order", uuidA + ":a:1:_:2:a1:3:A_:4", uuidA + ":_:2:a:1:a1:3:a_:4"},
		{"tag with no intervals", uuidA + ":t," + uuidB + ":1", uuidB + ":1"},
		{"max gno", uuidA + ":9223372036854775806", uuidA + ":9223372036854775806"},
		{"go-mysql example", "896e7882-18fe-11ef-ab88-22222d34d411:1-4:aaaa:1:abc:1-3:bbbbb:1:bbbbbb:1:x:1,896e7882-18fe-11ef-ab88-22222d34d412:1-2",
			"896e7882-18fe-11ef-ab88-22222d34d411:1-4:aaaa:1:abc:1-3:bbbbb:1:bbbbbb:1:x:1,896e7882-18fe-11ef-ab88-22222d34d412:1-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseMySQLSet(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tt.want {
				t.Fatalf("String() = %q\nwant        %q", got, tt.want)
			}
			if s.IsEmpty() != (tt.want == "") {
				t.Fatalf("IsEmpty()=%v", s.IsEmpty())
			}
			again, err := ParseMySQLSet(tt.want)
			if err != nil || !again.Equal(s) {
				t.Fatalf("round trip: %s, %v", again, err)
			}
		})
	}
}

func TestParseMySQLSetErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x", `gtid: bad MySQL GTID set "x": at byte 0: expected a uuid, found "x"`},
		{uuidA + ":", `gtid: bad MySQL GTID set "` + uuidA + `:": at byte 37: expected a tag or a transaction number, found the end`},
		{uuidA + ":0-5", `gtid: bad MySQL GTID set "` + uuidA + `:0-5": at byte 37: transaction number 0 is not allowed (they start at 1)`},
		{uuidA + ":5-3", `gtid: bad MySQL GTID set "` + uuidA + `:5-3": at byte 39: interval 5-3 ends before it starts`},
		{uuidA + ":1-", `gtid: bad MySQL GTID set "` + uuidA + `:1-": at byte 39: expected a transaction number, found the end`},
		{uuidA + ":1-x", `gtid: bad MySQL GTID set "` + uuidA + `:1-x": at byte 39: expected a transaction number, found "x"`},
		{uuidA + ":1;" + uuidB, `gtid: bad MySQL GTID set "` + uuidA + `:1;` + uuidB + `": at byte 38: expected ':' or ',', found ";896e7882-18..."`},
		{uuidA + ":1 2", `gtid: bad MySQL GTID set "` + uuidA + `:1 2": at byte 39: expected ':' or ',', found "2"`},
		{uuidA + ":1:9223372036854775807", `gtid: bad MySQL GTID set "` + uuidA + `:1:9223372036854775807": at byte 39: transaction number 9223372036854775807 is out of range (max 9223372036854775806)`},
		{uuidA + ":1:99999999999999999999", `gtid: bad MySQL GTID set "` + uuidA + `:1:99999999999999999999": at byte 39: transaction number 99999999999999999999 is out of range (max 9223372036854775806)`},
		{uuidA + ":tag-x:1", `gtid: bad MySQL GTID set "` + uuidA + `:tag-x:1": at byte 40: expected ':' or ',', found "-x:1"`},
		{uuidA + ":1,x" + strings.Repeat("1", 100), `gtid: bad MySQL GTID set "` + uuidA + `:1,x` + strings.Repeat("1", 40) + `"...: at byte 39: expected a uuid, found "x11111111111..."`},
	}
	for _, tt := range tests {
		_, err := ParseMySQLSet(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseMySQLSet(%q) error = %v\nwant %s", tt.in, err, tt.want)
		}
	}
}

func TestMySQLSetOperations(t *testing.T) {
	sidA, sidB := mustSID(t, uuidA), mustSID(t, uuidB)
	var s MySQLSet
	if !s.IsEmpty() || s.String() != "" || s.Contains(MySQLGTID{SID: sidA, GNO: 1}) {
		t.Fatal("zero set is not empty")
	}
	for n := uint64(1); n <= 5; n++ {
		s.Add(MySQLGTID{SID: sidA, GNO: n})
	}
	s.Add(MySQLGTID{SID: sidB, GNO: 7})
	s.Add(MySQLGTID{SID: sidA, Tag: "Blue", GNO: 3})
	s.AddRange(sidA, "red", 10, 20)
	s.AddRange(sidA, "red", 30, 29)
	if got, want := s.String(), uuidA+":1-5:blue:3:red:10-20,"+uuidB+":7"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	for _, c := range []struct {
		g    MySQLGTID
		want bool
	}{
		{MySQLGTID{SID: sidA, GNO: 5}, true},
		{MySQLGTID{SID: sidA, GNO: 6}, false},
		{MySQLGTID{SID: sidA, Tag: "blue", GNO: 3}, true},
		{MySQLGTID{SID: sidA, Tag: "BLUE", GNO: 3}, true},
		{MySQLGTID{SID: sidA, Tag: "blue", GNO: 4}, false},
		{MySQLGTID{SID: sidA, Tag: "green", GNO: 3}, false},
		{MySQLGTID{SID: sidB, GNO: 7}, true},
		{MySQLGTID{SID: sidB, Tag: "red", GNO: 15}, false},
	} {
		if got := s.Contains(c.g); got != c.want {
			t.Errorf("Contains(%s)=%v, want %v", c.g, got, c.want)
		}
	}

	other, err := ParseMySQLSet(uuidA + ":4-8:red:1-12," + uuidB + ":7")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got MySQLSet, want string) {
		t.Helper()
		if got.String() != want {
			t.Errorf("%s = %q, want %q", name, got.String(), want)
		}
	}
	check("Union", s.Union(other), uuidA+":1-8:blue:3:red:1-20,"+uuidB+":7")
	check("Subtract", s.Subtract(other), uuidA+":1-3:blue:3:red:13-20")
	check("Intersect", s.Intersect(other), uuidA+":4-5:red:10-12,"+uuidB+":7")
	check("Subtract itself", s.Subtract(s), "")
	if !s.Subtract(s).IsEmpty() || !s.Intersect(MySQLSet{}).IsEmpty() {
		t.Error("an empty result is not IsEmpty")
	}
	if !s.Union(MySQLSet{}).Equal(s) || s.Equal(other) || !(MySQLSet{}).Equal(MySQLSet{}) || (MySQLSet{}).Equal(s) {
		t.Error("Equal")
	}

	clone := s.Clone()
	shared := s
	s.Add(MySQLGTID{SID: sidB, GNO: 100})
	if clone.Contains(MySQLGTID{SID: sidB, GNO: 100}) {
		t.Error("a clone shares storage")
	}
	if !shared.Contains(MySQLGTID{SID: sidB, GNO: 100}) {
		t.Error("a copy does not share storage")
	}
}

func TestSID(t *testing.T) {
	sid := mustSID(t, strings.ToUpper(uuidA))
	if got := FormatSID(sid); got != uuidA {
		t.Fatalf("FormatSID = %q", got)
	}
	if _, err := ParseSID(uuidA + "x"); err == nil || err.Error() != `gtid: bad MySQL server uuid "`+uuidA+`x": unexpected text after the uuid` {
		t.Fatalf("ParseSID error = %v", err)
	}
}

// TestMySQLSetLarge parses and prints the shape of MySQL bug #101717: a
// million alternating transactions.
func TestMySQLSetLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	var b strings.Builder
	b.WriteString(uuidA)
	var want Intervals
	for n := uint64(1); n < 2_000_000; n += 2 {
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(n, 10))
		want.Add(n)
	}
	s, err := ParseMySQLSet(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != b.String() {
		t.Fatal("printing a million intervals does not give back the input")
	}
	if !s.get(tsid{sid: mustSID(t, uuidA)}).Equal(want) {
		t.Fatal("parsed intervals differ")
	}
}
