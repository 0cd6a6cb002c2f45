package target

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/packet"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// TestPositionBeforeCommit: on a target without the binlog, the position of
// a group that ends in COMMIT goes before that COMMIT; anything else keeps
// its position transaction after the group.
func TestPositionBeforeCommit(t *testing.T) {
	own := []string{beginStatement, "INSERT INTO gapless.checkpoint VALUES (1)", "COMMIT"}
	for _, c := range []struct {
		name       string
		tail, want []string
	}{
		{"ends in COMMIT", append([]string{"COMMIT"}, own...), []string{own[1], "COMMIT"}},
		{"ends in ROLLBACK", append([]string{"ROLLBACK"}, own...), append([]string{"ROLLBACK"}, own...)},
		{"ends without either", own, own},
		{"more after the position", append(append([]string{"COMMIT"}, own...), restStatement), append(append([]string{"COMMIT"}, own...), restStatement)},
	} {
		if got := positionBeforeCommit(slices.Clone(c.tail), own); !slices.Equal(got, c.want) {
			t.Errorf("%s: tail %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRoundTripNotSentRunsNothing: a round trip whose packet cannot be
// written (the target reset the connection) ran none of its statements,
// whatever the round trip before it answered; ApplyAlone must then count
// none of its groups committed. (It counted the answers of the round trip
// before, and so took groups that never reached the target for applied.)
func TestRoundTripNotSentRunsNothing(t *testing.T) {
	closed := func() *wire {
		ours, theirs := net.Pipe()
		theirs.Close()
		// As after a round trip of 400 statements, all answered.
		return &wire{c: &client.Conn{Conn: packet.NewConn(ours)}, affected: make([]uint64, 400)}
	}
	s := &Session{conn: closed(), maxStatement: 1 << 20}
	if err := s.run([]string{"SET @a=1", "SET @b=2"}); !Lost(err) || s.ran != 0 {
		t.Errorf("run on a connection that cannot be written: %v, %d statements ran; want a lost connection and none", err, s.ran)
	}
	var txns []*binlog.Transaction
	var positions []string
	for seq := range uint64(5) {
		txns = append(txns, &binlog.Transaction{Flavor: binlog.FlavorMariaDB, MariaDB: gtid.MariaDBGTID{Server: 1, Seq: seq + 1},
			Events: []binlog.Event{{Data: &replication.XIDEvent{}}}})
		positions = append(positions, "INSERT INTO gapless.checkpoint VALUES (1)")
	}
	s = &Session{conn: closed(), maxStatement: 1 << 20}
	n, err := s.ApplyAlone(context.Background(), txns, positions)
	var ae *ApplyError
	if n != 0 || !errors.As(err, &ae) || !Lost(ae.Err) {
		t.Errorf("ApplyAlone on a connection that cannot be written: %d groups committed, %v; want none and a lost connection", n, err)
	}
}
