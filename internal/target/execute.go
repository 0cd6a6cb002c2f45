// execute.go is what a worker asks of its session for one job: run the
// job's script up to its commit or through it (Apply, Execute,
// ExecuteAhead, Continue), commit it, roll it back, or skip it.
//
// Invariant: when any of them fails, the target transaction is rolled back
// and the session forgets what it believed the server held (Rollback), so
// the job can run again from the start on this connection or a new one.
package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"gapless/internal/binlog"
	ckpt "gapless/internal/checkpoint"
	"gapless/internal/gtid"
)

// Apply executes and commits txns (one, or a batch of Batchable ones), the
// checkpoint statement included, in one round trip. On error the target
// transaction is rolled back.
func (s *Session) Apply(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, nil, checkpoint, true)
}

// Execute runs txns (one, or a batch of Batchable ones) up to their commit,
// the checkpoint statement included, and leaves the target transaction open
// for Commit. A standalone statement (DDL) commits on its own here; its
// checkpoint waits for Commit.
func (s *Session) Execute(ctx context.Context, txns []*binlog.Transaction, checkpoint string) error {
	return s.execute(txns, nil, checkpoint, false)
}

// ExecuteAhead begins a batch of Batchable transactions (in source order)
// and runs, of each transaction, only its first ahead[i] events (whole
// statements), in their order; Continue runs the rest, in theirs, and
// commits. The batch runs on the target in that order, which changes
// nothing of its result when nothing run ahead shares a row with what runs
// after it and came before it (apply's aheadOf). The target transaction
// stays open, its locks held.
func (s *Session) ExecuteAhead(ctx context.Context, txns []*binlog.Transaction, ahead []int, checkpoint string) error {
	return s.execute(txns, ahead, checkpoint, false)
}

// Continue runs the rest of the batch ExecuteAhead began and, when commit
// is true, commits it in the same round trip; otherwise the transaction
// stays open for Commit.
func (s *Session) Continue(ctx context.Context, commit bool) error {
	script, txn := s.rest, s.restTxn
	s.rest, s.restTxn = nil, nil
	if txn == nil {
		return errors.New("target: Continue without a batch begun ahead")
	}
	if commit {
		script = append(script, s.tail...)
	}
	if err := s.run(script); err != nil {
		s.Rollback(context.Background())
		return newApplyError(txn, err)
	}
	if commit {
		s.tail = nil
		s.committed(txn)
	}
	return nil
}

// execute runs a job's script: up to its commit, or, with commit, through
// it. Its steps: the connection the job runs on, its script, where the
// position and the commit go, the round trips, then what an XA PREPARE
// leaves to do.
func (s *Session) execute(txns []*binlog.Transaction, ahead []int, checkpoint string, commit bool) error {
	first, last := txns[0], txns[len(txns)-1]
	s.loads = nil
	resumed, err := s.toConnection(txns)
	if err != nil {
		return newApplyError(first, err)
	}
	format, err := s.formatFirst(first)
	if err != nil {
		return err
	}
	body, tail, err := s.jobScript(txns, ahead, checkpoint)
	if err != nil {
		return newApplyError(last, err)
	}
	if reopened, err := s.makeRoom(body, tail); err != nil {
		return newApplyError(last, err)
	} else if reopened {
		// A new connection knows nothing of the old one's state: build again.
		return s.execute(txns, ahead, checkpoint, commit)
	}
	script := append(format, body...)
	if ahead != nil {
		at := slices.Index(script, aheadMark)
		if at < 0 {
			return newApplyError(last, errors.New("a gapless bug: a batch begun ahead has no place to stop"))
		}
		s.rest, s.restTxn = slices.Clone(script[at+1:]), last
		script, commit = script[:at], false
	}
	if resumed {
		script = resumedScript(script, first.MariaDB)
	}
	xaPrepare := len(txns) == 1 && shapeOf(first) == shapeXAPrepare
	park := xaPrepare && s.temporary
	s.unsettled = nil
	if tail, err = s.placePosition(txns, tail, checkpoint); err != nil {
		return newApplyError(first, err)
	}
	script = s.placeTail(script, tail, first, commit, xaPrepare, park)
	if err := s.run(script); err != nil {
		return s.failed(err, txns, ahead, checkpoint, commit, script, format != nil, xaPrepare)
	}
	s.format = first.Format.Raw
	if xaPrepare {
		if err := s.afterXAPrepare(first, park); err != nil {
			return err
		}
	}
	if commit && s.tail != nil {
		return s.Commit(context.Background(), first)
	}
	if commit {
		s.committed(first)
	}
	return nil
}

// toConnection puts the session on the connection txns run on: the one of
// an XA branch they end, parked there (resumed), or that of their GTID
// domain (temporary.go).
func (s *Session) toConnection(txns []*binlog.Transaction) (resumed bool, err error) {
	if err := s.sourceStarted(txns[0]); err != nil {
		return false, err
	}
	if resumed, err = s.unpark(txns); err != nil || resumed {
		// (A resumed branch ends on its own connection, where it is.)
		return resumed, err
	}
	return false, s.toDomain(txns)
}

// formatFirst is the BINLOG statement of first's format description when
// the server holds another: it reads row events by the format description
// it was given last, so a new one goes first, in the same round trip.
func (s *Session) formatFirst(first *binlog.Transaction) ([]string, error) {
	if bytes.Equal(s.format, first.Format.Raw) {
		return nil, nil
	}
	if len(first.Format.Raw) == 0 {
		return nil, fmt.Errorf("%s has no format description event before it", first)
	}
	s.format = nil
	return []string{binlogStatement([][]byte{first.Format.Raw})}, nil
}

// jobScript is the script of a job: of its one group, or of its batch,
// made while it waited (prepare.go) or now.
func (s *Session) jobScript(txns []*binlog.Transaction, ahead []int, checkpoint string) (body, tail []string, err error) {
	if len(txns) == 1 {
		return s.script(txns[0], checkpoint)
	}
	if p := s.takePrepared(txns, ahead); p != nil {
		p.body[p.checkpointAt] = checkpoint
		return p.body, p.tail, nil
	}
	return s.batchScript(txns, ahead, checkpoint)
}

// placePosition makes the position statement in tail wait (deferred.go) or
// guarded (guardPosition) for a group the target binlogs as it executes.
func (s *Session) placePosition(txns []*binlog.Transaction, tail []string, checkpoint string) ([]string, error) {
	first := txns[0]
	switch {
	case s.defersPosition(txns):
		return s.deferPosition(tail, checkpoint, first)
	case len(txns) == 1 && s.GuardsPosition(first):
		// A group the target binlogs as it executes must be one GTID
		// group there: its position is written only if so.
		return guardPosition(tail, checkpoint, first.MariaDB)
	}
	return tail, nil
}

// placeTail puts tail, the statements that commit the job, at the end of
// script when the job commits now, or keeps it for Commit; and, where the
// session holds the source's temporary tables, ends the script or the tail
// outside the binlog (temporary.go).
func (s *Session) placeTail(script, tail []string, first *binlog.Transaction, commit, xaPrepare, park bool) []string {
	switch {
	case xaPrepare:
		// The prepared XA transaction holds this connection until it ends:
		// the position goes in on a new one; checkOneGroup checks it.
		s.tail = tail
	case commit && !crashBeforePosition(first):
		script = append(script, tail...)
	default:
		s.tail = tail
	}
	if s.holdsTemporary() && s.opts.KeepGTID {
		switch {
		case park:
			// A prepared XA branch holds the session in its transaction,
			// where sql_log_bin cannot change.
			script = append(script, restStatement)
		case s.tail == nil:
			script = append(script, restOutsideBinlog)
		default:
			s.tail = append(s.tail, restOutsideBinlog)
		}
	}
	return script
}

// failed ends a job whose script failed: it rolls back, and runs the job
// again whole when its first part could not go to gapless's own domain;
// otherwise it returns the error, with what the user can do about it.
func (s *Session) failed(err error, txns []*binlog.Transaction, ahead []int, checkpoint string, commit bool, script []string, formatSent, xaPrepare bool) error {
	last := txns[len(txns)-1]
	if xaPrepare {
		s.endUnprepared(txns[0], script)
	}
	s.Rollback(context.Background())
	if errors.Is(err, errDomainPinned) && !s.whole {
		// The group's first part was to go to gapless's own domain,
		// which a session holding temporary tables may not switch to;
		// nothing of it ran. It runs whole instead (statementsApart).
		s.whole = true
		defer func() { s.whole = false }()
		return s.execute(txns, ahead, checkpoint, commit)
	}
	if formatSent {
		err = privilegeHint(err)
	}
	return newApplyError(last, s.explain(err, last))
}

// Commit ends the transaction Execute left open.
func (s *Session) Commit(ctx context.Context, txn *binlog.Transaction) error {
	tail := s.tail
	s.tail = nil
	crashPoint(txn)
	if err := s.run(tail); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	s.committed(txn)
	return nil
}

// Rollback abandons the open transaction, if any, and forgets the session state.
func (s *Session) Rollback(ctx context.Context) {
	s.tail = nil
	s.unsettled = nil
	s.rest, s.restTxn = nil, nil
	s.Forget()
	if !s.opts.WriteBinlog {
		s.conn.exec([]string{"ROLLBACK"})
		return
	}
	// A group applied in MIXED on a session that logs rows may have
	// failed before its end took the session back to ROW (rowformat.go).
	var format []string
	if s.opts.RowFormat {
		format = []string{rowsAgain}
	}
	if s.holdsTemporary() && s.opts.KeepGTID {
		// Between groups, as after one (toRest).
		if s.conn.exec(append([]string{"ROLLBACK", restOutsideBinlog}, format...)) == nil {
			s.resting = true
		}
		return
	}
	// A script that failed amid statements run outside the binlog
	// (outsideBinlog) left the session so: what runs next is binlogged.
	if s.conn.exec(append([]string{"ROLLBACK", binlogAgain}, format...)) == nil {
		s.resting = false
	}
}

// Skip records txn as applied without applying it: only its position is written.
func (s *Session) Skip(ctx context.Context, txn *binlog.Transaction, checkpoint string) error {
	if err := s.run(s.toRest(s.ownTransaction(checkpoint))); err != nil {
		s.Rollback(ctx)
		return newApplyError(txn, err)
	}
	s.committed(txn)
	return nil
}

// GuardsPosition reports whether txn, applied alone, has its position
// written by a guarded statement (guardPosition): once it committed, the
// target's binlog held no GTID of its domain past it.
func (s *Session) GuardsPosition(txn *binlog.Transaction) bool {
	return s.opts.KeepGTID && s.opts.WriteBinlog && shapeOf(txn) == shapeAlone
}

// guardPosition replaces the position statement in tail with one that
// writes the position only when the target's binlog holds no GTID of g's
// domain past g (checkpoint.Guarded): that is, when the group just run
// did not take a sequence number beyond its own there. It runs in the same
// round trip as the group.
func guardPosition(tail []string, checkpoint string, g gtid.MariaDBGTID) ([]string, error) {
	for i, stmt := range tail {
		if stmt != checkpoint {
			continue
		}
		guarded, ok := ckpt.Guarded(stmt, g)
		if !ok {
			return nil, fmt.Errorf("gapless bug: the position statement cannot be guarded: %s", stmt)
		}
		tail[i] = guardMark + guarded
		return tail, nil
	}
	return nil, fmt.Errorf("gapless bug: the position statement of %s is missing from its script", g)
}

// checkOneGroup makes sure a group the target binlogged as it executed
// took exactly its own GTID there. Should the target have split it into
// two GTID groups, the second would hold the sequence number of the
// source's next transaction, which would then be taken for applied: the
// run stops here instead, before the position passes it. (Such a group
// runs alone: nothing else writes the target's binlog meanwhile.)
func (s *Session) checkOneGroup(txn *binlog.Transaction) error {
	text, err := s.conn.queryString("SELECT @@global.gtid_binlog_pos")
	if err != nil {
		return err
	}
	pos, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return fmt.Errorf("target @@gtid_binlog_pos: %w", err)
	}
	if last, ok := pos.Get(txn.MariaDB.Domain); ok && last.Seq > txn.MariaDB.Seq {
		return fmt.Errorf("%w (the target's binlog now ends at %s)", errNotOneGroup, last)
	}
	return nil
}
