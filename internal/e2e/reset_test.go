// reset_test.go follows, to the letter, the advice gapless gives when the
// source has purged the binlogs the target needs: re-seed the target from a
// dump of the source, clear the old position with `gapless reset`, run again
// from the dump's GTID position; then the target equals the source. It also
// checks that --start-position is refused, not ignored, while a position
// exists, and that reset refuses under a running applier.
package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gapless/internal/gtid"
)

// dumpPosition is the GTID position a mariadb-dump --gtid --master-data=2 names.
var dumpPosition = regexp.MustCompile(`(?m)^-- SET GLOBAL gtid_slave_pos='([^']*)';`)

func TestRecoveryAfterTheSourcePurgedFollowsTheMessage(t *testing.T) {
	dumpBin, err := exec.LookPath("mariadb-dump")
	if err != nil {
		t.Skip("mariadb-dump is not installed")
	}
	clientBin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed")
	}
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 100, 61)
	replicateUntilCaughtUp(t, sb, relay)

	// The source writes on and purges past the target's position.
	smallWorkload(t, sb, 100, 62)
	purgeBinlogs(t, sb.Primary)
	smallWorkload(t, sb, 20, 63)
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "no longer has the binlogs", "re-seed the target", "mariadb-dump --gtid --master-data", "gapless reset --target", "--start-position")

	// Re-seed: a dump of the source, loaded into the target outside its binlog.
	var dump, dumpErr bytes.Buffer
	cmd := exec.Command(dumpBin, "--user=root", "--socket="+sb.Primary.Socket, "--gtid", "--master-data=2",
		"--single-transaction", "--databases", "w")
	cmd.Stdout, cmd.Stderr = &dump, &dumpErr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, dumpErr.String())
	}
	m := dumpPosition.FindSubmatch(dump.Bytes())
	if m == nil {
		t.Fatalf("the dump names no gtid_slave_pos:\n%.2000s", dump.String())
	}
	position := string(m[1])
	t.Logf("dump position %s", position)
	load := exec.Command(clientBin, "--user=root", "--socket="+sb.Target.Socket)
	load.Stdin = strings.NewReader("SET SESSION sql_log_bin=0;\n" + dump.String())
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("loading the dump into the target: %v\n%s", err, out)
	}
	smallWorkload(t, sb, 50, 64) // after the dump: must come from the binlog

	// --start-position while the old position is there: refused, naming reset.
	r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary), "--start-position", position)...)
	requireRefused(t, r, "--start-position "+position, "already holds position", "gapless reset --target URL --stream default")

	r = gapless(t, nil, "reset", "--target", sb.TargetURL)
	if r.code != 0 || !strings.Contains(r.stdout, "removed position") {
		t.Fatalf("gapless reset exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("reset: %s", strings.TrimSpace(r.stdout))
	if strings.Contains(r.stdout, "gapless:gapless") {
		t.Errorf("reset printed the target's password:\n%s", r.stdout)
	}
	r = gapless(t, nil, "reset", "--target", sb.TargetURL)
	requireRefused(t, r, `stream "default" has no position`)

	replicateUntilCaughtUp(t, sb, relay, "--start-position", position)
	requireEqual(t, sb)
	r = gapless(t, nil, "verify", "--source", sb.SourceURL, "--target", sb.TargetURL)
	if r.code != 0 {
		t.Fatalf("gapless verify exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The same --start-position again is the position held: accepted.
	replicateUntilCaughtUp(t, sb, relay, "--start-position", binlogPos(t, sb.Primary))

	// Never under a running applier.
	first, firstErr, waitFirst := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay)...)
	smallWorkload(t, sb, 20, 65)
	waitApplied(t, sb, primaryPosition(t, sb), 30*time.Second, firstErr)
	r = gapless(t, nil, "reset", "--target", sb.TargetURL)
	requireRefused(t, r, "reset of stream \"default\" refused", "another gapless is already applying")
	stopAndRequireExit0(t, first.Process.Pid, waitFirst)
	pos, err := gtid.ParseMariaDBPosition(binlogPos(t, sb.Primary))
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, sb, pos, 5*time.Second, firstErr)
}
