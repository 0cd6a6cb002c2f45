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
	var packet []string
	size := 0
	guard := -1      // the packet's guarded position statement
	var checks []int // the packet's OneGroupChecks
	send := func(expect, tolerate uint16) error {
		err := checkExpected(s.conn.exec(packet), expect, tolerate)
		if err == nil {
			s.ran += len(packet)
		} else {
			s.ran += len(s.conn.affected)
		}
		if err == nil && guard >= 0 {
			switch {
			case guard >= len(s.conn.affected):
				err = errors.New("the position statement did not run") // nothing after an error runs
			case s.conn.affected[guard] == 0:
				err = errNotOneGroup
			}
		}
		if code, _ := errorCode(err); code == errSubqueryRows && slices.Contains(checks, len(s.conn.affected)) {
			err = errNotOneGroup
		}
		packet, size, guard, checks = packet[:0], 0, -1, checks[:0]
		return err
	}
	for _, stmt := range script {
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
			if len(packet) > 0 {
				if err := send(0, 0); err != nil {
					return err
				}
			}
			if err := s.runFragmented(text); err != nil {
				return err
			}
			s.ran++
			continue
		}
		if len(packet) > 0 && size+len(text)+2 > min(s.maxStatement, roundTrip) {
			if err := send(0, 0); err != nil {
				return err
			}
		}
		if guarded {
			guard = len(packet)
		}
		if checked {
			checks = append(checks, len(packet))
		}
		packet = append(packet, text)
		size += len(text) + 2
		if text == ownDomainStatement && s.temporary {
			// It may be refused (temporary tables pin the session's
			// domain): it ends its packet, so that nothing after it has run
			// when it is.
			if err := send(0, 0); err != nil {
				if code, _ := errorCode(err); code == errGTIDInTransaction {
					return fmt.Errorf("%w: %w", errDomainPinned, err)
				}
				return err
			}
			continue
		}
		// A statement logged with its own terminator (a stored program
		// under sql_mode=ORACLE: "... AS SELECT 1;", or a client's
		// "...; -- why") would leave an empty statement before the next
		// one of the packet, a syntax error.
		if expect != 0 || tolerate != 0 || endsTerminated(text) {
			if err := send(expect, tolerate); err != nil {
				return err
			}
		}
	}
	if len(packet) > 0 {
		return send(0, 0)
	}
	return nil
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
