// Tests of W9's delaying link against an echo server on loopback.
package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"
)

func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrips pings an echo server at addr and returns the sorted round trips.
func roundTrips(t *testing.T, addr string) []time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var trips []time.Duration
	reply := make([]byte, 8)
	for i := range 100 {
		msg := []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}
		began := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, time.Since(began))
		if !bytes.Equal(reply, msg) {
			t.Fatalf("echo %v, want %v", reply, msg)
		}
	}
	slices.Sort(trips)
	return trips
}

func TestDelayLinkAddsTheRoundTrip(t *testing.T) {
	echo := startEcho(t)
	link, err := startDelayLink(echo, linkRoundTrip/2)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	direct, trips := roundTrips(t, echo), roundTrips(t, link.Addr())
	t.Logf("round trip direct: median %s; through the link: min %s, median %s, max %s",
		direct[len(direct)/2], trips[0], trips[len(trips)/2], trips[len(trips)-1])
	if trips[0] < linkRoundTrip-linkModeration {
		t.Errorf("a round trip took %s, less than the link's %s", trips[0], linkRoundTrip)
	}
}

func TestDelayLinkKeepsOrderAndBandwidth(t *testing.T) {
	link, err := startDelayLink(startEcho(t), linkRoundTrip/2)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	c, err := net.Dial("tcp", link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := make([]byte, 32<<20)
	for i := range sent {
		sent[i] = byte(rand.IntN(256))
	}
	go func() {
		// Many small writes: each becomes its own chunk, delayed alone.
		for rest := sent; len(rest) > 0; {
			n := min(len(rest), 1+rand.IntN(20000))
			if _, err := c.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	began := time.Now()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began)
	t.Logf("32 MB through the link and back in %s", elapsed)
	if !bytes.Equal(got, sent) {
		t.Fatalf("got %d bytes back, not the %d sent in order", len(got), len(sent))
	}
}

func TestDelayLinkCloseEndsConnections(t *testing.T) {
	link, err := startDelayLink(startEcho(t), linkRoundTrip/2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- link.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a connection open")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection still reads after Close")
	}
}
