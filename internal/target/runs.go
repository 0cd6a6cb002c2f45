// runs.go applies a run of groups the target binlogs as they execute
// (applied alone), several in one round trip: a MyISAM statement in
// autocommit is one such group, and one round trip each, with gapless's
// turn between two, made a replica of them slower than MariaDB's own
// serial one.
//
// Each group keeps what it has alone: its GTID, then its statements, then
// the check that it took one GTID group in the target's binlog
// (checkpoint.OneGroupCheck; its position waits, deferred.go), or, on a
// target that does not binlog it, its position. The server stops a packet
// at its first error, so the answers say how many groups ran whole: those
// committed, and the one that failed is named by the error, as it would be
// alone.
package target

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// Pipelines reports whether txn may be applied by ApplyAlone on this
// session: a group applied alone whose position waits, or, on a target
// that does not binlog it, whose position follows it in the round trip;
// that needs nothing of the session but its statements (no LOAD DATA
// file, no temporary table or prepared XA branch kept); whose format
// description the session has; and whose every statement fits in a round
// trip.
func (s *Session) Pipelines(txn *binlog.Transaction) bool {
	one := []*binlog.Transaction{txn}
	positioned := s.defersPosition(one) || !s.opts.WriteBinlog && !crashBeforePosition(txn)
	if !positioned || !FollowsAlone(txn) || s.temporary || len(s.parked) > 0 || len(s.pinned) > 0 && usesTemporary(txn) ||
		!bytes.Equal(s.format, txn.Format.Raw) || len(s.format) == 0 || txn.Size > s.maxStatement/4 {
		return false
	}
	for _, ev := range txn.Events {
		switch ev.Data.(type) {
		case *replication.ExecuteLoadQueryEvent, *replication.BeginLoadQueryEvent:
			return false
		}
	}
	return true
}

// ApplyAlone applies txns, groups that Pipelines accepts, one after
// another, in as few round trips as their size allows; checkpoints are
// their position statements, which wait (WriteDeferred) where the target
// binlogs the groups, and otherwise follow each group in the round trip,
// as they would alone: a crash then applies again at most the group it
// interrupted, as MariaDB's serial replica may. It returns how many
// committed. With an error, the group after those failed, and ApplyError
// names it; when the connection was lost, whether the groups after those
// ran is unknown (their positions, or the target's binlog, say:
// AppliedAlone).
func (s *Session) ApplyAlone(ctx context.Context, txns []*binlog.Transaction, checkpoints []string) (int, error) {
	s.loads = nil
	if err := s.sourceStarted(txns[0]); err != nil {
		return 0, newApplyError(txns[0], err)
	}
	txns = txns[:crashWithin(txns)]
	var script []string
	ends := make([]int, len(txns)) // the script's length up to each group's end
	positions := make([]*deferredPosition, len(txns))
	for i, txn := range txns {
		body, tail, err := s.script(txn, checkpoints[i])
		if err == nil && s.defersPosition(txns[i:i+1]) {
			tail, err = s.deferPosition(tail, checkpoints[i], txn)
		}
		if err == nil && !s.opts.WriteBinlog {
			tail = positionBeforeCommit(tail, s.ownTransaction(checkpoints[i]))
		}
		if err != nil {
			s.Rollback(ctx)
			return 0, newApplyError(txn, err)
		}
		positions[i] = s.unsettled
		script = append(append(script, body...), tail...)
		ends[i] = len(script)
	}
	s.unsettled = nil
	// Between groups a session holding the source's temporary tables rests
	// outside the binlog under the target's own server id (temporary.go):
	// a connection that ended there would otherwise log their DROP
	// TEMPORARY TABLE under the source's server id and the domain's next
	// sequence number, the GTID of the source's next group, which the
	// next run would take for applied.
	script = s.toRest(script)
	err := s.run(script)
	n := 0
	for n < len(txns) && ends[n] <= s.ran {
		n++
	}
	if n > 0 {
		s.unsettled = positions[n-1]
		s.committed(txns[n-1])
		for _, txn := range txns[:n] {
			crashPoint(txn)
		}
	}
	if err == nil {
		return n, nil
	}
	s.Rollback(ctx)
	failed := txns[min(n, len(txns)-1)]
	return n, newApplyError(failed, s.explain(err, failed))
}

// positionBeforeCommit moves the position transaction own, which follows
// the COMMIT that ends a group (tail: that COMMIT, then own), into the
// group's own transaction, before that COMMIT: on a target that does not
// binlog the group, nothing tells the two apart but that the position then
// commits with the group's transactional writes, and the round trip runs
// two statements fewer.
func positionBeforeCommit(tail, own []string) []string {
	if len(own) != 3 || len(tail) != 4 || !strings.EqualFold(tail[0], "COMMIT") || !slices.Equal(tail[1:], own) {
		return tail
	}
	return []string{own[1], tail[0]}
}
