// targetwait.go says why the workers stand still when the target holds
// them: a client of the target that keeps a row lock in an open
// transaction, a FLUSH TABLES WITH READ LOCK or a backup, a metadata lock
// of a long transaction or DDL. Counters alone show such a stall as a lag
// that grows with nothing to blame but gapless; MariaDB's own replica shows
// only its SQL thread's state. When a worker has been applying one job for
// waitProbeAfter, gapless asks the target which of its connections wait and
// for whom (the threads' states, InnoDB's lock waits), and names the wait
// and its holder on the progress line, in the status report, and once in
// the log.
//
// Waits between gapless's own workers are not the target's doing (the
// watchdog breaks those): a chain of them is followed to the connection
// outside gapless that heads it, and a chain without one is not reported.
package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

const (
	// waitProbeAfter is how long a worker applies one job before the
	// target is asked what it waits for.
	waitProbeAfter = 3 * time.Second
	// waitProbeEvery is how often it is asked while one does.
	waitProbeEvery = time.Second
	// waitLogAfter is how long a wait lasts before the log names it.
	waitLogAfter = 10 * time.Second
)

// TargetWait is a wait the target imposes on the workers.
type TargetWait struct {
	// Text says who waits, for what, and who holds it, in one line.
	Text string
	// What is what it waits for, and who holds it, without durations.
	What string
	// Since is when the longest-waiting worker began its job.
	Since time.Time
	// Holder is the target's connection that holds what the workers wait
	// for, 0 when the target does not tell.
	Holder int64
}

// threadWait is one of the target's connections in a waiting state
// (information_schema.PROCESSLIST).
type threadWait struct {
	conn  int64
	state string
}

// lockWait is one InnoDB lock wait (information_schema.INNODB_LOCK_WAITS).
type lockWait struct {
	waiter, holder int64 // connections; holder 0: a prepared XA transaction
	table          string
	holderUser     string // user@host of the holder
	holderCommand  string // Sleep, Query, ...
	holderOpen     int64  // seconds the holder's transaction has been open
}

// busyWorker is a worker applying a job, as the probe sees it.
type busyWorker struct {
	slot  int
	conn  int64
	gtid  string
	since time.Time
}

// probeTargetWaits asks the target what the workers wait for, every
// waitProbeEvery while one has applied one job for waitProbeAfter, until
// the returned func is called.
func (r *Replica) probeTargetWaits() func() {
	var logged *TargetWait
	quiet := 0 // probes in a row that found no wait
	stop := every(waitProbeEvery, func(ctx context.Context) {
		w := r.probeTargetWait(ctx)
		r.targetWait.Store(w)
		if w == nil {
			quiet++
		} else {
			quiet = 0
		}
		switch {
		case w != nil && time.Since(w.Since) >= waitLogAfter && (logged == nil || logged.What != w.What):
			r.log.Warn("the target holds the workers back: " + w.Text)
			logged = w
		case quiet >= 2 && logged != nil:
			// Two probes, so that a job's retry after a lock wait
			// timeout is not taken for the end of the wait.
			r.log.Warn("the target released the workers", "after", time.Since(logged.Since).Round(time.Second).String())
			logged = nil
		}
	})
	return func() {
		stop()
		r.targetWait.Store(nil)
	}
}

// probeTargetWait returns what the target makes the workers wait for, nil
// when no worker has applied one job for waitProbeAfter, or the target
// says of nothing that holds them.
func (r *Replica) probeTargetWait(ctx context.Context) *TargetWait {
	var busy []busyWorker
	var conns []string // every worker's connection
	gapless := map[int64]bool{}
	for _, w := range r.currentWorkers() {
		st, _, conn := w.snapshot()
		if conn == 0 {
			continue
		}
		conns = append(conns, fmt.Sprint(conn))
		gapless[conn] = true
		if st.State == StateApplying {
			busy = append(busy, busyWorker{slot: st.Slot, conn: conn, gtid: st.GTID, since: st.Since})
		}
	}
	if !slices.ContainsFunc(busy, func(b busyWorker) bool { return time.Since(b.since) >= waitProbeAfter }) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, watchdogQueryTimeout)
	defer cancel()
	waits, err := readTargetWaits(ctx, r.cfg.Target, strings.Join(conns, ","))
	if err != nil {
		r.log.Debug("cannot read what the target's connections wait for", "error", err)
		return nil
	}
	return describeTargetWait(busy, gapless, waits, time.Now())
}

// targetWaits is what the target says its connections wait for.
type targetWaits struct {
	threads []threadWait // gapless's connections in a waiting state
	locks   []lockWait   // every InnoDB lock wait
	// oldest is the oldest open transaction of a connection not gapless's,
	// read when a worker waits for a metadata lock (holder and its
	// description set only).
	oldest *lockWait
}

// readTargetWaits reads the waiting states of the workers' connections
// (conns, a list of their ids) and every InnoDB lock wait of the target.
func readTargetWaits(ctx context.Context, db *sql.DB, conns string) (targetWaits, error) {
	var waits targetWaits
	rows, err := db.QueryContext(ctx, `
		SELECT ID, STATE
		FROM information_schema.PROCESSLIST
		WHERE ID IN (`+conns+`) AND STATE LIKE 'Waiting for %'`)
	if err != nil {
		return waits, err
	}
	for rows.Next() {
		var t threadWait
		if err := rows.Scan(&t.conn, &t.state); err != nil {
			rows.Close()
			return waits, err
		}
		waits.threads = append(waits.threads, t)
	}
	if err := rows.Close(); err != nil {
		return waits, err
	}
	if slices.ContainsFunc(waits.threads, func(t threadWait) bool { return strings.Contains(t.state, "metadata lock") }) {
		var o lockWait
		err := db.QueryRowContext(ctx, `
			SELECT t.trx_mysql_thread_id, COALESCE(CONCAT(p.USER, '@', p.HOST), ''), COALESCE(p.COMMAND, ''),
				TIMESTAMPDIFF(SECOND, t.trx_started, NOW())
			FROM information_schema.INNODB_TRX t
			LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
			WHERE t.trx_mysql_thread_id NOT IN (`+conns+`, 0, CONNECTION_ID())
			ORDER BY t.trx_started LIMIT 1`).Scan(&o.holder, &o.holderUser, &o.holderCommand, &o.holderOpen)
		switch {
		case err == nil:
			waits.oldest = &o
		case !errors.Is(err, sql.ErrNoRows):
			return waits, err
		}
	}
	rows, err = db.QueryContext(ctx, `
		SELECT req.trx_mysql_thread_id, blk.trx_mysql_thread_id, COALESCE(l.lock_table, ''),
			COALESCE(CONCAT(p.USER, '@', p.HOST), ''), COALESCE(p.COMMAND, ''),
			TIMESTAMPDIFF(SECOND, blk.trx_started, NOW())
		FROM information_schema.INNODB_LOCK_WAITS w
		JOIN information_schema.INNODB_TRX req ON req.trx_id = w.requesting_trx_id
		JOIN information_schema.INNODB_TRX blk ON blk.trx_id = w.blocking_trx_id
		LEFT JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id
		LEFT JOIN information_schema.PROCESSLIST p ON p.ID = blk.trx_mysql_thread_id`)
	if err != nil {
		return waits, err
	}
	defer rows.Close()
	for rows.Next() {
		var l lockWait
		if err := rows.Scan(&l.waiter, &l.holder, &l.table, &l.holderUser, &l.holderCommand, &l.holderOpen); err != nil {
			return waits, err
		}
		waits.locks = append(waits.locks, l)
	}
	return waits, rows.Err()
}

// readLock says who holds the target's global locks.
const readLock = "a FLUSH TABLES WITH READ LOCK or a backup (mariabackup, BACKUP STAGE) on the target holds it"

// stateHints say who holds what a thread state waits for.
var stateHints = map[string]string{
	"Waiting for global read lock":    readLock,
	"Waiting for commit lock":         readLock,
	"Waiting for backup lock":         readLock,
	"Waiting for table metadata lock": "another connection of the target holds the table: an open transaction that used it, LOCK TABLES, or DDL",
	"Waiting for table flush":         "a FLUSH TABLES on the target waits for a long statement on the table",
	"Waiting for table level lock":    "another connection of the target holds the table (LOCK TABLES, or a statement on a table that is not transactional)",
}

// describeTargetWait names the wait of the busy worker that has waited
// longest, among those the target tells of: a thread state, or a row lock
// whose chain of holders leads out of gapless (gapless: every worker's
// connection). nil when there is none.
func describeTargetWait(busy []busyWorker, gapless map[int64]bool, waits targetWaits, now time.Time) *TargetWait {
	holderOf := map[int64]lockWait{}
	for _, l := range waits.locks {
		if _, seen := holderOf[l.waiter]; !seen {
			holderOf[l.waiter] = l
		}
	}
	state := map[int64]string{}
	for _, t := range waits.threads {
		state[t.conn] = t.state
	}
	type found struct {
		worker busyWorker
		what   string // the lock and its holder
		detail string // what the holder does, and since when
		holder int64
	}
	var all []found
	behind := 0 // workers waiting for a worker whose wait leads out of gapless
	for _, b := range busy {
		if st, ok := state[b.conn]; ok {
			f := found{worker: b, what: fmt.Sprintf("%q", st)}
			if hint := stateHints[st]; hint != "" {
				f.what += ": " + hint
			}
			if o := waits.oldest; o != nil && strings.Contains(st, "metadata lock") {
				f.what += fmt.Sprintf("; the oldest transaction open on the target is connection %d %s", o.holder, o.holderUser)
				f.detail = holderDetail(*o)
			}
			all = append(all, f)
			continue
		}
		l, ok := holderOf[b.conn]
		if !ok {
			continue
		}
		if l.holder != 0 && gapless[l.holder] {
			// Held by another worker: counted when that worker's own
			// wait leads out of gapless (else the watchdog's business).
			if leadsOut(l.holder, gapless, holderOf, state) {
				behind++
			}
			continue
		}
		f := found{worker: b, what: "a row lock", holder: l.holder}
		if l.table != "" {
			f.what += " on " + l.table
		}
		if l.holder == 0 {
			f.what += " held by a prepared XA transaction on the target (XA RECOVER lists it; XA COMMIT or XA ROLLBACK ends it)"
		} else {
			f.what += fmt.Sprintf(" held by the target's connection %d %s", l.holder, l.holderUser)
			f.detail = holderDetail(l)
		}
		all = append(all, f)
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b found) int { return a.worker.since.Compare(b.worker.since) })
	first := all[0]
	text := fmt.Sprintf("worker %d (%s), applying for %s, waits for %s%s", first.worker.slot, first.worker.gtid,
		now.Sub(first.worker.since).Round(time.Second), first.what, first.detail)
	if more := len(all) - 1 + behind; more > 0 {
		text += fmt.Sprintf("; %d more worker(s) wait on the target", more)
	}
	return &TargetWait{Text: text, What: first.what, Since: first.worker.since, Holder: first.holder}
}

// holderDetail says what a lock's holder does and how long its transaction
// has been open: " (idle, its transaction open 70 s)".
func holderDetail(l lockWait) string {
	doing := strings.ToLower(l.holderCommand)
	if doing == "sleep" {
		doing = "idle"
	}
	if doing != "" {
		doing += ", "
	}
	return fmt.Sprintf(" (%sits transaction open %d s)", doing, l.holderOpen)
}

// leadsOut reports whether the worker on connection conn waits for
// something outside gapless: a thread state, or a row lock whose chain of
// holders leaves gapless's workers.
func leadsOut(conn int64, gapless map[int64]bool, holderOf map[int64]lockWait, state map[int64]string) bool {
	for seen := map[int64]bool{}; !seen[conn]; {
		seen[conn] = true
		if _, ok := state[conn]; ok {
			return true
		}
		l, waits := holderOf[conn]
		if !waits {
			return false
		}
		if l.holder == 0 || !gapless[l.holder] {
			return true
		}
		conn = l.holder
	}
	return false
}
