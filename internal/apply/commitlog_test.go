// commitlog_test.go checks the commit log that orders workers: the
// low-water mark, waiting for dependencies and turns, drops, and the byte
// budget of queued transactions.
package apply

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestCommitLogLowWaterAndGaps(t *testing.T) {
	l := newCommitLog()
	l.commit(2)
	l.commit(3)
	if got := l.low(); got != 0 {
		t.Fatalf("low water %d with 1 uncommitted, want 0", got)
	}
	l.commit(1)
	if got := l.low(); got != 3 {
		t.Fatalf("low water %d after 1..3 committed, want 3", got)
	}
	l.commit(5)
	if got := l.low(); got != 3 {
		t.Fatalf("low water %d with a gap at 4, want 3", got)
	}
}

func TestCommitLogTurnsKeepOrder(t *testing.T) {
	l := newCommitLog()
	ctx := context.Background()
	var mu sync.Mutex
	var order []int64
	var wg sync.WaitGroup
	for gi := int64(10); gi >= 1; gi-- {
		wg.Add(1)
		go func(gi int64) {
			defer wg.Done()
			if err := l.waitTurn(ctx, gi, nil); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, gi)
			mu.Unlock()
			l.commit(gi)
		}(gi)
	}
	wg.Wait()
	for i, gi := range order {
		if gi != int64(i+1) {
			t.Fatalf("commit order %v, want 1..10", order)
		}
	}
}

func TestCommitLogDependenciesDropAndYield(t *testing.T) {
	l := newCommitLog()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- l.waitDeps(ctx, 9, []int64{2, 7}, false, nil) }()
	l.commit(7)
	select {
	case <-done:
		t.Fatal("waitDeps returned with dependency 2 uncommitted")
	case <-time.After(20 * time.Millisecond):
	}
	l.commit(2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	go func() { done <- l.waitTurn(ctx, 20, nil) }()
	l.drop(15)
	if err := <-done; !errors.Is(err, errDropped) {
		t.Fatalf("a transaction above the drop point got %v, want errDropped", err)
	}
	yield := make(chan struct{}, 1)
	go func() { done <- l.waitTurn(ctx, 12, yield) }()
	yield <- struct{}{}
	if err := <-done; !errors.Is(err, errYield) {
		t.Fatalf("a yielded wait got %v, want errYield", err)
	}
}

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if err := b.take(ctx, 500); err != nil {
		t.Fatalf("one transaction larger than the budget must pass alone: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.take(short, 10); err == nil {
		t.Fatal("took 10 bytes while the budget was exhausted")
	}
	b.give(500)
	if err := b.take(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.room(ctx); err != nil {
		t.Fatalf("room with 60 of 100 bytes held: %v", err)
	}
	if err := b.take(ctx, 40); err != nil {
		t.Fatal(err)
	}
	// The whole budget held: the next transaction is not read until some is given back.
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if err := b.room(short2); err == nil {
		t.Fatal("room while the whole budget is held")
	}
	b.give(40)
	if err := b.room(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCommitLogExecutedDependencies checks that under strict order a job may
// start once its dependencies have executed, that a rollback takes that
// back, and that causal order still waits for the commit.
func TestCommitLogExecutedDependencies(t *testing.T) {
	l := newCommitLog()
	ctx := context.Background()
	started := func(executed bool) chan error {
		done := make(chan error, 1)
		go func() { done <- l.waitDeps(ctx, 10, []int64{3, 4}, executed, nil) }()
		return done
	}
	blocked := func(done chan error, why string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("waitDeps returned (%v) %s", err, why)
		case <-time.After(20 * time.Millisecond):
		}
	}

	l.execute(3, 4, true)
	l.execute(3, 4, false) // rolled back: no longer holds its locks
	early := started(true)
	blocked(early, "after its dependencies rolled back")
	l.execute(3, 4, true)
	if err := <-early; err != nil {
		t.Fatal(err)
	}

	causal := started(false)
	blocked(causal, "with its dependencies executed but not committed")
	l.commit(3)
	l.commit(4)
	if err := <-causal; err != nil {
		t.Fatal(err)
	}
	if len(l.executed) != 0 {
		t.Fatalf("committed transactions still listed as executed: %v", l.executed)
	}
}
