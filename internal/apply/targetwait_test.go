package apply

import (
	"strings"
	"testing"
	"time"

	"gapless/internal/binlog"
)

func TestDescribeTargetWait(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	busy := []busyWorker{
		{slot: 1, conn: 11, gtid: "0-1-5", since: now.Add(-20 * time.Second)},
		{slot: 2, conn: 12, gtid: "0-1-6", since: now.Add(-8 * time.Second)},
		{slot: 3, conn: 13, gtid: "0-1-7", since: now.Add(-4 * time.Second)},
	}
	gapless := map[int64]bool{11: true, 12: true, 13: true, 14: true}
	client := lockWait{holder: 99, table: "`app`.`t`", holderUser: "app@10.0.0.5", holderCommand: "Sleep", holderOpen: 70}
	at := func(waiter int64, l lockWait) lockWait { l.waiter = waiter; return l }
	for _, c := range []struct {
		name   string
		waits  targetWaits
		want   []string // in the text, in order
		holder int64
		none   bool
	}{
		{name: "nothing", none: true},
		{
			name:   "a client's row lock",
			waits:  targetWaits{locks: []lockWait{at(12, client)}},
			want:   []string{"worker 2 (0-1-6), applying for 8s, waits for a row lock on `app`.`t` held by the target's connection 99 app@10.0.0.5 (idle, its transaction open 70 s)"},
			holder: 99,
		},
		{
			name: "workers behind a worker that waits for the client",
			// 11 waits for 12, 13 for 11, 12 for the client.
			waits:  targetWaits{locks: []lockWait{at(11, lockWait{holder: 12}), at(13, lockWait{holder: 11}), at(12, client)}},
			want:   []string{"worker 2 (0-1-6)", "connection 99", "; 2 more worker(s) wait on the target"},
			holder: 99,
		},
		{
			name: "locks between workers only: the watchdog's",
			// 11 waits for 14, which waits for its turn in gapless.
			waits: targetWaits{locks: []lockWait{at(11, lockWait{holder: 14}), at(13, lockWait{holder: 11})}},
			none:  true,
		},
		{
			name:  "a prepared XA transaction",
			waits: targetWaits{locks: []lockWait{at(13, lockWait{holder: 0, table: "`app`.`t`"})}},
			want:  []string{"worker 3", "held by a prepared XA transaction on the target (XA RECOVER lists it"},
		},
		{
			name:  "the longest-waiting worker first",
			waits: targetWaits{threads: []threadWait{{conn: 13, state: "Waiting for table flush"}, {conn: 11, state: "Waiting for backup lock"}}},
			want:  []string{"worker 1 (0-1-5), applying for 20s, waits for \"Waiting for backup lock\": a FLUSH TABLES WITH READ LOCK or a backup", "; 1 more worker(s)"},
		},
		{
			name: "a metadata lock names the oldest open transaction",
			waits: targetWaits{threads: []threadWait{{conn: 12, state: "Waiting for table metadata lock"}},
				oldest: &lockWait{holder: 42, holderUser: "report@10.0.0.9", holderCommand: "Sleep", holderOpen: 300}},
			want: []string{"\"Waiting for table metadata lock\": another connection", "the oldest transaction open on the target is connection 42 report@10.0.0.9 (idle, its transaction open 300 s)"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := describeTargetWait(busy, gapless, c.waits, now)
			if c.none {
				if got != nil {
					t.Fatalf("got %q, want none", got.Text)
				}
				return
			}
			if got == nil {
				t.Fatal("got none")
			}
			rest := got.Text
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q lacks %q (in order)", got.Text, w)
				}
				rest = rest[i+len(w):]
			}
			if got.Holder != c.holder {
				t.Errorf("holder %d, want %d", got.Holder, c.holder)
			}
			if strings.Contains(got.What, "70 s") || strings.Contains(got.What, "300 s") {
				t.Errorf("What %q holds a duration: the log would name one wait again and again", got.What)
			}
		})
	}
}

// TestLagSeconds: the lag is the age of the oldest transaction a worker
// holds, not of the last one applied (hours old after a quiet source), nor
// 0 when this run has applied nothing yet.
func TestLagSeconds(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	held := func(ages ...time.Duration) *worker {
		j := &job{}
		for _, a := range ages {
			j.txns = append(j.txns, &binlog.Transaction{SourceTime: now.Add(-a)})
		}
		return &worker{held: j}
	}
	r := &Replica{workers: []*worker{held(20*time.Second, 19*time.Second), {}, held(5 * time.Second)}}
	hourAgo := now.Add(-time.Hour)
	if got := r.lagSeconds(now, 3, hourAgo); got != 20 {
		t.Errorf("lag %v, want 20 (the oldest held)", got)
	}
	if got := r.lagSeconds(now, 0, hourAgo); got != 0 {
		t.Errorf("lag %v when caught up, want 0", got)
	}
	r = &Replica{workers: []*worker{{}}}
	if got := r.lagSeconds(now, 2, hourAgo); got != 3600 {
		t.Errorf("lag %v with nothing held, want 3600 (the last applied)", got)
	}
	if got := r.lagSeconds(now, 2, time.Time{}); got != 0 {
		t.Errorf("lag %v with nothing held nor applied, want 0", got)
	}
}
