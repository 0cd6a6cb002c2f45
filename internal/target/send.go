// send.go sends a script to the target in as few round trips as
// max_allowed_packet allows, and reads one answer per statement. A
// statement logged with an error, a guarded position, a one-group check or
// the switch to gapless's own domain ends its round trip, so that nothing
// after it has run when it fails.
package target

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// run sends the statements in as few round trips as max_allowed_packet
// allows. A statement the source logged with an error ends its round trip,
// and must fail with that same error (see expecting).
func (s *Session) run(script []string) error {
	if len(script) == 0 {
		return s.send(script)
	}
	resting := s.resting
	s.resting = false
	if resting {
		// The session rests outside the binlog (restOutsideBinlog): the
		// round trip turns it on again first, and that answer is not the
		// script's.
		script = append([]string{binlogAgain}, script...)
	}
	err := s.send(script)
	if resting {
		s.ran = max(s.ran-1, 0)
	}
	s.resting = err == nil && script[len(script)-1] == restOutsideBinlog
	return err
}

// send is run without the rest.
func (s *Session) send(script []string) error {
	s.conn.files = s.loads
	s.ran = 0
	p := &roundTripStatements{s: s, guard: -1}
	for _, stmt := range script {
		if err := p.add(stmt); err != nil {
			return err
		}
	}
	if len(p.stmts) > 0 {
		return p.send(0, 0)
	}
	return nil
}

// roundTripStatements are the statements of one round trip while send gathers them.
type roundTripStatements struct {
	s     *Session
	stmts []string
	size  int // the bytes of stmts, with their separators
	// guard is the index of the packet's guarded position statement, -1
	// when it has none; checks are those of its OneGroupChecks.
	guard  int
	checks []int
}

// add adds stmt, a statement of the script, to the packet, sending what it
// holds first when stmt would not fit, and the packet with stmt when stmt
// must end its round trip.
func (p *roundTripStatements) add(stmt string) error {
	s := p.s
	guarded := strings.HasPrefix(stmt, guardMark)
	if guarded {
		stmt = stmt[len(guardMark):]
	}
	checked := strings.HasPrefix(stmt, oneGroupMark)
	if checked {
		stmt = stmt[len(oneGroupMark):]
	}
	expect, tolerate, text := splitExpected(stmt)
	if len(text) > s.maxStatement {
		if len(p.stmts) > 0 {
			if err := p.send(0, 0); err != nil {
				return err
			}
		}
		if err := s.runFragmented(text); err != nil {
			return err
		}
		s.ran++
		return nil
	}
	if len(p.stmts) > 0 && p.size+len(text)+2 > min(s.maxStatement, roundTrip) {
		if err := p.send(0, 0); err != nil {
			return err
		}
	}
	if guarded {
		p.guard = len(p.stmts)
	}
	if checked {
		p.checks = append(p.checks, len(p.stmts))
	}
	p.stmts = append(p.stmts, text)
	p.size += len(text) + 2
	if s.temporary && strings.HasPrefix(text, ownDomainSwitch) {
		// It may be refused (temporary tables the session binlogged,
		// in MIXED, pin its domain): it ends its packet, so that nothing
		// after it has run when it is.
		if err := p.send(0, 0); err != nil {
			if code, _ := errorCode(err); code == errGTIDInTransaction {
				return fmt.Errorf("%w: %w", errDomainPinned, err)
			}
			return err
		}
		return nil
	}
	// A statement logged with its own terminator (a stored program
	// under sql_mode=ORACLE: "... AS SELECT 1;", or a client's
	// "...; -- why") would leave an empty statement before the next
	// one of the packet, a syntax error.
	if expect != 0 || tolerate != 0 || endsTerminated(text) {
		return p.send(expect, tolerate)
	}
	return nil
}

// send runs the packet in one round trip, its last statement expected to
// fail with expect (or tolerated to fail with tolerate), and empties it.
func (p *roundTripStatements) send(expect, tolerate uint16) error {
	s := p.s
	err := checkExpected(s.conn.exec(p.stmts), expect, tolerate)
	if err == nil {
		s.ran += len(p.stmts)
	} else {
		s.ran += len(s.conn.affected)
	}
	if err == nil && p.guard >= 0 {
		switch {
		case p.guard >= len(s.conn.affected):
			err = errors.New("the position statement did not run") // nothing after an error runs
		case s.conn.affected[p.guard] == 0:
			err = errNotOneGroup
		}
	}
	if code, _ := errorCode(err); code == errSubqueryRows && slices.Contains(p.checks, len(s.conn.affected)) {
		err = errNotOneGroup
	}
	p.stmts, p.size, p.guard, p.checks = p.stmts[:0], 0, -1, p.checks[:0]
	return err
}

// roundTrip bounds the statements of one round trip, and so a BINLOG
// statement, in bytes, whatever more the target's max_allowed_packet allows
// (a row event larger than it still goes, alone). The server takes a large
// BINLOG statement more slowly than the same events in pieces: three
// transactions of a million rows each (900 MB of row events) applied in
// 37 s in statements of up to 1 GiB, 27-31 s in statements of 1 to 64 MiB;
// and the script of one round trip is in memory twice, here and in the
// server.
const roundTrip = 16 << 20
