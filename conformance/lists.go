// This file owns the list files: which mysql-test cases a run takes. A list
// names one case a line as suite.test ("rpl.rpl_insert", "main.xa"), with
// '#' starting a comment anywhere on a line; a case left out is written as a
// comment that says why, so every list also documents what it skips.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// testCase is one mysql-test test, named by its suite and file name.
type testCase struct {
	Suite string // "main", "rpl", "binlog", ...
	Name  string // the .test file's name without the extension
}

// ID is the name a list and the report use: suite.name.
func (c testCase) ID() string { return c.Suite + "." + c.Name }

// readList reads a list file.
func readList(path string) ([]testCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading list: %w", err)
	}
	defer f.Close()
	cases, err := parseList(f)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	return cases, nil
}

// parseList reads one case a line; blank lines and comments are skipped, a
// malformed or repeated name is an error naming its line.
func parseList(r io.Reader) ([]testCase, error) {
	var cases []testCase
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) > 1 {
			return nil, fmt.Errorf("line %d: %q: one case a line (start a comment with #)", line, strings.TrimSpace(text))
		}
		c, err := parseCaseName(fields[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if first, dup := seen[c.ID()]; dup {
			return nil, fmt.Errorf("line %d: %s is already listed on line %d", line, c.ID(), first)
		}
		seen[c.ID()] = line
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return cases, nil
}

// parseCaseName reads suite.name; a name without a suite is main's. A
// suite may be nested as mysql-test nests it ("compat/oracle.sp").
func parseCaseName(s string) (testCase, error) {
	suite, name, ok := strings.Cut(s, ".")
	if !ok {
		suite, name = "main", s
	}
	nested := strings.Split(suite, "/")
	if suite == "" || name == "" || strings.ContainsAny(s, `\`) || strings.ContainsAny(name, "./") ||
		slices.Contains(nested, "") {
		return testCase{}, fmt.Errorf("%q is not a case name: want suite.test, e.g. rpl.rpl_insert or main.xa", s)
	}
	return testCase{Suite: suite, Name: name}, nil
}

// selectCases returns the cases named in only, in that order, or the whole
// list when only is empty. A named case need not be in the list: --cases
// may run any mysql-test test (a missing test file is reported per case).
func selectCases(cases []testCase, only []string) ([]testCase, error) {
	if len(only) == 0 {
		return cases, nil
	}
	var out []testCase
	for _, name := range only {
		c, err := parseCaseName(name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
