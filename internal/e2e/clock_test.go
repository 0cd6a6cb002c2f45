// clock_test.go runs a source whose clock is an hour behind the applier's
// host (libfaketime under its mariadbd): the lag gapless reports is the
// time the target is behind, not the clocks' difference.
package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

// fakeTimeLibrary is Debian's libfaketime (scripts/install-deps.sh); the
// test fails under CI without it and skips elsewhere.
func fakeTimeLibrary(t *testing.T) string {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("libfaketime is missing (scripts/install-deps.sh installs it)")
		}
		t.Skip("libfaketime is missing (scripts/install-deps.sh installs it)")
	}
	return matches[0]
}

func TestLagAllowsForTheSourcesClock(t *testing.T) {
	lib := fakeTimeLibrary(t)
	sb := upSandbox(t)
	skewed := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "skewed", Binlog: true, Durable: true,
		Launcher: []string{"env", "LD_PRELOAD=" + lib, "FAKETIME=-1h", "DONT_FAKE_MONOTONIC=1"}})
	var hostNow, sourceNow int64
	if err := rootDB(t, skewed).QueryRow("SELECT UNIX_TIMESTAMP()").Scan(&sourceNow); err != nil {
		t.Fatal(err)
	}
	if err := rootDB(t, sb.Target).QueryRow("SELECT UNIX_TIMESTAMP()").Scan(&hostNow); err != nil {
		t.Fatal(err)
	}
	if d := hostNow - sourceNow; d < 3500 || d > 3700 {
		t.Fatalf("the skewed source's clock is %d s behind, want about an hour: libfaketime did not take", d)
	}
	fromSkewed := *sb
	fromSkewed.Primary, fromSkewed.SourceURL = skewed, skewed.URL(sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, skewed, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO app.t VALUES (1), (2)")
	r := replicateUntilCaughtUp(t, &fromSkewed, filepath.Join(t.TempDir(), "relay"))
	if !strings.Contains(r.stderr, "the source's clock differs from this host's") {
		t.Errorf("the run does not say the clocks differ:\n%s", r.stderr)
	}
	requireEqualTables(t, &fromSkewed, "app")

	// The lag of the last commit, which gapless status reads from the
	// target: seconds, not the hour between the clocks.
	st := gapless(t, nil, "status", "--target", sb.TargetURL, "--json")
	if st.code != 0 {
		t.Fatalf("gapless status exited %d: %s", st.code, st.stderr)
	}
	m := regexp.MustCompile(`"lag_seconds":\s*(-?[0-9.]+)`).FindStringSubmatch(st.stdout)
	if m == nil {
		t.Fatalf("gapless status --json has no lag:\n%s", st.stdout)
	}
	lag, _ := strconv.ParseFloat(m[1], 64)
	if lag < 0 || lag > 60 {
		t.Errorf("the last commit's lag is %v s, want a few seconds (the source's clock is an hour behind):\n%s", lag, st.stdout)
	}
}
