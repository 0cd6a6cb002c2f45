// guards_test.go checks the runs replicate refuses before writing anything:
// a target that is the source, a --server-id that is the source's, a relay
// folder another gapless holds; and that the relay folder and its files are
// private to their owner.
package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/sandbox"
)

func TestGuardsRefuseTheSourceAsTargetItsServerIDAndASharedRelayDir(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 100, 71)
	dir := t.TempDir()
	before := binlogPos(t, sb.Primary)

	// The source as its own target (an account that could write there).
	self := sb.Primary.URL(sandbox.ApplierUser, sandbox.ApplierPassword)
	r := gapless(t, nil, replicateArgs(sb.SourceURL, self, filepath.Join(dir, "relay0"), "--until", before)...)
	requireRefused(t, r, "--target names the source itself", "server_id "+strconv.Itoa(int(sb.Primary.ServerID())))
	var n int
	if err := rootDB(t, sb.Primary).QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", checkpoint.Schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || binlogPos(t, sb.Primary) != before {
		t.Errorf("the refused run wrote to the primary (gapless schema: %d, binlog %s, was %s)", n, binlogPos(t, sb.Primary), before)
	}

	// The source's own server id.
	r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(dir, "relay0"), "--until", before,
		"--server-id", strconv.Itoa(int(sb.Primary.ServerID())))...)
	requireRefused(t, r, "--server-id", "the source's own @@server_id")
	requireNothingApplied(t, sb, "w")

	// A relay folder held by a running gapless, even for another stream.
	relay := filepath.Join(dir, "relay")
	first, firstErr, waitFirst := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--stream", "a")...)
	waitAppliedStream(t, sb, "a", firstErr)
	r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--stream", "b", "--until", before)...)
	requireRefused(t, r, "relay directory "+relay+" is in use by gapless pid "+strconv.Itoa(first.Process.Pid), `stream "a"`, "--relay-dir")

	// Private: the folder 0700, every file in it 0600.
	info, err := os.Stat(relay)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("relay directory mode %o, want 700", perm)
	}
	entries, _ := os.ReadDir(relay)
	if len(entries) < 2 {
		t.Errorf("the relay directory holds %d files, want a segment and the lock", len(entries))
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("relay file %s mode %o, readable by others", e.Name(), perm)
		}
	}
	stopAndRequireExit0(t, first.Process.Pid, waitFirst)

	// Once the first has ended, the folder is free again.
	r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--stream", "a", "--until", binlogPos(t, sb.Primary))...)
	if r.code != 0 {
		t.Fatalf("replicate after the first ended exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// waitAppliedStream waits until stream holds a position on the target.
func waitAppliedStream(t *testing.T, sb *sandboxT, stream string, stderr interface{ String() string }) {
	t.Helper()
	db := rootDB(t, sb.Target)
	deadline := time.Now().Add(30 * time.Second)
	for {
		pos, err := checkpoint.ForStream(db, stream).Position(t.Context())
		if err == nil && !pos.IsEmpty() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s has no position after 30 s (%v)\n%s", stream, err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
