// privileges_test.go pins down the least privileges gapless's two accounts
// need, the ones docs/commands.md lists: a run with exactly those replicates
// DML and DDL, with parallel workers, to equal tables.
package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

const (
	sourcePrivileges = "REPLICATION SLAVE"
	// Without PROCESS a run works, with a warning (the watchdog cannot
	// see lock waits); without BINLOG REPLAY or BINLOG ADMIN it is refused.
	targetPrivileges = "BINLOG REPLAY, BINLOG ADMIN, PROCESS, SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX"
)

func TestReplicateWithTheLeastPrivileges(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin = 0",
		"CREATE USER src@'%' IDENTIFIED BY 'src'", "GRANT "+sourcePrivileges+" ON *.* TO src@'%'")
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0",
		"CREATE USER app@'%' IDENTIFIED BY 'app'", "GRANT "+targetPrivileges+" ON *.* TO app@'%'",
		"CREATE USER noprocess@'%' IDENTIFIED BY 'np'", "GRANT "+strings.Replace(targetPrivileges, "PROCESS, ", "", 1)+" ON *.* TO noprocess@'%'")
	smallWorkload(t, sb, 300, 3)
	mustExec(t, sb.Primary, "ALTER TABLE w.acct ADD INDEX (balance)")
	smallWorkload(t, sb, 100, 4)
	r := gapless(t, nil, "replicate", "--source", sb.Primary.URL("src", "src"), "--target", sb.Target.URL("app", "app"),
		"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0", "--workers", "4")
	if r.code != 0 {
		t.Fatalf("replicate with the least privileges exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("a run with every privilege it needs warned:\n%s", r.stderr)
	}
	requireEqual(t, sb)

	smallWorkload(t, sb, 50, 5)
	r = gapless(t, nil, "replicate", "--source", sb.Primary.URL("src", "src"), "--target", sb.Target.URL("noprocess", "np"),
		"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0", "--workers", "4")
	if r.code != 0 {
		t.Fatalf("replicate without PROCESS exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "lacks the PROCESS privilege") {
		t.Errorf("no warning about the missing PROCESS privilege:\n%s", r.stderr)
	}
	requireEqual(t, sb)
}

// TestReadOnlyTarget: a replica is often set read_only=ON, which MariaDB's own
// replica writes through. A run whose target user may not (no READ_ONLY ADMIN)
// is refused before anything is applied, saying what to grant; with it, the
// run replicates to equal tables with the target still read-only.
func TestReadOnlyTarget(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0",
		"CREATE USER app@'%' IDENTIFIED BY 'app'", "GRANT "+targetPrivileges+" ON *.* TO app@'%'",
		"SET GLOBAL read_only = ON")
	t.Cleanup(func() { _, _ = rootDB(t, sb.Target).Exec("SET GLOBAL read_only = OFF") })
	smallWorkload(t, sb, 100, 6)
	replicate := func() run {
		return gapless(t, nil, "replicate", "--source", sb.SourceURL, "--target", sb.Target.URL("app", "app"),
			"--until", binlogPos(t, sb.Primary), "--relay-dir", filepath.Join(t.TempDir(), "relay"), "--progress", "0", "--workers", "4")
	}
	r := replicate()
	if r.code == 0 || !strings.Contains(r.stderr, "GRANT READ_ONLY ADMIN ON *.* TO 'app'@'%'") || !strings.Contains(r.stderr, "nothing was applied") {
		t.Fatalf("replicate to a read-only target without READ_ONLY ADMIN exited %d, want a refusal that names the grant:\n%s%s", r.code, r.stdout, r.stderr)
	}
	var schemas int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('w', 'gapless')").Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Fatalf("a refused run left %d of the schemas w and gapless on the target", schemas)
	}
	mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "GRANT READ_ONLY ADMIN ON *.* TO app@'%'")
	if r = replicate(); r.code != 0 {
		t.Fatalf("replicate with READ_ONLY ADMIN to a read-only target exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	requireEqual(t, sb)
}
