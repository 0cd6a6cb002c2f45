// This file owns how an apply connection waits for a script's answers: at
// most a few wake-ups per script, not one per statement.
//
// The server sends each statement's answer of a multi-statement packet as
// soon as the statement ends. A reader that keeps up gets them one by one:
// a batch of 128 sysbench transactions in statements is 640 answers, 640
// reads, and as many times the worker goroutine parks, is woken by the
// poller, and runs again. On W1M that was a third of gapless's CPU.
//
// The wire knows how many answers are still to come, and every answer is at
// least minAnswer bytes (an OK packet with no message). So the socket's
// receive low-water mark (SO_RCVLOWAT) is set to that lower bound: the
// kernel wakes the reader when that many bytes are there, and a read takes
// them all at once. The bound is only a lower bound, so the reader never
// waits for bytes that will not come, with one exception: an error ends a
// script early, and its answer is the last. For that case (and a slow
// statement), a wait is bounded; then the reader takes what is there, as
// before. The bound grows with the time the script's answers have been
// awaited (lowatWait at first, at most lowatMaxWait): a script of 16 ms
// woke its reader every 2 ms, 8 times, each a timer, two setsockopt calls
// and two or three reads (on W1 9 000 times a run, about 3% of gapless's
// CPU), and now 3 or 4 times (W1's 1 182 scripts cost 8 400 setsockopt
// calls a run, not 18 000); an error that ends a script is read at most
// about as long after it came as the script had run before it.
//
// A reader that does not read also holds the target's answers back: the
// target sends each answer in a segment of its own and keeps only so many
// unacknowledged (its congestion window, 12 on the loopback, seen with
// ss), and the reader's kernel delays its acknowledgements, up to 40 ms,
// until the reader reads. So a long script's answers come a dozen at a
// time, the rest waiting in the target's socket for the next read, and the
// last ones come only after a read made after the script ended. A first
// wait as long as the script was expected to take at the pace of the
// connection's last script woke the reader once a script, but held its
// last answers until the wait ran out: W1 under --policy commit-id, where
// each script waits for the one before, took 9% longer, and as long as
// the other builds once the loopback route acknowledged every segment
// (quickack 1). A first wait a little shorter than the script's expected
// time, then one until its end, saved no CPU measurable on W1; neither was
// kept. Acknowledging without a read does not help: the kernel sends a
// pending acknowledgement (TCP_QUICKACK, as on a read) only once the
// receive queue is drained, so only a read near a script's end gets its
// last answers promptly.
package target

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// minAnswer is the smallest answer to a statement: a 4-byte packet header
// and an OK packet of 7 bytes (header byte, affected rows, insert id,
// status, warnings). An error packet is longer.
const minAnswer = 11

// lowatMax bounds the low-water mark: well under a socket's receive
// buffer, and the most one read of the packet reader's buffer takes.
const lowatMax = 32 << 10

// lowatWait is the longest a read waits for its low-water mark before it
// takes the bytes that are there while a script's answers have been awaited
// for less than that; later a read waits as long as they have been awaited,
// up to lowatMaxWait. That is what an error in the middle of a script (after
// which nothing more comes) costs at most.
const (
	lowatWait    = 2 * time.Millisecond
	lowatMaxWait = 32 * time.Millisecond
)

// lowatConn is a TCP connection whose reads wait for the bytes the wire
// expects. want is set by the wire before it reads answers; zero (any other
// use of the connection) reads as a plain TCP connection does.
type lowatConn struct {
	*net.TCPConn
	raw syscall.RawConn
	// want is the fewest bytes still to come on the connection.
	want int
	// mark is the SO_RCVLOWAT in force; 1 is the kernel's default.
	mark int
	// since is when the answers now awaited began to be (want went from
	// zero to more).
	since time.Time
	// broken: setting the mark failed once; reads are plain from then on.
	broken bool
}

// newLowatConn wraps conn, or returns it as it is when it is not TCP.
func newLowatConn(conn net.Conn) net.Conn {
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return conn
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return conn
	}
	return &lowatConn{TCPConn: tcp, raw: raw, mark: 1}
}

// expect tells the connection that at least answers statement answers are
// still to come, the first of which may be partly read already.
func (c *lowatConn) expect(answers int) {
	if answers <= 0 {
		c.want = 0
		return
	}
	if c.want == 0 {
		c.since = time.Now()
	}
	c.want = 1 + minAnswer*(answers-1)
}

// wait is how long a read waits for its mark at now: as long as the
// answers have been awaited, at least lowatWait, at most lowatMaxWait.
func (c *lowatConn) wait(now time.Time) time.Duration {
	return min(max(now.Sub(c.since), lowatWait), lowatMaxWait)
}

func (c *lowatConn) Read(p []byte) (int, error) {
	c.setMark(max(1, min(c.want, len(p), lowatMax)))
	if c.mark == 1 {
		return c.TCPConn.Read(p)
	}
	now := time.Now()
	c.TCPConn.SetReadDeadline(now.Add(c.wait(now)))
	n, err := c.TCPConn.Read(p)
	c.TCPConn.SetReadDeadline(time.Time{})
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	// Fewer bytes than the mark came in time: take what is there, or the
	// next byte that comes.
	if c.setMark(1); c.mark != 1 {
		return 0, fmt.Errorf("cannot lower the connection's SO_RCVLOWAT from %d to 1", c.mark)
	}
	return c.TCPConn.Read(p)
}

// setMark sets the socket's SO_RCVLOWAT to mark. A failure leaves the mark
// as it was and turns raising it off for good: reads then wake per packet,
// as without marks.
func (c *lowatConn) setMark(mark int) {
	if c.mark == mark || c.broken && mark > 1 {
		return
	}
	var err error
	if cerr := c.raw.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, mark)
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		c.broken = true
		return
	}
	c.mark = mark
}
