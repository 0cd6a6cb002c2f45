package binlog

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/packet"
	"github.com/go-mysql-org/go-mysql/replication"
)

// appendPackets appends payload to stream as the source sends it: in
// packets of maxPayload bytes at most, one shorter (maybe empty) last,
// numbered on from *seq.
func appendPackets(stream []byte, seq *uint8, payload []byte) []byte {
	for {
		n := min(len(payload), maxPayload)
		stream = append(stream, byte(n), byte(n>>8), byte(n>>16), *seq)
		stream = append(stream, payload[:n]...)
		*seq++
		payload = payload[n:]
		if n < maxPayload {
			return stream
		}
	}
}

// payloadOf is a payload of n bytes that differs from its neighbours.
func payloadOf(n int, mark byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = mark + byte(i*7)
	}
	return p
}

// readAll reads want payloads from stream, checking each.
func readAll(t *testing.T, p *packetReader, want [][]byte) {
	t.Helper()
	for i, w := range want {
		got, err := p.next()
		if err != nil {
			t.Fatalf("payload %d of %d bytes: %v", i, len(w), err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("payload %d: got %d bytes, want %d (equal: %v)", i, len(got), len(w), bytes.Equal(got, w))
		}
	}
}

// TestPacketReaderReadsPackets: payloads of all sizes, numbered past 255,
// come back whole and in order, those larger than the buffer too.
func TestPacketReaderReadsPackets(t *testing.T) {
	var stream []byte
	var want [][]byte
	seq := uint8(1)
	sizes := []int{0, 1, 19, 300, 600, packetBuffer - 4, packetBuffer - 3, packetBuffer, 3*packetBuffer + 5}
	for i := range 300 {
		p := payloadOf(sizes[i%len(sizes)], byte(i))
		want = append(want, p)
		stream = appendPackets(stream, &seq, p)
	}
	readAll(t, newPacketReader(bytes.NewReader(stream), 1), want)
}

// TestPacketReaderJoinsSplitPayloads: a payload of exactly maxPayload bytes
// comes in two packets, the second empty; one a little longer, in two; the
// packets after go on.
func TestPacketReaderJoinsSplitPayloads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 64 MiB of packets")
	}
	var stream []byte
	seq := uint8(250)
	want := [][]byte{payloadOf(maxPayload, 1), payloadOf(10, 2), payloadOf(maxPayload+10, 3), payloadOf(300, 4)}
	for _, p := range want {
		stream = appendPackets(stream, &seq, p)
	}
	if !bytes.Equal(stream[maxPayload+4:maxPayload+8], []byte{0, 0, 0, 251}) {
		t.Fatalf("the payload of maxPayload bytes is not followed by an empty packet: % x", stream[maxPayload+4:maxPayload+8])
	}
	readAll(t, newPacketReader(bytes.NewReader(stream), 250), want)
}

// TestPacketReaderRefusesAPacketOutOfOrder: a sequence number that is not
// one more than the packet's before is an error, not a payload.
func TestPacketReaderRefusesAPacketOutOfOrder(t *testing.T) {
	var stream []byte
	seq := uint8(255)
	stream = appendPackets(stream, &seq, payloadOf(30, 1)) // 255
	stream = appendPackets(stream, &seq, payloadOf(30, 2)) // 0
	seq = 2
	stream = appendPackets(stream, &seq, payloadOf(30, 3)) // 2, where 1 is due
	p := newPacketReader(bytes.NewReader(stream), 255)
	readAll(t, p, [][]byte{payloadOf(30, 1), payloadOf(30, 2)})
	_, err := p.next()
	if err == nil || !strings.Contains(err.Error(), "sequence number 2 where 1 was due") {
		t.Fatalf("got %v, want an error naming the sequence numbers", err)
	}
}

// TestPacketReaderEndsOnATornPacket: a stream that ends amid a header or a
// payload (the source gone) is an error, not a hang nor a short payload.
func TestPacketReaderEndsOnATornPacket(t *testing.T) {
	var whole []byte
	seq := uint8(1)
	whole = appendPackets(whole, &seq, payloadOf(100, 1))
	whole = appendPackets(whole, &seq, payloadOf(packetBuffer+100, 2))
	for _, cut := range []int{0, 2, 4 + 40, 104, 104 + 2, 104 + 4 + 1000} {
		p := newPacketReader(bytes.NewReader(whole[:cut]), 1)
		var err error
		for err == nil {
			_, err = p.next()
		}
		switch {
		case cut == 0 || cut == 104:
			if !errors.Is(err, io.EOF) {
				t.Errorf("cut at %d, between packets: got %v, want EOF", cut, err)
			}
		case !errors.Is(err, io.ErrUnexpectedEOF):
			t.Errorf("cut at %d, amid a packet: got %v, want an unexpected EOF", cut, err)
		}
	}
}

// TestPacketReaderEndsWithItsConnection: closing the connection (the end
// of the receiver's context) ends a read that waits for the source.
func TestPacketReaderEndsWithItsConnection(t *testing.T) {
	ours, source := net.Pipe()
	defer source.Close()
	done := make(chan error, 1)
	go func() {
		_, err := newPacketReader(ours, 1).next()
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ours.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read on a closed connection returned a packet")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the connection did not end the read")
	}
}

// TestPacketReaderFlushesBeforeEachRead: the dump's beforeRead (the relay
// log's flush) runs before each read from the socket, not per packet: once
// for packets that came together, again before waiting for more.
func TestPacketReaderFlushesBeforeEachRead(t *testing.T) {
	ours, source := net.Pipe()
	defer source.Close()
	var reads atomic.Int32
	guard := &dumpConn{beforeRead: func() error { reads.Add(1); return nil }}
	p := newPacketReader(hookedConn{Conn: ours, d: guard}, 1)
	var stream []byte
	seq := uint8(1)
	want := [][]byte{payloadOf(50, 1), payloadOf(600, 2), payloadOf(70, 3)}
	for _, w := range want {
		stream = appendPackets(stream, &seq, w)
	}
	go source.Write(stream)
	readAll(t, p, want)
	if n := reads.Load(); n != 1 {
		t.Fatalf("beforeRead ran %d times for three packets sent together, want once", n)
	}
	done := make(chan struct{})
	go func() { p.next(); close(done) }()
	waitFor(t, 5*time.Second, "beforeRead to run before waiting for the next packet", func() bool { return reads.Load() == 2 })
	ours.Close()
	<-done
}

// TestDumpStreamReadsEvents: the dump passes events on, leaves EOF packets
// out and turns an ERR packet into the source's *mysql.MyError.
func TestDumpStreamReadsEvents(t *testing.T) {
	e := newEncoder()
	events := [][]byte{e.format(), e.query("db", "CREATE TABLE t (a INT)"), e.query("db", strings.Repeat("x", packetBuffer))}
	var stream []byte
	seq := uint8(1)
	for _, ev := range events {
		stream = appendPackets(stream, &seq, append([]byte{mysql.OK_HEADER}, ev...))
		stream = appendPackets(stream, &seq, []byte{mysql.EOF_HEADER, 0, 0, 0, 0})
	}
	errPacket := []byte{mysql.ERR_HEADER, 0xd4, 0x04} // 1236
	stream = appendPackets(stream, &seq, append(errPacket, "#HY000could not find GTID state"...))
	d := &dumpStream{conn: &client.Conn{}, guard: &dumpConn{}, packets: newPacketReader(bytes.NewReader(stream), 1)}
	for i, want := range events {
		ev, err := d.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !bytes.Equal(ev.RawData, want) {
			t.Fatalf("event %d: %s of %d bytes, want %d", i, ev.Header.EventType, len(ev.RawData), len(want))
		}
	}
	if !d.crc {
		t.Fatal("the format description's checksum flag was not read")
	}
	_, err := d.next()
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG || !strings.Contains(me.Message, "could not find GTID state") {
		t.Fatalf("got %v (%T), want the source's error 1236", err, err)
	}
	if _, err := d.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the stream's end: %v, want EOF", err)
	}
}

// TestDumpStreamChecksums: the dump checks the checksum of the events the
// receiver reads (a GTID event damaged on the way stops it) and leaves
// those of row events and table maps, stored as they came, to the relay
// log's reader, which checks every event's before it decodes it
// (TestRelayIntegrity's damaged row event).
func TestDumpStreamChecksums(t *testing.T) {
	damaged := func(ev []byte) []byte {
		ev = bytes.Clone(ev)
		ev[len(ev)-checksumSize-1] ^= 0x01
		return ev
	}
	stream := func(events ...[]byte) *dumpStream {
		var stream []byte
		seq := uint8(1)
		for _, ev := range events {
			stream = appendPackets(stream, &seq, append([]byte{mysql.OK_HEADER}, ev...))
		}
		return &dumpStream{conn: &client.Conn{}, guard: &dumpConn{}, packets: newPacketReader(bytes.NewReader(stream), 1)}
	}
	e := newEncoder()
	tableMap, rows := damaged(e.tableMap(7, "db", "t")), damaged(e.writeRows(replication.WRITE_ROWS_EVENTv1, 7, 1, 2))
	d := stream(e.format(), e.mariaGTID(1, 0, 0, 0), tableMap, rows, e.xid(1))
	for i := range 5 {
		ev, err := d.next()
		if err != nil {
			t.Fatalf("event %d: %v, want a damaged row event or table map passed on to the relay log", i, err)
		}
		if i == 2 && !bytes.Equal(ev.RawData, tableMap) || i == 3 && !bytes.Equal(ev.RawData, rows) {
			t.Fatalf("event %d: %s passed on changed", i, ev.Header.EventType)
		}
	}
	if checksumHolds(rows) || checksumHolds(tableMap) {
		t.Fatal("the damaged events' checksums hold")
	}
	d = stream(e.format(), damaged(e.mariaGTID(2, 0, 0, 0)))
	if _, err := d.next(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.next(); !errors.Is(err, replication.ErrChecksumMismatch) {
		t.Fatalf("a damaged GTID event: %v, want a checksum mismatch", err)
	}
}

// BenchmarkDumpPackets reads a stream of binlog events of 50 to 600 bytes
// in MySQL packets with the binlog library's packet reader (as the dump read
// them before packets.go) and with packetReader; an op is one event. The
// stream comes over loopback TCP, sent by a goroutine, or from memory
// (the readers' own CPU alone, without the kernel's copy).
func BenchmarkDumpPackets(b *testing.B) {
	// 4096 packets, a multiple of 256: the stream sent again and again
	// keeps its sequence numbers in order.
	var stream []byte
	seq := uint8(1)
	for i := range 4096 {
		stream = appendPackets(stream, &seq, payloadOf(50+(i*7919)%551, byte(i)))
	}
	for _, source := range []struct {
		name string
		conn func(b *testing.B, stream []byte) net.Conn
	}{{"tcp", streamOverTCP}, {"memory", streamFromMemory}} {
		b.Run(source.name+"/go-mysql", func(b *testing.B) {
			c := packet.NewBufferedConn(source.conn(b, stream), 64<<10) // as client.Conn makes it
			c.Sequence = 1
			var buf []byte
			b.ReportAllocs()
			b.SetBytes(int64(len(stream) / 4096))
			b.ResetTimer()
			for range b.N {
				p, err := c.ReadPacketReuseMem(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				buf = p
			}
		})
		b.Run(source.name+"/packetReader", func(b *testing.B) {
			p := newPacketReader(source.conn(b, stream), 1)
			b.ReportAllocs()
			b.SetBytes(int64(len(stream) / 4096))
			b.ResetTimer()
			for range b.N {
				if _, err := p.next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// repeatedStream is a connection that reads stream over and over.
type repeatedStream struct {
	net.Conn // nil: only Read is called
	stream   []byte
	at       int
}

func (r *repeatedStream) Read(p []byte) (int, error) {
	n := copy(p, r.stream[r.at:])
	r.at = (r.at + n) % len(r.stream)
	return n, nil
}

func streamFromMemory(b *testing.B, stream []byte) net.Conn {
	return &repeatedStream{stream: stream}
}

// streamOverTCP is the reading end of a loopback TCP connection on whose
// other end a goroutine writes stream over and over, until the benchmark ends.
func streamOverTCP(b *testing.B, stream []byte) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	// Accepted before the listener closes, which would reset a connection
	// still in its queue.
	source, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer source.Close()
		for {
			if _, err := source.Write(stream); err != nil {
				return
			}
		}
	}()
	return conn
}
