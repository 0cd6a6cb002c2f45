// Tests of the benchmark's arithmetic and rendering, without servers.
package main

import (
	"bytes"
	"errors"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseContender(t *testing.T) {
	for id, want := range map[string]string{
		"mariadb-serial":                          "MariaDB replica, serial",
		"mariadb-optimistic":                      "MariaDB replica, 8 optimistic",
		"gapless-writeset-N":                      "gapless 8 writeset",
		"gapless-commit-id-1":                     "gapless 1 commit-id",
		"mariadb-binlog":                          "mariadb-binlog | mariadb",
		"mariadb-conservative":                    "MariaDB replica, 8 conservative",
		"mariadb-aggressive/nobinlog":             "MariaDB replica, 8 aggressive [binlog off]",
		"mariadb-serial/nobinlog":                 "MariaDB replica, serial [binlog off]",
		"gapless-writeset-N/fast-nobinlog":        "gapless 8 writeset [non-durable, binlog off]",
		"gapless-schema-2/fast@/tmp/old/gapless":  "gapless 2 schema (gapless) [non-durable]",
		"gapless-writeset-N/remote":               "gapless 8 writeset [1 ms link]",
		"gapless-writeset-1/fast-nobinlog-remote": "gapless 1 writeset [non-durable, binlog off, 1 ms link]",
		"gapless-writeset-N/failover":             "gapless 8 writeset [node killed]",
	} {
		c, err := parseContender(id, 8, true)
		if err != nil || c.Label != want {
			t.Errorf("parseContender(%q) = %q, %v; want %q", id, c.Label, err, want)
		}
	}
	if c, _ := parseContender("gapless-writeset-1/fast-nobinlog", 8, true); c.Durable || c.TargetBinlog {
		t.Errorf("fast-nobinlog gave a durable target or one that binlogs: %+v", c)
	}
	if c, _ := parseContender("gapless-writeset-1", 8, true); !c.Durable || !c.TargetBinlog {
		t.Errorf("no variant gave a non-durable target or one without binlog: %+v", c)
	}
	if c, _ := parseContender("gapless-writeset-N/nobinlog-remote", 8, true); !c.Remote || c.Variant() != "binlog off" {
		t.Errorf("nobinlog-remote: remote %v, variant %q; want a remote contender set beside MariaDB on targets with the binlog off", c.Remote, c.Variant())
	}
	if c, _ := parseContender("gapless-writeset-N/failover", 8, true); !c.Failover || c.Variant() != "" {
		t.Errorf("failover: %v, variant %q; want a failover contender set beside MariaDB on the same targets", c.Failover, c.Variant())
	}
	for _, bad := range []string{"mariadb-optimistic/failover", "gapless-fast-8", "gapless-writeset-0", "mariadb", "gapless-writeset", "gapless-writeset-8/slow", "mariadb-serial@/bin/x",
		"mariadb-serial/remote", "gapless-writeset-8/fast-durable", "gapless-writeset-8/nobinlog-nobinlog", "gapless-writeset-8/"} {
		if _, err := parseContender(bad, 8, true); err == nil {
			t.Errorf("parseContender(%q) accepted", bad)
		}
	}
}

func sampleReport() *report {
	rec := &recording{Workload: workloads[0], Transactions: 1000, RowChanges: 4000, PrimarySeconds: 2, Start: "0-1-10", End: "0-1-1010"}
	wr := &workloadResult{Rec: rec}
	add := func(id string, attempts ...attempt) {
		c, err := parseContender(id, 8, true)
		if err != nil {
			panic(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: attempts})
	}
	add("mariadb-serial", attempt{Seconds: 4, Equal: true, TargetCPU: 3}, attempt{Seconds: 5, Equal: true, TargetCPU: 4}, attempt{Seconds: 3, Equal: true, TargetCPU: 2})
	add("mariadb-optimistic", attempt{Seconds: 2, Equal: true}, attempt{Seconds: 2.5, Equal: true}, attempt{Seconds: 1.5, Equal: true})
	add("gapless-writeset-N", attempt{Seconds: 1, Equal: true}, attempt{Seconds: 1, Equal: false, Detail: "sbtest.sbtest1 different"}, attempt{Err: errors.New("boom")})
	add("gapless-serial-1", attempt{Err: errors.New("boom")})
	add("gapless-writeset-N/remote", attempt{Seconds: 1.5, Equal: true, TargetCPU: 1, ApplierCPU: 0.5, LinkRoundTrip: 0.00116})
	return &report{Name: "test", Command: "go run ./bench", Began: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), Durable: true, Workers: 8, Runs: 3, Scale: 1,
		Machine: machine{Cores: 2}, Workloads: []*workloadResult{wr}}
}

func TestMarkdownTable(t *testing.T) {
	md := sampleReport().markdown()
	for _, want := range []string{
		"| MariaDB replica, serial | 4.0 [3.0–5.0] | 1.5 (2.67×) | 3.0 + 0.0 | — | 250 | 0.50× | yes |",
		"| MariaDB replica, 8 optimistic | 2.0 [1.5–2.5] | — | — | — | 500 | 1.00× | yes |",
		"| gapless 8 writeset | 1.0 | — | — | — | 1000 | 2.00× | **no**: 1 diverged, 1 failed of 3 runs |",
		"| gapless 1 serial | — | — | — | — | — | — | error |",
		"| gapless 8 writeset [1 ms link] | 1.5 | 0.8 (2.00×) | 1.0 + 0.5 | 500 µs / 125 µs | 667 | 1.33× | yes |",
		"gapless 8 writeset [1 ms link]: a ping through the link took 1.16 ms (median); 1.50× the time of gapless 8 writeset on a local target.",
		"W1, gapless 8 writeset, run 2, diverged: sbtest.sbtest1 different",
		"`go run ./bench --workloads W1 --contenders gapless-serial-1 --runs 1 --keep-failed`",
		"noisy",
		"1000 transactions in 2.0 s (500/s), 4000 row changes (4.0 a transaction)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// MariaDB's best is the best of every mode that ran, aggressive included,
// on targets configured the same way.
func TestBestMariaDBCountsAggressive(t *testing.T) {
	wr := &workloadResult{Rec: &recording{Workload: workloads[0], Transactions: 1000}}
	for id, seconds := range map[string]float64{
		"mariadb-conservative": 3, "mariadb-optimistic": 2.5, "mariadb-aggressive": 2, "mariadb-aggressive/fast": 1, "gapless-writeset-N": 1.5,
	} {
		c, err := parseContender(id, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: []attempt{{Seconds: seconds, Equal: true}}})
	}
	if best, label := wr.bestMariaDB(""); best != 2 || label != "MariaDB replica, 8 aggressive" {
		t.Errorf("best MariaDB mode %g (%s), want 2 (aggressive on the default targets)", best, label)
	}
}

// A failover contender's row has no ratio to MariaDB's best (no MariaDB
// mode ran through a kill) and a note with the time it took to go on.
func TestFailoverNote(t *testing.T) {
	wr := &workloadResult{Rec: &recording{Workload: workloads[0], Transactions: 1000}}
	for id, attempts := range map[string][]attempt{
		"mariadb-aggressive":          {{Seconds: 4, Equal: true}},
		"gapless-writeset-N/failover": {{Seconds: 6, Equal: true, FailoverSeconds: 4.2, Moves: 1}, {Seconds: 5, Equal: true, FailoverSeconds: 3.8, Moves: 1}, {Seconds: 7, Equal: true, FailoverSeconds: 5.1, Moves: 2}},
	} {
		c, err := parseContender(id, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: attempts})
	}
	slices.SortFunc(wr.Results, func(a, b *result) int { return strings.Compare(a.Contender.ID, b.Contender.ID) })
	table := wr.markdownTable(2)
	for _, want := range []string{
		"| gapless 8 writeset [node killed] | 6.0 [5.0–7.0] | — | — | — | 167 | — | yes |",
		"gapless committed again on another node 4.2 s later (median of 3 runs, 3.8–5.1 s)",
		"logged 2 move(s)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// gapless's own CPU is set per transaction and, where the primary logged
// rows, per row change, from the median of the counted runs.
func TestGaplessCPUPerTransactionAndRowChange(t *testing.T) {
	wr := &workloadResult{Rec: &recording{Workload: workloads[0], Transactions: 20000, RowChanges: 500000}}
	for id, attempts := range map[string][]attempt{
		"mariadb-aggressive": {{Seconds: 4, Equal: true, TargetCPU: 6}},
		"gapless-writeset-N": {{Seconds: 3, Equal: true, ApplierCPU: 2.4}, {Seconds: 3, Equal: true, ApplierCPU: 2.6}, {Seconds: 3, Equal: false, ApplierCPU: 9}},
		"gapless-writeset-1": {{Err: errors.New("boom"), ApplierCPU: 1}},
	} {
		c, err := parseContender(id, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: attempts})
	}
	want := map[string]string{"mariadb-aggressive": "—", "gapless-writeset-N": "125 µs / 5.0 µs", "gapless-writeset-1": "—"}
	for _, r := range wr.Results {
		if got := wr.gaplessCPU(r); got != want[r.Contender.ID] {
			t.Errorf("%s: %q, want %q", r.Contender.ID, got, want[r.Contender.ID])
		}
	}
	wr.Rec.RowChanges = 0 // a primary that logs statements
	for _, r := range wr.Results {
		if r.Contender.ID == "gapless-writeset-N" {
			if got := wr.gaplessCPU(r); got != "125 µs" {
				t.Errorf("without row changes: %q, want the CPU per transaction alone", got)
			}
		}
	}
}

func TestChartIsAPNG(t *testing.T) {
	rp := sampleReport()
	img, err := drawChart(rp)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Dx(); got != 1200 {
		t.Errorf("chart is %d pixels wide, want 1200", got)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
	// A workload where nothing counted still gets its panel.
	rp.Workloads[0].Results = rp.Workloads[0].Results[3:4]
	if _, err := drawChart(rp); err != nil {
		t.Fatal(err)
	}
}

func TestGroupThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1 000", 120000: "120 000", 1234567: "1 234 567", -12000: "-12 000"} {
		if got := groupThousands(n); got != want {
			t.Errorf("groupThousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// The prediction table sets each gapless contender of several workers
// beside the one-worker run on a target configured and reached alike, at
// its own worker count.
func TestPredictionTableMatchesWorkersAndLink(t *testing.T) {
	wr := &workloadResult{Rec: &recording{Workload: workloads[0]}}
	add := func(id string, seconds float64) {
		c, err := parseContender(id, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: []attempt{{Seconds: seconds, Equal: true}}})
	}
	add("gapless-serial-1", 10)
	add("gapless-writeset-4", 5)
	add("gapless-writeset-16", 4)
	add("gapless-serial-1/remote", 20)
	add("gapless-writeset-8/remote", 8)
	wr.Prediction = &prediction{Speedup: map[string]map[string]float64{
		"writeset": {"1": 1, "4": 1.9, "8": 2.2, "16": 3.5},
	}}
	if got, want := predictWorkers(options{workers: 8}, contenderList(wr)), []int{1, 4, 8, 16}; !slices.Equal(got, want) {
		t.Errorf("predictWorkers = %v, want %v", got, want)
	}
	if !predictRemote(contenderList(wr)) || predictRemote(contenderList(wr)[:3]) {
		t.Error("the calibration goes through the link exactly when a contender of several workers does")
	}
	table := wr.predictionTable() // local, as if the remote contenders were not there
	for _, want := range []string{
		"| gapless 4 writeset | 1.90× | 2.00× | yes |",
		"| gapless 16 writeset | 3.50× | 2.50× | no |",
		"1 of 2 within 25%",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("prediction table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "1 ms link") {
		t.Errorf("a remote contender is set beside a local calibration:\n%s", table)
	}

	wr.Prediction.Remote = true
	table = wr.predictionTable()
	if !strings.Contains(table, "| gapless 8 writeset [1 ms link] | 2.20× | 2.50× | yes |") || strings.Contains(table, "gapless 4 writeset |") {
		t.Errorf("over the link, only the remote contenders count, against the remote one-worker run:\n%s", table)
	}
}

func contenderList(wr *workloadResult) []contender {
	var cs []contender
	for _, r := range wr.Results {
		cs = append(cs, r.Contender)
	}
	return cs
}
