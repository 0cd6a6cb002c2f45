// version_test.go checks what --version prints, with and without the linker's stamp.
package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestVersionNamesVersionCommitAndGo(t *testing.T) {
	out, err := runCommand(newRootCmd(), "--version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "gapless ") || !strings.Contains(out, "commit ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version printed %q", out)
	}
}

// TestVersionFromLinkerFlag builds the binary as a release would and runs it.
func TestVersionFromLinkerFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "gapless")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc123 -X main.date=2026-11-29T01:02:03Z", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("gapless --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "gapless v9.8.7 (commit abc123, built 2026-11-29T01:02:03Z, go") {
		t.Errorf("gapless --version printed %q", out)
	}
}
