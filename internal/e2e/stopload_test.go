// stopload_test.go stops a parallel run again and again under a live
// sysbench load, the way an operator does with gapless stop --http, and
// restarts it each time with the same relay log: the target must end equal
// to the primary, and after every stop the target's binlog must hold
// exactly the position gapless recorded. On a loaded machine (load above
// 10) these runs once ended with one whole sysbench transaction missing on
// the target: the primary had committed it after the --until position was
// read, which sysbenchLoad.stop now waits for.
package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
	"gapless/internal/status"
)

func TestStopRestartCyclesUnderLoad(t *testing.T) {
	stopRestartCycles(t, false)
}

// TestStopRestartCyclesOnASlowTarget is the same with triggers on the
// target that make every row change take a few milliseconds: the stops
// then meet batches still executing after the grace, and roll them back.
func TestStopRestartCyclesOnASlowTarget(t *testing.T) {
	stopRestartCycles(t, true)
}

func stopRestartCycles(t *testing.T, slow bool) {
	sysbench := lookPathOrSkip(t, "sysbench")
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	load := startSysbench(t, sysbench, sb.Primary)

	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	var logs []string
	defer func() {
		if t.Failed() {
			t.Logf("the runs' output:\n%s", strings.Join(logs, "\n"))
		}
	}()
	for i := range 6 {
		addr := freeLoopbackAddr(t)
		_, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--workers", "8", "--http", addr, "-v")...)
		waitUntilHTTP(t, 60*time.Second, "the status API to say running", func() bool {
			st, err := status.Fetch(context.Background(), addr)
			return err == nil && st.State == "running"
		}, stderr)
		time.Sleep(time.Duration(200+rng.Intn(2000)) * time.Millisecond)
		stop := gapless(t, nil, "stop", "--http", addr)
		r := wait()
		logs = append(logs, "run "+itoa(i)+" stdout:\n"+r.stdout+"stderr:\n"+r.stderr)
		if stop.code != 0 || r.code != 0 {
			t.Fatalf("run %d: gapless stop exited %d (%s%s), replicate exited %d", i, stop.code, stop.stdout, stop.stderr, r.code)
		}
		if slow && i == 0 {
			slowTarget(t, sb, true)
		}
		recorded, target := stoppedPositions(t, sb)
		t.Logf("run %d: %s; recorded %s; %s", i, strings.TrimSpace(stop.stdout), recorded, strings.ReplaceAll(strings.TrimSpace(r.stdout), "\n", "; "))
		if recorded != target {
			t.Fatalf("run %d: gapless recorded %s, the target's binlog holds %s", i, recorded, target)
		}
	}
	load.stop()
	if slow {
		slowTarget(t, sb, false)
	}
	r := replicateUntilCaughtUp(t, sb, relay, "-v")
	logs = append(logs, "last run stdout:\n"+r.stdout+"stderr:\n"+r.stderr)
	requireEqual(t, sb)
}

// slowTarget creates (on) or drops triggers on the target's sysbench
// tables that sleep for every row updated, outside the target's binlog.
func slowTarget(t *testing.T, sb *sandboxT, on bool) {
	t.Helper()
	mustExec(t, sb.Target, "SET GLOBAL slave_run_triggers_for_rbr = YES")
	for n := 1; n <= 4; n++ {
		stmt := fmt.Sprintf("CREATE TRIGGER sbtest.slow%d AFTER UPDATE ON sbtest.sbtest%d FOR EACH ROW DO SLEEP(0.003)", n, n)
		if !on {
			stmt = fmt.Sprintf("DROP TRIGGER sbtest.slow%d", n)
		}
		mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", stmt)
	}
}

// stoppedPositions reads the position gapless recorded on the target and
// the source domains of the target's own gtid_binlog_pos.
func stoppedPositions(t *testing.T, sb *sandboxT) (recorded, target string) {
	t.Helper()
	pos, err := appliedPosition(context.Background(), sb)
	if err != nil {
		t.Fatal(err)
	}
	binlog, err := gtid.ParseMariaDBPosition(binlogPos(t, sb.Target))
	if err != nil {
		t.Fatal(err)
	}
	var source gtid.MariaDBPosition
	for _, d := range binlog.Domains() {
		if d != checkpoint.OwnDomain {
			g, _ := binlog.Get(d)
			source.Advance(g)
		}
	}
	return pos.String(), source.String()
}
