// This file proves that restarts lose and duplicate nothing: the source or
// the target restarting under a running gapless, gapless killed with SIGKILL
// at random instants, and a relay log corrupted on disk all end with every
// table of the target equal to the primary.
package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

// restartUnderReplication runs gapless in the background while the primary
// is written, restarts srv in the middle, writes more, and checks that
// gapless catches up, stops with exit 0 on SIGTERM, and the tables are equal.
func restartUnderReplication(t *testing.T, sb *sandboxT, srv *sandbox.Server) {
	t.Helper()
	smallWorkload(t, sb, 800, 21)
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"))...)
	waitApplied(t, sb, gtid.MariaDBPosition{}, 30*time.Second, stderr)
	smallWorkload(t, sb, 1500, 22)

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	smallWorkload(t, sb, 500, 23)

	waitApplied(t, sb, primaryPosition(t, sb), 90*time.Second, stderr)
	r := stopAndRequireExit0(t, cmd.Process.Pid, wait)
	t.Logf("gapless stderr:\n%s", r.stderr)
	requireEqual(t, sb)
}

func TestSourceRestartDuringReplication(t *testing.T) {
	sb := upSandbox(t)
	restartUnderReplication(t, sb, sb.Primary)
}

func TestTargetRestartDuringReplication(t *testing.T) {
	sb := upSandbox(t)
	restartUnderReplication(t, sb, sb.Target)
}

func TestKillAtRandomInstantsThenRestart(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 8000, 31)
	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	relay := filepath.Join(t.TempDir(), "relay")
	for i := range 20 {
		cmd, _, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--batch", "4")...)
		after := time.Duration(50+rng.Intn(351)) * time.Millisecond
		time.Sleep(after)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r := wait()
		if !r.signaled {
			t.Fatalf("run %d exited %d before SIGKILL after %s\nstdout:\n%s\nstderr:\n%s", i, r.code, after, r.stdout, r.stderr)
		}
		pos, err := appliedPosition(context.Background(), sb)
		t.Logf("run %d killed after %s; target position %q (%v)", i, after, pos.String(), err)
	}
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

func TestCorruptRelayLogIsFetchedAgain(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 1000, 41)
	mid := binlogPos(t, sb.Primary)
	smallWorkload(t, sb, 2000, 42)
	relay := filepath.Join(t.TempDir(), "relay")
	r := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", mid)...)
	if r.code != 0 {
		t.Fatalf("gapless replicate --until %s exited %d\nstdout:\n%s\nstderr:\n%s", mid, r.code, r.stdout, r.stderr)
	}

	segments, err := filepath.Glob(filepath.Join(relay, "relay-*.bin"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("no relay segment in %s (%v)", relay, err)
	}
	segment := segments[len(segments)-1]
	data, err := os.ReadFile(segment)
	if err != nil {
		t.Fatal(err)
	}
	at := len(data) / 2
	if at < 1024 {
		t.Fatalf("relay segment %s holds only %d bytes", segment, len(data))
	}
	data[at] ^= 0xff
	if err := os.WriteFile(segment, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d of %s (%d bytes)", at, segment, len(data))

	r = replicateUntilCaughtUp(t, sb, relay)
	t.Logf("gapless stderr:\n%s", r.stderr)
	requireEqual(t, sb)
}

func TestTargetRestartKeepsTheSingleWriterLock(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 200, 51)
	dir := t.TempDir()
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(dir, "relay1"))...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)

	if err := sb.Target.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sb.Target.Start(ctx); err != nil {
		t.Fatal(err)
	}
	smallWorkload(t, sb, 100, 52)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)

	second := gapless(t, nil, append(replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(dir, "relay2")),
		"--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, second, "another gapless is already applying stream \"default\"")

	stopAndRequireExit0(t, cmd.Process.Pid, wait)
	requireEqual(t, sb)
}

// The relay folder's filesystem fills up (a 3 MB tmpfs, root only): as
// MariaDB's IO thread does, receiving waits for space, saying so once, and
// applying goes on with what was received; with room again the same run
// goes on, and the target ends equal.
func TestRelayFolderFullWaitsThenGoesOn(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root, and this test mounts a small tmpfs for the relay folder")
		}
		t.Skip("mounting a small tmpfs for the relay folder needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a 3 MB tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE big", "CREATE TABLE big.t (id INT PRIMARY KEY, pad TEXT) ENGINE=InnoDB")
	for i := range 40 {
		mustExec(t, sb.Primary, fmt.Sprintf("INSERT INTO big.t SELECT seq + %d, REPEAT('x', 200) FROM big.seq_1_to_1000", i*1000))
	}
	relay := filepath.Join(dir, "relay")
	cmd, stderr, wait := background(t, append(replicateArgs(sb.SourceURL, sb.TargetURL, relay), "--until", binlogPos(t, sb.Primary), "--relay-segment-size", "1048576")...)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "the relay folder's filesystem is full; receiving waits for space") {
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			t.Fatalf("gapless did not say it waits for space:\n%s", stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(6 * time.Second) // a try again, still full
	if out, err := exec.Command("mount", "-o", "remount,size=64M", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount the tmpfs larger: %v: %s", err, out)
	}
	r := waitExit(t, cmd, wait, 120*time.Second, "go on once the relay folder had room", stderr)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "the relay folder has room again") {
		t.Errorf("gapless did not say it goes on:\n%s", r.stderr)
	}
	t.Logf("gapless's log:\n%s", r.stderr)
	requireEqual(t, sb)
}
