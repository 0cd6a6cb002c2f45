// Command bench compares gapless with MariaDB's own replication: it records
// sysbench workloads in a sandbox primary's binlog, replays each with every
// contender onto fresh, identically configured targets, verifies the target
// and writes a markdown report and a PNG chart to bench/results.
//
//	go run ./bench --quick      # make bench-quick: W1 and W2 at 25 times their size, six contenders, one run
//	go run ./bench              # make bench: W1-W11, W7B, W11F and W1G, a few contenders each, three runs
//	go run ./bench --workloads W1G --runs 1   # W1 into a 3-node Galera cluster, and gapless through the kill of a node
//	go run ./bench --workloads W7,W7B --runs 1 --scale 0.1 --workdir /tmp/bench   # a short look
//
// Each contender runs three times per workload (once in --quick); the
// median counts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"gapless/internal/sandbox"
)

// Sizes and contenders are chosen so that make bench lasts about an hour and
// make bench-quick under 10 minutes on the 2-core development machine, while
// the workloads where parallel apply is the lever (W7, W7B, W8, W9) and the
// quick set each last at least 20 s for their fastest contender, so that
// start-up is a small part of every figure. That cannot hold for every
// workload and every contender three times in an hour, so:
//   - W7-W9, W11 and W11F are sized for 20 s and run a few contenders each
//     (workload.go);
//   - W1-W6, W1M and W2M keep their former 4 000-6 000 transactions (about a
//     second per run): a check that nothing regressed, not a measure of speed;
//   - W10 has W1's 6 000 transactions too, on MyISAM: 24 000 groups that run
//     one at a time on every replica, about 10 s;
//   - W1G has 12 000 of W1's transactions, replicated into a fresh 3-node
//     Galera cluster per run (cluster.go): MariaDB's slowest parallel mode
//     needs about a minute there, and each run adds the cluster's start and
//     a verify of every node (about 20 s);
//   - bench-quick runs W1 and W2 at quickScale (150 000 transactions), once.

// quickContenders are MariaDB's serial replica and its three parallel modes,
// and gapless N and 1 with the default policy, the applied transactions kept
// out of the target's binlog.
var quickContenders = withVariant(focusedContenders, "nobinlog")

// quickScale sizes W1 and W2 in bench-quick so that the fastest contender
// needs 20 s (gapless 1 [binlog off], about 7 000 transactions/s here).
const quickScale = 25

// workloadScale is what w's transaction counts are multiplied by.
func (o options) workloadScale(w *workload) float64 {
	if o.quick && (w.ID == "W1" || w.ID == "W2") {
		return o.scale * quickScale
	}
	return o.scale
}

// quickRuns: one run per contender keeps bench-quick under 10 minutes; a
// 20 s run averages out more noise than the median of three 1 s runs did.
const quickRuns = 1

// variantWorkloads get, in the full run, the focused contenders again on
// targets of the other durability with the binlog off (item 3 of issue 15
// compares CPU per transaction there).
var variantWorkloads = map[string]bool{"W1": true, "W2": true}

func withVariant(ids []string, variant string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id + "/" + variant
	}
	return out
}

// defaultContenders are the full run's contenders for workload w.
func defaultContenders(w *workload, fast bool) []string {
	switch {
	case w.Contenders != nil:
		return w.Contenders
	case variantWorkloads[w.ID]:
		other := "fast-nobinlog"
		if fast {
			other = "durable-nobinlog"
		}
		return append(slices.Clone(focusedContenders), withVariant(focusedContenders, other)...)
	}
	return fullContenders()
}

// fullContenders are MariaDB's serial replica and its three parallel modes,
// gapless with every policy at N workers and with one worker. With one
// worker the policy changes nothing, so gapless 1 runs once, with the
// default policy. mariadb-binlog, ten times slower than the rest, runs only
// when --contenders names it.
func fullContenders() []string {
	ids := slices.Clone(mariadbContenders)
	for _, p := range gaplessPolicies {
		ids = append(ids, "gapless-"+p+"-N")
	}
	return append(ids, "gapless-writeset-1")
}

type options struct {
	quick       bool
	workloadIDs string
	contenders  string
	runs        int
	workers     int
	fast        bool
	scale       float64
	gapless     string
	gaplessArgs string
	outDir      string
	name        string
	workDir     string
	keepFailed  bool
	runTimeout  time.Duration
	predict     bool
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "W1 and W2, six contenders (defaults that --workloads and --contenders override)")
	flag.StringVar(&o.workloadIDs, "workloads", "", "comma-separated workloads: "+workloadList(workloads)+" (default: all; --quick: W1,W2)")
	flag.StringVar(&o.contenders, "contenders", "", "comma-separated contenders: mariadb-serial, mariadb-conservative, mariadb-optimistic, mariadb-aggressive, mariadb-binlog, gapless-POLICY-WORKERS (WORKERS a number or N), each with an optional /VARIANT of dash-joined words: durable or fast, nobinlog, remote (gapless over a 1 ms link), failover (on a cluster workload, the node gapless writes to killed amid the run) (default: each workload's own list, see README; --quick: "+strings.Join(quickContenders, ",")+")")
	flag.IntVar(&o.runs, "runs", 0, fmt.Sprintf("runs per contender and workload; the median counts (default 3; --quick: %d)", quickRuns))
	flag.IntVar(&o.workers, "workers", 8, "N: parallel threads of MariaDB's parallel modes and gapless's workers")
	flag.BoolVar(&o.fast, "fast", false, "non-durable targets: innodb_flush_log_at_trx_commit=2, sync_binlog=0")
	flag.Float64Var(&o.scale, "scale", 1, fmt.Sprintf("multiply every workload's transaction count (--quick: W1's and W2's %d times more)", quickScale))
	flag.StringVar(&o.gapless, "gapless", "bin/gapless", "the gapless binary")
	flag.StringVar(&o.gaplessArgs, "gapless-flags", "", "more flags for every gapless run, space-separated (for experiments: \"--batch 1\")")
	flag.StringVar(&o.outDir, "out", "bench/results", "folder for the report and chart")
	flag.StringVar(&o.name, "name", "", "report name: results are <date>-<name>.md and .png (default: full; --quick: quick)")
	flag.StringVar(&o.workDir, "workdir", "", "folder for the servers' data, kept at the end; the prepared tables' snapshots in DIR/prepared serve the next run with the same --workdir (default: a new folder in the temp dir, removed at the end)")
	flag.BoolVar(&o.keepFailed, "keep-failed", false, "leave a failed or diverged run's target and its primary running, and keep the work folder")
	flag.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "give up on one contender run after this long")
	flag.BoolVar(&o.predict, "predict", false, "also run gapless analyze --calibrate on each recording and set its predicted speedups beside the measured ones (predict.go)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %v\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	ws, cs, err := o.resolve()
	if err != nil {
		return err
	}
	if err := checkPrograms(o.gapless, ws); err != nil {
		return err
	}
	workDir := o.workDir
	removeWorkDir := false
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "gapless-bench-"); err != nil {
			return fmt.Errorf("work folder: %w", err)
		}
		removeWorkDir = true
	}
	if workDir, err = filepath.Abs(workDir); err != nil {
		return fmt.Errorf("work folder: %w", err)
	}
	fl := newFleet()
	keptSomething := false
	defer func() {
		fl.killAll()
		if removeWorkDir && !keptSomething {
			if err := os.RemoveAll(workDir); err != nil {
				fmt.Fprintf(os.Stderr, "bench: removing work folder: %v\n", err)
			}
		}
	}()

	rp := &report{
		Name: o.name, Command: commandLine(), Began: time.Now(), Machine: describeMachine(o.gapless),
		Durable: !o.fast, Workers: o.workers, Runs: o.runs, Scale: o.scale,
	}
	// With --workdir, the prepared tables outlive the run for the next one.
	pt := &preparedTables{dir: filepath.Join(workDir, "prepared"), version: rp.Machine.MariaDB}
	pairs := 0
	for _, list := range cs {
		pairs += len(list)
	}
	fmt.Printf("bench %s: workloads %s; %d contender runs per round, %d round(s); work folder %s\n", o.name, workloadList(ws), pairs, o.runs, workDir)
	for _, w := range ws {
		wr, kept, err := benchWorkload(ctx, fl, pt, o, w, cs[w], filepath.Join(workDir, w.ID))
		keptSomething = keptSomething || kept
		if err != nil {
			return err
		}
		rp.Workloads = append(rp.Workloads, wr)
		fmt.Printf("\n## %s: %s\n\n%s\n%s", w.ID, w.Title, wr.markdownTable(rp.Machine.Cores), wr.predictionTable())
	}
	rp.Elapsed = time.Since(rp.Began)
	rp.LoadEnd = loadAverage()
	if err := rp.write(o.outDir); err != nil {
		return err
	}
	if keptSomething {
		fmt.Printf("kept for inspection: %s; the servers of failed runs and their primaries are still running (each folder's mariadbd.pid)\n", workDir)
	}
	return nil
}

func (o *options) resolve() ([]*workload, map[*workload][]contender, error) {
	if o.runs == 0 {
		o.runs = 3
		if o.quick {
			o.runs = quickRuns
		}
	}

	if o.name == "" {
		o.name = "full"
		if o.quick {
			o.name = "quick"
		}
	}
	if o.runs < 1 || o.workers < 1 || o.scale <= 0 {
		return nil, nil, fmt.Errorf("--runs, --workers and --scale must be positive")
	}
	wIDs := splitList(o.workloadIDs)
	switch {
	case len(wIDs) > 0:
	case o.quick:
		wIDs = []string{"W1", "W2"}
	default:
		// Every workload; those into a cluster only where Galera is installed.
		galera := sandbox.CheckGalera()
		for _, w := range workloads {
			if w.Cluster > 0 && galera != nil {
				fmt.Printf("bench: leaving out %s: %v\n", w.ID, galera)
				continue
			}
			wIDs = append(wIDs, w.ID)
		}
	}
	var ws []*workload
	for _, id := range wIDs {
		var found *workload
		for _, w := range workloads {
			if strings.EqualFold(w.ID, id) {
				found = w
			}
		}
		if found == nil {
			return nil, nil, fmt.Errorf("--workloads: unknown workload %q (want one of %s)", id, workloadList(workloads))
		}
		ws = append(ws, found)
	}
	explicit := splitList(o.contenders)
	cs := map[*workload][]contender{}
	for _, w := range ws {
		cIDs := explicit
		if len(cIDs) == 0 {
			cIDs = defaultContenders(w, o.fast)
			if o.quick {
				cIDs = quickContenders
			}
		}
		seen := map[string]bool{}
		for _, id := range cIDs {
			c, err := parseContender(id, o.workers, !o.fast)
			if err == nil {
				err = fitsWorkload(c, w)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("--contenders: %w", err)
			}
			if !seen[c.ID] {
				seen[c.ID] = true
				cs[w] = append(cs[w], c)
			}
		}
	}
	return ws, cs, nil
}

// fitsWorkload refuses a contender that cannot run on w: the kill of a node
// needs a cluster, and into a cluster neither the link nor a target without
// binlog is set up.
func fitsWorkload(c contender, w *workload) error {
	switch {
	case c.Failover && w.Cluster == 0:
		return fmt.Errorf("%s on %s: failover kills a node of a cluster workload's target", c.ID, w.ID)
	case w.Cluster > 0 && (c.Remote || !c.TargetBinlog):
		return fmt.Errorf("%s on %s: a cluster's nodes keep their binlog and are reached directly (no nobinlog or remote)", c.ID, w.ID)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func workloadList(ws []*workload) string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return strings.Join(ids, ",")
}

func commandLine() string {
	if cmd := strings.TrimSpace(os.Getenv("BENCH_COMMAND")); cmd != "" {
		return cmd
	}
	return "go run ./bench " + strings.Join(os.Args[1:], " ")
}

func checkPrograms(gapless string, ws []*workload) error {
	if err := sandbox.CheckInstalled(); err != nil {
		return err
	}
	for _, w := range ws {
		if w.Cluster > 0 {
			if err := sandbox.CheckGalera(); err != nil {
				return fmt.Errorf("%s replicates into a Galera cluster: %w", w.ID, err)
			}
		}
	}
	if fi, err := os.Stat(gapless); err != nil || fi.IsDir() {
		return fmt.Errorf("gapless binary %s not found: run make build, or pass --gapless", gapless)
	}
	for _, p := range []string{"sysbench", "mariadb", "mariadb-dump", "mariadb-binlog", "cp"} {
		if commandOutput("sh", "-c", "command -v "+p) == "" {
			return fmt.Errorf("%s is not installed (make deps installs MariaDB and sysbench)", p)
		}
	}
	return nil
}

// benchWorkload records one workload and runs every contender on it, the
// runs interleaved so that noise spreads over all contenders alike. It
// reports whether it left servers running for inspection.
func benchWorkload(ctx context.Context, fl *fleet, pt *preparedTables, o options, w *workload, cs []contender, dir string) (*workloadResult, bool, error) {
	fmt.Printf("%s: recording %s\n", w.ID, w.Title)
	rec, err := record(ctx, fl, pt, w, dir, o.workloadScale(w))
	if err != nil {
		return nil, false, err
	}
	fmt.Printf("%s: %d transactions in %.1f s on the primary (%.0f/s)%s, %s of binlog\n",
		w.ID, rec.Transactions, rec.PrimarySeconds, float64(rec.Transactions)/rec.PrimarySeconds, rec.rowChangesText(), megabytes(rec.BinlogBytes))
	gaplessBin, err := filepath.Abs(o.gapless)
	if err != nil {
		return nil, false, err
	}
	if w.Cluster > 0 {
		fmt.Printf("%s: making the template cluster of %d nodes\n", w.ID, w.Cluster)
		if rec.ClusterTemplate, err = makeClusterTemplate(ctx, fl, rec, filepath.Join(dir, "cluster-template")); err != nil {
			return nil, false, err
		}
	}
	wr := &workloadResult{Rec: rec}
	for _, c := range cs {
		wr.Results = append(wr.Results, &result{Contender: c})
	}
	kept := false
	for round := 1; round <= o.runs; round++ {
		for _, r := range wr.Results {
			if err := ctx.Err(); err != nil {
				return nil, kept, fmt.Errorf("interrupted: %w", err)
			}
			runDir := filepath.Join(dir, "runs", fmt.Sprintf("%s-%d", strings.NewReplacer("/", "_", "@", "_").Replace(r.Contender.ID), round))
			began := time.Now()
			a, keptRun := runOnce(ctx, fl, o, rec, r.Contender, runDir, gaplessBin)
			kept = kept || keptRun
			r.Attempts = append(r.Attempts, a)
			fmt.Printf("%s run %d %-32s %s (%.0f s with the target's copy, start and verify)\n", w.ID, round, r.Contender.Label, a.summary(), time.Since(began).Seconds())
		}
	}
	if o.predict {
		wr.Prediction = predict(ctx, fl, o, rec, dir, gaplessBin, cs)
	}
	if kept {
		fl.forget(rec.Primary)
		return wr, true, nil
	}
	if err := fl.kill(rec.Primary); err != nil {
		return nil, false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, fmt.Errorf("removing %s: %w", dir, err)
	}
	return wr, false, nil
}

func (a attempt) summary() string {
	switch {
	case a.Err != nil:
		return "ERROR " + strings.ReplaceAll(a.Err.Error(), "\n", " | ")
	case !a.Equal:
		return fmt.Sprintf("%.1f s, DIVERGED: %s", a.Seconds, a.Detail)
	default:
		link := ""
		if a.LinkCPU > 0 {
			link = fmt.Sprintf(", link %.1f s", a.LinkCPU)
		}
		if a.FailoverSeconds > 0 {
			link += fmt.Sprintf("; committed again %.1f s after the kill (cluster without the node after %.1f s), %d move(s)", a.FailoverSeconds, a.ViewChangeSeconds, a.Moves)
		}
		return fmt.Sprintf("%.1f s, equal; CPU: target %.1f s, applier %.1f s%s, machine %.0f%% busy", a.Seconds, a.TargetCPU, a.ApplierCPU, link, 100*a.MachineBusy)
	}
}

// selfCPU is the CPU seconds the bench process has used so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// runOnce starts a fresh target (or cluster) from the template, runs the
// contender, verifies the target and throws it away (or keeps it, with
// --keep-failed, when the run failed or diverged).
func runOnce(ctx context.Context, fl *fleet, o options, rec *recording, c contender, dir string, gaplessBin string) (attempt, bool) {
	tgt, err := freshReplicaTarget(ctx, fl, rec, dir, c)
	if err != nil {
		return attempt{Err: err}, false
	}
	runCtx, cancel := context.WithTimeout(ctx, o.runTimeout)
	cpuBefore := tgt.cpu()
	busy0, total0 := machineBusy()
	self0 := selfCPU()
	a := c.run(runCtx, runEnv{rec: rec, target: tgt.server, cluster: tgt.cluster, dir: dir, gapless: gaplessBin, extra: strings.Fields(o.gaplessArgs)})
	if c.Remote {
		a.LinkCPU = selfCPU() - self0
	}
	a.TargetCPU = cpuSpent(cpuBefore, tgt.cpu())
	if busy1, total1 := machineBusy(); total1 > total0 {
		a.MachineBusy = (busy1 - busy0) / (total1 - total0)
	}
	cancel()
	if a.Err == nil {
		a.Equal, a.Detail, a.Err = tgt.compare(ctx, rec.Primary)
	} else if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		a.Err = fmt.Errorf("gave up after --run-timeout %s: %w", o.runTimeout, a.Err)
	}
	if o.keepFailed && (a.Err != nil || !a.Equal) {
		for _, srv := range tgt.servers() {
			fl.forget(srv)
			fmt.Printf("kept: target %s %s (root shell: mariadb --socket=%s -uroot)\n", srv.Config.Name, srv.URL(sandbox.ApplierUser, sandbox.ApplierPassword), srv.Socket)
		}
		fmt.Printf("kept: primary %s\n", rec.Primary.URL(sandbox.ReplUser, sandbox.ReplPassword))
		return a, true
	}
	for _, srv := range tgt.servers() {
		if err := fl.kill(srv); err != nil && a.Err == nil {
			a.Err = err
		}
	}
	if err := os.RemoveAll(dir); err != nil && a.Err == nil {
		a.Err = fmt.Errorf("removing %s: %w", dir, err)
	}
	return a, false
}

// replicaTarget is what a contender run writes to: one server, or the
// nodes of a cluster workload's Galera cluster (cluster.go).
type replicaTarget struct {
	server  *sandbox.Server  // the lone target, or the cluster's node 1
	cluster *sandbox.Cluster // nil for a lone target
}

// freshReplicaTarget copies the workload's template into dir and starts a
// target, or a cluster, on it.
func freshReplicaTarget(ctx context.Context, fl *fleet, rec *recording, dir string, c contender) (replicaTarget, error) {
	if rec.Workload.Cluster > 0 {
		cl, err := freshCluster(ctx, fl, rec, filepath.Join(dir, "cluster"), c.Durable)
		if err != nil {
			return replicaTarget{}, err
		}
		return replicaTarget{server: cl.Nodes[0], cluster: cl}, nil
	}
	srv, err := freshTarget(ctx, fl, rec, dir, c.Durable, c.TargetBinlog)
	return replicaTarget{server: srv}, err
}

// freshTarget copies the template datadir into dir and starts a target on it.
func freshTarget(ctx context.Context, fl *fleet, rec *recording, dir string, durable, binlog bool) (*sandbox.Server, error) {
	if err := copyDatadir(ctx, rec.TemplateDatadir, filepath.Join(dir, "target", "data")); err != nil {
		return nil, err
	}
	return fl.start(ctx, targetConfig(dir, rec.Workload, durable, binlog))
}

func (t replicaTarget) servers() []*sandbox.Server {
	if t.cluster != nil {
		return t.cluster.Nodes
	}
	return []*sandbox.Server{t.server}
}

// cpu is the CPU seconds each server has used so far, 0 for one not running.
func (t replicaTarget) cpu() []float64 {
	var out []float64
	for _, srv := range t.servers() {
		out = append(out, serverCPU(srv))
	}
	return out
}

// cpuSpent sums the CPU seconds the servers used between two readings of
// cpu, over the servers that ran throughout (a killed node's are lost).
func cpuSpent(before, after []float64) float64 {
	var sum float64
	for i := range min(len(before), len(after)) {
		if before[i] > 0 && after[i] > 0 {
			sum += after[i] - before[i]
		}
	}
	return sum
}

// compare checks every table of the target against the primary; on a
// cluster, of every node, once the nodes a contender killed have rejoined.
func (t replicaTarget) compare(ctx context.Context, primary *sandbox.Server) (bool, string, error) {
	if t.cluster != nil {
		if err := rejoinKilledNodes(ctx, t.cluster); err != nil {
			return false, "", err
		}
		return compareNodes(ctx, primary, t.cluster)
	}
	tgt, err := t.server.Open("")
	if err != nil {
		return false, "", fmt.Errorf("verify: target: %w", err)
	}
	defer tgt.Close()
	return compareWith(ctx, primary, tgt)
}
