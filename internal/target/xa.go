// xa.go applies XA transactions. The source logs an XA transaction as two
// groups: XA START ... XA END, XA PREPARE, then later XA COMMIT or XA
// ROLLBACK in a group of its own. The prepared branch stays on the target
// after its connection ends (MariaDB 10.5 and later), so the session gives
// that connection up right after the prepare, and any session may end the
// branch later. A branch prepared on the connection that holds the source's
// temporary tables is parked there instead (temporary.go).
package target

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// xaPrepareScript applies the first phase of an XA transaction: XA START,
// its events, XA END and XA PREPARE. The prepared transaction stays on the
// target after the connection ends (MariaDB 10.5 and later) and waits for
// the group holding its XA COMMIT or XA ROLLBACK, which any session may run;
// this session's connection is given up right after it (afterXAPrepare).
func (s *Session) xaPrepareScript(txn *binlog.Transaction, checkpoint string) (body, tail []string, err error) {
	start, prepare, err := xaStatements(txn)
	if err != nil {
		return nil, nil, err
	}
	if s.opts.KeepGTID {
		body = append(body, gtidStatements(txn.MariaDB)...)
	}
	body = append(body, start)
	body, _, err = s.events(txn, body, &tail, true, func() {})
	if err != nil {
		return nil, nil, err
	}
	body = append(body, prepare)
	return body, s.ownTransaction(checkpoint), nil
}

// endUnprepared ends the XA branch of txn that script, which failed, began
// and did not prepare (a lock wait timed out, a deadlock, the watchdog):
// ROLLBACK does not end one, and the connection could run nothing else
// while it is open (1953 on the retry's first statement, 1399). A branch
// that was prepared stays, as on the source.
func (s *Session) endUnprepared(txn *binlog.Transaction, script []string) {
	start, prepare, err := xaStatements(txn)
	if err != nil {
		return
	}
	if at := slices.Index(script, prepare); at >= 0 && s.ran > at {
		return
	}
	x := strings.TrimPrefix(start, "XA START ")
	// One at a time: XA END fails when the branch is idle already.
	_ = s.conn.exec([]string{"XA END " + x})
	_ = s.conn.exec([]string{"XA ROLLBACK " + x})
}

// awaitEnded waits, ten seconds at most, until the server has ended the
// connection id, one this session closed while it held a prepared XA
// branch. The server lets go of the branch (XA RECOVER lists it as soon as
// it is prepared) only when it ends the connection, just before dropping it
// from the process list; until then an XA COMMIT or XA ROLLBACK from
// another connection answers "unknown XID" (1397).
func (s *Session) awaitEnded(id int64) error {
	query := fmt.Sprintf("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %d", id)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		r, err := s.conn.c.Execute(query)
		if err != nil {
			return connError(err)
		}
		live := r.RowNumber() > 0
		r.Close()
		if !live {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection %d, which prepared an XA branch, has not ended after 10 s: the branch stays attached to it", id)
		}
	}
}

// xaPrepared reports whether the target holds x prepared (XA RECOVER).
func (s *Session) xaPrepared(x xid) (bool, error) {
	r, err := s.conn.c.Execute("XA RECOVER")
	if err != nil {
		return false, connError(err)
	}
	defer r.Close()
	for i := 0; i < r.RowNumber(); i++ {
		format, _ := r.GetInt(i, 0)
		gtridLen, _ := r.GetInt(i, 1)
		data, _ := r.GetString(i, 3)
		if format == x.format && int(gtridLen) == len(x.gtrid) && data == x.gtrid+x.bqual {
			return true, nil
		}
	}
	return false, nil
}

// PreparesXA reports whether txn is the first phase of an XA transaction
// (XA START ... XA PREPARE).
func PreparesXA(txn *binlog.Transaction) bool { return shapeOf(txn) == shapeXAPrepare }

func endsInXAPrepare(txn *binlog.Transaction) bool {
	n := len(txn.Events)
	return n > 0 && txn.Events[n-1].Header.EventType == replication.XA_PREPARE_LOG_EVENT
}

// xaStatements returns the XA START and XA PREPARE statements of an XA
// PREPARE group, made from its XA END query, which names the transaction's
// XID as the target must see it (X'gtrid',X'bqual',format).
func xaStatements(txn *binlog.Transaction) (start, prepare string, err error) {
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		text := strings.TrimSpace(string(q.Query))
		if len(text) > 6 && strings.EqualFold(text[:6], "XA END") {
			xid := strings.TrimSpace(text[6:])
			return "XA START " + xid, "XA PREPARE " + xid, nil
		}
	}
	return "", "", fmt.Errorf("%s: an XA PREPARE group without an XA END statement", txn)
}

// xid is an XA transaction's identifier.
type xid struct {
	format       int64
	gtrid, bqual string
}

// parseXID reads an XID as the binlog's XA statements write it:
// X'hex',X'hex',format.
func parseXID(text string) (xid, bool) {
	parts := strings.Split(strings.TrimSpace(text), ",")
	if len(parts) != 3 {
		return xid{}, false
	}
	var x xid
	for i, p := range parts[:2] {
		p = strings.TrimSpace(p)
		if len(p) < 3 || (p[0] != 'X' && p[0] != 'x') || p[1] != '\'' || p[len(p)-1] != '\'' {
			return xid{}, false
		}
		b, err := hex.DecodeString(p[2 : len(p)-1])
		if err != nil {
			return xid{}, false
		}
		if i == 0 {
			x.gtrid = string(b)
		} else {
			x.bqual = string(b)
		}
	}
	f, err := strconv.ParseInt(strings.TrimSpace(parts[2]), 10, 64)
	if err != nil {
		return xid{}, false
	}
	x.format = f
	return x, true
}

// completesXA reports whether txn is the XA COMMIT or XA ROLLBACK that ends
// a prepared XA transaction (the second phase).
func completesXA(txn *binlog.Transaction) bool {
	flags2, _ := txn.GTIDFlags()
	return txn.Flavor == binlog.FlavorMariaDB && flags2&gtidCompletedXA != 0
}

// endsXA returns the XID that txn, an XA COMMIT or XA ROLLBACK group, ends.
func endsXA(txn *binlog.Transaction) xid {
	x, _ := xaEnding(txn)
	return x
}

// xaEnding returns the XID that txn, an XA COMMIT or XA ROLLBACK group,
// ends, and its statement.
func xaEnding(txn *binlog.Transaction) (xid, string) {
	if !completesXA(txn) {
		return xid{}, ""
	}
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		text := strings.TrimSpace(string(q.Query))
		for _, verb := range []string{"XA COMMIT ", "XA ROLLBACK "} {
			if len(text) > len(verb) && strings.EqualFold(text[:len(verb)], verb) {
				if x, ok := parseXID(text[len(verb):]); ok {
					return x, text
				}
			}
		}
	}
	return xid{}, ""
}

// afterXAPrepare gives up the connection that prepared first's XA branch,
// so that any session may end it, or parks the branch there (park), and
// checks that the target binlogged it as one GTID group.
func (s *Session) afterXAPrepare(first *binlog.Transaction, park bool) error {
	if park {
		// The branch keeps its connection, and the temporary tables there,
		// until the group that ends it (temporary.go).
		if err := s.park(first); err != nil {
			return newApplyError(first, err)
		}
	} else {
		prepared := s.conn.connectionID()
		if err := s.reopen(); err != nil {
			return newApplyError(first, err)
		}
		if err := s.awaitEnded(prepared); err != nil {
			return newApplyError(first, err)
		}
	}
	if s.opts.KeepGTID && s.opts.WriteBinlog {
		if err := s.checkOneGroup(first); err != nil {
			s.Rollback(context.Background())
			return newApplyError(first, err)
		}
	}
	return nil
}
