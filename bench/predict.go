// This file owns the check of gapless analyze against the benchmark
// (--predict): for each workload, analyze reads the recording's binlog (the
// workload's transactions only: --from its start --until its end), with its
// cost model calibrated (--calibrate) on a fresh target started from the
// same template and configuration as the contenders' targets, and predicts
// each policy's speedup at every worker count the run's gapless contenders
// use; the report sets that beside the speedup gapless measured: the median
// time of gapless with one worker over the contender's, on targets
// configured alike. When gapless contenders reach their target over the
// link (W9), the calibration goes through a link too, and only they are
// set beside it.
//
// Why --calibrate and not constants fitted to the gapless 1 run: the
// calibration measures the target the way a user's analyze would, on the
// same host under the same load as the runs, and never sees the times it is
// checked against.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gapless/internal/sandbox"
)

// predictPolicies are the policies analyze predicts for, every gapless policy.
var predictPolicies = gaplessPolicies

// withinShare is how close a prediction must come to the measured speedup.
const withinShare = 0.25

// prediction is what gapless analyze predicted for one workload.
type prediction struct {
	Transactions int
	Speedup      map[string]map[string]float64 // policy -> workers -> speedup
	CostModel    map[string]float64
	Calibration  string
	Remote       bool // calibrated over the link, for contenders that reach the target through it
	Command      string
	Err          error
}

// predictWorkers are the worker counts analyze predicts for: 1, the run's
// N, and every gapless contender's.
func predictWorkers(o options, cs []contender) []int {
	counts := []int{1, o.workers}
	for _, c := range cs {
		if c.Kind == "gapless" {
			counts = append(counts, c.Workers)
		}
	}
	slices.Sort(counts)
	return slices.Compact(counts)
}

// predictRemote reports whether the calibration goes through the link:
// when a gapless contender of more than one worker reaches its target
// through it (W9's subject; its local ones are the reference for time).
func predictRemote(cs []contender) bool {
	return slices.ContainsFunc(cs, func(c contender) bool { return c.Kind == "gapless" && c.Workers > 1 && c.Remote })
}

// predict runs gapless analyze on the recording, calibrated on a fresh target.
func predict(ctx context.Context, fl *fleet, o options, rec *recording, dir, gaplessBin string, cs []contender) *prediction {
	p := &prediction{Remote: predictRemote(cs)}
	tgt, err := freshTarget(ctx, fl, rec, filepath.Join(dir, "predict"), !o.fast, true)
	if err != nil {
		p.Err = fmt.Errorf("calibration target: %w", err)
		return p
	}
	defer func() {
		_ = fl.kill(tgt)
		_ = os.RemoveAll(filepath.Join(dir, "predict"))
	}()
	targetURL := tgt.URL(sandbox.ApplierUser, sandbox.ApplierPassword)
	if p.Remote {
		link, linked, err := throughLink(targetURL, tgt.Port)
		if err != nil {
			p.Err = fmt.Errorf("link to the calibration target: %w", err)
			return p
		}
		defer link.Close()
		targetURL = linked
	}
	var workers []string
	for _, n := range predictWorkers(o, cs) {
		workers = append(workers, strconv.Itoa(n))
	}
	args := []string{"analyze", "--json",
		"--from", rec.Start, "--until", rec.End,
		"--workers", strings.Join(workers, ","),
		"--policies", strings.Join(predictPolicies, ","),
		"--calibrate", targetURL,
	}
	if batch := batchFlag(o.gaplessArgs); batch != "" {
		args = append(args, "--batch", batch)
	}
	args = append(args, rec.BinlogFiles...)
	p.Command = gaplessBin + " " + strings.Join(args, " ")
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, gaplessBin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.Err = fmt.Errorf("gapless analyze: %w: %s", err, lastLines(stderr.String(), 5))
		return p
	}
	var report struct {
		Transactions     int                           `json:"transactions"`
		PredictedSpeedup map[string]map[string]float64 `json:"predicted_speedup"`
		CostModel        map[string]float64            `json:"cost_model"`
		Calibration      struct {
			CommitUS     float64 `json:"commit_us"`
			OneRowUS     float64 `json:"one_row_body_us"`
			SerialRate   float64 `json:"serial_bodies_per_second"`
			ParallelRate float64 `json:"parallel_bodies_per_second"`
			Connections  int     `json:"connections"`
			ProbeTables  int     `json:"probe_tables"`
			ProbeUS      float64 `json:"probe_body_us"`
			CachedUS     float64 `json:"cached_probe_body_us"`
			ProbeRatio   float64 `json:"probe_parallel_over_serial"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		p.Err = fmt.Errorf("gapless analyze --json: %w", err)
		return p
	}
	p.Transactions, p.Speedup, p.CostModel = report.Transactions, report.PredictedSpeedup, report.CostModel
	c := report.Calibration
	p.Calibration = fmt.Sprintf("COMMIT %.0fµs, per target transaction %.0fµs, per row %.0fµs, per KiB %.0fµs; capacity %.2f (32-row bodies: %.0f/s from 1 connection, %.0f/s from %d)",
		p.CostModel["commit_us"], p.CostModel["transaction_us"], p.CostModel["row_us"], p.CostModel["kib_us"], p.CostModel["capacity"],
		c.SerialRate, c.ParallelRate, c.Connections)
	if c.ProbeTables > 0 {
		p.Calibration += fmt.Sprintf("; 32 lookups on %d of the target's tables %.0fµs (cached %.0fµs), %.2f× as many a second from %d connections",
			c.ProbeTables, c.ProbeUS, c.CachedUS, c.ProbeRatio, c.Connections)
	}
	if int64(p.Transactions) != rec.Transactions {
		p.Err = fmt.Errorf("analyze counted %d transactions between %s and %s, the recording %d", p.Transactions, rec.Start, rec.End, rec.Transactions)
	}
	return p
}

// batchFlag is the --batch value in --gapless-flags, "" when it has none:
// analyze must cut the batches gapless did.
func batchFlag(gaplessArgs string) string {
	fields := strings.Fields(gaplessArgs)
	for i, f := range fields {
		if v, ok := strings.CutPrefix(f, "--batch="); ok {
			return v
		}
		if f == "--batch" && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	return ""
}

// measuredSpeedup is the median time of gapless with one worker (serial,
// else the contender's own policy) over the contender's, on a target
// configured alike and reached alike; 0 when either did not count.
func (wr *workloadResult) measuredSpeedup(c contender) float64 {
	median := func(policy string, workers int) float64 {
		for _, r := range wr.Results {
			o := r.Contender
			if o.Kind == "gapless" && o.Policy == policy && o.Workers == workers && o.Remote == c.Remote &&
				!o.Failover && o.variant == c.variant && o.Binary == c.Binary {
				if s := r.stats(); s.Counted > 0 {
					return s.Median
				}
			}
		}
		return 0
	}
	one := median("serial", 1)
	if one == 0 {
		one = median(c.Policy, 1)
	}
	many := median(c.Policy, c.Workers)
	if one == 0 || many == 0 {
		return 0
	}
	return one / many
}

// predictionTable is one workload's predicted against measured speedups:
// a line for each gapless contender of more than one worker reached as
// the calibration was (over the link or not).
func (wr *workloadResult) predictionTable() string {
	p := wr.Prediction
	if p == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("Predicted against measured speedups over gapless with one worker (`gapless analyze --calibrate`):\n\n")
	if p.Err != nil {
		fmt.Fprintf(&b, "prediction failed: %s\n\n", indent(p.Err.Error()))
		if p.Speedup == nil {
			return b.String()
		}
	}
	fmt.Fprintf(&b, "| contender | predicted speedup | measured speedup | within %.0f%%? |\n", 100*withinShare)
	b.WriteString("|---|---:|---:|---|\n")
	within, lines := 0, 0
	for _, r := range wr.Results {
		c := r.Contender
		if c.Kind != "gapless" || c.Workers < 2 || c.Remote != p.Remote || c.Failover {
			continue
		}
		predicted, ok := p.Speedup[c.Policy][strconv.Itoa(c.Workers)]
		measured := wr.measuredSpeedup(c)
		pred, meas, verdict := "—", "—", "—"
		if ok {
			pred = fmt.Sprintf("%.2f×", predicted)
		}
		if measured > 0 {
			meas = fmt.Sprintf("%.2f×", measured)
		}
		if ok && measured > 0 {
			lines++
			verdict = "no"
			if math.Abs(predicted-measured) <= withinShare*measured {
				verdict = "yes"
				within++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Label, pred, meas, verdict)
	}
	if lines > 0 {
		fmt.Fprintf(&b, "\n%d of %d within %.0f%%.", within, lines, 100*withinShare)
	}
	link := ""
	if p.Remote {
		link = ", calibrated through the link"
	}
	fmt.Fprintf(&b, " Calibrated cost model%s: %s.\n\n", link, p.Calibration)
	return b.String()
}
