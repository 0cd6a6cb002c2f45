package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

func handoffTxn(seq uint64) *binlog.Transaction {
	return &binlog.Transaction{Flavor: binlog.FlavorMariaDB, MariaDB: gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: seq}}
}

// TestHandoffPassesEveryTransactionInOrder: a decoder far ahead of its
// coordinator, which takes one at a time; nothing is lost, reordered or
// passed twice.
func TestHandoffPassesEveryTransactionInOrder(t *testing.T) {
	h := newHandoff(8)
	ctx := context.Background()
	const n = 1000
	go func() {
		for i := range uint64(n) {
			if err := h.send(ctx, handoffTxn(i+1)); err != nil {
				t.Error(err)
				return
			}
		}
		close(h.ch)
	}()
	want := uint64(1)
	for txn := range h.ch {
		h.took()
		if txn.MariaDB.Seq != want {
			t.Fatalf("got %s, want 0-1-%d", txn.GTID(), want)
		}
		want++
		if want%97 == 0 {
			time.Sleep(time.Millisecond) // the decoder fills the channel
		}
	}
	if want != n+1 {
		t.Fatalf("got %d transactions, want %d", want-1, n)
	}
}

// TestHandoffWaitsForHalfTheChannel: a decoder that filled the channel
// sends again only once half of it is taken, and a wait ends with ctx.
func TestHandoffWaitsForHalfTheChannel(t *testing.T) {
	h := newHandoff(8)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		for i := range uint64(20) {
			if err := h.send(ctx, handoffTxn(i+1)); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 5s for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("a full channel and a waiting decoder", func() bool { return len(h.ch) == 8 && h.waiting.Load() })
	for range 3 {
		<-h.ch
		h.took()
	}
	time.Sleep(20 * time.Millisecond)
	if got := len(h.ch); got != 5 {
		t.Fatalf("with 3 of 8 taken the channel holds %d, want 5: the decoder sent before half was free", got)
	}
	<-h.ch
	h.took()
	waitFor("the decoder to fill the channel again", func() bool { return len(h.ch) == 8 && h.waiting.Load() })
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a wait ended by ctx returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait did not end with its ctx")
	}
}
