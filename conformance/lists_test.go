package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	in := `# a comment
rpl.rpl_insert   # trailing comment

main.xa
create        # a name without a suite is main's
#binlog.binlog_xa_handling  left out
compat/oracle.sp
`
	got, err := parseList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []testCase{{"rpl", "rpl_insert"}, {"main", "xa"}, {"main", "create"}, {"compat/oracle", "sp"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseListErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rpl.a\nrpl.a\n", "line 2: rpl.a is already listed on line 1"},
		{"rpl.a rpl.b\n", "line 1: \"rpl.a rpl.b\": one case a line"},
		{"/x.y\n", "line 1: \"/x.y\" is not a case name"},
		{"compat//oracle.y\n", "is not a case name"},
		{".x\n", "is not a case name"},
		{"rpl.a.b\n", "is not a case name"},
	} {
		_, err := parseList(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseList(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestSelectCases(t *testing.T) {
	list := []testCase{{"rpl", "a"}, {"main", "b"}}
	got, err := selectCases(list, nil)
	if err != nil || !reflect.DeepEqual(got, list) {
		t.Fatalf("no selection: got %v, %v", got, err)
	}
	got, err = selectCases(list, []string{"main.b", "binlog.c"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []testCase{{"main", "b"}, {"binlog", "c"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := selectCases(list, []string{"a.b/c"}); err == nil {
		t.Fatal("a bad name was accepted")
	}
}

// The shipped lists parse, and the short list is short.
func TestShippedLists(t *testing.T) {
	for _, name := range []string{"rpl", "binlog", "main", "short"} {
		cases, err := readList("lists/" + name + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) == 0 {
			t.Errorf("%s.txt lists no case", name)
		}
		// 33 cases took 195 s inside make test on CI's two cores (both
		// formats, all four variants): 30 keeps it near 3 minutes.
		if name == "short" && len(cases) > 30 {
			t.Errorf("short.txt lists %d cases; keep it at 30 or fewer so make test stays near 3 minutes", len(cases))
		}
	}
}
