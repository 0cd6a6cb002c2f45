// This file owns W9's remote link: a TCP proxy on loopback that holds every
// chunk of bytes for half the round trip before passing it on, in each
// direction, so that gapless's round trips to its target cost what they
// cost across a network while bandwidth stays loopback's. Chunks leave in
// the order they came, each at its own arrival time plus the delay: the
// link adds latency and never queues one chunk behind another's wait.
//
// Why a proxy and not a network namespace with netem: this machine's kernel
// has no netem qdisc ("tc qdisc add ... netem": "Specified qdisc kind is
// unknown"), and a proxy needs neither root nor a module. It sits between
// gapless and the target only; the source and MariaDB's replica stay local.
package main

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// linkRoundTrip is W9's round trip between gapless and its target.
const linkRoundTrip = time.Millisecond

// delayLink is a listening proxy to one address.
type delayLink struct {
	listener net.Listener
	target   string
	oneWay   time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// startDelayLink listens on a free loopback port and forwards every
// connection to target, delaying each direction by oneWay.
func startDelayLink(target string, oneWay time.Duration) (*delayLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &delayLink{listener: ln, target: target, oneWay: oneWay, conns: map[net.Conn]bool{}}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr is the host:port to connect to instead of the target.
func (l *delayLink) Addr() string { return l.listener.Addr().String() }

// Close stops listening, cuts every connection and waits for the forwarders.
func (l *delayLink) Close() error {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	err := l.listener.Close()
	l.wg.Wait()
	return err
}

func (l *delayLink) serve() {
	defer l.wg.Done()
	for {
		client, err := l.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !l.track(client, server) {
			return
		}
		l.wg.Add(2)
		go l.forward(server, client)
		go l.forward(client, server)
	}
}

// track registers a connection pair, or closes it when the link is closing.
func (l *delayLink) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		if l.closed {
			_ = c.Close()
			continue
		}
		l.conns[c] = true
	}
	return !l.closed
}

// chunk is bytes read from one side, due on the other at due.
type chunk struct {
	data []byte
	due  time.Time
}

// forward copies src to dst, each chunk oneWay after it was read. When src
// ends, dst's writing half is closed, as the end of a TCP stream would be;
// when dst fails, both are closed.
func (l *delayLink) forward(dst, src net.Conn) {
	defer l.wg.Done()
	// Bounded: a reader far ahead of the delayed writer waits, as a sender
	// waits for a full TCP window.
	inFlight := make(chan chunk, 1024)
	go func() {
		defer close(inFlight)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				inFlight <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(l.oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range inFlight {
		sleepUntil(c.due.Add(-timerSlack))
		if _, err := dst.Write(c.data); err != nil {
			_ = src.Close()
			_ = dst.Close()
			for range inFlight {
			}
			return
		}
	}
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

// timerSlack is how late the kernel may end a nanosleep of a normal thread
// (its default timer slack): waits aim that much early, so that a chunk
// leaves close to its due time and not always after it.
const timerSlack = 50 * time.Microsecond

// sleepUntil waits until t with nanosleep: time.Sleep rounds waits below a
// millisecond up to about one (the runtime's poller sleeps in whole
// milliseconds), which would double the link's delay.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		if err := syscall.Nanosleep(&ts, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}
