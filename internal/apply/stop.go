// stop.go keeps a stop fast when batches are in flight. A stop lets each
// worker finish what it has started, but a batch can hold many slow
// transactions. Under strict commit order what has committed is always a
// prefix of the source's order, so a batch still executing once stopGrace
// has passed is rolled back instead: the stop point moves to just before it,
// and everything from there on is dropped, as is a job still waiting for
// its dependencies. A single transaction in flight still finishes, as it
// would without batching.
package apply

import (
	"context"
	"math"
	"time"
)

const (
	// stopGrace is how long a stop waits for the batches in flight before it
	// rolls them back.
	stopGrace = 500 * time.Millisecond
	// settleTimeout bounds reading the checkpoint after a stop interrupted a job.
	settleTimeout = 10 * time.Second
	// parkedStopWait is how long a stop applies on while the statement
	// session keeps an XA branch prepared on the connection that holds the
	// source's temporary tables. Nothing may run on that connection until
	// the branch ends, not even what would keep its temporary tables out
	// of the binlog: ended with the run, the target would log their DROP
	// TEMPORARY TABLE in the source's GTID domain under the next sequence
	// number, the one of the source's next group, which a target with
	// gtid_strict_mode then refuses. The XA COMMIT or XA ROLLBACK mostly
	// follows its XA PREPARE within milliseconds; once it has applied, the
	// stop goes on as any other.
	parkedStopWait = time.Second
)

// parkedStopWarning is what a run says that ends with the branch still
// prepared: a stop it did not end in time, --until, an error.
const parkedStopWarning = "the run ends while an XA transaction prepared on the connection that holds the source's temporary tables has not ended: " +
	"the target logs DROP TEMPORARY TABLE for those tables as that connection ends, under the next GTID of the source's domain; " +
	"with gtid_strict_mode=ON the target will refuse the source's transaction of that number, and the next run stops there (SET GLOBAL gtid_strict_mode=OFF on the target lets it go on)"

// interruptBatches rolls back the batches still executing, and every job
// after the first of them that is executing too; a job that has not started
// yet is dropped with everything after it.
func (r *Replica) interruptBatches() {
	if r.cfg.CommitOrder != Strict {
		return
	}
	type executing struct{ gi, conn int64 }
	var running []executing
	first := int64(math.MaxInt64)
	for _, w := range r.currentWorkers() {
		w.mu.Lock()
		j, st, conn := w.held, w.status.State, w.connID
		w.mu.Unlock()
		switch {
		case j == nil:
		case st == StateWaitingDeps || st == StateAhead:
			// Not started, or begun ahead and rolled back when dropped:
			// dropping it costs nothing.
			first = min(first, j.gi)
		case st == StateApplying && conn != 0:
			running = append(running, executing{j.gi, conn})
			if len(j.txns) > 1 && !j.alone {
				first = min(first, j.gi)
			}
		}
	}
	if first == math.MaxInt64 {
		return
	}
	r.clog.drop(first - 1)
	ctx, cancel := context.WithTimeout(context.Background(), watchdogQueryTimeout)
	defer cancel()
	for _, x := range running {
		if x.gi >= first {
			r.log.Info("stop: rolling back a batch still executing", "connection", x.conn)
			r.killQuery(ctx, x.conn)
		}
	}
}

// killQuery interrupts the statement a target connection is running.
func (r *Replica) killQuery(ctx context.Context, conn int64) {
	if _, err := r.cfg.Target.ExecContext(ctx, "KILL QUERY ?", conn); err != nil {
		r.log.Debug("cannot interrupt", "connection", conn, "error", err)
	}
}

// highestStarted is the highest group index a worker has begun to execute:
// the nearest gap-less point a stop can reach without waiting for more.
func (r *Replica) highestStarted() int64 {
	high := r.clog.low()
	for _, w := range r.currentWorkers() {
		st, gi, _ := w.snapshot()
		if gi > high && st.State != StateWaitingDeps && st.State != StateAhead && st.State != StateIdle {
			high = gi
		}
	}
	return high
}
