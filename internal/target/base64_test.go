package target

import (
	"bytes"
	"encoding/base64"
	"fmt"
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

// TestAppendBase64 compares appendBase64 with encoding/base64 over the
// parts' bytes one after the other, runs short and long (both encoders),
// cut into random parts, some empty.
func TestAppendBase64(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2))
	for range 3000 {
		n := r.IntN(3 * vectorRun)
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		var parts [][]byte
		for at := 0; at < n || len(parts) == 0; {
			k := min(n-at, r.IntN(400))
			parts = append(parts, src[at:at+k])
			at += k
		}
		want := "ab" + base64.StdEncoding.EncodeToString(src)
		dst := make([]byte, 2, 2+base64.StdEncoding.EncodedLen(n))
		copy(dst, "ab")
		if got := appendBase64(dst, parts); !bytes.Equal(got, []byte(want)) {
			t.Fatalf("%d bytes in %d parts: %q, want %q", n, len(parts), got, want)
		}
	}
}

// BenchmarkAppendBase64 encodes a statement's events: parts of 40 to 400
// bytes, as table maps and row events are, in runs of 200 bytes to 16 KiB.
func BenchmarkAppendBase64(b *testing.B) {
	for _, n := range []int{200, 500, 768, 1000, 2000, 4000, 16000} {
		src := bytes.Repeat([]byte("gapless row image \x00\xff\x10"), n/21+1)[:n]
		var parts [][]byte
		for at, k := 0, 0; at < n; at, k = at+min(n-at, 40+k%360), k+97 {
			parts = append(parts, src[at:at+min(n-at, 40+k%360)])
		}
		dst := make([]byte, 0, base64.StdEncoding.EncodedLen(n))
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				appendBase64(dst[:0], parts)
			}
		})
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
