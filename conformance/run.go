// This file owns one case's pipeline, for one binlog format:
//
//	fresh primary (+ a slave for rpl tests) -> mariadb-test runs the .test
//	-> the primary's @@gtid_binlog_pos -> MariaDB's replica onto target A
//	-> gapless onto one target per variant -> compare each with the primary
//	-> a serial rerun of every gapless failure.
//
// The primary's binlog is the only thing that carries over from the test:
// the slave is killed before the position is read, so nothing writes to the
// primary once its position is known, and every comparison reads the
// primary at exactly that position.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gapless/internal/sandbox"
)

// runner holds what every case of a run shares.
type runner struct {
	env          mtrEnv
	fleet        *fleet
	template     string
	gapless      string
	workers      int
	policy       string   // --policy of the first run
	extraFlags   []string // --gapless-flags
	targetFormat string   // --target-binlog-format: every target's binlog_format, "" = the primary's
	variants     []variant
	testTimeout  time.Duration
	applyTimeout time.Duration
	// replicaTimeout bounds MariaDB's replica; gapless gets applyTimeout
	// or three times what the replica took for each variant, whichever is
	// longer (gaplessBudget), so a binlog that is slow to apply anyway (row
	// events on a table without a key) is not called a hang.
	replicaTimeout time.Duration
	keepFailed     bool
	keepAll        bool
	// privateVardir gives each target a view of the case's vardir of its
	// own (vardir.go); false where that cannot be done.
	privateVardir bool
}

// caseServers are the servers of one case, killed together at its end.
type caseServers struct {
	list []*sandbox.Server
	mu   sync.Mutex
}

func (s *caseServers) add(srv *sandbox.Server) {
	s.mu.Lock()
	s.list = append(s.list, srv)
	s.mu.Unlock()
}

// runCase runs one case in one format in dir, which it creates.
func (r *runner) runCase(ctx context.Context, c testCase, format, dir string) (res caseResult) {
	began := time.Now()
	res = caseResult{Case: c, Format: format, Dir: dir}
	servers := &caseServers{}
	defer func() {
		res.Seconds = time.Since(began).Seconds()
		r.endCase(servers, dir, res.Failed())
	}()

	files, err := locateCase(r.env.MtrDir, c)
	if err != nil {
		res.Outcome, res.Reason = caseNotRun, err.Error()
		return res
	}
	res.Notes = files.Notes
	if err := prepareVardir(r.env, dir); err != nil {
		res.Outcome, res.Reason = caseNotRun, err.Error()
		return res
	}

	primary, slave, err := r.startPrimary(ctx, files, format, dir, servers)
	if err != nil {
		res.Outcome, res.Reason = caseNotRun, err.Error()
		return res
	}
	targets := r.startTargets(ctx, files, format, dir, servers)
	var pos string
	res.Test, pos, err = r.runTest(ctx, files, format, dir, primary, slave)
	targets.started.Wait()
	if err != nil {
		res.Outcome, res.Reason = caseNotRun, "reading the primary after the test: "+err.Error()
		return res
	}
	res.Position = pos
	if pos == "" {
		res.Outcome = caseEmpty
		return res
	}
	if err := r.targetsReady(targets, dir); err != nil {
		res.Outcome, res.Reason = caseNotRun, err.Error()
		return res
	}
	want, err := takeSnapshot(ctx, primary, true)
	if err != nil {
		res.Outcome, res.Reason = caseNotRun, "reading the primary: "+err.Error()
		return res
	}

	res.Replica, res.Outcome, res.Reason = r.runReference(ctx, primary, targets.byName["t-mariadb"], pos, want)
	if res.Outcome != caseCompared {
		return res
	}
	gaplessTimeout := gaplessBudget(r.applyTimeout, res.Replica.Seconds, len(r.variants))
	res.Gapless = r.runGaplessVariants(ctx, primary, targets, pos, want, dir, gaplessTimeout)
	r.rerunFailuresSerially(ctx, res.Gapless, files, format, dir, servers, primary, pos, want, gaplessTimeout)
	return res
}

// endCase leaves the case's servers running and its folder in place when
// the run keeps them (--keep, or --keep-failed and the case failed);
// otherwise it kills the servers and removes the folder.
func (r *runner) endCase(servers *caseServers, dir string, failed bool) {
	if r.keepAll || (r.keepFailed && failed) {
		for _, s := range servers.list {
			r.fleet.forget(s)
		}
		return
	}
	for _, s := range servers.list {
		r.fleet.kill(s)
	}
	_ = os.RemoveAll(dir)
}

// caseTargets are a case's targets: t-mariadb for MariaDB's replica, then
// t-<variant> for each gapless variant. They start while the test runs;
// byName and errs are complete once started is done.
type caseTargets struct {
	names   []string
	byName  map[string]*sandbox.Server
	errs    map[string]error
	started sync.WaitGroup
	mu      sync.Mutex
}

// startTargets starts every target of the case at once and returns without
// waiting for them.
func (r *runner) startTargets(ctx context.Context, files caseFiles, format, dir string, servers *caseServers) *caseTargets {
	t := &caseTargets{
		names:  []string{"t-mariadb"},
		byName: make(map[string]*sandbox.Server),
		errs:   make(map[string]error),
	}
	for _, v := range r.variants {
		t.names = append(t.names, "t-"+v.Name)
	}
	for _, name := range t.names {
		t.started.Add(1)
		go func() {
			defer t.started.Done()
			srv, err := r.startTarget(ctx, files, format, dir, name, servers)
			t.mu.Lock()
			t.byName[name], t.errs[name] = srv, err
			t.mu.Unlock()
		}()
	}
	return t
}

// runTest runs the case's .test on the primary, then kills the slave and
// reads the primary's settled position, so nothing writes to the primary
// once its position is known.
func (r *runner) runTest(ctx context.Context, files caseFiles, format, dir string, primary, slave *sandbox.Server) (testRun, string, error) {
	test := runMysqltest(ctx, r.env, files, dir, primary, slave, format, r.testTimeout)
	if slave != nil {
		r.fleet.kill(slave)
	}
	pos, err := settledPosition(ctx, primary)
	return test, pos, err
}

// targetsReady reports the first target, in start order, that did not
// start. The targets started while the test ran: their views get the
// directories it made since.
func (r *runner) targetsReady(t *caseTargets, dir string) error {
	for _, name := range t.names {
		if t.errs[name] != nil {
			return t.errs[name]
		}
		if r.privateVardir {
			if err := mirrorVardir(dir, targetView(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// runReference applies the binlog with MariaDB's replica onto target and
// gives the case its outcome: caseCompared when the replica is a reference
// to judge gapless by, otherwise the outcome and reason it is not.
func (r *runner) runReference(ctx context.Context, primary, target *sandbox.Server, pos string, want snapshot) (run applyRun, outcome, reason string) {
	run = runMariaDBReplica(ctx, primary, target, pos, r.replicaTimeout)
	var diff []string
	if run.OK {
		var err error
		if diff, err = r.diffTarget(ctx, want, target); err != nil {
			return run, caseNotRun, err.Error()
		}
	}
	if ok, why := judgeReplica(run, diff); !ok {
		return run, caseNotComparable, why
	}
	return run, caseCompared, ""
}

// runGaplessVariants runs every variant at once, each on its own target,
// and returns their results in the order of r.variants.
func (r *runner) runGaplessVariants(ctx context.Context, primary *sandbox.Server, targets *caseTargets, pos string, want snapshot, dir string, timeout time.Duration) []gaplessResult {
	results := make([]gaplessResult, len(r.variants))
	var wg sync.WaitGroup
	for i, v := range r.variants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			settings := gaplessSettings{Workers: r.workers, Policy: r.policy, Flags: r.flags(v), Interrupt: v.Interrupt}
			results[i] = r.runGaplessVariant(ctx, primary, targets.byName["t-"+v.Name], pos, want, filepath.Join(dir, "gapless-"+v.Name), v, settings, timeout)
		}()
	}
	wg.Wait()
	return results
}

// rerunFailuresSerially runs each failed variant again with one worker and
// the serial policy, on a fresh target, one at a time, and records it as
// that variant's Serial. It starts none once ctx is done.
func (r *runner) rerunFailuresSerially(ctx context.Context, results []gaplessResult, files caseFiles, format, dir string, servers *caseServers, primary *sandbox.Server, pos string, want snapshot, timeout time.Duration) {
	for i, v := range r.variants {
		if !results[i].Failed() || ctx.Err() != nil {
			continue
		}
		name := "t-" + v.Name + "-serial"
		target, err := r.startTarget(ctx, files, format, dir, name, servers)
		if err != nil {
			results[i].Serial = &gaplessResult{Variant: v.Name, Verdict: verdictFailed, Message: "serial rerun not made: " + err.Error()}
			continue
		}
		settings := gaplessSettings{Workers: 1, Policy: "serial", Flags: r.flags(v), Interrupt: v.Interrupt}
		serial := r.runGaplessVariant(ctx, primary, target, pos, want, filepath.Join(dir, "gapless-"+v.Name+"-serial"), v, settings, timeout)
		results[i].Serial = &serial
	}
}

// flags are the variant's gapless flags, then --gapless-flags.
func (r *runner) flags(v variant) []string {
	return append(slices.Clone(v.Flags), r.extraFlags...)
}

func (r *runner) runGaplessVariant(ctx context.Context, primary, target *sandbox.Server, pos string, want snapshot, workDir string, v variant, s gaplessSettings, timeout time.Duration) gaplessResult {
	run := runGapless(ctx, r.gapless, primary, target, pos, workDir, s, timeout)
	var diff []string
	if run.OK {
		var err error
		if diff, err = r.diffTarget(ctx, want, target); err != nil {
			diff = []string{err.Error()}
		}
	}
	verdict, message := judgeGapless(v, run, diff)
	return gaplessResult{Variant: v.Name, Verdict: verdict, Message: message, Run: run}
}

func (r *runner) diffTarget(ctx context.Context, want snapshot, target *sandbox.Server) ([]string, error) {
	got, err := takeSnapshot(ctx, target, false)
	if err != nil {
		return nil, fmt.Errorf("reading target %s: %w", target.Config.Name, err)
	}
	return diffSnapshots(want, got), nil
}

// startPrimary starts the case's primary and, for tests that set up
// replication, the slave mtr would give them (server ids 1 and 2, as mtr's).
func (r *runner) startPrimary(ctx context.Context, files caseFiles, format, dir string, servers *caseServers) (primary, slave *sandbox.Server, err error) {
	var slaveErr error
	var wg sync.WaitGroup
	if files.NeedsSlave {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := caseServerConfig(dir, "mysqld.2", 2, format, files.SlaveOptions)
			slave, slaveErr = r.fleet.start(ctx, cfg, r.template)
			if slaveErr == nil {
				servers.add(slave)
			}
		}()
	}
	cfg := caseServerConfig(dir, "mysqld.1", 1, format, files.PrimaryOptions)
	primary, err = r.fleet.start(ctx, cfg, r.template)
	wg.Wait()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", errServerOptions, firstErrorLine(err))
	}
	servers.add(primary)
	if slaveErr != nil {
		return nil, nil, fmt.Errorf("the slave does not start with the test's options: %s", firstErrorLine(slaveErr))
	}
	return primary, slave, nil
}

// startTarget starts a fresh target for one applier. Targets share mtr's
// defaults and the few test options that change how a binlog applies, and
// each sees a vardir of its own (vardir.go).
func (r *runner) startTarget(ctx context.Context, files caseFiles, format, dir, name string, servers *caseServers) (*sandbox.Server, error) {
	cfg := caseServerConfig(filepath.Join(dir, "targets"), name, 0, format, files.TargetOptions)
	if r.targetFormat != "" {
		cfg.BinlogFormat = r.targetFormat
	}
	if r.privateVardir {
		view := targetView(dir, name)
		if err := mirrorVardir(dir, view); err != nil {
			return nil, fmt.Errorf("target %s: %w", name, err)
		}
		cfg.Launcher = vardirLauncher(dir, view)
	}
	srv, err := r.fleet.start(ctx, cfg, r.template)
	if err != nil {
		return nil, fmt.Errorf("target %s: %s", name, firstErrorLine(err))
	}
	servers.add(srv)
	return srv, nil
}

// settledPosition turns the primary's event scheduler off and reads its
// @@gtid_binlog_pos until two reads 300 ms apart agree (connections the
// test left end after it, and their temporary tables are dropped then). A
// test that shut the primary down gets it started again first.
func settledPosition(ctx context.Context, primary *sandbox.Server) (string, error) {
	if !primary.Running() {
		if err := primary.Start(ctx); err != nil {
			return "", fmt.Errorf("the test stopped the primary and it does not start again: %s", firstErrorLine(err))
		}
	}
	db, err := primary.Open("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SET GLOBAL event_scheduler=OFF"); err != nil {
		return "", fmt.Errorf("SET GLOBAL event_scheduler=OFF: %w", err)
	}
	last := "-"
	for range 50 {
		var pos string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
			return "", fmt.Errorf("reading @@gtid_binlog_pos: %w", err)
		}
		if pos == last {
			return pos, nil
		}
		last = pos
		time.Sleep(300 * time.Millisecond)
	}
	return "", fmt.Errorf("@@gtid_binlog_pos still moving after 15 s (last %s)", last)
}

// firstErrorLine is an error's text on one line, the server's [ERROR]
// line first when the error log has one.
func firstErrorLine(err error) string {
	s := err.Error()
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "[ERROR]"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return strings.Join(strings.Fields(abbreviate(s, 300)), " ")
}

// gaplessBudget is the time limit of each gapless variant of a case:
// applyTimeout, or three times the replicaSeconds MariaDB's replica took
// for each of the variants, whichever is longer. The variants run at once,
// on targets of their own, where the replica ran alone: a binlog whose
// statements keep the target's CPU or disk busy (a 1 GB value built by
// REPEAT, logged as a statement) takes each of them about as long as
// the replica times the number running beside it.
func gaplessBudget(applyTimeout time.Duration, replicaSeconds float64, variants int) time.Duration {
	return max(applyTimeout, time.Duration(3*replicaSeconds*float64(max(variants, 1)))*time.Second)
}
