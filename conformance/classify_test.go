package main

import (
	"strings"
	"testing"
)

func TestJudgeReplica(t *testing.T) {
	for _, tc := range []struct {
		name   string
		run    applyRun
		diff   []string
		ok     bool
		reason string
	}{
		{"reached and equal", applyRun{OK: true}, nil, true, ""},
		{"stopped", applyRun{Message: "stopped at 0-1-5: SQL error 1146"}, nil, false, "MariaDB's replica stopped at 0-1-5"},
		{"hang", applyRun{Hang: true, Message: "did not reach 0-1-9"}, nil, false, "did not reach"},
		{"diverged", applyRun{OK: true}, []string{"checksum test.t1: primary \"1\", target \"2\""}, false, "diverged: checksum test.t1"},
	} {
		ok, reason := judgeReplica(tc.run, tc.diff)
		if ok != tc.ok || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: got %v %q, want %v and a reason containing %q", tc.name, ok, reason, tc.ok, tc.reason)
		}
	}
}

func TestJudgeGapless(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       variant
		run     applyRun
		diff    []string
		verdict string
		message string
	}{
		{"ok", variant{}, applyRun{OK: true}, nil, verdictOK, ""},
		{"error", variant{}, applyRun{Exit: 1, Message: "gapless: apply 0-1-3: target error 1146"}, nil, verdictFailed, "exit 1: gapless: apply 0-1-3"},
		{"hang beats exit", variant{}, applyRun{Hang: true, Exit: -1, Message: "still running after 1m0s"}, nil, verdictHang, "still running"},
		{"silent", variant{}, applyRun{OK: true}, []string{"base table test.t: missing on the target"}, verdictSilent, "exit 0, target differs: base table test.t"},
		{"lost by a kill", variant{Kills: true}, applyRun{Exit: 1, Message: "run 3 (after 2 interrupted): gapless: ... the temporary table `test`.`t3`, " + lostTemporary}, nil, verdictLost, "`t3`"},
		{"lost unless killed", variant{}, applyRun{Exit: 1, Message: "gapless: ... the temporary table `test`.`t3`, " + lostTemporary}, nil, verdictFailed, "`t3`"},
	} {
		verdict, message := judgeGapless(tc.v, tc.run, tc.diff)
		if verdict != tc.verdict || !strings.Contains(message, tc.message) {
			t.Errorf("%s: got %s %q, want %s and a message containing %q", tc.name, verdict, message, tc.verdict, tc.message)
		}
	}
}

func TestCountResults(t *testing.T) {
	failed := gaplessResult{Variant: "default", Verdict: verdictFailed, Serial: &gaplessResult{Verdict: verdictFailed}}
	silent := gaplessResult{Variant: "no-target-binlog", Verdict: verdictSilent, Serial: &gaplessResult{Verdict: verdictOK}}
	results := []caseResult{
		{Format: "row", Outcome: caseCompared, Gapless: []gaplessResult{failed, silent}},
		{Format: "row", Outcome: caseCompared, Gapless: []gaplessResult{{Variant: "default", Verdict: verdictOK}, {Variant: "no-target-binlog", Verdict: verdictHang}}},
		{Format: "row", Outcome: caseNotComparable},
		{Format: "row", Outcome: caseEmpty},
		{Format: "mixed", Outcome: caseNotRun},
	}
	cells, notRun, empty := countResults(results, []string{"default", "no-target-binlog"})
	if got, want := *cells[[2]string{"row", "default"}], (tally{Run: 3, NotComparable: 1, OK: 1, Failed: 1, SerialToo: 1}); got != want {
		t.Errorf("row/default: got %+v, want %+v", got, want)
	}
	if got, want := *cells[[2]string{"row", "no-target-binlog"}], (tally{Run: 3, NotComparable: 1, Failed: 2, Silent: 1, Hang: 1}); got != want {
		t.Errorf("row/no-target-binlog: got %+v, want %+v", got, want)
	}
	if notRun["mixed"] != 1 || empty["row"] != 1 {
		t.Errorf("not run %v, empty %v", notRun, empty)
	}
}

func TestDiffSnapshots(t *testing.T) {
	primary := snapshot{"checksum test.t1": "10", "base table test.t1": "CREATE", "database test": "latin1"}
	target := snapshot{"checksum test.t1": "11", "base table test.t1": "CREATE", "database gone": "x"}
	got := diffSnapshots(primary, target)
	want := []string{
		`checksum test.t1: primary "10", target "11"`,
		"database gone: only on the target",
		"database test: missing on the target",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := diffSnapshots(primary, primary); len(d) != 0 {
		t.Fatalf("a snapshot differs from itself: %v", d)
	}
}
