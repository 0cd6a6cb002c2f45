// Command conformance runs mysql-test cases on a sandbox primary and
// replicates each one's binlog with MariaDB's built-in replica and with
// gapless on separate targets, then compares every target with the primary
// and writes a report of every case gapless fails where MariaDB's replica
// does not (issue 12).
//
//	go run ./conformance --list conformance/lists/rpl.txt [--formats mixed,row]
//	    [--variants default,no-target-binlog,stopped,killed] [--jobs N] [--keep-failed]
//	    [--cases suite.test,...] [--gapless PATH]
//
// This file owns the command line, the pool of cases and the progress
// lines; it exits 1 when any gapless failure was found, 2 when the run
// itself could not be made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	List    string
	Cases   []string
	Formats []string
	// TargetFormat is every target's binlog_format (MariaDB's replica's
	// and gapless's), "" for the primary's.
	TargetFormat   string
	Variants       []string
	Jobs           int
	Workers        int
	Policy         string   // gapless --policy for the first run ("" = gapless's default)
	GaplessFlags   []string // more flags for every gapless run
	KeepFailed     bool
	KeepAll        bool
	Gapless        string
	WorkDir        string
	Report         string
	MtrDir         string
	TestTimeout    time.Duration
	ApplyTimeout   time.Duration
	ReplicaTimeout time.Duration
	Command        string // as shown in the report
}

// summary is what a run found.
type summary struct {
	Results    []caseResult
	Failures   int
	ReportPath string
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := run(ctx, opts, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if sum.Failures > 0 {
		fmt.Printf("%d gapless failures; report: %s\n", sum.Failures, sum.ReportPath)
		os.Exit(1)
	}
	fmt.Printf("no gapless failures; report: %s\n", sum.ReportPath)
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	var cases, formats, variants, targetFormat string
	fs.StringVar(&o.List, "list", "", "list file of cases, one suite.test a line (conformance/lists/*.txt)")
	fs.StringVar(&cases, "cases", "", "run only these cases (comma-separated suite.test; need not be in the list)")
	fs.StringVar(&formats, "formats", "mixed,row", "the primary's binlog formats: mixed, row, statement, row-minimal and row-noblob (ROW with binlog_row_image=MINIMAL or NOBLOB), mixed-compressed and row-compressed (log_bin_compress=ON)")
	fs.StringVar(&targetFormat, "target-binlog-format", "", "every target's binlog_format (mixed, row or statement), for MariaDB's replica and gapless alike (default: the primary's)")
	fs.StringVar(&variants, "variants", "default,no-target-binlog", "gapless variants: "+variantNames()+" (stopped and killed interrupt gapless after 1, 2, 4, ... commits and run it again)")
	fs.IntVar(&o.Jobs, "jobs", 1, "cases run at once")
	fs.IntVar(&o.Workers, "workers", 8, "gapless --workers for the first run of each case")
	fs.StringVar(&o.Policy, "policy", "", "gapless --policy for the first run of each case (default: gapless's)")
	var extra string
	fs.StringVar(&extra, "gapless-flags", "", "more flags for every gapless run, space-separated (for example \"--commit-order causal\")")
	fs.BoolVar(&o.KeepFailed, "keep-failed", false, "leave the servers of a case gapless fails running, and its folder")
	fs.BoolVar(&o.KeepAll, "keep", false, "leave every case's servers running, and its folder (for debugging the harness)")
	fs.StringVar(&o.Gapless, "gapless", "", "the gapless binary (default: built from this tree into the work folder)")
	fs.StringVar(&o.WorkDir, "workdir", filepath.Join(os.TempDir(), "gapless-conf"), "folder for the template datadir and the cases' servers")
	fs.StringVar(&o.Report, "report", "", "report file (default: conformance/results/<date>-<list>.md; with --cases, run-N.md beside the run's folder in --workdir)")
	fs.StringVar(&o.MtrDir, "mysql-test-dir", "/usr/share/mysql/mysql-test", "MariaDB's mysql-test directory (package mariadb-test-data)")
	fs.DurationVar(&o.TestTimeout, "test-timeout", 3*time.Minute, "time limit of one mariadb-test run")
	fs.DurationVar(&o.ReplicaTimeout, "replica-timeout", 5*time.Minute, "time limit of MariaDB's replica on one case")
	fs.DurationVar(&o.ApplyTimeout, "apply-timeout", time.Minute, "time limit of one gapless run, or 3 times what MariaDB's replica took for each variant (they run at once) if that is longer; gapless past it is a hang")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.List == "" && cases == "" {
		return o, errors.New("give --list FILE (conformance/lists/*.txt) or --cases suite.test,...")
	}
	o.Cases = splitList(cases)
	o.GaplessFlags = strings.Fields(extra)
	for _, f := range o.GaplessFlags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if strings.HasPrefix(f, "-") && slices.Contains(runnerFlags, name) {
			return o, fmt.Errorf("--gapless-flags: the runner sets --%s itself (see --workers and --policy)", name)
		}
	}
	o.Formats = splitList(formats)
	switch f := strings.ToUpper(targetFormat); f {
	case "", "MIXED", "ROW", "STATEMENT":
		o.TargetFormat = f
	default:
		return o, fmt.Errorf("--target-binlog-format: %q is not mixed, row or statement", targetFormat)
	}
	o.Variants = splitList(variants)
	for _, f := range o.Formats {
		if _, ok := binlogFormats[f]; !ok {
			return o, fmt.Errorf("--formats: %q is not %s", f, binlogFormatNames())
		}
	}
	for _, v := range o.Variants {
		if _, err := lookupVariant(v); err != nil {
			return o, err
		}
	}
	if len(o.Formats) == 0 || len(o.Variants) == 0 || o.Jobs < 1 || o.Workers < 1 {
		return o, errors.New("--formats and --variants need at least one value, --jobs and --workers at least 1")
	}
	o.Command = "go run ./conformance " + strings.Join(args, " ")
	return o, nil
}

// runnerFlags are the flags of gapless replicate that every run gets from
// the runner (replicas.go).
var runnerFlags = []string{"source", "target", "until", "relay-dir", "progress", "workers", "policy"}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func lookupVariant(name string) (variant, error) {
	for _, v := range knownVariants {
		if v.Name == name {
			return v, nil
		}
	}
	return variant{}, fmt.Errorf("unknown variant %q: want one of %s", name, variantNames())
}

// run runs every selected case in every format and writes the report.
func run(ctx context.Context, o options, out io.Writer) (summary, error) {
	started := time.Now()
	var cases []testCase
	listName := "cases"
	if o.List != "" {
		var err error
		if cases, err = readList(o.List); err != nil {
			return summary{}, err
		}
		listName = strings.TrimSuffix(filepath.Base(o.List), ".txt")
	}
	cases, err := selectCases(cases, o.Cases)
	if err != nil {
		return summary{}, err
	}
	env, err := findMtrEnv(o.MtrDir)
	if err != nil {
		return summary{}, err
	}
	// Absolute, as the targets' mount namespaces need the vardir's path.
	if o.WorkDir, err = filepath.Abs(o.WorkDir); err != nil {
		return summary{}, err
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return summary{}, err
	}
	if o.Gapless, err = gaplessBinary(ctx, o, out); err != nil {
		return summary{}, err
	}

	f := newFleet()
	defer f.killAll()
	template, err := ensureTemplate(ctx, f, env, o.WorkDir)
	if err != nil {
		return summary{}, err
	}
	runDir, err := os.MkdirTemp(o.WorkDir, "run-")
	if err != nil {
		return summary{}, err
	}
	r := &runner{env: env, fleet: f, template: template, gapless: o.Gapless, workers: o.Workers,
		policy: o.Policy, extraFlags: o.GaplessFlags, targetFormat: o.TargetFormat,
		testTimeout: o.TestTimeout, applyTimeout: o.ApplyTimeout, replicaTimeout: o.ReplicaTimeout, keepFailed: o.KeepFailed, keepAll: o.KeepAll}
	for _, name := range o.Variants {
		v, _ := lookupVariant(name)
		r.variants = append(r.variants, v)
	}
	if err := checkPrivateVardir(ctx, o.WorkDir); err != nil {
		fmt.Fprintf(out, "the targets share the primary's vardir, so tests' DATA DIRECTORY paths may collide between them: %v\n", err)
	} else {
		r.privateVardir = true
	}

	results, err := r.runAll(ctx, cases, o, runDir, out)
	if err != nil {
		return summary{}, err
	}

	sum := summary{Results: results}
	for _, res := range results {
		for _, g := range res.Gapless {
			if g.Failed() {
				sum.Failures++
			}
		}
	}
	sum.ReportPath = reportPath(o, runDir, listName, started)
	info := runInfo{List: o.List, Command: o.Command, Started: started, Duration: time.Since(started),
		Gapless: gaplessVersion(o.Gapless), ServerVersion: env.ServerVersion, Formats: o.Formats, Variants: o.Variants, Jobs: o.Jobs,
		Workers: o.Workers, Policy: o.Policy, GaplessFlags: o.GaplessFlags, TargetFormat: o.TargetFormat}
	if err := saveReport(sum.ReportPath, info, results); err != nil {
		return sum, err
	}
	if !o.KeepFailed && !o.KeepAll {
		_ = os.RemoveAll(runDir)
	}
	return sum, nil
}

// gaplessBinary is the gapless binary to run, as an absolute path: --gapless,
// or one built from this tree into the work folder.
func gaplessBinary(ctx context.Context, o options, out io.Writer) (string, error) {
	binary := o.Gapless
	if binary == "" {
		binary = filepath.Join(o.WorkDir, "gapless")
		fmt.Fprintf(out, "building gapless into %s\n", binary)
		if b, err := exec.CommandContext(ctx, "go", "build", "-o", binary, "gapless/cmd/gapless").CombinedOutput(); err != nil {
			return "", fmt.Errorf("building gapless (or pass --gapless PATH): %w: %s", err, b)
		}
	}
	binary, err := filepath.Abs(binary)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(binary); err != nil {
		return "", fmt.Errorf("--gapless: %w", err)
	}
	return binary, nil
}

// runAll runs every case in every format, o.Jobs at a time, each in a
// folder of its own under runDir, printing a line as each ends. The results
// are in the cases' order.
func (r *runner) runAll(ctx context.Context, cases []testCase, o options, runDir string, out io.Writer) ([]caseResult, error) {
	type job struct {
		index  int
		c      testCase
		format string
	}
	var jobs []job
	for _, c := range cases {
		for _, format := range o.Formats {
			jobs = append(jobs, job{len(jobs), c, format})
		}
	}
	fmt.Fprintf(out, "%d cases x %d formats = %d runs, %d at a time, in %s\n", len(cases), len(o.Formats), len(jobs), o.Jobs, runDir)
	results := make([]caseResult, len(jobs))
	queue := make(chan job)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range o.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				dir := filepath.Join(runDir, fmt.Sprintf("%03d-%s", j.index, j.format))
				res := r.runCase(ctx, j.c, j.format, dir)
				mu.Lock()
				results[j.index] = res
				done++
				fmt.Fprintf(out, "[%d/%d] %s\n", done, len(jobs), progressLine(res, o.KeepAll || (o.KeepFailed && res.Failed())))
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		queue <- j
	}
	close(queue)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return results, nil
}

// reportPath is --report, or where a run's report goes by default: beside
// the run's folder for --cases, conformance/results/<date>-<list>.md for a
// list.
func reportPath(o options, runDir, listName string, started time.Time) string {
	switch {
	case o.Report != "":
		return o.Report
	case len(o.Cases) > 0:
		return runDir + ".md"
	}
	return filepath.Join("conformance", "results", started.Format("2006-01-02")+"-"+listName+".md")
}

// saveReport writes the report of a run to path.
func saveReport(path string, info runInfo, results []caseResult) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	writeReport(file, info, results)
	return file.Close()
}

// progressLine is one line per finished case: what the test did, MariaDB's
// replica, and each gapless variant.
func progressLine(r caseResult, keep bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", r.Case.ID(), r.Format)
	switch r.Outcome {
	case caseNotRun:
		fmt.Fprintf(&b, "not run: %s", abbreviate(r.Reason, 200))
	case caseEmpty:
		fmt.Fprintf(&b, "test %s, empty binlog", r.Test.Status)
	case caseNotComparable:
		fmt.Fprintf(&b, "test %s, not comparable: %s", r.Test.Status, abbreviate(r.Reason, 200))
	default:
		fmt.Fprintf(&b, "test %s, MariaDB ok", r.Test.Status)
		for _, g := range r.Gapless {
			if !g.Failed() {
				fmt.Fprintf(&b, "; %s ok", g.Variant)
				continue
			}
			serial := ""
			if g.Serial != nil {
				serial = ", serial " + g.Serial.Verdict
			}
			fmt.Fprintf(&b, "; %s %s%s (%s)", g.Variant, strings.ToUpper(g.Verdict), serial, abbreviate(g.Message, 160))
		}
	}
	if r.Test.Status == testFailed || r.Test.Status == testSkipped {
		fmt.Fprintf(&b, " (test: %s)", abbreviate(r.Test.Detail, 160))
	}
	fmt.Fprintf(&b, " [%.1fs, test %.1fs]", r.Seconds, r.Test.Seconds)
	if keep {
		fmt.Fprintf(&b, " kept: %s", r.Dir)
	}
	return b.String()
}

// gaplessVersion names the binary and, when it was built from a git tree,
// the commit it came from (go version -m).
func gaplessVersion(binary string) string {
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		return binary
	}
	rev, modified := "", ""
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "build" {
			if v, ok := strings.CutPrefix(f[1], "vcs.revision="); ok {
				rev = v[:min(len(v), 7)]
			}
			if f[1] == "vcs.modified=true" {
				modified = " with uncommitted changes"
			}
		}
	}
	if rev == "" {
		// No build info (go build -buildvcs=false, or git unusable then):
		// say when it was built and where this tree is.
		built := ""
		if fi, err := os.Stat(binary); err == nil {
			built = fi.ModTime().Format("2006-01-02 15:04")
		}
		head, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
		return fmt.Sprintf("%s (built %s; this tree at %s when the report was written)", binary, built, strings.TrimSpace(string(head)))
	}
	return fmt.Sprintf("%s (built at %s%s)", binary, rev, modified)
}
