// base64.go encodes the events of BINLOG statements in base64, the
// standard alphabet with padding, as encoding/base64's StdEncoding does,
// byte for byte. Every byte of a row event crosses it, so it is a good part
// of what building a script costs (a tenth of gapless's CPU on wide
// transactions before the vector encoder).
//
// Two encoders: a scalar one, in about half encoding/base64's time (twelve
// bits become two characters by one look-up in a table of 4096 pairs, and
// eight characters are stored at once), and, for runs of vectorRun bytes
// or more, segmentio/asm's AVX2 encoder, two to three times faster again
// on a statement's few kilobytes (it costs about 150 ns a call here, so
// short runs stay scalar). A statement's events lie apart in memory,
// so they are first copied into one run (appendBase64): the copy costs a
// tenth of what the vector encoder saves.
package target

import (
	"encoding/base64"
	"encoding/binary"
	"runtime"
	"sync"

	vector "github.com/segmentio/asm/base64"
	"golang.org/x/sys/cpu"
)

// vectorOK: the library has a vector encoder for this CPU (AVX2, or
// arm64's NEON); without one it would fall back to encoding/base64,
// slower than the scalar encoder here.
var vectorOK = runtime.GOARCH == "amd64" && cpu.X86.HasAVX2 || runtime.GOARCH == "arm64"

// vectorRun is the shortest run the vector encoder takes: below it the
// scalar encoder is as fast (BenchmarkAppendBase64).
const vectorRun = 768

// runs are the buffers appendBase64 gathers parts into.
var runs = sync.Pool{New: func() any { return new([]byte) }}

// appendBase64 appends the base64 encoding of parts, taken as one run of
// bytes, to dst, which must have the room. A short run's parts are encoded
// where they lie: only the up to two bytes that straddle two parts are
// copied; a long one's are copied into one run first, for the vector
// encoder.
func appendBase64(dst []byte, parts [][]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n >= vectorRun && vectorOK {
		if len(parts) == 1 {
			return appendVector(dst, parts[0])
		}
		run := runs.Get().(*[]byte)
		*run = (*run)[:0]
		for _, p := range parts {
			*run = append(*run, p...)
		}
		dst = appendVector(dst, *run)
		if cap(*run) <= 1<<20 {
			runs.Put(run)
		}
		return dst
	}
	var carry [3]byte
	held := 0 // bytes of carry in use
	for _, p := range parts {
		if held > 0 {
			k := copy(carry[held:], p)
			held += k
			p = p[k:]
			if held < 3 {
				continue
			}
			dst = encodeBase64(dst, carry[:])
			held = 0
		}
		whole := len(p) / 3 * 3
		dst = encodeBase64(dst, p[:whole])
		held = copy(carry[:], p[whole:])
	}
	return encodeBase64(dst, carry[:held])
}

// appendVector appends the base64 encoding of src to dst, which must have
// the room, with the vector encoder.
func appendVector(dst, src []byte) []byte {
	at := len(dst)
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = dst[:at+n]
	vector.StdEncoding.Encode(dst[at:], src)
	return dst
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// base64Pairs[v] is the two characters of the twelve bits v.
var base64Pairs = func() (t [4096]uint16) {
	for v := range t {
		t[v] = uint16(base64Alphabet[v>>6]) | uint16(base64Alphabet[v&63])<<8
	}
	return t
}()

// encodeBase64 appends the base64 encoding of src to dst, which must have
// the room (base64.StdEncoding.EncodedLen(len(src)) more bytes).
func encodeBase64(dst, src []byte) []byte {
	at := len(dst)
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = dst[:at+n]
	out := dst[at:]
	// Six bytes (48 bits, four pairs) at a time, read as eight: the last
	// two belong to the next round, so a round needs eight bytes left.
	// Two rounds a turn while fourteen are left: the loop's own work and
	// its bounds checks are paid once for both.
	for len(src) >= 14 && len(out) >= 16 {
		binary.LittleEndian.PutUint64(out, base64Quad(binary.BigEndian.Uint64(src)))
		binary.LittleEndian.PutUint64(out[8:], base64Quad(binary.BigEndian.Uint64(src[6:])))
		src, out = src[12:], out[16:]
	}
	for len(src) >= 8 && len(out) >= 8 {
		binary.LittleEndian.PutUint64(out, base64Quad(binary.BigEndian.Uint64(src)))
		src, out = src[6:], out[8:]
	}
	base64.StdEncoding.Encode(out, src)
	return dst
}

// base64Quad is the eight characters of v's top 48 bits, first in the
// low byte.
func base64Quad(v uint64) uint64 {
	return uint64(base64Pairs[v>>52&0xFFF]) | uint64(base64Pairs[v>>40&0xFFF])<<16 |
		uint64(base64Pairs[v>>28&0xFFF])<<32 | uint64(base64Pairs[v>>16&0xFFF])<<48
}
