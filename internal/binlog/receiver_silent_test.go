package binlog

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

// TestReceiverLeavesASilentSource: a source that stops answering, during
// the login or in the middle of a dump (no event, no heartbeat), ends the
// receiver's session after the read timeout (5 heartbeat periods + 5 s),
// not before, so that it reconnects instead of waiting for ever.
func TestReceiverLeavesASilentSource(t *testing.T) {
	const heartbeat = 200 * time.Millisecond
	const timeout = 5*heartbeat + 5*time.Second

	t.Run("login", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close() // accepted, never answered
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		r := NewReceiver(ReceiverConfig{Host: "127.0.0.1", Port: uint16(port), User: "repl", ServerID: 99, Heartbeat: heartbeat}, openTestRelay(t, t.TempDir(), 0))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		defer func() { cancel(); <-done }()
		waitFor(t, timeout+3*time.Second, "the login to a silent source to fail", func() bool { return !r.DownSince().IsZero() })
	})

	t.Run("dump", func(t *testing.T) {
		srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary", Binlog: true})
		r := NewReceiver(ReceiverConfig{Host: "127.0.0.1", Port: uint16(srv.Port), User: sandbox.ReplUser, Password: sandbox.ReplPassword, ServerID: 99, Heartbeat: heartbeat}, openTestRelay(t, t.TempDir(), 0))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		defer func() { cancel(); <-done }()
		waitFor(t, 20*time.Second, "the dump to start", r.Connected)
		// Past a few deadline moves, the dump is still up on heartbeats alone.
		time.Sleep(timeout + time.Second)
		if !r.Connected() || !r.DownSince().IsZero() {
			t.Fatalf("the receiver left a source that sends heartbeats")
		}
		pid := srv.Pid()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGCONT)
		stopped := time.Now()
		// The session ends once the read times out and the library's
		// attempt to kill the dump over a new connection (which meets the
		// same silence) gives up: within two timeouts.
		waitFor(t, 2*timeout+3*time.Second, "the receiver to leave a silent source (mariadbd "+strconv.Itoa(pid)+" stopped)", func() bool { return !r.DownSince().IsZero() })
		if took := time.Since(stopped); took < timeout-2*heartbeat {
			t.Fatalf("left the source %s after it went silent, before the read timeout of %s", took, timeout)
		}
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
