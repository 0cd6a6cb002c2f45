// causal_test.go proves that a run passes the groups a run before applied
// past a gap (causal commit order, ended amid a gap by a kill), under
// either commit order: it applies none of them again, reaches an --until
// that is one of them, and keeps them in its position rows until its
// position passes them, so that a third run does not apply them again.
package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/gtid"
)

func TestRunPassesGroupsAppliedPastAGap(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE gap",
		"CREATE TABLE gap.c (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO gap.c SELECT seq, 0 FROM gap.seq_1_to_10")
	// Ten groups, one row each: groups[i] adds 1 to row i+1.
	var groups []string
	for i := 1; i <= 10; i++ {
		mustExec(t, sb.Primary, fmt.Sprintf("UPDATE gap.c SET n = n + 1 WHERE id = %d", i))
		groups = append(groups, binlogPos(t, sb.Primary))
	}
	for _, order := range []string{"strict", "causal"} {
		t.Run(order, func(t *testing.T) {
			resetTarget(t, sb)
			mustExec(t, sb.Target, "DROP DATABASE IF EXISTS gap")
			relay := filepath.Join(t.TempDir(), "relay")
			replicateUntilCaughtUp(t, sb, relay, "--no-target-binlog")

			// What a causal run killed amid a gap leaves: everything up to
			// the third group, and the sixth, seventh and tenth past the
			// gap; the row of the tenth, in the slot the next run's first
			// job takes, lists the others.
			mustExec(t, sb.Target,
				"SET SESSION sql_log_bin = 0",
				"UPDATE gap.c SET n = 0 WHERE id IN (4, 5, 8, 9)",
				"DELETE FROM gapless.checkpoint",
				fmt.Sprintf("INSERT INTO gapless.checkpoint (stream, domain_id, slot, server_id, seq_no, source_time, applied_at, low_water, above) "+
					"VALUES ('default', 0, 7, %s, %s, 0, NOW(), '%s', '%s')",
					gtidPart(t, groups[9], 1), gtidPart(t, groups[9], 2), groups[2], groups[5]+","+groups[6]))
			args := []string{"--no-target-binlog", "--workers", "8", "--commit-order", order}

			// Up to the fourth: the others past the gap must stay applied.
			replicateWithin(t, sb, relay, groups[3], args...)
			tgt, _, err := dburl.Open(sb.TargetURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			applied, err := checkpoint.ForStream(tgt, "default").Applied(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []bool{true, true, true, true, false, true, true, false, false, true} {
				if g := mustGTID(t, groups[i]); applied.Contains(g) != want {
					t.Fatalf("after a run to %s, the position rows say %s applied: %v, want %v (position %s, past it %v)",
						groups[3], g, !want, want, applied.Position, applied.Extra)
				}
			}

			// Up to the tenth, one the run before applied: none twice.
			replicateWithin(t, sb, relay, groups[9], args...)
			requireEqualData(t, sb, true)
		})
	}
}

// replicateWithin runs gapless replicate --until until and fails the test
// unless it exits 0 within a minute.
func replicateWithin(t *testing.T, sb *sandboxT, relay, until string, extra ...string) {
	t.Helper()
	args := append([]string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", until, "--relay-dir", relay, "--progress", "0"}, extra...)
	_, stderr, wait := background(t, args...)
	done := make(chan run, 1)
	go func() { done <- wait() }()
	select {
	case r := <-done:
		if r.code != 0 {
			t.Fatalf("gapless replicate --until %s exited %d\nstdout:\n%s\nstderr:\n%s", until, r.code, r.stdout, r.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("gapless replicate --until %s did not end within a minute:\n%s", until, stderr)
	}
}

// gtidPart is the i-th dash-separated part of a one-domain GTID position.
func gtidPart(t *testing.T, pos string, i int) string {
	t.Helper()
	parts := strings.Split(pos, "-")
	if len(parts) != 3 {
		t.Fatalf("GTID position %q is not of one domain", pos)
	}
	return parts[i]
}

func mustGTID(t *testing.T, s string) gtid.MariaDBGTID {
	t.Helper()
	g, err := gtid.ParseMariaDBGTID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
