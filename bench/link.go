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
//
// The proxy runs on the cores it measures, so it is built to cost what a
// network costs the two hosts, and little more. One OS thread serves every
// connection with epoll and wakes at each chunk's due time to the
// nanosecond (epoll_pwait2, no timer slack), with no goroutine or thread
// switch per chunk. And it does not wake for every packet a sender writes:
// after a wake that read bytes, it sleeps for linkModeration before looking
// again, as a network card holds its interrupts. A sender whose reader is
// not waiting pays no wake-up; otherwise each of the target's answers would
// wake the proxy at the target's expense, where gapless itself reads the
// answers in bulk (SO_RCVLOWAT, internal/target/lowat.go). Bytes read after
// such a sleep are taken to have arrived in its middle.
package main

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// linkRoundTrip is W9's round trip between gapless and its target.
const linkRoundTrip = time.Millisecond

// linkModeration is how long the link lets bytes gather after a wake that
// read some, before it looks again: a network card's interrupt moderation.
// A chunk's delay varies by up to half of it either way.
const linkModeration = 100 * time.Microsecond

// linkQueueLimit is how many bytes one direction holds before the link
// stops reading its sender, as a full TCP window would.
const linkQueueLimit = 8 << 20

// delayLink is a listening proxy to one address.
type delayLink struct {
	listener net.Listener
	target   string
	oneWay   time.Duration

	epfd   int
	wakeFD int // an eventfd: new connections, or Close

	mu      sync.Mutex
	arrived [][2]int // connection pairs (client, server) for the loop to take
	closing bool

	wg sync.WaitGroup
}

// startDelayLink listens on a free loopback port and forwards every
// connection to target, delaying each direction by oneWay.
func startDelayLink(target string, oneWay time.Duration) (*delayLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	wakeFD, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakeFD, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakeFD)})
	}
	if err != nil {
		_ = ln.Close()
		_ = unix.Close(epfd)
		return nil, err
	}
	l := &delayLink{listener: ln, target: target, oneWay: oneWay, epfd: epfd, wakeFD: wakeFD}
	l.wg.Add(2)
	go l.accept()
	go l.loop()
	return l, nil
}

// Addr is the host:port to connect to instead of the target.
func (l *delayLink) Addr() string { return l.listener.Addr().String() }

// Close stops listening, cuts every connection and waits for the loop.
func (l *delayLink) Close() error {
	err := l.listener.Close()
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	l.wake()
	l.wg.Wait()
	closeFDs(l.epfd, l.wakeFD)
	return err
}

func (l *delayLink) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(l.wakeFD, one[:])
}

// accept takes each connection, dials the target for it and hands the pair
// of sockets to the loop.
func (l *delayLink) accept() {
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
		cfd, err1 := ownFD(client)
		sfd, err2 := ownFD(server)
		if err1 != nil || err2 != nil {
			closeFDs(cfd, sfd)
			continue
		}
		l.mu.Lock()
		if l.closing {
			closeFDs(cfd, sfd)
		} else {
			l.arrived = append(l.arrived, [2]int{cfd, sfd})
		}
		l.mu.Unlock()
		l.wake()
	}
}

// ownFD returns a descriptor of c's socket that the loop owns (a duplicate,
// non-blocking and with TCP_NODELAY as Go set them), and closes c.
func ownFD(c net.Conn) (int, error) {
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	unix.CloseOnExec(fd)
	return fd, unix.SetNonblock(fd, true)
}

func closeFDs(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// chunk is bytes read from one side, due on the other at due.
type chunk struct {
	data []byte
	due  time.Time
}

// direction is one half of a connection: bytes from src, delayed, to dst.
type direction struct {
	src, dst int
	queue    []chunk
	queued   int  // bytes in queue
	ended    bool // src reached its end; dst's writing half is shut once queue empties
	shut     bool
	blocked  bool // dst's buffer is full: wait for EPOLLOUT
}

// pair is one proxied connection: client to server (up) and back (down).
type pair struct {
	client, server int
	up, down       direction
	masks          [2]uint32 // what epoll reports for client and server now
}

func (p *pair) done() bool { return p.up.shut && p.down.shut }

// loop serves every connection on one locked OS thread.
func (l *delayLink) loop() {
	defer l.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Wake at the due time, not up to 50 µs after it (the default slack).
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	pairs := &pairSet{byFD: map[int]*pair{}}
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, 64<<10)
	moderated := false
	defer func() {
		for _, p := range pairs.all {
			closeFDs(p.client, p.server)
		}
	}()
	for {
		timeout := time.Duration(-1)
		if next, ok := nextDue(pairs); ok {
			timeout = max(0, time.Until(next))
		}
		if moderated {
			pause := linkModeration
			if timeout >= 0 {
				pause = min(pause, timeout)
			}
			sleep(pause)
			timeout = 0
		}
		n, err := epollWait(l.epfd, events, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		now := time.Now()
		arrival := now
		if moderated {
			arrival = now.Add(-linkModeration / 2)
		}
		moderated = false
		for _, ev := range events[:max(n, 0)] {
			read, stop := l.serve(pairs, ev, buf, arrival)
			if stop {
				return
			}
			moderated = moderated || read
		}
		l.flushAll(pairs, now)
	}
}

// serve handles one epoll event: accept's wake-up, or a pair's socket
// ready, whose bytes read are due at arrival plus the one-way delay. read
// reports bytes read; stop, that the link is closing.
func (l *delayLink) serve(pairs *pairSet, ev unix.EpollEvent, buf []byte, arrival time.Time) (read, stop bool) {
	fd := int(ev.Fd)
	if fd == l.wakeFD {
		var b [8]byte
		_, _ = unix.Read(l.wakeFD, b[:])
		return false, !l.takeArrived(pairs)
	}
	p := pairs.byFD[fd]
	if p == nil {
		return false, false
	}
	if ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		if fd == p.client {
			p.down.blocked = false
		} else {
			p.up.blocked = false
		}
	}
	if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) == 0 {
		return false, false
	}
	d := &p.up
	if fd == p.server {
		d = &p.down
	}
	read, ok := d.read(buf, arrival.Add(l.oneWay))
	if !ok {
		pairs.drop(p)
	}
	return read, false
}

// flushAll writes what is due of every pair, drops the pairs done or
// broken, and watches the others for what they wait for.
func (l *delayLink) flushAll(pairs *pairSet, now time.Time) {
	for i := 0; i < len(pairs.all); {
		p := pairs.all[i]
		if !p.up.flush(now) || !p.down.flush(now) || p.done() {
			pairs.drop(p)
			continue
		}
		l.watch(p)
		i++
	}
}

// takeArrived registers the pairs accept handed over; false when the link
// is closing.
func (l *delayLink) takeArrived(pairs *pairSet) bool {
	l.mu.Lock()
	arrived, closing := l.arrived, l.closing
	l.arrived = nil
	l.mu.Unlock()
	for _, fds := range arrived {
		if closing {
			closeFDs(fds[0], fds[1])
			continue
		}
		p := &pair{client: fds[0], server: fds[1]}
		p.up = direction{src: p.client, dst: p.server}
		p.down = direction{src: p.server, dst: p.client}
		add := func(fd int) error {
			return unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)})
		}
		if add(p.client) != nil || add(p.server) != nil {
			closeFDs(p.client, p.server)
			continue
		}
		p.masks = [2]uint32{unix.EPOLLIN | unix.EPOLLRDHUP, unix.EPOLLIN | unix.EPOLLRDHUP}
		pairs.byFD[p.client], pairs.byFD[p.server] = p, p
		pairs.all = append(pairs.all, p)
	}
	return !closing
}

// watch sets what epoll reports for p's sockets: readable while their
// direction takes more bytes, writable while a write is blocked.
func (l *delayLink) watch(p *pair) {
	for i, fd := range []int{p.client, p.server} {
		from, to := &p.up, &p.down // fd as the source of from, the destination of to
		if fd == p.server {
			from, to = &p.down, &p.up
		}
		var mask uint32
		if !from.ended && from.queued < linkQueueLimit {
			mask |= unix.EPOLLIN | unix.EPOLLRDHUP
		}
		if to.blocked {
			mask |= unix.EPOLLOUT
		}
		if mask == p.masks[i] {
			continue
		}
		p.masks[i] = mask
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: mask, Fd: int32(fd)})
	}
}

// pairSet is the loop's connections.
type pairSet struct {
	byFD map[int]*pair // by either socket
	all  []*pair
}

// drop closes both sockets of p, as a failed side ends both.
func (ps *pairSet) drop(p *pair) {
	delete(ps.byFD, p.client)
	delete(ps.byFD, p.server)
	if i := slices.Index(ps.all, p); i >= 0 {
		ps.all = slices.Delete(ps.all, i, i+1)
	}
	closeFDs(p.client, p.server)
}

// read takes what src holds, due at due. read says bytes came; ok is false
// when src failed.
func (d *direction) read(buf []byte, due time.Time) (read, ok bool) {
	for !d.ended && d.queued < linkQueueLimit {
		n, err := unix.Read(d.src, buf)
		switch {
		case n > 0:
			d.queue = append(d.queue, chunk{data: append([]byte(nil), buf[:n]...), due: due})
			d.queued += n
			read = true
			if n < len(buf) {
				return read, true // drained, most likely: epoll says if not
			}
		case err == nil: // n == 0: the end of the stream
			d.ended = true
		case errors.Is(err, unix.EAGAIN):
			return read, true
		case errors.Is(err, unix.EINTR):
		default:
			return read, false
		}
	}
	return read, true
}

// flush writes every chunk due by now in one writev, and shuts dst's
// writing half once src has ended and nothing is left; false when dst
// failed.
func (d *direction) flush(now time.Time) bool {
	if d.blocked || d.shut {
		return true
	}
	due := 0
	for due < len(d.queue) && due < 1024 && !d.queue[due].due.After(now) {
		due++
	}
	if due > 0 {
		iovs := make([][]byte, due)
		for i := range due {
			iovs[i] = d.queue[i].data
		}
		n, err := unix.Writev(d.dst, iovs)
		if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return false
		}
		d.queued -= max(n, 0)
		for n > 0 {
			if n < len(d.queue[0].data) {
				d.queue[0].data = d.queue[0].data[n:]
				break
			}
			n -= len(d.queue[0].data)
			d.queue[0] = chunk{}
			d.queue = d.queue[1:]
		}
		if len(d.queue) > 0 && !d.queue[0].due.After(now) {
			d.blocked = true // a short write: the rest when dst takes more
		}
	}
	if d.ended && len(d.queue) == 0 {
		_ = unix.Shutdown(d.dst, unix.SHUT_WR)
		d.shut = true
	}
	return true
}

// nextDue is the earliest due time of a chunk that can be written.
func nextDue(pairs *pairSet) (time.Time, bool) {
	var next time.Time
	found := false
	for _, p := range pairs.all {
		for _, d := range []*direction{&p.up, &p.down} {
			if len(d.queue) > 0 && !d.blocked && (!found || d.queue[0].due.Before(next)) {
				next, found = d.queue[0].due, true
			}
		}
	}
	return next, found
}

// epollWait is epoll_pwait2: a timeout to the nanosecond (epoll_wait's is
// in whole milliseconds); a negative timeout waits for ever.
func epollWait(epfd int, events []unix.EpollEvent, timeout time.Duration) (int, error) {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(timeout.Nanoseconds())
		ts = &t
	}
	n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	if errno == unix.ENOSYS {
		// A kernel before 5.11: whole milliseconds, rounded up.
		ms := -1
		if timeout >= 0 {
			ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
		}
		return unix.EpollWait(epfd, events, ms)
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// sleep waits d with nanosleep: time.Sleep rounds waits below a
// millisecond up to about one.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_ = syscall.Nanosleep(&ts, nil)
}
