// commitlog.go knows which group indexes have committed, and which have
// executed and hold their row locks waiting for their turn, and lets workers
// wait: for their dependencies before they start, and, under strict commit
// order, for their turn to commit.
//
// Invariant: every group index at or below lowWater has committed; above
// lowWater, exactly those in above have. lowWater only grows. executed holds
// only group indexes that have not committed.
package apply

import (
	"context"
	"errors"
	"math"
	"sync"
)

// errDropped tells a worker that the run is stopping before its transaction's turn.
var errDropped = errors.New("dropped by the stop")

// errYield tells a worker, waiting for its turn, that it holds a lock an earlier transaction needs.
var errYield = errors.New("yield: holds a lock an earlier transaction waits for")

type commitLog struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	lowWater int64
	above    map[int64]bool
	executed map[int64]bool
	// dropAbove: transactions above it will not commit (an error stop or a stop); MaxInt64 normally.
	dropAbove int64
}

func newCommitLog() *commitLog {
	return &commitLog{changed: make(chan struct{}), above: make(map[int64]bool), executed: make(map[int64]bool), dropAbove: math.MaxInt64}
}

func (l *commitLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// commit records gi as committed.
func (l *commitLog) commit(gi int64) { l.commitRun(gi, 1) }

// commitRun records the n group indexes from first, a batch's, as
// committed, with one wake-up of the waiters: what they wait for only
// grows, so none needs to see the run half recorded.
func (l *commitLog) commitRun(first int64, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for gi := first; gi < first+int64(n); gi++ {
		delete(l.executed, gi)
		if gi == l.lowWater+1 {
			l.lowWater = gi
			for l.above[l.lowWater+1] {
				delete(l.above, l.lowWater+1)
				l.lowWater++
			}
		} else if gi > l.lowWater {
			l.above[gi] = true
		}
	}
	l.notifyLocked()
}

// low returns the low-water mark.
func (l *commitLog) low() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lowWater
}

// drop makes every transaction above gi give up its wait.
func (l *commitLog) drop(gi int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gi < l.dropAbove {
		l.dropAbove = gi
	}
	l.notifyLocked()
}

// dropped reports whether a stop dropped gi.
func (l *commitLog) dropped(gi int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return gi > l.dropAbove
}

// committed reports whether gi has committed.
func (l *commitLog) committed(gi int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.committedLocked(gi)
}

func (l *commitLog) committedLocked(gi int64) bool {
	return gi <= l.lowWater || l.above[gi]
}

// wait blocks until ready holds, gi is dropped, yield fires, or ctx ends.
func (l *commitLog) wait(ctx context.Context, gi int64, yield <-chan struct{}, ready func() bool) error {
	for {
		l.mu.Lock()
		if gi > l.dropAbove {
			l.mu.Unlock()
			return errDropped
		}
		if ready() {
			l.mu.Unlock()
			return nil
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-yield:
			return errYield
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// execute records that from..to have executed and hold their locks until
// they commit (done true), or that they rolled back (done false).
func (l *commitLog) execute(from, to int64, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for gi := from; gi <= to; gi++ {
		switch {
		case !done:
			delete(l.executed, gi)
		case !l.committedLocked(gi):
			l.executed[gi] = true
		}
	}
	l.notifyLocked()
}

// waitDeps blocks until every dependency of gi committed or, when executed
// is true, at least executed: a transaction that has executed holds the
// locks of every row it changed, so a later one that meets them waits in
// the target until it commits, and the later one's execution overlaps the
// earlier one's wait for its turn and its commit.
//
// A job whose transactions ahead have executed (worker.runAhead) holds
// their locks while it waits: yield, when not nil, ends its wait when an
// earlier transaction needs one of them.
func (l *commitLog) waitDeps(ctx context.Context, gi int64, deps []int64, executed bool, yield <-chan struct{}) error {
	return l.wait(ctx, gi, yield, func() bool {
		for _, d := range deps {
			if !l.committedLocked(d) && !(executed && l.executed[d]) {
				return false
			}
		}
		return true
	})
}

// turn reports whether everything before gi has committed.
func (l *commitLog) turn(gi int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lowWater >= gi-1
}

// waitTurn blocks until everything before gi committed (strict commit order).
func (l *commitLog) waitTurn(ctx context.Context, gi int64, yield <-chan struct{}) error {
	return l.wait(ctx, gi, yield, func() bool { return l.lowWater >= gi-1 })
}

// waitWindow blocks until gi is within window of the low-water mark (causal
// commit order keeps the transactions committed past a gap few).
func (l *commitLog) waitWindow(ctx context.Context, gi, window int64) error {
	return l.wait(ctx, gi, nil, func() bool { return gi-l.lowWater <= window })
}

// causalWindow bounds how far past the gap-less position causal commit order
// starts a job (its first transaction), which bounds the gaps a checkpoint
// row lists to the window and one batch.
const causalWindow = 256
