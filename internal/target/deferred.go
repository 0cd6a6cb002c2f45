// deferred.go writes the position of a group the target binlogs as it
// executes (shapeAlone) later than the group, when the source's GTIDs go
// to the target's binlog (Options.DeferPositions).
//
// Written at once, such a position costs a durable commit of its own: with
// the target's binlog synced, two durable commits a group, and a replica
// of MyISAM autocommit statements runs at half the speed of one that
// writes only the binlog. Yet the target's binlog already records the
// group, durably, under the source's GTID: after a crash, AppliedAlone
// finds it there. So the position waits until the session has had nothing
// to apply for a moment, or has held it for a second, or is let go
// (WriteDeferred), or is dropped when a later group of the domain writes
// one past it. A crash meanwhile leaves several groups of the domain
// applied past the position, the last of them the last GTID of the domain
// in the target's binlog; the next run finds them there and skips them
// (AppliedAlone's through).
//
// That the group took one GTID group in the target's binlog, which the
// guarded position statement proves otherwise, is checked right after it,
// in the same round trip, by a statement that writes nothing
// (checkpoint.OneGroupCheck).
package target

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
)

// defersPosition reports whether the position of txns, a job, waits
// (deferred.go): one MariaDB group the target binlogs as it executes,
// under its source GTID, whose position statement a guard would otherwise
// check.
//
// Not so for a group whose writes stay (PartsStay): its begun mark stops
// the next run unless its position says it ended, and the target's binlog
// may not show it (a group of statements on temporary tables alone).
//
// Nor for a group whose change MariaDB answers before its redo is on disk,
// whatever innodb_flush_log_at_trx_commit says: an XA ROLLBACK (a branch
// prepared again after a crash, five times in six), a sequence's new value
// (SETVAL, NEXTVAL past the cache, ALTER SEQUENCE: the old value after a
// crash, every time) and CREATE SEQUENCE (a sequence without its row, which
// every later use fails with 1032), each measured on 10.11 by killing the
// server right after its answer, the statement in its synced binlog; found
// by TestTargetKilledUnderRandomLoad. The target's binlog then holds a
// group the engine lost. The position's commit, right after the group,
// makes its redo durable too (as a replica's own position does). DDL is
// left out too: rare, and not all of it was tried.
func (s *Session) defersPosition(txns []*binlog.Transaction) bool {
	txn := txns[0]
	return s.opts.DeferPositions && len(txns) == 1 && txn.Flavor == binlog.FlavorMariaDB && s.GuardsPosition(txn) &&
		!PartsStay(txn) && !completesXA(txn) && !txn.WritesSequence && !txn.Has(binlog.FlagDDL)
}

// deferPosition replaces the position transaction of txn in tail with the
// check that the group is one GTID group in the target's binlog; the
// position waits for the commit (committed).
func (s *Session) deferPosition(tail []string, checkpoint string, txn *binlog.Transaction) ([]string, error) {
	own := s.ownTransaction(checkpoint)
	for i := range tail {
		if i+len(own) <= len(tail) && slices.Equal(tail[i:i+len(own)], own) {
			s.unsettled = &deferredPosition{txn: txn, statement: checkpoint}
			rest := append([]string{oneGroupMark + ckpt.OneGroupCheck(txn.MariaDB)}, tail[i+len(own):]...)
			return append(tail[:i:i], rest...), nil
		}
	}
	return nil, fmt.Errorf("gapless bug: the position transaction of %s is missing from its script", txn)
}

// deferredPosition is a group's position statement, not yet written.
type deferredPosition struct {
	txn       *binlog.Transaction
	statement string
}

// committed follows the commit of a job whose last transaction is txn. The
// position of a group whose position waits is kept for WriteDeferred; any
// other job wrote a position past the one waiting for its domain, if any,
// which is then dropped. (A job that fails leaves the one waiting in place.)
func (s *Session) committed(txn *binlog.Transaction) {
	d := s.unsettled
	s.unsettled = nil
	if d == nil {
		delete(s.deferred, txn.MariaDB.Domain)
		return
	}
	if s.deferred == nil {
		s.deferred = map[uint32]string{}
	}
	if len(s.deferred) == 0 {
		s.deferredAt = time.Now()
	}
	s.deferred[d.txn.MariaDB.Domain] = d.statement
}

// Deferred reports whether the session holds positions not yet written.
func (s *Session) Deferred() bool { return len(s.deferred) > 0 }

// DeferredFor is how long the session has held positions not yet written
// (0 when it holds none).
func (s *Session) DeferredFor() time.Duration {
	if len(s.deferred) == 0 {
		return 0
	}
	return time.Since(s.deferredAt)
}

// WriteDeferred writes the positions the session holds back, each in a
// transaction of its own outside the target's binlog. They are written
// unguarded: each group was checked to be one GTID group as it ran,
// and later groups of the domain may be in the target's binlog since.
func (s *Session) WriteDeferred() error {
	var errs []error
	for d, stmt := range s.deferred {
		if err := s.run(s.toRest(s.ownTransaction(stmt))); err != nil {
			s.Rollback(context.Background())
			errs = append(errs, err)
		}
		delete(s.deferred, d)
	}
	return errors.Join(errs...)
}
