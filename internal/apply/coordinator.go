// coordinator.go is the one goroutine that schedules: it gives every
// transaction a group index in relay-log order, asks the policy what it
// depends on, gathers batches, hands each job to an idle worker, and on
// every result moves the gap-less position and decides when to stop.
//
// Invariants: group indexes are handed out +1 per transaction, in relay-log
// order, and only here; a job is in inflight from its dispatch until its
// worker's result comes back; while a barrier (a DDL) is in flight, nothing
// else is dispatched.
package apply

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
	"gapless/internal/target"
)

// coordinator is the state of the coordinator's loop for one session of
// the run. Only the coordinator's goroutine touches it.
type coordinator struct {
	r      *Replica
	policy schedule.Policy
	// ws is policy when it is the writeset policy; rowKeyTables and
	// wholeTables are what it said last of the tables statements name.
	ws                        *schedule.Writeset
	rowKeyTables, wholeTables uint64
	// held, free and ordered are cut's rooms: the resources of a member's
	// statements that wait, which of them do not, and its events in their
	// new order.
	held    []schedule.Taken
	free    []bool
	ordered []binlog.Event
	// engines says which target tables are not transactional (see
	// target.Engines).
	engines *target.Engines
	relay   *binlog.RelayLog
	budget  *byteBudget
	skip    map[gtid.MariaDBGTID]bool // --skip-gtid
	// queue is the decode stage's output, nil once the decoder has ended;
	// decErr then says why. pending is a transaction taken from queue but
	// not yet dispatched: it goes first.
	queue   <-chan *binlog.Transaction
	hand    *handoff // queue's sender side, told of each transaction taken
	decErr  <-chan error
	pending *binlog.Transaction
	// recvErr is the receiver's end; received is recvErr until it came,
	// then nil. cancelPipe ends the receiver and the decoder.
	recvErr, received <-chan error
	cancelPipe        func()
	// drainErr is the receiver's end that waits for what it received to be
	// applied (binlog.SourceError.Drain); drainTo is then the relay log's end.
	drainErr error
	drainTo  gtid.MariaDBPosition
	// workers are all the session's workers (workers[0] is the statement
	// session), idle those without a job, done their results.
	workers []*worker
	idle    []*worker
	done    <-chan result
	// gi is the group index of the last transaction admitted.
	gi int64
	// inflight are the jobs dispatched whose results have not come back, by
	// their first group index; committed, the transactions committed (or
	// passed) that the position has not passed yet.
	inflight  map[int64]*job
	committed map[int64]*binlog.Transaction
	barrier   int64 // a DDL in flight: admit nothing until it commits
	// stopping: admit nothing more; the loop ends once inflight is empty,
	// with reason, or runErr.
	stopping bool
	reason   string
	runErr   error
	stopped  <-chan struct{}  // the run's ctx.Done(), nil once seen
	grace    <-chan time.Time // a stop's grace for the batches in flight
	// parked: the statement session keeps an XA branch prepared on the
	// connection that holds the source's temporary tables; a stop then
	// waits, up to parkedStopWait, for the group that ends it (see
	// stop.go). finishing is that wait.
	parked    bool
	finishing <-chan time.Time
	// onStatementSession is the job the statement session's worker
	// holds, nil while it is idle.
	onStatementSession *job
}

// loop runs the session: it admits transactions while workers are idle,
// takes their results, and ends once stopping with nothing in flight.
func (c *coordinator) loop() (Result, error) {
	for {
		if c.stopping && len(c.inflight) == 0 {
			return c.end()
		}
		var in <-chan *binlog.Transaction
		if !c.stopping && len(c.idle) > 0 && c.barrier == 0 {
			switch {
			case c.pending == nil:
				in = c.queue
			case c.ready(c.pending):
				// A transaction gather took from the queue but could not
				// batch, or one that waited for its worker, goes first.
				txn := c.pending
				c.pending = nil
				c.dispatch(txn)
				continue
			}
		}
		select {
		case <-c.stopped:
			c.stopped = nil
			c.stopAsked()
		case <-c.finishing:
			c.finishing = nil
			c.stopNow() // the statement session's worker warns as it ends
		case <-c.grace:
			c.grace = nil
			c.r.interruptBatches()
		case err := <-c.received:
			c.received = nil
			c.receiverEnded(err)
		case txn, ok := <-in:
			if !ok {
				c.decoderEnded()
				continue
			}
			c.hand.took()
			c.dispatch(txn)
		case res := <-c.done:
			c.finished(res)
		}
	}
}

// dispatch hands txn (and what gather batches behind it) to an idle
// worker, or passes it when the filters left nothing of it.
func (c *coordinator) dispatch(txn *binlog.Transaction) {
	if err := c.engines.Mark(txn); err != nil {
		c.stopWith(err)
		return
	}
	if txn.Has(binlog.FlagDDL) {
		c.engines.Invalidate()
	}
	if !c.ready(txn) {
		c.pending = txn
		return
	}
	batch, more, err := c.gather(txn)
	if err != nil {
		c.stopWith(err)
		return
	}
	if !more {
		c.queue = nil // the decoder ended
		c.stopWith(<-c.decErr)
	}
	if len(batch) == 0 {
		c.stopAtUntil()
		return
	}
	if batch[0].Filtered {
		c.pass(batch[0])
		return
	}
	j, err := c.newJob(batch)
	if err != nil {
		c.stopWith(err)
		return
	}
	c.countStatementTables()
	c.r.observeDispatch(j, c.inflight, c.policy.Barrier())
	c.inflight[j.gi] = j
	w := c.takeWorker(target.NeedsStatementSession(batch[0]))
	if w.slot == 0 {
		c.onStatementSession = j
	}
	w.jobs <- j
	if c.policy.Barrier() {
		c.barrier = c.gi
	}
	if c.r.untilAfter(batch[len(batch)-1]) {
		c.stopAtUntil()
	}
}

// ready reports whether txn can be dispatched now: a transaction of
// statements waits for the statement session's worker.
func (c *coordinator) ready(txn *binlog.Transaction) bool {
	return !target.NeedsStatementSession(txn) || slices.Contains(c.idle, c.workers[0])
}

// takeWorker removes a worker from idle: the last one (not worker 0
// when another is idle), or, for a transaction of statements, worker 0,
// the statement session (see target.NeedsStatementSession).
func (c *coordinator) takeWorker(statements bool) *worker {
	at := len(c.idle) - 1
	if statements {
		at = slices.Index(c.idle, c.workers[0])
	} else if c.idle[at] == c.workers[0] && at > 0 {
		// Others' jobs keep off the statement session: it stays free
		// for statements, and a job that switches GTID domains cannot
		// on a session holding temporary tables.
		at--
	}
	w := c.idle[at]
	c.idle = slices.Delete(c.idle, at, at+1)
	return w
}

// gather takes txn and, while more are queued, the transactions after it
// that can share one target transaction with it: a batch ends where the
// queue runs dry, so batching never holds a transaction back. It returns no
// transaction when txn lies beyond --until, and more=false when the decoder
// has ended.
func (c *coordinator) gather(txn *binlog.Transaction) (batch []*binlog.Transaction, more bool, err error) {
	r := c.r
	accept := func(t *binlog.Transaction) error {
		if t.Flavor != binlog.FlavorMariaDB {
			return fmt.Errorf("%s: only MariaDB sources are applied so far", t)
		}
		return nil
	}
	if err := accept(txn); err != nil {
		return nil, true, err
	}
	if r.cfg.Until != nil && !r.cfg.Until.Contains(txn.MariaDB) {
		return nil, true, nil
	}
	batch = []*binlog.Transaction{txn}
	if c.pending != nil {
		panic("gather with a pending transaction")
	}
	size, limit := txn.Size, batchBytes
	if r.cfg.BatchBytes > 0 {
		limit = r.cfg.BatchBytes
	}
	// joins says whether a transaction may join the batch: one that can
	// share its target transaction, or, after a group applied alone, the
	// next such group (a run of them, applied one by one: job.alone).
	joins := target.Joiner(txn)
	for !txn.Filtered && r.cfg.BatchMax > 1 && len(batch) < r.cfg.BatchMax && size < limit && joins != nil && !c.skip[txn.MariaDB] && !r.untilAfter(batch[len(batch)-1]) {
		var next *binlog.Transaction
		select {
		case t, ok := <-c.queue:
			if !ok {
				return batch, false, nil
			}
			c.hand.took()
			next = t
		default:
			return batch, true, nil
		}
		if err := c.engines.Mark(next); err != nil {
			return nil, true, err
		}
		if next.Filtered || !joins(next) || c.skip[next.MariaDB] || next.MariaDB.Domain != txn.MariaDB.Domain || next.SourceStarts != txn.SourceStarts ||
			target.NeedsStatementSession(next) != target.NeedsStatementSession(txn) ||
			!bytes.Equal(next.Format.Raw, txn.Format.Raw) || accept(next) != nil {
			c.pending = next
			return batch, true, nil
		}
		batch = append(batch, next)
		size += next.Size
	}
	return batch, true, nil
}

// batchBytes bounds the source bytes of one batch.
const batchBytes = 4 << 20

// queueDepth is how many decoded transactions wait for the coordinator: a
// few full batches, so that gather finds a batch's worth whenever the
// decoder keeps up, and not many more. A transaction decoded far ahead
// only holds memory (several times its size in the binlog) that the
// garbage collector scans and the cache loses, until it is applied.
func queueDepth(batchMax int) int {
	return max(1024, 4*batchMax)
}

// newJob admits the batch's transactions, each at the next group index,
// and makes their job: its dependencies outside the batch, and which
// statements of each member may run ahead of them (cut).
func (c *coordinator) newJob(batch []*binlog.Transaction) (*job, error) {
	j := &job{gi: c.gi + 1, txns: batch, skip: len(batch) == 1 && c.skip[batch[0].MariaDB], alone: len(batch) > 1 && target.FollowsAlone(batch[0])}
	// ahead: of each member, the events that wait for no transaction
	// still to commit before the batch, directly or through a member
	// whose events do not all run ahead.
	ahead := make([]int, len(batch))
	waits := func(d int64) bool {
		if d >= j.gi {
			m := d - j.gi
			return ahead[m] < len(batch[m].Events)
		}
		return !c.r.clog.committed(d)
	}
	for i, member := range batch {
		c.gi++
		deps, err := admit(c.policy, c.gi, member)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", member, err)
		}
		for _, d := range deps {
			if d < j.gi {
				j.deps = append(j.deps, d)
			}
		}
		ahead[i] = len(member.Events)
		if slices.ContainsFunc(deps, waits) {
			ahead[i] = 0
			if len(batch) > 1 {
				// A group alone runs its script whole (Session.script).
				ahead[i] = c.cut(member, waits)
			}
		}
	}
	j.ahead = aheadOf(ahead, batch)
	return j, nil
}

// cut is how many of a member's events may run ahead, once they are put
// first: its row statements that wait for nothing waits reports, nor meet
// one before them in the member that does. It moves them, in their order,
// before the statements that wait, in theirs, in the member's own Events: a
// statement run before one it meets none of gives the same result (no row
// key, table or foreign-key resource of theirs is one), and the target
// holds the member's events in that order from here on, whether it runs
// ahead or whole. A member of statements, or under a policy that does not
// say what each statement waits for, is cut before its first event.
func (c *coordinator) cut(member *binlog.Transaction, waits func(int64) bool) int {
	if c.ws == nil || target.HasStatements(member) {
		return 0
	}
	steps := c.ws.Steps()
	if steps == nil || slices.ContainsFunc(steps.Deps[:steps.All], waits) {
		return 0
	}
	statements := steps.Statements
	held := c.held[:0] // the resources of the statements that wait
	free := c.free[:0]
	nFree := 0
	for k := range statements {
		its := steps.TakenOf(k)
		waiting := slices.ContainsFunc(steps.DepsOf(k), waits) || schedule.Meets(its, held)
		if waiting {
			held = append(held, its...)
		} else {
			nFree++
		}
		free = append(free, !waiting)
	}
	c.held, c.free = held, free
	if nFree == 0 || nFree == len(statements) {
		// Nothing to run ahead; or nothing waits, which cannot be: a
		// dependency that waits is some statement's.
		return 0
	}
	// The events before the first statement (BEGIN) stay first, and
	// those after the last (XID) last.
	events := member.Events
	ordered := append(c.ordered[:0], events[:statements[0].From]...)
	n := 0
	for pass := range 2 {
		for k, st := range statements {
			if free[k] == (pass == 0) {
				ordered = append(ordered, events[st.From:st.To]...)
			}
		}
		if pass == 0 {
			n = len(ordered)
		}
	}
	ordered = append(ordered, events[statements[len(statements)-1].To:]...)
	copy(events, ordered)
	clear(ordered) // the room keeps no events alive
	c.ordered = ordered[:0]
	return n
}

// admit asks the policy for a transaction's dependencies. A panic there is
// a gapless bug: it becomes an error that stops the run cleanly, naming the
// group, for a bug report, instead of a crash.
func admit(policy schedule.Policy, gi int64, txn *binlog.Transaction) (deps schedule.Deps, err error) {
	defer func() {
		if r := recover(); r != nil {
			deps, err = nil, fmt.Errorf("a gapless bug: panic: %v (report it with the source's binlog of this transaction)", r)
		}
	}()
	return policy.Admit(gi, txn)
}

// aheadOf is the job's ahead: of each member, how many of its first events
// (whole statements, cut) may run first, in order, while what the batch
// waits for executes (worker.runAhead); the rest runs once it has, in
// order. A policy lets two transactions overlap only if either order gives
// the same result, and a statement that runs ahead meets no statement
// before it in its member that does not, and waits for no member whose
// events do not all run ahead, so running it first, within the batch's one
// target transaction, changes nothing of its result. It returns nil when
// every member runs whole ahead (nothing waits) or none of it does.
func aheadOf(ahead []int, batch []*binlog.Transaction) []int {
	whole, none := true, true
	for i, n := range ahead {
		whole = whole && n == len(batch[i].Events)
		none = none && n == 0
	}
	if whole || none {
		return nil
	}
	return ahead
}

// countStatementTables adds what the writeset policy said of the tables
// statements name, since it last said, to the run's counts.
func (c *coordinator) countStatementTables() {
	if c.ws == nil {
		return
	}
	rows, whole := c.ws.StatementTables()
	c.r.obs.statementRowKeys.Add(int64(rows - c.rowKeyTables))
	c.r.obs.statementWholeTables.Add(int64(whole - c.wholeTables))
	c.rowKeyTables, c.wholeTables = rows, whole
}

// pass passes txn, a transaction with nothing to apply: the position
// passes it as soon as everything before it commits.
func (c *coordinator) pass(txn *binlog.Transaction) {
	r := c.r
	c.gi++
	r.clog.commit(c.gi)
	c.committed[c.gi] = txn
	r.advance(c.committed)
	if !txn.AppliedAhead && !txn.RolledBack {
		r.filtered.Add(1)
	}
	c.budget.give(int64(txn.Size))
	if !c.stopping && (r.untilAfter(txn) || r.untilReached()) {
		c.stopAtUntil()
	}
}

// finished takes a worker's result: the worker is idle again, what its job
// committed moves the position, and an error stops the session.
func (c *coordinator) finished(res result) {
	r := c.r
	r.observeFinished(res.job, res.err)
	c.idle = append(c.idle, res.w)
	if res.w.slot == 0 {
		c.onStatementSession = nil
		c.parked = res.parked
		if c.finishing != nil && !c.parked {
			c.finishing = nil
			c.stopNow()
		}
	}
	delete(c.inflight, res.job.gi)
	if res.job.last() == c.barrier {
		c.barrier = 0
	}
	if res.applied > 0 {
		c.applied(res)
	}
	switch {
	case res.err == nil, errors.Is(res.err, errDropped):
	default:
		if !c.stopping || c.runErr == nil {
			c.runErr = r.stopError(res.err)
		}
		c.stopping = true
		r.clog.drop(res.job.gi + int64(res.applied) - 1)
	}
}

// applied records the transactions of res's job that committed, moves the
// position over them, and stops the session at --until or a drained
// receiver's end.
func (c *coordinator) applied(res result) {
	r := c.r
	r.batches.Add(1)
	for i, member := range res.job.txns[:res.applied] {
		if target.HasStatements(member) {
			r.statements[res.w.slot]++
		}
		c.budget.give(int64(member.Size))
		c.policy.Committed(res.job.gi + int64(i))
		c.committed[res.job.gi+int64(i)] = member
		crashPoint(r.applied.Add(1))
	}
	r.advance(c.committed)
	c.relay.Purge(r.currentPosition())
	if !c.stopping && r.untilReached() {
		c.stopAtUntil()
	}
	if !c.stopping && c.drainErr != nil && r.currentPosition().Covers(c.drainTo) {
		c.stopWith(c.drainErr)
	}
}

// stopAsked is a stop (the run's ctx ended): now, unless an XA branch is
// parked with the source's temporary tables, or may be by the job the
// statement session runs: then the stop waits for its end a while.
func (c *coordinator) stopAsked() {
	mayPark := c.onStatementSession != nil && slices.ContainsFunc(c.onStatementSession.txns, target.PreparesXA)
	if (c.parked || mayPark) && !c.stopping {
		c.r.log.Info("stop: applying on until the XA transaction prepared on the connection that holds the source's temporary tables ends", "at most", parkedStopWait)
		c.finishing = time.After(parkedStopWait)
		return
	}
	c.stopNow()
}

// stopNow makes the session stop at the nearest gap-less point.
func (c *coordinator) stopNow() {
	c.stopping, c.reason = true, "stopped"
	c.r.clog.drop(c.r.highestStarted())
	c.grace = time.After(stopGrace)
}

// stopWith makes the session stop, with err when it is not nil.
func (c *coordinator) stopWith(err error) {
	c.stopping, c.runErr = true, err
}

// stopAtUntil makes the session stop: --until is applied.
func (c *coordinator) stopAtUntil() {
	c.stopping, c.reason = true, "until reached"
}

// receiverEnded stops the session at the receiver's end, or, for an end
// that waits for what it received (binlog.SourceError.Drain), once that is
// applied.
func (c *coordinator) receiverEnded(err error) {
	var se *binlog.SourceError
	switch {
	case c.stopping:
	case errors.As(err, &se) && se.Drain:
		// What was received before it is applied first (as
		// MariaDB's SQL thread goes on after its IO thread stops).
		c.drainTo, c.drainErr = c.relay.End(), err
		if c.r.currentPosition().Covers(c.drainTo) {
			c.stopWith(err)
		}
	default:
		c.stopWith(err)
		c.r.clog.drop(c.r.highestStarted())
	}
}

// decoderEnded stops the session at the decoder's end.
func (c *coordinator) decoderEnded() {
	c.stopWith(<-c.decErr)
	var incident *binlog.IncidentError
	if !errors.As(c.runErr, &incident) {
		c.r.clog.drop(c.r.highestStarted())
	}
	// At an incident, everything before it is applied: the
	// decoder ended there, and all before it is in flight.
}

// end ends the session once nothing is in flight.
func (c *coordinator) end() (Result, error) {
	r := c.r
	c.cancelPipe()
	if c.received != nil {
		<-c.recvErr
	}
	return Result{Position: r.currentPosition(), Applied: r.applied.Load(), Filtered: r.filtered.Load(), Batches: r.batches.Load(), RolledBack: r.rolledBack.Load(), RanAhead: r.ranAhead.Load(), RanAheadInPart: r.ranAheadInPart.Load(), StateTime: stateTime(c.workers), Reason: c.reason, Statements: maps.Clone(r.statements),
		StatementRowKeys: r.obs.statementRowKeys.Load(), StatementWholeTables: r.obs.statementWholeTables.Load()}, c.runErr
}
