// unanswered.go ends a wait for answers the target will not send. The
// target answers each statement of a script as it ends, and a statement
// that fails ends the script with its error, its last answer. Yet a worker
// was seen waiting twenty minutes for the answers to a script (ROLLBACK and
// two SETs) on a connection the target showed idle, after the watchdog had
// sent several KILL QUERY to that connection within a millisecond; a kill
// that met the script between two statements and ended it with no answer
// for the rest fits what was seen, though a plain client did not reproduce
// it. Whatever the cause, the worker would wait for ever, and the run, a
// stop included, with it.
//
// So when a worker has waited unansweredAfter for a script's answers on a
// connection the target has shown idle for as long, the connection is
// closed (KILL CONNECTION): the worker's wait ends as on any lost
// connection, the target rolls back what the connection had begun, and
// the job runs again from its checkpoint. A statement that runs long shows
// as running, not idle, so it is never taken for one.
package apply

import (
	"context"
	"strings"
	"time"
)

const (
	// unansweredAfter is how long a worker waits for answers on a
	// connection the target shows idle before the connection is closed.
	// Well over the time a script still in flight to the target takes to
	// arrive once it is sent.
	unansweredAfter = 10 * time.Second
	// unansweredEvery is how often the waits are looked at.
	unansweredEvery = time.Second
)

// endUnansweredScripts looks for workers waiting for answers that will not
// come until the returned func is called.
func (r *Replica) endUnansweredScripts() (stop func()) {
	return every(unansweredEvery, r.endUnanswered)
}

func (r *Replica) endUnanswered(ctx context.Context) {
	waiting := map[int64]time.Time{}
	var args []any // the connections waiting, then how long idle
	for _, w := range r.currentWorkers() {
		conn, since, ok := w.awaiting.Since()
		if ok && conn != 0 && time.Since(since) >= unansweredAfter {
			waiting[conn] = since
			args = append(args, conn)
		}
	}
	if len(args) == 0 {
		return
	}
	in := strings.Repeat(",?", len(args))[1:]
	args = append(args, unansweredAfter.Milliseconds())
	ctx, cancel := context.WithTimeout(ctx, watchdogQueryTimeout)
	defer cancel()
	rows, err := r.cfg.Target.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID IN ("+in+") AND COMMAND = 'Sleep' AND TIME_MS >= ?", args...)
	if err != nil {
		r.log.Debug("cannot read the target's connections", "error", err)
		return
	}
	var idle []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			idle = append(idle, id)
		}
	}
	rows.Close()
	for _, conn := range idle {
		if !r.stillAwaiting(conn, waiting[conn]) {
			continue
		}
		r.log.Warn("a script's answers stopped coming while the target shows its connection idle; closing the connection: the target rolls back what it began, and the job runs again",
			"connection", conn, "waited", time.Since(waiting[conn]).Round(time.Second))
		if _, err := r.cfg.Target.ExecContext(ctx, "KILL CONNECTION ?", conn); err != nil {
			r.log.Debug("cannot close the connection", "connection", conn, "error", err)
		}
	}
}

// stillAwaiting reports whether a worker still waits, since since, for
// answers on conn.
func (r *Replica) stillAwaiting(conn int64, since time.Time) bool {
	for _, w := range r.currentWorkers() {
		if c, s, ok := w.awaiting.Since(); ok && c == conn && s.Equal(since) {
			return true
		}
	}
	return false
}
