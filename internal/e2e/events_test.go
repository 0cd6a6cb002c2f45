package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

// TestScheduledEventsStayDisabledOnTheTarget replays CREATE EVENT and ALTER
// EVENT to a target whose event scheduler is on: as on MariaDB's replica,
// every event is SLAVESIDE_DISABLED there, whatever the statement said
// (else the target ran an event the source also runs, and held rows the
// source did not), and an ALTER EVENT leaves the account that ran it on
// the source as the definer, not gapless's apply user.
func TestScheduledEventsStayDisabledOnTheTarget(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, TargetExtra: []string{"event_scheduler=ON"}})
	mustExec(t, sb.Primary,
		"CREATE DATABASE ev",
		"CREATE TABLE ev.t (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(10)) ENGINE=InnoDB",
		"CREATE USER 'ops'@'%' IDENTIFIED BY 'ops'",
		"GRANT ALL ON ev.* TO 'ops'@'%'",
		// The source's scheduler is off: these would run on the target only.
		"CREATE EVENT ev.tick ON SCHEDULE EVERY 1 SECOND DO INSERT INTO ev.t (what) VALUES ('tick')",
		"CREATE EVENT ev.later ON SCHEDULE EVERY 1 SECOND DISABLE DO INSERT INTO ev.t (what) VALUES ('later')",
		"CREATE EVENT ev.renamed ON SCHEDULE EVERY 1 HOUR DO INSERT INTO ev.t (what) VALUES ('renamed')",
		"INSERT INTO ev.t (what) VALUES ('row')",
	)
	ops, err := sql.Open("mysql", fmt.Sprintf("ops:ops@tcp(127.0.0.1:%d)/", sb.Primary.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close()
	for _, stmt := range []string{
		"ALTER EVENT ev.later ENABLE",
		"ALTER EVENT ev.renamed ON SCHEDULE EVERY 1 SECOND RENAME TO ev.again COMMENT 'by ops'",
	} {
		if _, err := ops.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	events := "SELECT CONCAT_WS(' ', EVENT_NAME, DEFINER, STATUS) FROM information_schema.EVENTS ORDER BY 1"
	want := []string{"again ops@% SLAVESIDE_DISABLED", "later ops@% SLAVESIDE_DISABLED", "tick root@localhost SLAVESIDE_DISABLED"}
	if got := queryStrings(t, rootDB(t, sb.Target), events); !slices.Equal(got, want) {
		t.Errorf("events on the target:\n got %q\nwant %q\n(the source has %q)", got, want, queryStrings(t, rootDB(t, sb.Primary), events))
	}
	time.Sleep(2 * time.Second) // a second and more for the target's scheduler
	requireEqual(t, sb)
}
