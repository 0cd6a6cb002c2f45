package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gapless/internal/apply"
	"gapless/internal/gtid"
)

// TestProgressSaysWhatIsUnreachable: while the source or the target does not
// answer, the progress line says so and since when, instead of numbers that
// look like a caught-up run ("behind 0 txns") or a busy one ("workers busy 16/16").
func TestProgressSaysWhatIsUnreachable(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 42, 0, time.Local)
	down := now.Add(-40 * time.Second)
	pos, _ := gtid.ParseMariaDBPosition("0-1-100")
	busy := make([]apply.WorkerStatus, 16)
	for i := range busy {
		busy[i].State = apply.StateApplying
	}
	tests := []struct {
		name      string
		p         apply.Progress
		want, not []string
	}{
		{"both answer", apply.Progress{Applied: 5, Position: pos, Workers: busy},
			[]string{"behind 0 txns", "workers busy 16/16"}, []string{"unreachable"}},
		{"target down", apply.Progress{Applied: 5, Position: pos, Workers: busy, TargetDownSince: down},
			[]string{"target unreachable since 10:00:02 (40s)", "behind 0 txns"}, []string{"workers busy", "source unreachable"}},
		{"source down", apply.Progress{Applied: 5, Position: pos, Workers: busy, SourceDownSince: down},
			[]string{"source unreachable since 10:00:02 (40s)", "workers busy 16/16"}, []string{"behind", "target unreachable"}},
	}
	for _, tt := range tests {
		line := formatProgress(tt.p, nil, now)
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q lacks %q", tt.name, line, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(line, n) {
				t.Errorf("%s: %q has %q", tt.name, line, n)
			}
		}
	}
}

// TestProgressUntilUnseenDomain: an --until naming a domain that neither the
// relay log nor the target holds is repeated in every progress line.
func TestProgressUntilUnseenDomain(t *testing.T) {
	until, _ := gtid.ParseMariaDBPosition("0-1-50,7-1-3")
	received, _ := gtid.ParseMariaDBPosition("0-1-60")
	applied, _ := gtid.ParseMariaDBPosition("0-1-40")
	line := formatProgress(apply.Progress{Received: received, Position: applied}, &until, time.Now())
	if !strings.Contains(line, "--until waits for domain 7, which the source has not written") {
		t.Errorf("progress %q does not say --until waits for domain 7", line)
	}
	received.Advance(gtid.MariaDBGTID{Domain: 7, Server: 1, Seq: 1})
	if line := formatProgress(apply.Progress{Received: received, Position: applied}, &until, time.Now()); strings.Contains(line, "waits for") {
		t.Errorf("once domain 7 is received, progress still says %q", line)
	}
}

// TestProgressNamesALongJob: a worker that has been applying one job for a
// while (a large transaction, a long DDL) is named with its size and time,
// since the counters stand still meanwhile; short jobs are not named.
func TestProgressNamesALongJob(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 42, 0, time.Local)
	workers := []apply.WorkerStatus{
		{Slot: 0, State: apply.StateApplying, GTID: "0-1-7", Bytes: 3 << 10, Since: now.Add(-time.Second)},
		{Slot: 1, State: apply.StateApplying, GTID: "0-1-4", Bytes: 540 << 20, Since: now.Add(-12 * time.Second)},
		{Slot: 2, State: apply.StateWaitingCommit, GTID: "0-1-5", Bytes: 1 << 10, Since: now.Add(-6 * time.Second)},
		{Slot: 3, State: apply.StateIdle, Since: now.Add(-time.Hour)},
	}
	line := formatProgress(apply.Progress{Applied: 3, Workers: workers}, nil, now)
	if want := "applying 0-1-4 (540 MiB) for 12s"; !strings.Contains(line, want) {
		t.Errorf("%q lacks %q", line, want)
	}
	line = formatProgress(apply.Progress{Applied: 3, Workers: workers[:1]}, nil, now)
	if strings.Contains(line, "0-1-7") {
		t.Errorf("%q names a job of one second", line)
	}
	// What the target holds the workers with says more than the long job.
	wait := &apply.TargetWait{Text: "worker 1 (0-1-4), applying for 12s, waits for a row lock on `a`.`t` held by the target's connection 9", Since: now.Add(-12 * time.Second)}
	line = formatProgress(apply.Progress{Applied: 3, Workers: workers, TargetWait: wait}, nil, now)
	if want := "  the target holds them: " + wait.Text; !strings.HasSuffix(line, want) {
		t.Errorf("%q does not end in %q", line, want)
	}
}

// TestCheckSourceContinues: a source that has never written any domain of
// the position the run goes on from is refused; one that lacks some of them
// only is warned about; a target with no position is not checked.
func TestCheckSourceContinues(t *testing.T) {
	pos := func(s string) gtid.MariaDBPosition {
		p, err := gtid.ParseMariaDBPosition(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		written, position string
		refused, warned   bool
	}{
		{"0-1-900", "0-1-500", false, false},
		{"0-2-10", "0-1-500", false, false}, // the domain is known: MariaDB itself refuses a GTID it lacks
		{"5-7-3", "0-1-500", true, false},
		{"", "0-1-500", true, false},
		{"5-7-3", "0-1-500,5-7-2", false, true},
		{"5-7-3", "", false, false},
	}
	for _, tt := range tests {
		var log strings.Builder
		err := checkSourceContinues(pos(tt.written), pos(tt.position), "--start-position", slog.New(slog.NewTextHandler(&log, nil)))
		if (err != nil) != tt.refused || (log.Len() > 0) != tt.warned {
			t.Errorf("source at %q, target at %q: error %v, warning %q; want refused %v, warned %v", tt.written, tt.position, err, log.String(), tt.refused, tt.warned)
		}
	}
}

// A run that would start from the target's @@gtid_slave_pos, left from
// replicating another server, is told how to clear it.
func TestCheckSourceContinuesNamesAStaleSlavePos(t *testing.T) {
	written, _ := gtid.ParseMariaDBPosition("5-7-3")
	position, _ := gtid.ParseMariaDBPosition("0-1-500")
	err := checkSourceContinues(written, position, slavePosOrigin, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "SET GLOBAL gtid_slave_pos=''") || !strings.Contains(err.Error(), slavePosOrigin) {
		t.Fatalf("error %v; want it to name the target's @@gtid_slave_pos and how to clear it", err)
	}
}

// TestSourceDomainsOf: the target's @@gtid_slave_pos keeps, as a run's
// start, only the domains the source has written.
func TestSourceDomainsOf(t *testing.T) {
	pos := func(s string) *gtid.MariaDBPosition {
		p, err := gtid.ParseMariaDBPosition(s)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct{ start, written, want string }{
		{"0-1-500", "0-1-900", "0-1-500"},
		{"0-1-500,5-7-3", "0-1-900", "0-1-500"},
		{"5-7-3", "0-1-900", ""},
	} {
		got, s := sourceDomainsOf(pos(tt.start), *pos(tt.written), log), ""
		if got != nil {
			s = got.String()
		}
		if s != tt.want {
			t.Errorf("start %s, source at %s: %q, want %q", tt.start, tt.written, s, tt.want)
		}
	}
	if sourceDomainsOf(nil, *pos("0-1-1"), log) != nil {
		t.Error("no start became one")
	}
}

func TestProgressNamesTheTargetNode(t *testing.T) {
	if line := formatProgress(apply.Progress{TargetNode: "10.0.0.2:3306", TargetSwitches: 2}, nil, time.Now()); !strings.Contains(line, "target node 10.0.0.2:3306 (moved 2 times)") {
		t.Errorf("line %q", line)
	}
	if line := formatProgress(apply.Progress{}, nil, time.Now()); strings.Contains(line, "target node") {
		t.Errorf("one server: %q", line)
	}
}
