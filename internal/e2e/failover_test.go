// This file proves that gapless follows a failover: the source's own
// MariaDB replica promoted to primary, gapless pointed at it with the same
// relay folder. When the promoted replica has everything gapless applied,
// gapless goes on from it and the target ends equal to it; when it lacks
// transactions that gapless applied from the old primary, the run stops
// with one message instead of writing a second history on top of them.
package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

// standbyOf starts a MariaDB replica of sb's primary (binlog on, as a
// server that may be promoted) and returns it replicating.
func standbyOf(t *testing.T, sb *sandboxT) *sandbox.Server {
	t.Helper()
	standby := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "standby", Binlog: true})
	change := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		sb.Primary.Port, sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, standby, "SET GLOBAL gtid_slave_pos=''", change, "START SLAVE")
	return standby
}

// waitReplicaAt waits until the MariaDB replica srv has applied pos.
func waitReplicaAt(t *testing.T, srv *sandbox.Server, pos string) {
	t.Helper()
	var reached int
	if err := rootDB(t, srv).QueryRow("SELECT MASTER_GTID_WAIT(?, 60)", pos).Scan(&reached); err != nil || reached != 0 {
		t.Fatalf("replica did not reach %s (MASTER_GTID_WAIT %d, %v)", pos, reached, err)
	}
}

// promote stops the old primary and makes standby the primary of a
// sandbox that gapless then reads from.
func promote(t *testing.T, sb *sandboxT, standby *sandbox.Server) *sandboxT {
	t.Helper()
	if err := sb.Primary.Stop(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, standby, "STOP SLAVE", "RESET SLAVE ALL")
	promoted := *sb
	promoted.Primary = standby
	promoted.SourceURL = standby.URL(sandbox.ReplUser, sandbox.ReplPassword)
	return &promoted
}

// moveToPort restarts srv, with its own server id, at port (a moved
// address: a virtual IP, a proxy).
func moveToPort(t *testing.T, srv *sandbox.Server, port int) {
	t.Helper()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	id := srv.ServerID()
	srv.Port, srv.Config.Port, srv.Config.ServerID = port, port, id
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestSourceSwitchedToAPromotedReplica(t *testing.T) {
	sb := upSandbox(t)
	standby := standbyOf(t, sb)
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 600, 41)
	first := binlogPos(t, sb.Primary)
	smallWorkload(t, sb, 400, 42)
	// gapless applies up to first; its relay log holds more of the old
	// primary's binlog, which the promoted replica has too.
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", first)...)
	if r.code != 0 {
		t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
	}
	waitReplicaAt(t, standby, binlogPos(t, sb.Primary))
	promoted := promote(t, sb, standby)
	smallWorkload(t, promoted, 500, 43)
	replicateUntilCaughtUp(t, promoted, relay)
	requireEqual(t, promoted)
}

func TestSourceSwitchedToAReplicaThatLacksAppliedTransactions(t *testing.T) {
	sb := upSandbox(t)
	standby := standbyOf(t, sb)
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 400, 51)
	waitReplicaAt(t, standby, binlogPos(t, sb.Primary))
	// The replica falls behind: what the primary writes now, gapless
	// applies and the replica never gets.
	mustExec(t, standby, "STOP SLAVE")
	smallWorkload(t, sb, 200, 52)
	replicateUntilCaughtUp(t, sb, relay)
	promoted := promote(t, sb, standby)
	smallWorkload(t, promoted, 300, 53)
	began := time.Now()
	r := gapless(t, nil, replicateArgs(promoted.SourceURL, promoted.TargetURL, relay, "--until", binlogPos(t, standby))...)
	t.Logf("exit %d after %s:\n%s", r.code, time.Since(began), r.stderr)
	requireRefused(t, r, "the target holds transactions the source never wrote", "after a failover", "re-seed the target")
}

// TestSourceSwitchedToAReplicaThatLacksAppliedTransactionsAndWroteNone is
// the failover above before the promoted replica writes anything: MariaDB
// does not say the replica diverged (the source wrote nothing past its
// position), and gapless tells it by the source's binlog, which ends
// before the target's position.
func TestSourceSwitchedToAReplicaThatLacksAppliedTransactionsAndWroteNone(t *testing.T) {
	sb := upSandbox(t)
	standby := standbyOf(t, sb)
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 300, 54)
	waitReplicaAt(t, standby, binlogPos(t, sb.Primary))
	mustExec(t, standby, "STOP SLAVE")
	smallWorkload(t, sb, 100, 55)
	replicateUntilCaughtUp(t, sb, relay)
	lacks := binlogPos(t, standby)
	promoted := promote(t, sb, standby)
	cmd, stderr, wait := background(t, replicateArgs(promoted.SourceURL, promoted.TargetURL, relay)...)
	r := waitExit(t, cmd, wait, 60*time.Second, "stop on a source whose binlog ends before the target's position", stderr)
	requireRefused(t, r, "the target holds transactions the source never wrote", "its binlog ends at "+lacks, "after a failover", "re-seed the target")
}

func TestSourceSwitchedToAReplicaBehindTheRelayLog(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes int // on the promoted replica, against 200 it never got
	}{{"more writes than it lacks", 300}, {"fewer writes than it lacks", 50}} {
		t.Run(c.name, func(t *testing.T) {
			sb := upSandbox(t)
			standby := standbyOf(t, sb)
			relay := filepath.Join(t.TempDir(), "relay")
			smallWorkload(t, sb, 400, 61)
			applied := binlogPos(t, sb.Primary)
			waitReplicaAt(t, standby, applied)
			mustExec(t, standby, "STOP SLAVE")
			smallWorkload(t, sb, 200, 62)
			// gapless receives the 200 into its relay log but applies
			// only up to what the replica has.
			r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", applied)...)
			if r.code != 0 {
				t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
			}
			promoted := promote(t, sb, standby)
			smallWorkload(t, promoted, c.writes, 63)
			r = replicateUntilCaughtUp(t, promoted, relay)
			t.Logf("gapless stderr:\n%s", r.stderr)
			requireEqual(t, promoted)
		})
	}
}

// The promoted replica takes the old primary's address while gapless runs
// (a virtual IP or a proxy moved to it): gapless reconnects to it and goes
// on from where it was.
func TestSourceAddressMovesToThePromotedReplica(t *testing.T) {
	sb := upSandbox(t)
	standby := standbyOf(t, sb)
	smallWorkload(t, sb, 600, 81)
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"))...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)
	waitReplicaAt(t, standby, binlogPos(t, sb.Primary))
	port := sb.Primary.Port
	promoted := promote(t, sb, standby)
	moveToPort(t, standby, port)
	promoted.SourceURL = standby.URL(sandbox.ReplUser, sandbox.ReplPassword)
	smallWorkload(t, promoted, 500, 82)
	waitApplied(t, promoted, primaryPosition(t, promoted), 60*time.Second, stderr)
	r := stopAndRequireExit0(t, cmd.Process.Pid, wait)
	t.Logf("gapless stderr:\n%s", r.stderr)
	requireEqual(t, promoted)
}

// gapless reads from a replica of the primary (to spare the primary the
// dump), whose own parallel replica commits the primary's transactions in
// groups of its own: the target ends equal to both.
func TestSourceIsAParallelReplicaOfThePrimary(t *testing.T) {
	sb := upSandbox(t)
	standby := standbyOf(t, sb)
	mustExec(t, standby, "STOP SLAVE", "SET GLOBAL slave_parallel_threads=4", "SET GLOBAL slave_parallel_mode='optimistic'", "START SLAVE")
	smallWorkload(t, sb, 1500, 91)
	pos := binlogPos(t, sb.Primary)
	waitReplicaAt(t, standby, pos)
	fromStandby := *sb
	fromStandby.Primary, fromStandby.SourceURL = standby, standby.URL(sandbox.ReplUser, sandbox.ReplPassword)
	replicateUntilCaughtUp(t, &fromStandby, filepath.Join(t.TempDir(), "relay"))
	requireEqual(t, &fromStandby)
	requireEqual(t, sb)
}

// Another server, which has never written the source's GTID domain, takes
// the source's address while gapless runs: gapless reconnects to it and
// stops instead of applying its binlog.
func TestSourceAddressMovesToAnUnrelatedServer(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 300, 101)
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"))...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)
	// The other server, its accounts made, moves to the source's port.
	other := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "other", Binlog: true, Extra: []string{"gtid_domain_id=5"}})
	mustExec(t, other, "CREATE DATABASE other_app", "CREATE TABLE other_app.t (a INT PRIMARY KEY)", "INSERT INTO other_app.t VALUES (1),(2)")
	port := sb.Primary.Port
	if err := sb.Primary.Stop(); err != nil {
		t.Fatal(err)
	}
	moveToPort(t, other, port)
	r := waitExit(t, cmd, wait, 60*time.Second, "stop on a source that never wrote its domain", stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "has never written any GTID domain") {
		t.Fatalf("exit %d, want the run stopped on the other server:\n%s", r.code, r.stderr)
	}
	t.Logf("gapless stderr:\n%s", r.stderr)
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'other_app'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the other server's database reached the target (%d, %v)", n, err)
	}
}

// A target that is a MariaDB replica of the source, switched to gapless
// without STOP SLAVE: both would apply the source's transactions. gapless
// refuses until the target's own replica stops, then goes on from the
// target's gtid_slave_pos.
func TestRefusesATargetWhoseOwnReplicaRunsFromTheSource(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 300, 111)
	change := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		sb.Primary.Port, sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, sb.Target, "SET GLOBAL gtid_slave_pos=''", change, "START SLAVE")
	waitReplicaAt(t, sb.Target, binlogPos(t, sb.Primary))
	relay := filepath.Join(t.TempDir(), "relay")
	smallWorkload(t, sb, 300, 112)
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "the target's own replica runs from the source", "STOP SLAVE")
	mustExec(t, sb.Target, "STOP SLAVE", "RESET SLAVE ALL")
	smallWorkload(t, sb, 300, 113)
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

// A target that is also a MariaDB replica of another server (multi-source,
// another GTID domain) is not refused for it: gapless applies its source
// beside that replica, and both end equal.
func TestTargetWhoseOwnReplicaRunsFromAnotherServer(t *testing.T) {
	sb := upSandbox(t)
	other := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "other", Binlog: true, Extra: []string{"gtid_domain_id=5"}})
	mustExec(t, other, "CREATE DATABASE other_app", "CREATE TABLE other_app.t (a INT PRIMARY KEY)", "INSERT INTO other_app.t VALUES (1),(2)")
	change := fmt.Sprintf("CHANGE MASTER 'other' TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		other.Port, sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, sb.Target, change, "START SLAVE 'other'")
	waitReplicaAt(t, sb.Target, binlogPos(t, other))
	smallWorkload(t, sb, 500, 121)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	var n int
	if err := rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM other_app.t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the other server's rows on the target: %d, %v", n, err)
	}
	// The source's database equals the primary's; the other server's is
	// the target's own business.
	requireEqualTables(t, sb, "w")
}

// The way back: gapless stopped, the target becomes a MariaDB replica of
// the source again from gapless's position (docs/operations-and-recovery.md, "Back to MariaDB's
// replica"), with the target's binlog written by gapless or not; it goes
// on with no transaction lost or applied twice.
func TestBackToMariaDBsReplica(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
	}{{"target-binlog", nil}, {"no-target-binlog", []string{"--no-target-binlog"}}} {
		t.Run(c.name, func(t *testing.T) {
			sb := upSandbox(t)
			smallWorkload(t, sb, 400, 111)
			cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"), append([]string{"--workers", "8"}, c.flags...)...)...)
			waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)
			// Stopped amid a load, not caught up.
			load := make(chan struct{})
			go func() { defer close(load); smallWorkload(t, sb, 600, 112) }()
			time.Sleep(300 * time.Millisecond)
			stopAndRequireExit0(t, cmd.Process.Pid, wait)
			<-load
			ctx := context.Background()
			pos, err := appliedPosition(ctx, sb)
			if err != nil || pos.IsEmpty() {
				t.Fatalf("gapless's position: %q, %v", pos.String(), err)
			}
			change := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
				sb.Primary.Port, sandbox.ReplUser, sandbox.ReplPassword)
			// gapless status says where MariaDB's replica goes on from:
			// gapless's position, and the target binlog's other domains
			// (gapless's own tables), which gtid_slave_pos must name (1948).
			st := gapless(t, nil, "status", "--target", sb.TargetURL, "--json")
			m := regexp.MustCompile(`"mariadb_replica_from":\s*"([^"]+)"`).FindStringSubmatch(st.stdout)
			if st.code != 0 || m == nil {
				t.Fatalf("gapless status exited %d without mariadb_replica_from:\n%s%s", st.code, st.stdout, st.stderr)
			}
			slavePos := m[1]
			if !strings.HasPrefix(slavePos, pos.String()) {
				t.Errorf("mariadb_replica_from %s does not begin with gapless's position %s", slavePos, pos)
			}
			t.Logf("gtid_slave_pos %s (gapless's position %s)", slavePos, pos)
			mustExec(t, sb.Target, "SET GLOBAL gtid_slave_pos='"+slavePos+"'", change, "START SLAVE")
			t.Cleanup(func() { mustExec(t, sb.Target, "STOP SLAVE", "RESET SLAVE ALL") })
			smallWorkload(t, sb, 300, 113)
			waitReplicaAt(t, sb.Target, binlogPos(t, sb.Primary))
			requireEqualTables(t, sb)
		})
	}
}

// RESET MASTER on the source while gapless runs: the dump stays connected
// and silent, and the source's new groups reuse GTIDs gapless has applied.
// gapless sat there, caught up as far as it could tell, and never applied
// them (silent). Now it asks the source, while the dump is quiet, whether
// its binlog went back, and stops saying so.
func TestSourceBinlogResetWhileRunning(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "CREATE DATABASE rm", "CREATE TABLE rm.t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO rm.t VALUES (1)", "INSERT INTO rm.t VALUES (2)")
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, filepath.Join(t.TempDir(), "relay"))...)
	waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)
	mustExec(t, sb.Primary, "RESET MASTER", "INSERT INTO rm.t VALUES (3)")
	r := waitExit(t, cmd, wait, 60*time.Second, "stop on a source whose binlog was reset", stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "went back") || !strings.Contains(r.stderr, "RESET MASTER") {
		t.Fatalf("exit %d, want a stop that says the source's binlog went back:\n%s", r.code, r.stderr)
	}
	var n int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM rm.t").Scan(&n)
	if n != 2 {
		t.Errorf("the target holds %d rows, want the 2 written before the reset", n)
	}
}

// A replication ring, as active-active pairs run: gapless from the primary
// to the target, MariaDB's replica from the target back to the primary,
// each server writing its own GTID domain. The target's own groups come
// back through the primary's binlog: gapless applied them a second time (an
// increment twice) and wrote their GTIDs again, which stopped MariaDB's
// replica on the primary (1950). Now it passes them, as MariaDB's replica
// passes its own server id's, and both servers end equal.
func TestReplicationRing(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 1")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 0") })
	mustExec(t, sb.Primary, "SET GLOBAL binlog_format = MIXED", "CREATE DATABASE ring", "CREATE TABLE ring.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO ring.t VALUES (1, 0), (2, 0)")
	t.Cleanup(func() { mustExec(t, sb.Primary, "SET GLOBAL binlog_format = ROW") })
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	back := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=current_pos",
		sb.Target.Port, sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, sb.Primary, back, "START SLAVE")
	t.Cleanup(func() { mustExec(t, sb.Primary, "STOP SLAVE", "RESET SLAVE ALL") })
	cmd, stderr, wait := background(t, replicateArgs(sb.SourceURL, sb.TargetURL, relay)...)
	mustExec(t, sb.Target, "SET SESSION binlog_format = STATEMENT", "UPDATE ring.t SET v = v + 1 WHERE id = 2", "UPDATE ring.t SET v = v + 10 WHERE id = 2")
	mustExec(t, sb.Primary, "UPDATE ring.t SET v = v + 1 WHERE id = 1")
	waitReplicaAt(t, sb.Primary, binlogPos(t, sb.Target))
	// The primary's own domain: gapless passes the ring's others, and
	// writes their positions with the next group it applies.
	own, _ := primaryPosition(t, sb).Get(0)
	var ownDomain gtid.MariaDBPosition
	ownDomain.Advance(own)
	waitApplied(t, sb, ownDomain, 30*time.Second, stderr)
	time.Sleep(time.Second) // anything gapless would apply twice, applied
	r := stopAndRequireExit0(t, cmd.Process.Pid, wait)
	if msg := replicaError(t, rootDB(t, sb.Primary)); msg != "" {
		t.Errorf("MariaDB's replica on the primary stopped: %s", msg)
	}
	requireSameAnswers(t, sb, "SELECT id, v FROM ring.t ORDER BY id")
	var v int
	rootDB(t, sb.Target).QueryRow("SELECT v FROM ring.t WHERE id = 2").Scan(&v)
	if v != 11 {
		t.Errorf("the target's own increments came to %d, want 11 (applied once)\n%s", v, r.stderr)
	}
}

// Under causal commit order the target logs the source's groups under its
// own server id, so in a ring the source's replica would apply them a
// second time. gapless refuses that at start when the source's
// @@gtid_slave_pos names the target, and stops at the first of the
// target's groups that comes back through the source when it does not
// (a source whose position was cleared). Before, it only warned in the
// README.
func TestReplicationRingUnderCausalOrder(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 1")
	t.Cleanup(func() { mustExec(t, sb.Target, "SET GLOBAL gtid_domain_id = 0") })
	mustExec(t, sb.Primary, "CREATE DATABASE ringc", "CREATE TABLE ringc.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO ringc.t VALUES (1, 0), (2, 0)")
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	back := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=current_pos",
		sb.Target.Port, sandbox.ReplUser, sandbox.ReplPassword)
	mustExec(t, sb.Primary, back, "START SLAVE")
	t.Cleanup(func() { mustExec(t, sb.Primary, "STOP SLAVE", "RESET SLAVE ALL") })
	mustExec(t, sb.Target, "UPDATE ringc.t SET v = v + 1 WHERE id = 2")
	// The target's own domain (1): the primary's replica never receives
	// its own domain's groups, so its position lacks domain 0.
	var own string
	rootDB(t, sb.Target).QueryRow("SELECT @@gtid_binlog_pos").Scan(&own)
	own = strings.Join(slices.DeleteFunc(strings.Split(own, ","), func(g string) bool { return strings.HasPrefix(g, "0-") }), ",")
	waitReplicaAt(t, sb.Primary, own)

	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--commit-order", "causal", "--until", binlogPos(t, sb.Primary))...)
	requireRefused(t, r, "replication ring", "@@gtid_slave_pos", "--commit-order strict", "--no-target-binlog")

	// A source whose position no longer names the target: the target's
	// group comes back through the source's binlog, and the run stops there,
	// having applied nothing after it.
	// (The binlog's domains must stay in the position, 1948: domain 1's
	// entry is given another server id.)
	var primaryPos string
	var targetID int
	rootDB(t, sb.Primary).QueryRow("SELECT @@gtid_binlog_pos").Scan(&primaryPos)
	rootDB(t, sb.Target).QueryRow("SELECT @@server_id").Scan(&targetID)
	cleared := strings.ReplaceAll(primaryPos, fmt.Sprintf("-%d-", targetID), "-999-")
	mustExec(t, sb.Primary, "STOP SLAVE", "SET GLOBAL gtid_slave_pos = '"+cleared+"'")
	mustExec(t, sb.Primary, "UPDATE ringc.t SET v = v + 1 WHERE id = 1")
	r = gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--commit-order", "causal", "--until", binlogPos(t, sb.Primary))...)
	t.Logf("exit %d: %s", r.code, r.stderr)
	if r.code == 0 || !strings.Contains(r.stderr, "came back through the source") || !strings.Contains(r.stderr, "--commit-order strict") {
		t.Fatalf("gapless under causal order in a ring exited %d, want the ring's stop\n%s", r.code, r.stderr)
	}
	var v int
	rootDB(t, sb.Target).QueryRow("SELECT v FROM ringc.t WHERE id = 1").Scan(&v)
	if v != 0 {
		t.Errorf("the target applied the source's update after the target's own group (v = %d, want 0)", v)
	}
	// The default strict order goes on from there and ends equal.
	replicateUntilCaughtUp(t, sb, relay)
	requireSameAnswers(t, sb, "SELECT id, v FROM ringc.t ORDER BY id")
}
