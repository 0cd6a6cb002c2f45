package binlog

import (
	"errors"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"gapless/internal/gtid"
)

// TestSourceThatCannotServeThePosition: what the run says when the source
// answers 1236 for the target's position: a GTID its binlog lacks where
// the binlog ends before it (after a failover to a replica that lacks the
// old primary's last transactions, which the target holds) and where it
// does not (another server, another history); a replica that diverged (the
// source wrote past the position in its domain); purged binlogs.
// docs/operations-and-recovery.md quotes these.
func TestSourceThatCannotServeThePosition(t *testing.T) {
	r := &Receiver{cfg: ReceiverConfig{Host: "127.0.0.1", Port: 3306, User: "repl"}}
	from, err := gtid.ParseMariaDBPosition("0-1-32657")
	if err != nil {
		t.Fatal(err)
	}
	notInBinlog := "Error: connecting slave requested to start from GTID 0-1-32657, which is not in the master's binlog"
	for _, tc := range []struct {
		written, server, want string
	}{
		{"0-1-32650", notInBinlog,
			"source 127.0.0.1:3306 cannot continue from the target's position 0-1-32657: the target holds transactions the source never wrote (its binlog ends at 0-1-32650; after a failover: the old primary's last ones, which the promoted replica never got); check that --source names the server the target was seeded from, or re-seed the target from a backup of the source, then run again (source error 1236: "},
		{"0-1-40000", notInBinlog,
			"source 127.0.0.1:3306 cannot continue from the target's position 0-1-32657; check that --source names the server the target was seeded from, or re-seed the target from a backup of the source, then run again (source error 1236: "},
		{"0-1-40000", "Error: connecting slave requested to start from GTID 0-1-32657, which is not in the master's binlog. Since the master's binlog contains GTIDs with higher sequence numbers, it probably means that the slave has diverged due to executing extra erroneous transactions",
			"source 127.0.0.1:3306 cannot continue from the target's position 0-1-32657: the target holds transactions the source never wrote (after a failover: the old primary's last ones, which the promoted replica never got); check that --source names the server the target was seeded from, or re-seed the target from a backup of the source, then run again (source error 1236: "},
		{"0-1-40000", "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged.",
			"source 127.0.0.1:3306 no longer has the binlogs the target needs: it has purged the binlogs after the target's position 0-1-32657; re-seed the target from a backup of the source"},
	} {
		if r.sourceWritten, err = gtid.ParseMariaDBPosition(tc.written); err != nil {
			t.Fatal(err)
		}
		err := r.classify(&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: tc.server}, from, true)
		var se *SourceError
		if !errors.As(err, &se) {
			t.Fatalf("%q: not a SourceError: %v", tc.server, err)
		}
		if got := err.Error(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("for %q:\n got %s\nwant %s...", tc.server, got, tc.want)
		}
	}
}
