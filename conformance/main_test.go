package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGaplessFlags(t *testing.T) {
	o, err := parseFlags([]string{"--cases", "rpl.rpl_xa", "--policy", "commit-id", "--gapless-flags", " --commit-order causal  --batch=16 "})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--commit-order", "causal", "--batch=16"}; !slices.Equal(o.GaplessFlags, want) {
		t.Errorf("GaplessFlags = %q, want %q", o.GaplessFlags, want)
	}
	r := &runner{policy: o.Policy, extraFlags: o.GaplessFlags}
	v, _ := lookupVariant("no-target-binlog")
	if got := r.flags(v); !slices.Equal(got, []string{"--no-target-binlog", "--commit-order", "causal", "--batch=16"}) {
		t.Errorf("flags(no-target-binlog) = %q", got)
	}
	info := runInfo{Workers: 4, Policy: o.Policy, GaplessFlags: o.GaplessFlags}
	if got, want := info.replicateCommand(), "gapless replicate --workers 4 --policy commit-id --commit-order causal --batch=16 --until POS"; got != want {
		t.Errorf("replicateCommand = %q, want %q", got, want)
	}
	for _, flags := range []string{"--workers 2", "--until=0-1-5", "-target x"} {
		_, err := parseFlags([]string{"--cases", "rpl.rpl_xa", "--gapless-flags", flags})
		if err == nil || !strings.Contains(err.Error(), "the runner sets") {
			t.Errorf("--gapless-flags %q: err = %v, want the runner's own flag refused", flags, err)
		}
	}
}

func TestGaplessBudget(t *testing.T) {
	for _, c := range []struct {
		replica  float64
		variants int
		want     time.Duration
	}{
		{1, 2, time.Minute},                     // a quick case: the flag's minute
		{31, 1, 93 * time.Second},               // one variant: three times the replica
		{31, 2, 186 * time.Second},              // two at once: three times each
		{31, 0, 93 * time.Second},               // no variant counts as one
		{10.5, 3, time.Minute + 34*time.Second}, // 94.5 s, whole seconds
	} {
		if got := gaplessBudget(time.Minute, c.replica, c.variants); got != c.want {
			t.Errorf("gaplessBudget(1m, %v s, %d) = %s, want %s", c.replica, c.variants, got, c.want)
		}
	}
}
