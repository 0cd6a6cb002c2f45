// This file owns the report: a markdown file under conformance/results
// with the counts per format and gapless variant, a row for every case
// where gapless failed and MariaDB's replica did not (with gapless's own
// message and whether a serial rerun fails too), the cases that could not
// be compared and why, what a comparison leaves out, and how to reproduce a
// case. Rendering is pure: it reads results and writes text.
package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// runInfo describes a run for the report's header.
type runInfo struct {
	List          string // the list file
	Command       string
	Started       time.Time
	Duration      time.Duration
	Gapless       string // the binary and the commit it was built from
	ServerVersion string
	Formats       []string
	TargetFormat  string // every target's binlog_format, "" = the primary's
	Variants      []string
	Jobs          int
	Workers       int
	Policy        string
	GaplessFlags  []string
}

// replicateCommand is the first gapless run of a case, as the report shows it.
func (info runInfo) replicateCommand() string {
	cmd := fmt.Sprintf("gapless replicate --workers %d", info.Workers)
	if info.Policy != "" {
		cmd += " --policy " + info.Policy
	}
	for _, f := range info.GaplessFlags {
		cmd += " " + f
	}
	return cmd + " --until POS"
}

func writeReport(w io.Writer, info runInfo, results []caseResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("# Conformance: %s, %s", info.List, info.Started.Format("2006-01-02 15:04"))
	p("")
	p("`%s` (%d jobs, %s). gapless: %s. Server: %s.", info.Command, info.Jobs, info.Duration.Round(time.Second), info.Gapless, info.ServerVersion)
	p("")
	p("Each case's .test file ran with mariadb-test on a fresh primary (mtr's default server options, the test's own options, binlog format as below);")
	if info.TargetFormat != "" {
		p("every target (MariaDB's replica's and gapless's) ran with binlog_format=%s;", info.TargetFormat)
	}
	p("its binlog was then applied by MariaDB's built-in replica and by `%s` (once per variant), each onto a fresh target,", info.replicateCommand())
	p("and every target compared with the primary. A gapless failure is counted only where MariaDB's replica reached the position with a target equal to the primary.")
	p("")

	writeCounts(p, info, results)
	writeFailures(p, results)
	var lost [][]string
	for _, r := range results {
		for _, g := range r.Gapless {
			if g.Verdict == verdictLost {
				lost = append(lost, []string{r.Case.ID(), r.Format, g.Variant, g.Message})
			}
		}
	}
	if len(lost) > 0 {
		p("## Stopped by design: a kill lost a temporary table")
		p("")
		p("A kill of gapless ends its connections to the target, and with them the temporary tables of the source's sessions they held, as a crash of MariaDB's replica's server would;")
		p("the next run stops, naming the table, where a statement needs one. Not counted as failures.")
		p("")
		writeTable(p, []string{"test", "format", "variant", "gapless's message"}, lost)
	}

	p("## Not comparable (MariaDB's replica failed or diverged)")
	p("")
	var nc [][]string
	for _, r := range results {
		if r.Outcome == caseNotComparable {
			nc = append(nc, []string{r.Case.ID(), r.Format, r.Reason})
		}
	}
	writeTable(p, []string{"test", "format", "reason"}, nc)

	p("## Not run, or nothing to replicate")
	p("")
	var other [][]string
	for _, r := range results {
		if r.Outcome == caseNotRun || r.Outcome == caseEmpty {
			reason := r.Reason
			if reason == "" {
				reason = r.Test.Status + " " + r.Test.Detail
			}
			other = append(other, []string{r.Case.ID(), r.Format, r.Outcome, reason})
		}
	}
	writeTable(p, []string{"test", "format", "outcome", "reason"}, other)

	p("## What a comparison leaves out")
	p("")
	for _, n := range notCompared() {
		p("- %s", n)
	}
	p("")
	p("## Reproduce a case")
	p("")
	p("```")
	p("go build -o /tmp/gapless-conf/gapless ./cmd/gapless")
	p("go run ./conformance --list %s --cases TEST --formats FORMAT --variants VARIANT --gapless /tmp/gapless-conf/gapless --keep-failed", info.List)
	p("```")
	p("")
	p("`--keep-failed` leaves a failed case's servers running and prints its folder: the primary (`mysqld.1`), each target, mariadb-test's log")
	p("(`log/mysqltest.log`), and each gapless run's log, whose first line is the exact `gapless replicate` command.")
}

// writeCounts writes the report's counts, by binlog format and variant.
func writeCounts(p func(string, ...any), info runInfo, results []caseResult) {
	cells, notRun, empty := countResults(results, info.Variants)
	p("## Counts")
	p("")
	p("| format | gapless variant | cases run | not comparable | gapless ok | stopped: temporary table lost | gapless failed | of which SILENT | of which hang | fail serially too |")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range info.Formats {
		for _, v := range info.Variants {
			t := cells[[2]string{f, v}]
			if t == nil {
				t = &tally{}
			}
			p("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d |", f, v, t.Run, t.NotComparable, t.OK, t.Lost, t.Failed, t.Silent, t.Hang, t.SerialToo)
		}
	}
	p("")
	for _, f := range info.Formats {
		p("- %s: %d more cases left an empty binlog (the test skipped itself or wrote nothing), %d could not be run here.", f, empty[f], notRun[f])
	}
	p("")

}

// writeFailures writes gapless's failures where MariaDB's replica
// succeeded, case by case and by message.
func writeFailures(p func(string, ...any), results []caseResult) {
	p("## gapless failures where MariaDB's replica succeeded")
	p("")
	var failures [][]string
	for _, r := range results {
		for _, g := range r.Gapless {
			if !g.Failed() {
				continue
			}
			serial := "not rerun"
			if g.Serial != nil {
				if g.Serial.Failed() {
					serial = "fails too (" + g.Serial.Verdict + ")"
				} else {
					serial = "passes"
				}
			}
			failures = append(failures, []string{r.Case.ID(), r.Format, g.Variant, g.Verdict, serial, g.Message})
		}
	}
	if len(failures) == 0 {
		p("None.")
	} else {
		p("| test | format | variant | verdict | serial rerun (`--workers 1 --policy serial`) | gapless's message |")
		p("|---|---|---|---|---|---|")
		for _, row := range failures {
			p("| %s |", strings.Join(cells6(row), " | "))
		}
		p("")
		p("By message (the GTIDs, names and numbers of a message masked):")
		p("")
		p("| failures | message |")
		p("|---:|---|")
		for _, g := range groupMessages(failures) {
			p("| %d | %s |", g.count, cell(g.message))
		}
	}
	p("")

}

func writeTable(p func(string, ...any), header []string, rows [][]string) {
	if len(rows) == 0 {
		p("None.")
		p("")
		return
	}
	p("| %s |", strings.Join(header, " | "))
	p("|%s", strings.Repeat("---|", len(header)))
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = cell(c)
		}
		p("| %s |", strings.Join(cells, " | "))
	}
	p("")
}

func cells6(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = cell(c)
	}
	return out
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return abbreviate(s, 400)
}

type messageGroup struct {
	message string
	count   int
}

// groupMessages counts failures by message with the parts that change
// from case to case (GTIDs, numbers, quoted names) masked, most frequent first.
func groupMessages(failures [][]string) []messageGroup {
	counts := map[string]int{}
	for _, row := range failures {
		counts[maskMessage(row[3]+": "+row[5])]++
	}
	var out []messageGroup
	for m, n := range counts {
		out = append(out, messageGroup{m, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].count != out[j].count {
			return out[i].count > out[j].count
		}
		return out[i].message < out[j].message
	})
	return out
}

var (
	maskGTID   = regexp.MustCompile(`\b\d+-\d+-\d+\b`)
	maskQuoted = regexp.MustCompile("(^|[^A-Za-z])('[^']*'|\"[^\"]*\"|`[^`]*`)")
	maskNumber = regexp.MustCompile(`\b\d+\b`)
	maskPort   = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// maskMessage keeps what a message says and drops what it is about.
func maskMessage(m string) string {
	m = maskPort.ReplaceAllString(m, "HOST")
	m = maskGTID.ReplaceAllString(m, "GTID")
	m = maskQuoted.ReplaceAllString(m, "$1'…'")
	// Error codes say the cause: keep numbers of 4 digits that follow "error"
	// or stand alone as codes; mask the rest.
	m = maskNumber.ReplaceAllStringFunc(m, func(n string) string {
		if len(n) == 4 {
			return n
		}
		return "N"
	})
	return abbreviate(m, 200)
}
