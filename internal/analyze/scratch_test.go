package analyze

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestScratchRead(t *testing.T) {
	pat := os.Getenv("SCRATCH_BINLOG")
	if pat == "" {
		t.Skip()
	}
	paths, _ := filepath.Glob(pat)
	src := newFileSource(paths)
	a := newAssembler()
	start := time.Now()
	var n, rows int
	decode := os.Getenv("SCRATCH_DECODE") != ""
	for {
		raw, err := src.next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ti, err := a.add(raw)
		if err != nil {
			t.Fatal(err)
		}
		if ti != nil {
			n++
			if decode {
				if err := ti.decodeRows(); err != nil {
					t.Fatal(err)
				}
				rows += ti.rows
			}
		}
	}
	el := time.Since(start)
	t.Logf("%d txns, %d rows, %d bytes in %v: %.1f MB/s", n, rows, src.bytes, el, float64(src.bytes)/1e6/el.Seconds())
}

func TestScratchFull(t *testing.T) {
	pat := os.Getenv("SCRATCH_BINLOG")
	if pat == "" {
		t.Skip()
	}
	paths, _ := filepath.Glob(pat)
	r, err := Files(context.Background(), paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.WriteText(os.Stdout)
}
