// packets.go owns the reading of the binlog dump's MySQL packets, once
// COM_BINLOG_DUMP is sent: a 3-byte little-endian payload length, a
// sequence number one more than the packet's before (wrapping at 256), and
// the payload; a payload of maxPayload bytes goes on in the next packet
// (an event larger than 16 MiB). The payload next returns is valid until
// the next call.
//
// Why not the binlog library's packet.Conn.ReadPacketReuseMem: it copies
// every packet three times (its buffered reader, a 16 KiB copy buffer, a
// pooled bytes.Buffer, then the caller's slice) and takes the pooled buffer
// and gives it back, twice per packet; on a busy stream that was a tenth of
// gapless's CPU. Here a packet that lies whole in the buffered reader is
// returned where it lies, and one split over several packets is copied
// once, joined.
package binlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
)

// maxPayload is the largest payload of one MySQL packet; a payload of
// exactly this size goes on in the next packet.
const maxPayload = 1<<24 - 1

// packetBuffer is the size of the buffered reader: a busy source fills it
// with hundreds of events in one read from the socket (and one relay log
// flush, which runs before each read).
const packetBuffer = 256 << 10

// maxKeptPayload: a joined payload's buffer larger than this is not kept
// for the next one (an event larger than 16 MiB is rare).
const maxKeptPayload = 1 << 20

// packetReader reads the dump's packets from the connection.
type packetReader struct {
	in  *bufio.Reader
	seq uint8 // the sequence number the next packet carries
	// held is how many bytes of in's buffer the payload returned last lies
	// in (with its header), given back at the next call; 0 when it was
	// copied to joined.
	held   int
	joined []byte // the last payload split over several packets, joined
}

// newPacketReader reads from conn the packets whose first carries the
// sequence number seq.
func newPacketReader(conn io.Reader, seq uint8) *packetReader {
	return &packetReader{in: bufio.NewReaderSize(conn, packetBuffer), seq: seq}
}

// next returns the next packet's payload, joined when it is split.
func (p *packetReader) next() ([]byte, error) {
	if p.held > 0 {
		p.in.Discard(p.held) // cannot fail: the bytes are buffered
		p.held = 0
	}
	length, err := p.header()
	if err != nil {
		return nil, err
	}
	if length < maxPayload && 4+length <= p.in.Size() {
		packet, err := p.in.Peek(4 + length)
		if err != nil {
			return nil, cutOff(len(packet)-4, length, err)
		}
		p.held = len(packet)
		return packet[4:], nil
	}
	return p.join(length)
}

// join reads a payload of length bytes and, while one is maxPayload long,
// the packets it goes on in, into joined. The packet's header is not read
// yet.
func (p *packetReader) join(length int) ([]byte, error) {
	if cap(p.joined) > maxKeptPayload {
		p.joined = nil
	}
	payload := p.joined[:0]
	for {
		p.in.Discard(4) // its header, which header peeked at
		n := len(payload)
		payload = slices.Grow(payload, length)[:n+length]
		if read, err := io.ReadFull(p.in, payload[n:]); err != nil {
			return nil, cutOff(read, length, err)
		}
		if length < maxPayload {
			p.joined = payload
			return payload, nil
		}
		var err error
		if length, err = p.header(); err != nil {
			return nil, err
		}
	}
}

// header reads the next packet's header, without consuming it, and checks
// its sequence number; it returns the payload's length.
func (p *packetReader) header() (int, error) {
	head, err := p.in.Peek(4)
	if err != nil {
		if len(head) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("binlog dump: reading a packet's header: %w", err)
	}
	if head[3] != p.seq {
		return 0, fmt.Errorf("binlog dump: packet out of order: sequence number %d where %d was due", head[3], p.seq)
	}
	p.seq++
	return int(head[0]) | int(head[1])<<8 | int(head[2])<<16, nil
}

// cutOff is the error of a payload of length bytes that ends after read.
func cutOff(read, length int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("binlog dump: packet cut off after %d of its %d bytes: %w", read, length, err)
}
