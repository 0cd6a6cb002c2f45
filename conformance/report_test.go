package main

import (
	"strings"
	"testing"
	"time"
)

func TestWriteReport(t *testing.T) {
	info := runInfo{List: "conformance/lists/short.txt", Command: "go run ./conformance --list conformance/lists/short.txt",
		Started: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Duration: 90 * time.Second, Gapless: "/tmp/gapless",
		ServerVersion: "mariadbd 10.11", Formats: []string{"mixed", "row"}, Variants: []string{"default", "no-target-binlog"}, Jobs: 2, Workers: 8}
	results := []caseResult{
		{Case: testCase{"rpl", "rpl_xa"}, Format: "row", Outcome: caseCompared, Gapless: []gaplessResult{
			{Variant: "default", Verdict: verdictFailed, Message: "exit 1: gapless: XAPrepareLogEvent events are not supported | at 0-1-12",
				Serial: &gaplessResult{Verdict: verdictFailed}},
			{Variant: "no-target-binlog", Verdict: verdictOK},
		}},
		{Case: testCase{"main", "xa"}, Format: "mixed", Outcome: caseNotComparable, Reason: "MariaDB's replica stopped at 0-1-3"},
		{Case: testCase{"main", "empty"}, Format: "mixed", Outcome: caseEmpty, Test: testRun{Status: testSkipped, Detail: "Need debug"}},
	}
	var b strings.Builder
	writeReport(&b, info, results)
	out := b.String()
	for _, want := range []string{
		"# Conformance: conformance/lists/short.txt, 2026-11-23 12:00",
		"| row | default | 1 | 0 | 0 | 0 | 1 | 0 | 0 | 1 |",
		"| mixed | default | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 |",
		`| rpl.rpl_xa | row | default | failed | fails too (failed) | exit 1: gapless: XAPrepareLogEvent events are not supported \| at 0-1-12 |`,
		"| 1 | failed: exit N: gapless: XAPrepareLogEvent events are not supported \\| at GTID |",
		"| main.xa | mixed | MariaDB's replica stopped at 0-1-3 |",
		"| main.empty | mixed | empty binlog | skipped Need debug |",
		"mysql.gtid_slave_pos",
		"--cases TEST --formats FORMAT --variants VARIANT",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestMaskMessage(t *testing.T) {
	got := maskMessage("gapless: apply 0-1-191 on test (DDL): target error 1032: Can't find record in 't1' at 127.0.0.1:4406, 12 rows")
	want := "gapless: apply GTID on test (DDL): target error 1032: Can't find record in '…' at HOST, N rows"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
