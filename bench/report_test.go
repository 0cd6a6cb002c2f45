// Tests of the benchmark's arithmetic and rendering, without servers.
package main

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"
)

func TestGlyphsAreFiveBySeven(t *testing.T) {
	for r, g := range glyphs {
		rows := strings.Split(g, "|")
		if len(rows) != glyphHeight {
			t.Errorf("glyph %q has %d rows", r, len(rows))
		}
		for _, row := range rows {
			if len(row) != glyphWidth || strings.Trim(row, "#.") != "" {
				t.Errorf("glyph %q has row %q", r, row)
			}
		}
	}
}

func TestParseContender(t *testing.T) {
	for id, want := range map[string]string{
		"mariadb-serial":                         "MariaDB replica, serial",
		"mariadb-optimistic":                     "MariaDB replica, 8 optimistic",
		"gapless-writeset-N":                     "gapless 8 writeset",
		"gapless-commit-id-1":                    "gapless 1 commit-id",
		"mariadb-binlog":                         "mariadb-binlog | mariadb",
		"mariadb-conservative":                   "MariaDB replica, 8 conservative",
		"mariadb-serial/nobinlog":                "MariaDB replica, serial [binlog off]",
		"gapless-writeset-N/fast-nobinlog":       "gapless 8 writeset [non-durable, binlog off]",
		"gapless-schema-2/fast@/tmp/old/gapless": "gapless 2 schema (gapless) [non-durable]",
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
	for _, bad := range []string{"gapless-fast-8", "gapless-writeset-0", "mariadb", "gapless-writeset", "gapless-writeset-8/slow", "mariadb-serial@/bin/x"} {
		if _, err := parseContender(bad, 8, true); err == nil {
			t.Errorf("parseContender(%q) accepted", bad)
		}
	}
}

func sampleReport() *report {
	rec := &recording{Workload: workloads[0], Transactions: 1000, PrimarySeconds: 2, Start: "0-1-10", End: "0-1-1010"}
	wr := &workloadResult{Rec: rec}
	add := func(id string, attempts ...attempt) {
		c, err := parseContender(id, 8, true)
		if err != nil {
			panic(err)
		}
		wr.Results = append(wr.Results, &result{Contender: c, Attempts: attempts})
	}
	add("mariadb-serial", attempt{Seconds: 4, Equal: true}, attempt{Seconds: 5, Equal: true}, attempt{Seconds: 3, Equal: true})
	add("mariadb-optimistic", attempt{Seconds: 2, Equal: true}, attempt{Seconds: 2.5, Equal: true}, attempt{Seconds: 1.5, Equal: true})
	add("gapless-writeset-N", attempt{Seconds: 1, Equal: true}, attempt{Seconds: 1, Equal: false, Detail: "sbtest.sbtest1 different"}, attempt{Err: errors.New("boom")})
	add("gapless-serial-1", attempt{Err: errors.New("boom")})
	return &report{Name: "test", Command: "go run ./bench", Began: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), Durable: true, Workers: 8, Runs: 3, Scale: 1,
		Machine: machine{Cores: 2}, Workloads: []*workloadResult{wr}}
}

func TestMarkdownTable(t *testing.T) {
	md := sampleReport().markdown()
	for _, want := range []string{
		"| MariaDB replica, serial | 4.0 [3.0–5.0] | 250 | 0.50× | yes |",
		"| MariaDB replica, 8 optimistic | 2.0 [1.5–2.5] | 500 | 1.00× | yes |",
		"| gapless 8 writeset | 1.0 | 1000 | 2.00× | **no**: 1 diverged, 1 failed of 3 runs |",
		"| gapless 1 serial | — | — | — | error |",
		"W1, gapless 8 writeset, run 2, diverged: sbtest.sbtest1 different",
		"`go run ./bench --workloads W1 --contenders gapless-serial-1 --runs 1 --keep-failed`",
		"noisy",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestChartIsAPNG(t *testing.T) {
	img := drawChart(sampleReport())
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&buf); err != nil {
		t.Fatal(err)
	}
}
