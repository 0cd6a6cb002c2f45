// handoff.go owns how decoded transactions pass from the decode stage to
// the coordinator: a channel of queueDepth, with a decoder that, once it
// has filled it, waits until the coordinator has taken half.
//
// A decoder faster than the target keeps the channel full. With a plain
// send it then waits on every transaction the coordinator takes: each
// receive wakes it, it decodes one transaction, fills the slot and waits
// again, one wake-up of another thread per transaction (on W1, 150 000 of
// them, about a tenth of gapless's CPU with the scheduler's spinning). Here
// it wakes once per half a channel.
package apply

import (
	"context"
	"sync/atomic"

	"gapless/internal/binlog"
)

type handoff struct {
	ch chan *binlog.Transaction
	// waiting: the decoder found ch full and waits for room (a token).
	waiting atomic.Bool
	room    chan struct{}
}

func newHandoff(depth int) *handoff {
	return &handoff{ch: make(chan *binlog.Transaction, depth), room: make(chan struct{}, 1)}
}

// send passes txn on; when the channel is full it first waits until at
// most half of it is left, or ctx ends.
func (h *handoff) send(ctx context.Context, txn *binlog.Transaction) error {
	select {
	case h.ch <- txn:
		return nil
	default:
	}
	h.waiting.Store(true)
	if len(h.ch) > cap(h.ch)/2 {
		select {
		case <-h.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h.waiting.Store(false)
	// Room or not (a token left by an earlier wait), a plain send now.
	select {
	case h.ch <- txn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// took is called by the receiver after each transaction it takes: the
// decoder waiting for room is woken once half the channel is free.
func (h *handoff) took() {
	if h != nil && h.waiting.Load() && len(h.ch) <= cap(h.ch)/2 && h.waiting.CompareAndSwap(true, false) {
		select {
		case h.room <- struct{}{}:
		default:
		}
	}
}
