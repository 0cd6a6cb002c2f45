package main

import (
	"encoding/json"
	"strings"
	"testing"

	"gapless/internal/analyze"
)

const sampleBinlog = "../../internal/binlog/testdata/mariadb-10.11.bin"

func runAnalyzeCmd(args ...string) (string, error) { return runCommand(newAnalyzeCmd(), args...) }

func TestAnalyzeFromUntilOnFiles(t *testing.T) {
	// The sample holds 0-1-1..0-1-5 and 1-1-1..1-1-3.
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 8},
		{[]string{"--from", "0-1-2,1-1-3"}, 3},
		{[]string{"--until", "0-1-4,1-1-1"}, 5},
		{[]string{"--from", "0-1-1", "--until", "0-1-3"}, 2},
	} {
		out, err := runAnalyzeCmd(append(append([]string{"--json", "--workers", "1,8"}, c.args...), sampleBinlog)...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var report struct {
			Transactions int                           `json:"transactions"`
			Batch        int                           `json:"batch"`
			Speedup      map[string]map[string]float64 `json:"predicted_speedup"`
		}
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		if report.Transactions != c.want || report.Batch != analyze.DefaultBatch || report.Speedup["writeset"]["8"] == 0 {
			t.Errorf("%v: %d transactions, batch %d, speedups %v; want %d transactions, batch %d", c.args, report.Transactions, report.Batch, report.Speedup, c.want, analyze.DefaultBatch)
		}
	}
}

func TestAnalyzeFlagMistakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--calibrate", "mysql://u:p@127.0.0.1:1", "--cost-row", "1ms", sampleBinlog}, "--cost-row and --calibrate"},
		{[]string{"--calibrate", "mysql://u:p@127.0.0.1:1", sampleBinlog}, "--calibrate: cannot reach 127.0.0.1:1: connection refused"},
		{[]string{"--calibrate", "127.0.0.1:3306", sampleBinlog}, "--calibrate: server URL has no scheme"},
		{[]string{"--calibrate", "mysql://u:p@127.0.0.1:1", "no-such-file.bin"}, "no-such-file.bin"},
		{[]string{"--last", "1m", sampleBinlog}, "--last needs --source"},
		{[]string{"--until", "banana", sampleBinlog}, `--until "banana"`},
		{[]string{"--capacity", "0.5", sampleBinlog}, "capacity 0.5"},
		{[]string{"--batch", "0", sampleBinlog}, "batch"},
	} {
		_, err := runAnalyzeCmd(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
