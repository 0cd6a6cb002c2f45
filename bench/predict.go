// This file owns the check of gapless analyze against the benchmark
// (--predict): for each workload, analyze reads the recording's binlog (the
// workload's transactions only: --from its start --until its end), with its
// cost model calibrated (--calibrate) on a fresh target started from the
// same template and configuration as the contenders' targets, and predicts
// each policy's speedup at N workers; the report sets that beside the
// speedup gapless measured: the serial run's median time over the policy's.
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
	Command      string
	Err          error
}

// predict runs gapless analyze on the recording, calibrated on a fresh target.
func predict(ctx context.Context, fl *fleet, o options, rec *recording, dir, gaplessBin string) *prediction {
	p := &prediction{}
	tgt, err := freshTarget(ctx, fl, rec, filepath.Join(dir, "predict"), !o.fast, true)
	if err != nil {
		p.Err = fmt.Errorf("calibration target: %w", err)
		return p
	}
	defer func() {
		_ = fl.kill(tgt)
		_ = os.RemoveAll(filepath.Join(dir, "predict"))
	}()
	args := []string{"analyze", "--json",
		"--from", rec.Start, "--until", rec.End,
		"--workers", "1," + strconv.Itoa(o.workers),
		"--policies", strings.Join(predictPolicies, ","),
		"--calibrate", tgt.URL(sandbox.ApplierUser, sandbox.ApplierPassword),
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

// measuredSpeedup is the median time of gapless with one worker over the
// policy's at workers, 0 when either did not count.
func (wr *workloadResult) measuredSpeedup(policy string, workers int) float64 {
	median := func(id string) float64 {
		for _, r := range wr.Results {
			if r.Contender.ID == id {
				if s := r.stats(); s.Counted > 0 {
					return s.Median
				}
			}
		}
		return 0
	}
	one := median("gapless-serial-1")
	if one == 0 {
		one = median("gapless-" + policy + "-1")
	}
	many := median(fmt.Sprintf("gapless-%s-%d", policy, workers))
	if one == 0 || many == 0 {
		return 0
	}
	return one / many
}

// predictionTable is one workload's predicted against measured speedups.
func (wr *workloadResult) predictionTable(workers int) string {
	p := wr.Prediction
	if p == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Predicted against measured, %d workers (`gapless analyze --calibrate`):\n\n", workers)
	if p.Err != nil {
		fmt.Fprintf(&b, "prediction failed: %s\n\n", indent(p.Err.Error()))
		if p.Speedup == nil {
			return b.String()
		}
	}
	fmt.Fprintf(&b, "| policy | predicted speedup at %d | measured speedup at %d | within %.0f%%? |\n", workers, workers, 100*withinShare)
	b.WriteString("|---|---:|---:|---|\n")
	for _, policy := range predictPolicies {
		predicted, ok := p.Speedup[policy][strconv.Itoa(workers)]
		measured := wr.measuredSpeedup(policy, workers)
		pred, meas, within := "—", "—", "—"
		if ok {
			pred = fmt.Sprintf("%.2f×", predicted)
		}
		if measured > 0 {
			meas = fmt.Sprintf("%.2f×", measured)
		}
		if ok && measured > 0 {
			within = "no"
			if math.Abs(predicted-measured) <= withinShare*measured {
				within = "yes"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", policy, pred, meas, within)
	}
	fmt.Fprintf(&b, "\nCalibrated cost model: %s.\n\n", p.Calibration)
	return b.String()
}
