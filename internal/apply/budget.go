// budget.go bounds the memory of decoded transactions waiting to be applied
// (--max-queued): the decoder takes a transaction's size from the budget
// before queueing it, the coordinator gives it back once the transaction is
// committed or passed, so a slow target slows the decoder down instead of
// filling memory. One transaction larger than the whole budget still passes,
// alone.
package apply

import (
	"context"
	"sync"
)

type byteBudget struct {
	mu sync.Mutex
	// changed is closed at the next give when awaited is set: a give
	// that no one waits for makes no channel (one per transaction).
	changed chan struct{}
	awaited bool
	used    int64
	limit   int64
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{changed: make(chan struct{}), limit: limit}
}

// take waits until n bytes fit, or nothing else is held.
func (b *byteBudget) take(ctx context.Context, n int64) error {
	return b.await(ctx, func() bool {
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			return true
		}
		return false
	})
}

// room waits until less than the whole budget is held: a transaction
// larger than the budget, held alone, keeps the next one from being read
// until it is applied, so that two such are never in memory at once.
func (b *byteBudget) room(ctx context.Context) error {
	return b.await(ctx, func() bool { return b.used < b.limit })
}

// await calls ready under the lock, again after every give, until it says yes.
func (b *byteBudget) await(ctx context.Context, ready func() bool) error {
	for {
		b.mu.Lock()
		if ready() {
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.awaited = true
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give returns n bytes.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	if b.awaited {
		close(b.changed)
		b.changed = make(chan struct{})
		b.awaited = false
	}
	b.mu.Unlock()
}
