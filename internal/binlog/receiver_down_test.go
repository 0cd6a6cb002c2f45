package binlog

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestReceiverDownSince: a source that refuses connections is down from the
// first failed attempt, so the progress line can say since when.
func TestReceiverDownSince(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	relay := openTestRelay(t, t.TempDir(), 0)
	r := NewReceiver(ReceiverConfig{Host: "127.0.0.1", Port: uint16(port), User: "repl", ServerID: 99, DialTimeout: time.Second}, relay)
	if !r.DownSince().IsZero() {
		t.Fatal("down before the first attempt")
	}
	before := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for r.DownSince().IsZero() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	first := r.DownSince()
	if first.IsZero() || first.Before(before) {
		t.Fatalf("DownSince() = %v with the source refusing connections", first)
	}
	time.Sleep(300 * time.Millisecond) // a few more failed attempts
	if !r.DownSince().Equal(first) {
		t.Fatalf("DownSince moved from %v to %v: it must stay at the first failure", first, r.DownSince())
	}
}
