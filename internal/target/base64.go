// base64.go encodes the events of BINLOG statements in base64, the
// standard alphabet with padding, as encoding/base64's StdEncoding does,
// byte for byte, in about half its time: twelve bits become two characters
// by one look-up in a table of 4096 pairs, and eight characters are
// stored at once. Every byte of a row event crosses it, so it is a good
// part of what building a script costs.
package target

import (
	"encoding/base64"
	"encoding/binary"
)

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
