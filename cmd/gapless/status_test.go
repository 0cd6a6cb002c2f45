package main

import (
	"strings"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
)

// TestStatusCommitIsThePositions: a worker stamps its position row as it
// makes the script, which may be ahead of its turn, so the row of an earlier
// group (another worker slot) can carry a later time than the row that
// holds the position. status showed that row as the "last commit", below
// the position (position 1-101-44034, last commit 1-101-43948), which read
// as if the position were ahead of what committed. The commit shown is the
// position's own, on the position's line.
func TestStatusCommitIsThePositions(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	row := func(slot int, g string, applied time.Time) checkpoint.Row {
		parsed, err := gtid.ParseMariaDBGTID(g)
		if err != nil {
			t.Fatal(err)
		}
		return checkpoint.Row{Domain: parsed.Domain, Slot: slot, GTID: parsed, SourceTime: at.Add(-2 * time.Second), AppliedAt: applied}
	}
	position := func(rows []checkpoint.Row) gtid.MariaDBPosition {
		var p gtid.MariaDBPosition
		for _, r := range rows {
			if have, ok := p.Get(r.Domain); !ok || r.GTID.Seq > have.Seq {
				p.Advance(r.GTID)
			}
		}
		return p
	}
	lines := func(rows []checkpoint.Row) string {
		pos := position(rows)
		return positionLines(streamStatus{Position: pos.String(), LastCommit: positionCommit(pos, rows)})
	}

	rows := []checkpoint.Row{row(0, "1-101-44034", at), row(1, "1-101-43948", at.Add(time.Millisecond))}
	if got, want := lines(rows), "  position  1-101-44034, committed at 2026-11-28 10:00:00 UTC, 2s after the source wrote it\n"; got != want {
		t.Errorf("one domain:\n got %q\nwant %q", got, want)
	}

	rows = append(rows, row(0, "2-7-10", at.Add(-time.Second)))
	if got, want := lines(rows), "  position  1-101-44034,2-7-10\n  of which 1-101-44034, the newest, committed at 2026-11-28 10:00:00 UTC, 2s after the source wrote it\n"; got != want {
		t.Errorf("two domains:\n got %q\nwant %q", got, want)
	}

	start := row(0, "1-101-5", at)
	start.SourceTime = time.Unix(0, 0)
	if got, want := lines([]checkpoint.Row{start}), "  position  1-101-5, set at 2026-11-28 10:00:00 UTC as a start position (no transaction applied since)\n"; got != want {
		t.Errorf("a start position:\n got %q\nwant %q", got, want)
	}

	if got := lines(nil); got != "  position  (none)\n" {
		t.Errorf("no rows: %q", got)
	}
	if l := lines(rows); strings.Contains(l, "43948") {
		t.Errorf("the commit of a group below the position is shown: %q", l)
	}
}

// TestStatusOfAStoppedStream is the output docs/operations-and-recovery.md
// shows for the way back to MariaDB's replica.
func TestStatusOfAStoppedStream(t *testing.T) {
	lag := 0.0
	var out strings.Builder
	printStreamStatus(&out, streamStatus{
		Stream: "default", Position: "0-1-51253",
		LastCommit: &lastCommit{GTID: "0-1-51253", AppliedAt: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), LagSeconds: &lag},
		HandOver:   "0-1-51253,2147483647-2-3",
	})
	want := `stream default: not running
  position  0-1-51253, committed at 2026-11-28 10:00:00 UTC, 0s after the source wrote it
  MariaDB's replica would go on from  0-1-51253,2147483647-2-3
    (SET GLOBAL gtid_slave_pos='0-1-51253,2147483647-2-3'; CHANGE MASTER TO ..., MASTER_USE_GTID=slave_pos; START SLAVE)
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
