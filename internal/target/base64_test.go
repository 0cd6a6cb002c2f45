package target

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// TestEncodeBase64 compares encodeBase64 with encoding/base64 on every
// length up to 100 and on random lengths, bytes random, appended after a
// prefix.
func TestEncodeBase64(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 7))
	for n := range 2000 {
		if n > 100 {
			n = r.IntN(1 << 16)
		}
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		want := "ab" + base64.StdEncoding.EncodeToString(src)
		dst := make([]byte, 2, 2+base64.StdEncoding.EncodedLen(n))
		copy(dst, "ab")
		if got := encodeBase64(dst, src); !bytes.Equal(got, []byte(want)) {
			t.Fatalf("%d bytes: %q, want %q", n, got, want)
		}
	}
}

func BenchmarkEncodeBase64(b *testing.B) {
	src := bytes.Repeat([]byte("gapless row image \x00\xff\x10"), 1000)
	dst := make([]byte, 0, base64.StdEncoding.EncodedLen(len(src)))
	b.SetBytes(int64(len(src)))
	b.Run("gapless", func(b *testing.B) {
		for b.Loop() {
			encodeBase64(dst[:0], src)
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			base64.StdEncoding.Encode(dst[:cap(dst)], src)
		}
	})
}
