// status_test.go: status and reset name a stream the target holds no
// position of, and exit non-zero.
package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusOfAnUnknownStreamFails(t *testing.T) {
	sb := upSandbox(t)
	r := gapless(t, nil, "status", "--target", sb.TargetURL, "--stream", "nosuch")
	requireRefused(t, r, `stream "nosuch" has no position`, "holds no gapless position")

	smallWorkload(t, sb, 20, 81)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	r = gapless(t, nil, "status", "--target", sb.TargetURL, "--stream", "nosuch")
	requireRefused(t, r, `stream "nosuch" has no position`, "streams on this target: default")
	r = gapless(t, nil, "status", "--target", sb.TargetURL, "--stream", "default")
	if r.code != 0 || !strings.Contains(r.stdout, "stream default") {
		t.Errorf("status --stream default exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
