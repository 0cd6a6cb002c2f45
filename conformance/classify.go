// This file owns the verdicts: what a case's outcome is, and how each
// gapless run is judged against MariaDB's replica on the same binlog. Only a
// case MariaDB's replica applied to a target equal to the primary can fail
// gapless; anything else is "not comparable". A gapless run that exits 0
// with a target that differs is SILENT, the worst verdict: nothing told the
// user.
package main

import (
	"fmt"
	"strings"
)

// Case outcomes.
const (
	caseCompared      = "compared"       // MariaDB's replica matched the primary; gapless was judged
	caseNotComparable = "not comparable" // MariaDB's replica failed, hung or diverged
	caseEmpty         = "empty binlog"   // the test wrote nothing to the binlog (often: it skipped itself)
	caseNotRun        = "not run"        // the harness could not run it here
)

// Gapless verdicts.
const (
	verdictOK     = "ok"
	verdictFailed = "failed" // exited non-zero
	verdictHang   = "hang"   // did not end within the time limit
	verdictSilent = "SILENT" // exited 0, the target differs
	// verdictLost: a killed run lost a temporary table of the source's
	// session that a later statement needs, and gapless stopped there,
	// saying so: what the design asks, not counted as a failure.
	verdictLost = "stopped: temporary table lost"
)

// What gapless's stops say (internal/target) of a temporary table it knows
// the target lost with the connection that held it (lostTemporary), of a
// missing table that may have been one when the relay log no longer holds
// the statement that made it (mayBeLost), and of the DROP TEMPORARY TABLE
// the target logged under a group's GTID as that connection ended amid it
// (endDrop). In the killed variant of a case MariaDB's replica applied,
// each is a kill's doing.
const (
	lostTemporary = "which the target lost with gapless's connection that held it"
	mayBeLost     = "if it was a temporary table of the source's session, it was lost"
	endDrop       = "the DROP TEMPORARY TABLE the target logged when gapless's connection"
)

// variant is one gapless configuration every compared case runs with.
type variant struct {
	Name  string
	Flags []string
	// Interrupt, when set, is the environment variable that makes gapless
	// signal itself after that many commits (internal/apply/crash.go): the
	// case is then applied in runs that each stop after twice as many
	// commits as the one before, until one reaches the position.
	Interrupt string
	// Kills lose the temporary tables of the source's sessions that
	// gapless's connection held (as a crash of MariaDB's replica's server
	// would); gapless then stops, by design, where a statement needs one.
	Kills bool
}

var knownVariants = []variant{
	{Name: "default"},
	{Name: "no-target-binlog", Flags: []string{"--no-target-binlog"}},
	// A stop (SIGTERM) with work in flight, then a run that goes on: the
	// position, the relay log, temporary tables kept across the stop.
	{Name: "stopped", Interrupt: "GAPLESS_STOP_AFTER_COMMITS"},
	// A kill (SIGKILL), then a run that goes on: crash recovery.
	{Name: "killed", Interrupt: "GAPLESS_CRASH_AFTER_COMMITS", Kills: true},
}

// variantNames lists the known variants for a message.
func variantNames() string {
	var names []string
	for _, v := range knownVariants {
		names = append(names, v.Name)
	}
	return strings.Join(names, ", ")
}

// gaplessResult is one variant's run on one case.
type gaplessResult struct {
	Variant string
	Verdict string
	Message string // gapless's last stderr line, or the first differences
	Run     applyRun
	// Serial is the rerun with --workers 1 --policy serial, made only when
	// the parallel run did not pass.
	Serial *gaplessResult
}

// Failed reports whether the verdict is a gapless failure of any kind.
func (g gaplessResult) Failed() bool { return g.Verdict != verdictOK && g.Verdict != verdictLost }

// caseResult is everything a (case, format) run found.
type caseResult struct {
	Case     testCase
	Format   string
	Outcome  string
	Reason   string // why not run, why not comparable
	Test     testRun
	Position string // the primary's @@gtid_binlog_pos after the test
	Replica  applyRun
	Gapless  []gaplessResult
	Notes    []string // options of the test not applied
	Seconds  float64
	Dir      string // the case's folder (kept with --keep-failed)
}

// Failed reports whether any gapless run of the case failed.
func (r caseResult) Failed() bool {
	for _, g := range r.Gapless {
		if g.Failed() {
			return true
		}
	}
	return false
}

// judgeReplica says whether MariaDB's replica gives a reference to judge
// gapless by: it reached the position and its target equals the primary.
func judgeReplica(run applyRun, diff []string) (comparable bool, reason string) {
	switch {
	case run.Hang:
		return false, "MariaDB's replica: " + run.Message
	case !run.OK:
		return false, "MariaDB's replica " + run.Message
	case len(diff) > 0:
		return false, "MariaDB's replica diverged: " + summarizeDiff(diff, 3)
	}
	return true, ""
}

// judgeGapless gives a gapless run of variant v its verdict.
func judgeGapless(v variant, run applyRun, diff []string) (verdict, message string) {
	switch {
	case run.Hang:
		return verdictHang, run.Message
	case !run.OK && v.Kills && (strings.Contains(run.Message, lostTemporary) || strings.Contains(run.Message, mayBeLost) || strings.Contains(run.Message, endDrop)):
		return verdictLost, run.Message
	case !run.OK:
		return verdictFailed, fmt.Sprintf("exit %d: %s", run.Exit, run.Message)
	case len(diff) > 0:
		return verdictSilent, "exit 0, target differs: " + summarizeDiff(diff, 3)
	}
	return verdictOK, ""
}

// tally is the counts of one (format, variant) cell of the report.
type tally struct {
	Run, NotComparable, OK, Lost, Failed, Hang, Silent, SerialToo int
}

// countResults tallies every variant of every format, and the cases that
// were not run or left an empty binlog, per format. A not-comparable case
// counts in each of the run's variants.
func countResults(results []caseResult, variants []string) (cells map[[2]string]*tally, notRun, empty map[string]int) {
	cells = map[[2]string]*tally{}
	notRun, empty = map[string]int{}, map[string]int{}
	cell := func(format, v string) *tally {
		k := [2]string{format, v}
		if cells[k] == nil {
			cells[k] = &tally{}
		}
		return cells[k]
	}
	for _, r := range results {
		switch r.Outcome {
		case caseNotRun:
			notRun[r.Format]++
		case caseEmpty:
			empty[r.Format]++
		case caseNotComparable:
			for _, v := range variants {
				t := cell(r.Format, v)
				t.Run++
				t.NotComparable++
			}
		case caseCompared:
			for _, g := range r.Gapless {
				t := cell(r.Format, g.Variant)
				t.Run++
				switch g.Verdict {
				case verdictOK:
					t.OK++
				case verdictLost:
					t.Lost++
				case verdictHang:
					t.Failed++
					t.Hang++
				case verdictSilent:
					t.Failed++
					t.Silent++
				default:
					t.Failed++
				}
				if g.Failed() && g.Serial != nil && g.Serial.Failed() {
					t.SerialToo++
				}
			}
		}
	}
	return cells, notRun, empty
}
