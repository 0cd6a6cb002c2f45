// commitlog.go knows which group indexes have committed, and lets workers
// wait: for their dependencies before they start, and, under strict commit
// order, for their turn to commit.
//
// Invariant: every group index at or below lowWater has committed; above
// lowWater, exactly those in above have. lowWater only grows.
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
	// dropAbove: transactions above it will not commit (an error stop or a stop); MaxInt64 normally.
	dropAbove int64
}

func newCommitLog() *commitLog {
	return &commitLog{changed: make(chan struct{}), above: make(map[int64]bool), dropAbove: math.MaxInt64}
}

func (l *commitLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// commit records gi as committed.
func (l *commitLog) commit(gi int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gi == l.lowWater+1 {
		l.lowWater = gi
		for l.above[l.lowWater+1] {
			delete(l.above, l.lowWater+1)
			l.lowWater++
		}
	} else if gi > l.lowWater {
		l.above[gi] = true
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

// waitDeps blocks until every dependency of gi committed.
func (l *commitLog) waitDeps(ctx context.Context, gi int64, deps []int64) error {
	return l.wait(ctx, gi, nil, func() bool {
		for _, d := range deps {
			if !l.committedLocked(d) {
				return false
			}
		}
		return true
	})
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
