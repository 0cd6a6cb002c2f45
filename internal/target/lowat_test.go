package target

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// lowatPair returns a client connection with a low-water mark and the
// server's end of it, on loopback.
func lowatPair(t *testing.T) (*lowatConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	c, ok := newLowatConn(raw).(*lowatConn)
	if !ok {
		t.Fatal("a TCP connection was not given a low-water mark")
	}
	t.Cleanup(func() { c.Close(); server.Close() })
	return c, server
}

// kernelMark reads the socket's SO_RCVLOWAT.
func kernelMark(t *testing.T, c *lowatConn) int {
	t.Helper()
	var mark int
	var err error
	c.raw.Control(func(fd uintptr) {
		mark, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	})
	if err != nil {
		t.Fatal(err)
	}
	return mark
}

// readWithin reads once, failing the test if the read takes longer than
// limit (it would wait forever for bytes that never come).
func readWithin(t *testing.T, c *lowatConn, limit time.Duration) int {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := c.Read(make([]byte, 64<<10))
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.n
	case <-time.After(limit):
		t.Fatalf("a read waited more than %s", limit)
	}
	return 0
}

func TestLowatMarksTheAnswersStillToCome(t *testing.T) {
	c, server := lowatPair(t)
	c.expect(10) // at least 1 + 9*11 bytes
	server.Write(make([]byte, 300))
	if n := readWithin(t, c, 5*time.Second); n != 300 {
		t.Errorf("read %d bytes, want the 300 sent", n)
	}
	if got := kernelMark(t, c); got != 100 {
		t.Errorf("SO_RCVLOWAT is %d while 10 answers are to come, want 100", got)
	}
	c.expect(0)
	server.Write([]byte{1})
	if n := readWithin(t, c, 5*time.Second); n != 1 {
		t.Errorf("read %d bytes with no answer expected, want 1", n)
	}
	if got := kernelMark(t, c); got != 1 {
		t.Errorf("SO_RCVLOWAT is %d with no answer expected, want 1", got)
	}
}

// TestLowatTakesFewerBytesThanExpected is an error ending a script: its
// answer is short of what the answers still expected would be, and nothing
// follows it.
func TestLowatTakesFewerBytesThanExpected(t *testing.T) {
	c, server := lowatPair(t)
	c.expect(1000)
	server.Write(make([]byte, 60))
	if n := readWithin(t, c, 5*time.Second); n != 60 {
		t.Errorf("read %d bytes, want the 60 sent", n)
	}
	// And when nothing has come yet, the read waits for the first byte.
	go func() {
		time.Sleep(3 * lowatWait)
		server.Write([]byte{7})
	}()
	if n := readWithin(t, c, 5*time.Second); n != 1 {
		t.Errorf("read %d bytes, want the 1 sent late", n)
	}
}

// TestLowatWaitGrowsWithTheAnswersAwaited: a read waits for its mark as
// long as the script's answers have been awaited, within lowatWait and
// lowatMaxWait, and the clock starts again with the next script.
func TestLowatWaitGrowsWithTheAnswersAwaited(t *testing.T) {
	c := &lowatConn{}
	c.expect(10)
	start := c.since
	if start.IsZero() {
		t.Fatal("expect did not note when the answers began to be awaited")
	}
	for _, tc := range []struct {
		after, want time.Duration
	}{
		{0, lowatWait},
		{lowatWait / 2, lowatWait},
		{10 * time.Millisecond, 10 * time.Millisecond},
		{time.Second, lowatMaxWait},
	} {
		if got := c.wait(start.Add(tc.after)); got != tc.want {
			t.Errorf("%s after the script was sent: wait %s, want %s", tc.after, got, tc.want)
		}
	}
	c.expect(9) // the same script, one answer read
	if c.since != start {
		t.Error("an answer read restarted the clock of the script's answers")
	}
	c.expect(0)
	time.Sleep(time.Millisecond)
	c.expect(3)
	if !c.since.After(start) {
		t.Error("the next script's answers kept the clock of the last")
	}
}
