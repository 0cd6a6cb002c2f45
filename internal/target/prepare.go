// This file owns the scripts of batches made ahead of their turn: while a
// job waits for the jobs it depends on, the target runs theirs, and its
// worker makes the job's script then rather than after, when the target
// would wait for it (a batch of 128 transactions takes about as long to make
// as the target takes for a tenth of it).
//
// A script says the session state only where it changes (the SET statements
// of a statement's variables, USE), so it is made from the state the
// session holds. Invariant: a prepared script is used only when the session
// holds, when it is sent, the very state it was made from (the same
// objects); anything that happened between (an error, a new connection, an
// XA branch resumed) makes the session make it again.
package target

import (
	"slices"

	"gapless/internal/binlog"
)

// checkpointSlot stands for the checkpoint statement in a prepared script:
// that statement is known only when the job runs.
const checkpointSlot = "-- checkpoint"

// aheadMark divides a batch's script begun ahead (ExecuteAhead) where
// Continue takes it up; it is never sent.
const aheadMark = "-- ahead"

// preparedBatch is a batch's script and the session state before and
// after it.
type preparedBatch struct {
	txns         []*binlog.Transaction
	ahead        []int
	body, tail   []string
	checkpointAt int // the index of checkpointSlot in body
	before       sessionState
	after        sessionState
}

// sessionState is what making a script reads and changes of the session.
type sessionState struct {
	state     *binlog.SessionState
	db        string
	temporary bool
	conn      *wire
	// singleByteClient is conn's (binlogClient): a script made ahead
	// leaves it as it found it until the script is taken.
	singleByteClient bool
}

func (s *Session) sessionState() sessionState {
	st := sessionState{state: s.state, db: s.db, temporary: s.temporary, conn: s.conn}
	if s.conn != nil {
		st.singleByteClient = s.conn.singleByteClient
	}
	return st
}

// restore puts the session back in st, a state sessionState returned.
func (s *Session) restore(st sessionState) {
	s.state, s.db, s.temporary = st.state, st.db, st.temporary
	if s.conn != nil && s.conn == st.conn {
		s.conn.singleByteClient = st.singleByteClient
	}
}

// Prepare makes the script of a batch of Batchable transactions that the
// session is to run next, and keeps it for Apply or Execute, or, with
// ahead, for ExecuteAhead. A single transaction is left to them: its script
// depends on what the target holds.
func (s *Session) Prepare(txns []*binlog.Transaction, ahead []int) {
	s.prepared = nil
	if len(txns) < 2 || len(s.parked) > 0 {
		return
	}
	before := s.sessionState()
	if s.state != nil {
		// Making a script may change the state it replaces in place.
		copied := *s.state
		s.state = &copied
	}
	body, tail, err := s.batchScript(txns, ahead, checkpointSlot)
	after := s.sessionState()
	s.restore(before)
	if err != nil {
		return // made again when the job runs, which reports the error
	}
	for i, stmt := range body {
		if stmt == checkpointSlot {
			s.prepared = &preparedBatch{txns: txns, ahead: ahead, body: body, tail: tail, checkpointAt: i, before: before, after: after}
			return
		}
	}
}

// takePrepared returns the script Prepare made for txns, with the session
// moved to the state after it, or nil when there is none or the session no
// longer holds the state it was made from.
func (s *Session) takePrepared(txns []*binlog.Transaction, ahead []int) *preparedBatch {
	p := s.prepared
	s.prepared = nil
	if p == nil || len(p.txns) != len(txns) || &p.txns[0] != &txns[0] || !slices.Equal(p.ahead, ahead) || s.sessionState() != p.before {
		return nil
	}
	s.restore(p.after)
	return p
}
