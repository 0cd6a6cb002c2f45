// quotes_test.go keeps the messages README.md and docs/ quote as gapless's
// output tied to tests that check the program prints them. A quote is
// gapless output in double quotes in prose ("stopped while starting"), or a
// line under a `$ gapless ...` line in a code block; messages of other
// programs (the server's, tc's) are quoted in backticks, or listed in
// notGaplessOutput with whose they are.
package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// notGaplessOutput are double-quoted phrases of the docs that are not
// gapless's output, with whose they are.
var notGaplessOutput = map[string]string{
	"Not connected to Primary Component": "a Galera node's answer (1180)",
	"Specified qdisc kind is unknown":    "tc's, on a kernel without netem",
	"vs MariaDB's best":                  "a column of the bench's report",
	"more results":                       "the flag of the server's answers (SERVER_MORE_RESULTS_EXISTS)",
}

// docQuote is one quoted message and where the docs quote it.
type docQuote struct {
	text, where string
}

var (
	doubleQuoted = regexp.MustCompile(`"([^"\n]{3,})"`)
	boldTitle    = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// docQuotes extracts the quotes of gapless output from the pages.
func docQuotes(t *testing.T, pages []string) []docQuote {
	t.Helper()
	var quotes []docQuote
	// A bold title quoted elsewhere is a reference to a section.
	titles := map[string]bool{}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range boldTitle.FindAllStringSubmatch(string(data), -1) {
			titles[strings.Join(strings.Fields(m[1]), " ")] = true
		}
	}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		inBlock, output := false, false
		var paragraph []string
		var paragraphLine int
		flush := func() {
			text := strings.Join(paragraph, " ")
			// Code spans hold SQL, flags and other programs' messages.
			text = regexp.MustCompile("`[^`]*`").ReplaceAllString(text, "")
			for _, m := range doubleQuoted.FindAllStringSubmatch(text, -1) {
				q := strings.Join(strings.Fields(m[1]), " ")
				if len(strings.Fields(q)) < 2 || titles[q] || notGaplessOutput[q] != "" {
					continue
				}
				quotes = append(quotes, docQuote{q, filepath.Base(page) + ":" + strconv.Itoa(paragraphLine)})
			}
			paragraph = paragraph[:0]
		}
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				flush()
				inBlock, output = !inBlock, false
				continue
			}
			if !inBlock {
				if strings.TrimSpace(line) == "" {
					flush()
					continue
				}
				if len(paragraph) == 0 {
					paragraphLine = n + 1
				}
				paragraph = append(paragraph, line)
				continue
			}
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "$ ") {
				output = strings.HasPrefix(trimmed, "$ gapless ")
				continue
			}
			if output && trimmed != "" && trimmed != "..." {
				quotes = append(quotes, docQuote{trimmed, filepath.Base(page) + ":" + strconv.Itoa(n+1)})
			}
		}
		flush()
	}
	return quotes
}

// testStrings are the string literals of the tests under dir: what they
// check the program prints.
func testStrings(t *testing.T, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "quotes_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out = append(out, s)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// messageRuns splits text into runs of plain words: lower-case words
// (letters and apostrophes, the punctuation around them dropped). Anything
// else breaks a run: values (numbers, positions, addresses), placeholders
// (HOST, N, %s), names written in capitals.
func messageRuns(text string) [][]string {
	var runs [][]string
	var run []string
	end := func() {
		if len(run) > 0 {
			runs = append(runs, run)
			run = nil
		}
	}
	for _, field := range strings.Fields(text) {
		if strings.ContainsAny(field[:1], "([") {
			end()
		}
		w := strings.Trim(field, ",.;:()[]!?\"'`")
		plain := w != ""
		for _, c := range w {
			if !(c >= 'a' && c <= 'z' || c == '\'' || c == '-') {
				plain = false
			}
		}
		if !plain {
			end()
			continue
		}
		run = append(run, w)
		if strings.ContainsAny(field[len(field)-1:], ",.;:)!?") {
			// A sentence or clause ends: keep runs from crossing what
			// the program may join from two strings.
			end()
		}
	}
	end()
	return runs
}

// coveredBy reports whether every run of two or more words of quote is made
// of pieces of two or more words (or a last single word) that some string of
// tests holds as a run of its own.
func coveredBy(quote string, known map[string]bool) (bool, string) {
	for _, run := range messageRuns(quote) {
		if len(run) < 2 {
			continue
		}
		for i := 0; i < len(run); {
			longest := 0
			for j := len(run); j > i; j-- {
				if known[strings.Join(run[i:j], " ")] && (j-i >= 2 || j == len(run) && i > 0) {
					longest = j - i
					break
				}
			}
			if longest == 0 {
				return false, strings.Join(run, " ")
			}
			i += longest
		}
	}
	return true, ""
}

// knownRuns holds every contiguous piece of every run of the strings.
func knownRuns(strs []string) map[string]bool {
	known := map[string]bool{}
	for _, s := range strs {
		for _, run := range messageRuns(s) {
			for i := range run {
				for j := i + 1; j <= len(run) && j-i <= 24; j++ {
					known[strings.Join(run[i:j], " ")] = true
				}
			}
		}
	}
	return known
}

func TestDocsQuoteOnlyMessagesTestsCheck(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	quotes := docQuotes(t, pages)
	known := knownRuns(testStrings(t, "../../cmd", "../../internal"))
	for _, q := range quotes {
		if ok, run := coveredBy(q.text, known); !ok {
			t.Errorf("%s: %q: no test checks that gapless prints %q", q.where, q.text, run)
		}
	}
	t.Logf("%d quotes of gapless output checked", len(quotes))
	if len(quotes) < 5 {
		t.Errorf("only %d quotes found in README.md and docs/", len(quotes))
	}
	if ok, _ := coveredBy("the target holds transactions a source never dreamt of", known); ok {
		t.Error("a message no test checks passes")
	}
}
