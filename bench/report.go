// This file owns the results: per-contender statistics over the runs, the
// markdown report (one table per workload, the machine it ran on, failures
// with the commands that reproduce them) and the machine's description.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// result is every run of one contender on one workload.
type result struct {
	Contender contender
	Attempts  []attempt
}

// workloadResult is one workload's recording and its contenders' results.
type workloadResult struct {
	Rec        *recording
	Results    []*result
	Prediction *prediction // gapless analyze's, with --predict (predict.go)
}

// stats summarise the runs that finished and verified equal; only those count.
type stats struct {
	Median, Min, Max float64
	Counted, Runs    int
	Failed, Diverged int
	// Medians of the CPU seconds the target and the applier used.
	TargetCPU, ApplierCPU float64
	LinkRoundTrip         float64 // seconds, remote contenders only
	LinkCPU               float64 // the link proxy's CPU seconds, remote contenders only
	// Failover contenders only: the seconds from the kill of the node
	// gapless wrote to until it committed on another (median, min, max),
	// and the most moves to another node it logged in a run.
	Failover, FailoverMin, FailoverMax float64
	ViewChange                         float64 // median seconds until the survivors formed a cluster without the node
	Moves                              int
}

func (r *result) stats() stats {
	var secs, target, applier, link, linkCPU, failover, view []float64
	s := stats{Runs: len(r.Attempts)}
	for _, a := range r.Attempts {
		switch {
		case a.Err != nil:
			s.Failed++
		case !a.Equal:
			s.Diverged++
		default:
			secs = append(secs, a.Seconds)
			target = append(target, a.TargetCPU)
			applier = append(applier, a.ApplierCPU)
			link = append(link, a.LinkRoundTrip)
			linkCPU = append(linkCPU, a.LinkCPU)
			failover = append(failover, a.FailoverSeconds)
			view = append(view, a.ViewChangeSeconds)
			s.Moves = max(s.Moves, a.Moves)
		}
	}
	s.Counted = len(secs)
	if len(secs) == 0 {
		return s
	}
	s.Median, s.Min, s.Max = median(secs), slices.Min(secs), slices.Max(secs)
	s.TargetCPU, s.ApplierCPU, s.LinkRoundTrip, s.LinkCPU = median(target), median(applier), median(link), median(linkCPU)
	s.Failover, s.FailoverMin, s.FailoverMax, s.ViewChange = median(failover), slices.Min(failover), slices.Max(failover), median(view)
	return s
}

// cpuFloor is the shortest time the CPU the run used allows on cores cores:
// (target CPU + applier CPU + the link's proxy's) / cores, from the medians.
func (s stats) cpuFloor(cores int) float64 {
	return (s.TargetCPU + s.ApplierCPU + s.LinkCPU) / float64(max(1, cores))
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if n := len(v); n%2 == 1 {
		return v[n/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// bestMariaDB is the lowest median catch-up time among MariaDB's replica
// modes on a workload's targets of one configuration (variant), 0 when none
// counted.
func (wr *workloadResult) bestMariaDB(variant string) (float64, string) {
	best, label := 0.0, ""
	for _, r := range wr.Results {
		s := r.stats()
		if r.Contender.Kind != "mariadb" || r.Contender.Variant() != variant || s.Counted == 0 {
			continue
		}
		if best == 0 || s.Median < best {
			best, label = s.Median, r.Contender.Label
		}
	}
	return best, label
}

func (wr *workloadResult) perSecond(r *result) float64 {
	s := r.stats()
	if s.Counted == 0 || s.Median == 0 {
		return 0
	}
	return float64(wr.Rec.Transactions) / s.Median
}

// markdownTable is one workload's table; cores is the machine's, for the
// CPU floor.
func (wr *workloadResult) markdownTable(cores int) string {
	var b strings.Builder
	b.WriteString("| contender | seconds, median [min–max] | CPU floor, s (time ÷ floor) | CPU s, target + applier | gapless CPU per transaction / row change | transactions/s | vs MariaDB's best | equal |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range wr.Results {
		s := r.stats()
		secs, floor, cpu, tps, ratio := "—", "—", "—", "—", "—"
		if s.Counted > 0 {
			secs = fmt.Sprintf("%.1f", s.Median)
			if s.Counted > 1 {
				secs += fmt.Sprintf(" [%.1f–%.1f]", s.Min, s.Max)
			}
			if f := s.cpuFloor(cores); f > 0 {
				floor = fmt.Sprintf("%.1f (%.2f×)", f, s.Median/f)
				cpu = fmt.Sprintf("%.1f + %.1f", s.TargetCPU, s.ApplierCPU)
				if s.LinkCPU > 0 {
					cpu += fmt.Sprintf(" + %.1f link", s.LinkCPU)
				}
			}
			tps = fmt.Sprintf("%.0f", wr.perSecond(r))
			if best, _ := wr.bestMariaDB(r.Contender.Variant()); best > 0 {
				ratio = fmt.Sprintf("%.2f×", best/s.Median)
			}
			if r.Contender.Failover {
				// A node killed amid the run: its CPU is lost, and no
				// MariaDB mode ran through a kill.
				floor, ratio = "—", "—"
			}
		}
		label := strings.ReplaceAll(r.Contender.Label, "|", `\|`)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label, secs, floor, cpu, wr.gaplessCPU(r), tps, ratio, s.equalCell())
	}
	b.WriteString(wr.linkNotes())
	b.WriteString(wr.failoverNotes())
	return b.String()
}

// gaplessCPU is a gapless contender's own CPU (the median of its counted
// runs') per transaction of the recording and per row change of its row
// events; "—" for other contenders, whose CPU is the target's or a client's.
func (wr *workloadResult) gaplessCPU(r *result) string {
	s := r.stats()
	if r.Contender.Kind != "gapless" || s.Counted == 0 || s.ApplierCPU == 0 || wr.Rec.Transactions == 0 {
		return "—"
	}
	cell := microseconds(s.ApplierCPU / float64(wr.Rec.Transactions))
	if wr.Rec.RowChanges > 0 {
		cell += " / " + microseconds(s.ApplierCPU/float64(wr.Rec.RowChanges))
	}
	return cell
}

// microseconds writes seconds as µs, with a decimal below 100.
func microseconds(seconds float64) string {
	us := 1e6 * seconds
	if us < 100 {
		return fmt.Sprintf("%.1f µs", us)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// failoverNotes say, for each failover contender, how long gapless took to
// commit again after the kill of the node it wrote to.
func (wr *workloadResult) failoverNotes() string {
	var b strings.Builder
	for _, r := range wr.Results {
		c, s := r.Contender, r.stats()
		if !c.Failover || s.Counted == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: the node it wrote to was killed with SIGKILL once %.0f%% of the transactions were applied; "+
			"gapless committed again on another node %.1f s later", c.Label, 100*failoverAt, s.Failover)
		if s.Counted > 1 {
			fmt.Fprintf(&b, " (median of %d runs, %.1f–%.1f s)", s.Counted, s.FailoverMin, s.FailoverMax)
		}
		fmt.Fprintf(&b, ", with no human action (bar: under 10 s), and logged %d move(s) to another node. "+
			"The surviving nodes had formed a cluster without the killed one %.1f s after the kill (median; "+
			"nothing can be certified before, whoever writes). "+
			"Its time includes the failover; the killed node rejoined after the run, and every node verified equal. "+
			"The killed node's CPU is not counted.\n", s.Moves, s.ViewChange)
	}
	return b.String()
}

// linkNotes set each remote contender's time beside the same contender's on
// a local target, when both ran.
func (wr *workloadResult) linkNotes() string {
	var b strings.Builder
	for _, r := range wr.Results {
		c, s := r.Contender, r.stats()
		if !c.Remote || s.Counted == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: a ping through the link took %.2f ms (median)", c.Label, 1000*s.LinkRoundTrip)
		for _, local := range wr.Results {
			l := local.Contender
			if ls := local.stats(); !l.Remote && l.Kind == c.Kind && l.Policy == c.Policy && l.Workers == c.Workers &&
				l.Binary == c.Binary && l.Variant() == c.Variant() && ls.Counted > 0 {
				fmt.Fprintf(&b, "; %.2f× the time of %s on a local target", s.Median/ls.Median, l.Label)
			}
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func (s stats) equalCell() string {
	switch {
	case s.Failed == 0 && s.Diverged == 0:
		return "yes"
	case s.Failed == s.Runs:
		return "error"
	case s.Diverged > 0 && s.Failed == 0:
		return fmt.Sprintf("**no** (%d of %d runs)", s.Diverged, s.Runs)
	default:
		return fmt.Sprintf("**no**: %d diverged, %d failed of %d runs", s.Diverged, s.Failed, s.Runs)
	}
}

// report is a whole benchmark's outcome.
type report struct {
	Name      string
	Command   string
	Began     time.Time
	Elapsed   time.Duration
	Machine   machine
	LoadEnd   string
	Durable   bool
	Workers   int
	Runs      int
	Scale     float64
	Workloads []*workloadResult
	Chart     string // file name of the chart beside the report
}

func (rp *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# gapless against MariaDB's replication: %s, %s\n\n", rp.Name, rp.Began.Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, "Made by `%s` in %s.\n\n", rp.Command, rp.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s. Load average (1, 5, 15 min) %s at the start, %s at the end.\n\n", rp.Machine, rp.Machine.LoadStart, rp.LoadEnd)
	b.WriteString("**Timings are noisy**: the machine is shared with other engineers running tests at the same time.\n\n")
	fmt.Fprintf(&b, "%s\n", rp.method())
	if rp.Chart != "" {
		fmt.Fprintf(&b, "![seconds per contender and workload](%s)\n\n", rp.Chart)
	}
	for _, wr := range rp.Workloads {
		rec := wr.Rec
		fmt.Fprintf(&b, "## %s: %s\n\n", rec.Workload.ID, rec.Workload.Title)
		side := ""
		if rec.SideStatements > 0 {
			side = fmt.Sprintf(" (%d of them %s)", rec.SideStatements, rec.Workload.SideKind)
		}
		if rec.Scale != 1 && rec.Scale != 0 {
			side += fmt.Sprintf(" (scale %g)", rec.Scale)
		}
		fmt.Fprintf(&b, "Primary (%s): %d transactions%s in %.1f s (%.0f/s)%s, %s of binlog, from %s to %s.\n\n",
			durability(rec.Workload.Durable, rec.Workload.PrimaryConf), rec.Transactions, side, rec.PrimarySeconds,
			float64(rec.Transactions)/rec.PrimarySeconds, rec.rowChangesText(), megabytes(rec.BinlogBytes), rec.Start, rec.End)
		if n := rec.Workload.Cluster; n > 0 {
			fmt.Fprintf(&b, "Targets: a fresh %d-node Galera cluster per run, each node started on a copy of the same stopped cluster "+
				"(cold buffer pools, no state transfer), wsrep_gtid_mode=ON, nodes durable like the other targets, "+
				"binlog and log_slave_updates ON%s. gapless's target URL names every node (it writes to node 1 and "+
				"moves to the next when a node fails); MariaDB's replica runs on node 1 (CHANGE MASTER there). "+
				"A run counts when every node, read with wsrep_sync_wait=1, equals the primary. "+
				"The target's CPU is every node's, and the CPU floor theirs with the applier's. "+
				"The nodes drop a silent peer after evs.suspect_timeout=PT3S (the sandbox's; Galera's default is 5 s).\n\n",
				n, strings.Join(append([]string{""}, rec.Workload.TargetConf...), ", "))
		} else if conf := rec.Workload.TargetConf; len(conf) > 0 {
			fmt.Fprintf(&b, "Targets: %s.\n\n", strings.Join(conf, ", "))
		}
		b.WriteString(wr.markdownTable(rp.Machine.Cores))
		b.WriteString("\n")
		b.WriteString(wr.predictionTable())
	}
	if failures := rp.failures(); failures != "" {
		b.WriteString("## Failures and divergences\n\n")
		b.WriteString(failures)
	}
	return b.String()
}

func (rp *report) method() string {
	target := "durable (innodb_flush_log_at_trx_commit=1, sync_binlog=1)"
	if !rp.Durable {
		target = "non-durable, `--fast` (innodb_flush_log_at_trx_commit=2, sync_binlog=0)"
	}
	return fmt.Sprintf(`Method: each workload is recorded once in a sandbox primary's binlog (sysbench after prepare; --scale %g).
The prepared tables are made once per table set and kept as a stopped server's datadir (bench/prepared.go);
the primary starts on a copy of it, and every run copies its data folder, without binlog, into a fresh
target with a cold buffer pool, identical for every contender: %s, log_bin and
log_slave_updates ON, binlog_format=ROW, and the workload's own target settings where it names some.
Every contender starts from the primary's position after prepare and
is timed from its start until the workload's last GTID is applied on the target (MariaDB: START SLAVE UNTIL
to MASTER_GTID_WAIT; gapless: the process's start to its exit at --until, --commit-order strict, target
binlog written; mariadb-binlog: the pipe's start to its end). A time counts only when verify.Compare then
finds every table equal to the primary's. %d run(s) per contender, interleaved; N = %d workers.
A contender marked [binlog off] keeps the applied transactions out of the target's binlog
(log_slave_updates OFF; gapless --no-target-binlog; mariadb --init-command="SET sql_log_bin=0"); one marked
[durable] or [non-durable] runs on a target of that durability instead of the default; one marked [1 ms link]
reaches its target through a proxy that holds every chunk of bytes 0.5 ms in each direction (bench/link.go).
"vs MariaDB's best" is the best MariaDB replica mode's median time, on targets configured the same way,
divided by the contender's (above 1: faster).
"CPU s" are the medians of the CPU seconds the target server (MariaDB's replica runs inside it) and the
applier's own processes used during a run; the CPU floor is their sum over the machine's cores, the
shortest time that much work allows here, and "time ÷ floor" how far the run stayed from it (1.00×: every
core busy with this run alone). "gapless CPU per transaction / row change" is a gapless contender's own CPU
(the median of its runs') over the recording's transactions and over the row changes of its row events,
counted once after the recording by gapless analyze's reader (an update counts once); a workload whose
primary logs statements (binlog_format=MIXED) shows the first alone. The link's proxy runs in the bench
process: over the link, the bench process's CPU during the run shows as "+ N link" and counts in the floor.
`, rp.Scale, target, rp.Runs, rp.Workers)
}

// rowChangesText says how many rows the recording's row events change, ""
// where the primary logs statements.
func (rec *recording) rowChangesText() string {
	if rec.RowChanges == 0 || rec.Transactions == 0 {
		return ""
	}
	return fmt.Sprintf(", %d row changes (%.1f a transaction)", rec.RowChanges, float64(rec.RowChanges)/float64(rec.Transactions))
}

func (rp *report) failures() string {
	var b strings.Builder
	for _, wr := range rp.Workloads {
		for _, r := range wr.Results {
			for i, a := range r.Attempts {
				if a.Err == nil && a.Equal {
					continue
				}
				what := "diverged: " + a.Detail
				if a.Err != nil {
					what = "error: " + a.Err.Error()
				}
				fmt.Fprintf(&b, "- %s, %s, run %d, %s\n", wr.Rec.Workload.ID, r.Contender.Label, i+1, indent(what))
				fmt.Fprintf(&b, "  - reproduce: `go run ./bench --workloads %s --contenders %s --runs 1 --keep-failed`\n", wr.Rec.Workload.ID, r.Contender.ID)
				if a.Command != "" {
					fmt.Fprintf(&b, "  - invoked as: `%s`\n", a.Command)
				}
			}
		}
	}
	return b.String()
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

func durability(durable bool, conf []string) string {
	s := "non-durable"
	if durable {
		s = "durable"
	}
	if len(conf) > 0 {
		s += ", " + strings.Join(conf, ", ")
	}
	return s
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// machine describes where the benchmark ran.
type machine struct {
	Cores     int
	CPU       string
	MemoryGiB float64
	Kernel    string
	MariaDB   string
	Sysbench  string
	Go        string
	Gapless   string
	LoadStart string
}

func (m machine) String() string {
	return fmt.Sprintf("%d cores (%s), %.1f GiB memory, Linux %s; %s; %s; %s; %s",
		m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.MariaDB, m.Sysbench, m.Go, m.Gapless)
}

func describeMachine(gaplessBin string) machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var kb float64
			if _, err := fmt.Sscanf(l, "MemTotal: %f kB", &kb); err == nil {
				m.MemoryGiB = kb / (1 << 20)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	version := commandOutput("mariadbd", "--version")
	if version == "" {
		version = commandOutput("/usr/sbin/mariadbd", "--version")
	}
	if _, after, ok := strings.Cut(version, " Ver "); ok {
		version = "mariadbd " + strings.Fields(after)[0]
	}
	m.MariaDB = version
	m.Sysbench = commandOutput("sysbench", "--version")
	m.Gapless = describeGapless(gaplessBin)
	return m
}

// describeGapless names the binary measured and the work tree's commit.
func describeGapless(bin string) string {
	s := "gapless " + bin
	if fi, err := os.Stat(bin); err == nil {
		s += " built " + fi.ModTime().Format("2006-01-02 15:04")
	}
	if commit := commandOutput("git", "rev-parse", "--short", "HEAD"); commit != "" {
		s += " in a work tree at " + commit
		if exec.Command("git", "diff", "--quiet", "HEAD", "--").Run() != nil {
			s += " with uncommitted changes"
		}
	}
	return s
}

func commandOutput(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// write saves the report as <date>-<name>.md and its chart as
// <date>-<name>.png in dir, and prints where.
func (rp *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	base := rp.Began.Format("2006-01-02") + "-" + rp.Name
	png := filepath.Join(dir, base+".png")
	if err := writeChart(png, rp); err != nil {
		return fmt.Errorf("chart %s: %w", png, err)
	}
	rp.Chart = base + ".png"
	md := filepath.Join(dir, base+".md")
	if err := os.WriteFile(md, []byte(rp.markdown()), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Printf("\nreport: %s\nchart:  %s\n", md, png)
	return nil
}
