package dburl

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestOpenHonoursTimeout: a server that accepts the connection and never
// greets is given the URL's ?timeout=, not a fixed 5 s, and the message
// names the limit that applied.
func TestOpenHonoursTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent until the test ends
		}
	}()
	addr := ln.Addr().String()
	began := time.Now()
	_, _, err = Open("mysql://x:y@"+addr+"?timeout=1s", nil)
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Fatalf("Open with ?timeout=1s on a silent server: %v", err)
	}
	if took >= PingTimeout {
		t.Fatalf("Open with ?timeout=1s gave up after %s, the default limit", took)
	}
	if _, _, err := Open("mysql://x:y@"+addr+"?timeout=soon", nil); err == nil || !strings.Contains(err.Error(), "timeout=soon") {
		t.Fatalf("Open with ?timeout=soon: %v", err)
	}
	cfg := Config{User: "x", Host: "db1", Port: 3306, Params: map[string]string{"timeout": "30s"}}
	var timeout net.Error = &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	if got := Explain(timeout, cfg).Error(); !strings.Contains(got, "no answer within 30s") {
		t.Fatalf("Explain of a timeout with ?timeout=30s: %q", got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
