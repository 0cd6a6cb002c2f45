// progress.go reports a run's progress: the progress line (Config.Progress)
// and the workers' rows in gapless.workers for `gapless status`, with the
// lag measured on the source's clock.
package apply

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// reportProgress calls cfg.Progress every interval until the returned func is called.
func (r *Replica) reportProgress(relay *binlog.RelayLog) func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(r.cfg.ProgressEvery)
		defer tick.Stop()
		last, lastAt := r.applied.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n := r.applied.Load()
				p := Progress{Applied: n, Filtered: r.filtered.Load(), PerSecond: float64(n-last) / now.Sub(lastAt).Seconds(), Received: relay.End()}
				last, lastAt = n, now
				r.mu.Lock()
				p.Position = r.position.Clone()
				lastSource := r.lastSource
				p.SourceConnected = r.receiver != nil && r.receiver.Connected()
				if r.receiver != nil {
					p.SourceDownSince = r.receiver.DownSince()
					p.RelayFullSince = r.receiver.RelayFullSince()
				}
				r.mu.Unlock()
				if ns := r.targetDownSince.Load(); ns != 0 {
					p.TargetDownSince = time.Unix(0, ns)
				}
				p.Workers = r.workerStatus()
				p.TargetWait = r.targetWait.Load()
				p.TargetNode, p.TargetSwitches = r.targetNode()
				p.Behind = behind(p.Received, p.Position)
				p.LagSeconds = r.lagSeconds(now, p.Behind, lastSource)
				r.cfg.Progress(p)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// reportWorkers writes the workers' states to the target about once a
// second, for `gapless status`, and removes them when the run ends.
func (r *Replica) reportWorkers() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conn *sql.Conn
		defer func() {
			if conn != nil {
				end, cancelEnd := context.WithTimeout(context.Background(), 2*time.Second)
				r.store.ReportWorkers(end, conn, nil)
				cancelEnd()
				checkpoint.Discard(conn)
			}
		}()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// These reports are the run's probe of the target: a report that
			// cannot reach it marks the target down for the progress line.
			if conn == nil {
				c, err := r.cfg.Target.Conn(ctx)
				if err != nil {
					r.targetDownSince.CompareAndSwap(0, time.Now().UnixNano())
					continue
				}
				conn = c
			}
			var rows []checkpoint.WorkerRow
			for _, st := range r.workerStatus() {
				rows = append(rows, checkpoint.WorkerRow{Slot: st.Slot, State: string(st.State), GTID: st.GTID, Since: st.Since})
			}
			err := r.store.ReportWorkers(ctx, conn, rows)
			switch {
			case err == nil:
				r.targetDownSince.Store(0)
			case ctx.Err() == nil:
				if target.Lost(err) {
					r.targetDownSince.CompareAndSwap(0, time.Now().UnixNano())
				}
				checkpoint.Discard(conn)
				conn = nil
			}
		}
	}()
	return func() { cancel(); <-done }
}

// behind counts the transactions in received that applied does not hold,
// from the sequence numbers of each domain.
func behind(received, applied gtid.MariaDBPosition) uint64 {
	var n uint64
	for _, d := range received.Domains() {
		rec, _ := received.Get(d)
		a, ok := applied.Get(d)
		if !ok {
			n += rec.Seq
		} else if rec.Seq > a.Seq {
			n += rec.Seq - a.Seq
		}
	}
	return n
}

// lagSeconds is how far the target is behind at now, with behind
// transactions received and not applied: how long ago the source wrote the
// oldest transaction a worker holds (as MariaDB's Seconds_Behind_Master
// reads the event its SQL thread executes), else the last one applied
// (lastSource); 0 when none is behind. A worker held back by the target
// thus shows a lag that grows from its transaction's time, not 0 (nothing
// applied yet in this run) nor the age of the last one applied before a
// quiet hour.
func (r *Replica) lagSeconds(now time.Time, behind uint64, lastSource time.Time) float64 {
	if behind == 0 {
		return 0
	}
	oldest := time.Time{}
	for _, w := range r.currentWorkers() {
		w.mu.Lock()
		if j := w.held; j != nil && len(j.txns) > 0 && (oldest.IsZero() || j.txns[0].SourceTime.Before(oldest)) {
			oldest = j.txns[0].SourceTime
		}
		w.mu.Unlock()
	}
	if oldest.IsZero() {
		oldest = lastSource
	}
	if oldest.IsZero() {
		return 0
	}
	return max(0, now.Sub(r.sourceTime(oldest)).Seconds())
}

// workerStatus returns a snapshot of every worker.
func (r *Replica) workerStatus() []WorkerStatus {
	workers := r.currentWorkers()
	out := make([]WorkerStatus, 0, len(workers))
	for _, w := range workers {
		st, _, _ := w.snapshot()
		out = append(out, st)
	}
	return out
}

func (r *Replica) currentWorkers() []*worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workers
}

// stateTime sums the time workers spent in each state.
func stateTime(workers []*worker) map[WorkerState]time.Duration {
	spent := map[WorkerState]time.Duration{}
	for _, w := range workers {
		w.timeIn(spent)
	}
	return spent
}

// sourceTime is t, a time of the source's clock (an event's timestamp), on
// this host's clock, as far as the receiver measured the two apart: lag
// read against a source whose clock is off stays the time the target is
// behind, as MariaDB's Seconds_Behind_Master does.
func (r *Replica) sourceTime(t time.Time) time.Time {
	if recv := r.clock.Load(); recv != nil {
		return t.Add(recv.ClockOffset())
	}
	return t
}

// targetNode is the node of a target URL's node list the workers write to,
// and how many times they moved; "" and 0 for one server.
func (r *Replica) targetNode() (string, int) {
	if nodes := r.cfg.Session.Server.Nodes; nodes != nil {
		return nodes.Current(), nodes.Switches()
	}
	return "", 0
}
