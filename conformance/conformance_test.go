package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

// TestShortList runs lists/short.txt in both formats and both gapless
// variants, as make conformance LIST=conformance/lists/short.txt would, and
// fails on any case gapless fails where MariaDB's replica does not. Under
// CI=true a missing MariaDB or mariadb-test fails it instead of skipping.
func TestShortList(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB servers for every case; skipped with -short")
	}
	sandbox.RequireMariaDB(t)
	const mtrDir = "/usr/share/mysql/mysql-test"
	if _, err := findMtrEnv(mtrDir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true requires mariadb-test and mariadb-test-data: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "gapless")
	if out, err := exec.Command("go", "build", "-o", binary, "gapless/cmd/gapless").CombinedOutput(); err != nil {
		t.Fatalf("building gapless: %v\n%s", err, out)
	}
	// The template datadir is kept between test runs (rebuilt when the
	// server version changes); the cases run under dir. A run is a hang
	// past 90 s (or 3 times MariaDB's replica per variant): the list runs beside the
	// e2e tests on CI's two cores, where main.sp's 2 700 row groups once
	// took over 30 s, and a loop never ends at all.
	opts := options{
		// Every variant: a stop and a kill after 1, 2, 4, ... commits test
		// recovery on the real binlogs of the list (a kill's stop on a
		// temporary table it lost is by design, not a failure).
		List: "lists/short.txt", Formats: []string{"mixed", "row"}, Variants: []string{"default", "no-target-binlog", "stopped", "killed"},
		Jobs: 2, Workers: 8, Gapless: binary, WorkDir: filepath.Join(os.TempDir(), "gapless-conf-test"),
		Report: filepath.Join(dir, "report.md"), MtrDir: mtrDir,
		TestTimeout: 2 * time.Minute, ApplyTimeout: 90 * time.Second, ReplicaTimeout: time.Minute,
		Command: "go test ./conformance -run TestShortList",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sum, err := run(ctx, opts, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, r := range sum.Results {
		if r.Outcome == caseCompared {
			compared++
		}
	}
	if compared == 0 {
		t.Fatalf("no case of the short list could be compared; is the harness broken? report: %s", sum.ReportPath)
	}
	if sum.Failures > 0 {
		report, _ := os.ReadFile(sum.ReportPath)
		section := string(report)
		if i := strings.Index(section, "## gapless failures"); i >= 0 {
			section = section[i:]
			if j := strings.Index(section, "\n## Not comparable"); j >= 0 {
				section = section[:j]
			}
		}
		t.Errorf("gapless failed %d runs of the short list that MariaDB's replica passed:\n%s\nReproduce one with: go run ./conformance --list conformance/lists/short.txt --cases TEST --formats FORMAT --variants VARIANT --keep-failed",
			sum.Failures, section)
	}
}

// logWriter sends the runner's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
