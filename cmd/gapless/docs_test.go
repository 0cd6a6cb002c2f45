// docs_test.go keeps README.md and docs/ from drifting from the program:
// every gapless command line their code blocks show names a command that
// exists and only flags it has. (scripts/ci-package.sh runs the install and
// service steps README shows.)
package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var docFlag = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)`)

func TestDocsShowOnlyRealCommandsAndFlags(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		inBlock := false
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				inBlock = !inBlock
				continue
			}
			line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
			if !inBlock || !strings.HasPrefix(line, "gapless ") {
				continue
			}
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if err := checkDocCommand(strings.Fields(line)[1:]); err != "" {
				t.Errorf("%s:%d: %s: %s", filepath.Base(page), n+1, line, err)
			}
			checked++
		}
	}
	t.Logf("%d gapless command lines checked", checked)
	if checkDocCommand([]string{"replicate", "--workerz", "8"}) == "" {
		t.Error("a flag that does not exist passes")
	}
	if checked < 10 {
		t.Errorf("only %d gapless command lines found in README.md and docs/", checked)
	}
}

// checkDocCommand says what is wrong with one documented command line's
// words after "gapless", or "".
func checkDocCommand(words []string) string {
	cmd := newRootCmd()
	for len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		var next *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == words[0] {
				next = c
			}
		}
		if next == nil {
			break // an argument (analyze's FILE...), or a placeholder
		}
		cmd, words = next, words[1:]
	}
	for _, w := range words {
		m := docFlag.FindStringSubmatch(w)
		if m == nil {
			continue
		}
		name := m[1]
		if strings.HasPrefix(w, "--") {
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil && name != "help" && name != "version" {
				return "no flag --" + name + " in " + cmd.CommandPath()
			}
		} else if cmd.Flags().ShorthandLookup(name[:1]) == nil && name != "h" {
			return "no flag -" + name[:1] + " in " + cmd.CommandPath()
		}
	}
	return ""
}
