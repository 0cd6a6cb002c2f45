// errors.go says what went wrong when a transaction fails on the target, in
// the words a DBA needs: which GTID, which table, which kind of statement,
// the target's error code and text, and whether trying again can help.
package target

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"

	wiremysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

	"gapless/internal/binlog"
	"gapless/internal/statement"
)

// ApplyError is a transaction the target did not accept.
type ApplyError struct {
	GTID    string
	Tables  []string
	Kind    string // "row events", "statement", "DDL"
	Code    uint16 // the target's error number, 0 when the connection failed
	Message string
	Err     error
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apply %s", e.GTID)
	if len(e.Tables) > 0 {
		fmt.Fprintf(&b, " on %s", strings.Join(e.Tables, ", "))
	}
	fmt.Fprintf(&b, " (%s): ", e.Kind)
	if e.Code != 0 {
		fmt.Fprintf(&b, "target error %d: %s", e.Code, e.Message)
		var h *hinted
		if errors.As(e.Err, &h) {
			fmt.Fprintf(&b, " (%s)", h.hint)
		}
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ApplyError) Unwrap() error { return e.Err }

// errorAnalyzer reads the tables of a failed group's statements, which
// the decoder names only for groups that may run on any session.
var errorAnalyzer = sync.OnceValue(statement.NewAnalyzer)

// statementTables returns the tables txn's DML statements name, with their
// default database filled in, as far as they can be read.
func statementTables(txn *binlog.Transaction) []string {
	var tables []string
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok || binlog.ControlStatement(q.Query) != "" {
			continue
		}
		state, err := binlog.QuerySessionState(ev.Header, q)
		if err != nil || !state.HasSQLMode {
			continue
		}
		charset, _, _ := binlog.CollationByID(uint32(state.CharsetClient))
		dml, ok := errorAnalyzer().DML(strings.TrimSpace(string(q.Query)), state.SQLMode, strings.HasPrefix(charset, "utf8"))
		if !ok {
			continue
		}
		for _, n := range dml.Tables {
			if n.Schema == "" {
				n.Schema = string(q.Schema)
			}
			name := n.Table
			if n.Schema != "" {
				name = n.Schema + "." + n.Table
			}
			if !slices.Contains(tables, name) {
				tables = append(tables, name)
			}
		}
	}
	return tables
}

// hinted is an error with what to do about it, which ApplyError says after
// the target's own message.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + " (" + h.hint + ")" }
func (h *hinted) Unwrap() error { return h.err }

// Transient reports whether applying the transaction again may succeed:
// deadlocks, lock wait timeouts, and connections lost or refused.
func (e *ApplyError) Transient() bool { return IsTransient(e.Err) }

func newApplyError(txn *binlog.Transaction, err error) *ApplyError {
	ae := &ApplyError{GTID: txn.GTID(), Kind: statementKind(txn), Err: err}
	for _, t := range txn.Tables {
		ae.Tables = append(ae.Tables, t.String())
	}
	if len(ae.Tables) == 0 {
		ae.Tables = statementTables(txn)
	}
	if len(ae.Tables) == 0 {
		ae.Tables = txn.Schemas
	}
	if code, msg, ok := serverErr(err); ok {
		ae.Code, ae.Message = code, msg
	}
	return ae
}

func statementKind(txn *binlog.Transaction) string {
	if txn.Has(binlog.FlagDDL) {
		return "DDL"
	}
	if len(txn.RowEvents()) > 0 {
		return "row events"
	}
	return "statement"
}

func errorCode(err error) (uint16, bool) {
	code, _, ok := serverErr(err)
	return code, ok
}

// serverErr is the code and message of an error the server answered, from
// either client: the apply connection's wire or database/sql's driver.
func serverErr(err error) (uint16, string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, me.Message, true
	}
	var we *wiremysql.MyError
	if errors.As(err, &we) {
		return we.Code, we.Message, true
	}
	return 0, "", false
}

// Lost reports whether err means the connection is gone (the server
// restarted, the network dropped), so that whether a commit in flight
// happened can only be learned from the checkpoint.
func Lost(err error) bool {
	if code, msg, ok := serverErr(err); ok {
		// 1927: connection killed; 1053: server shutdown in progress; 2006/2013: gone away / lost;
		// 1047 with WSREP, 1180 naming the primary component: a Galera
		// node that left the primary component (galera.go), which cannot
		// have committed what it answered so for.
		return code == 1927 || code == 1053 || code == 2006 || code == 2013 || (code == 1047 && strings.Contains(msg, "WSREP")) ||
			(code == 1180 && strings.Contains(msg, "Primary Component"))
	}
	if errors.Is(err, ErrSlotHeld) || errors.Is(err, errNodeUnusable) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && !errors.Is(err, context.Canceled)
}

// Interrupted reports whether err is the target's "query execution was
// interrupted" (KILL QUERY, which the watchdog uses).
func Interrupted(err error) bool {
	code, ok := errorCode(err)
	return ok && code == 1317
}

// IsTransient reports whether trying the same transaction again may succeed.
func IsTransient(err error) bool {
	if code, ok := errorCode(err); ok {
		switch code {
		case 1213, 1205: // deadlock, lock wait timeout
			return true
		}
	}
	return Lost(err)
}
