// enddrop.go tells the source's group from the DROP TEMPORARY TABLE a
// connection of gapless's logs under the group's GTID as it ends.
//
// A MariaDB session that ends holding temporary tables logs "DROP
// /*!40005 TEMPORARY */ TABLE IF EXISTS ..." under its GTID variables of
// the moment (temporary.go). Between groups the statement session rests
// outside the binlog, but amid a group it binlogs under the source's
// server id and the group's sequence number: when gapless is killed, the
// connection cut or the target shut down then, the target rolls the group
// back and logs that DROP under the group's own GTID; and after the group
// committed, before its rest, under the next one. The target's binlog then
// holds a GTID of the source that is not the source's group, and a group
// applied alone (AppliedAlone) would be taken for applied. So where the
// target holds such a group's GTID without its position, the event is read
// back from the target's binlog (SHOW BINLOG EVENTS, BINLOG MONITOR).
package target

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// endDrop matches, in SHOW BINLOG EVENTS' Info, the statement a session
// logs as it ends holding temporary tables.
var endDrop = regexp.MustCompile("^(use `(``|[^`])*`; )?DROP /\\*!40005 TEMPORARY \\*/ TABLE IF EXISTS ")

// fileQuote escapes a binlog file's name in a plain string literal.
var fileQuote = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// endDropPage is how many events one SHOW BINLOG EVENTS reads.
const endDropPage = 5000

// notEndDrop returns an error when the target's binlog holds g, a GTID of
// txn's stream that the target holds past the last position gapless
// wrote, as the DROP TEMPORARY TABLE of a connection that ended and not
// as the source's group: txn itself when g is its GTID, or the one after
// it. One that does not let the user read its binlog is taken at its word,
// with a warning.
func (s *Session) notEndDrop(txn *binlog.Transaction, g gtid.MariaDBGTID) error {
	info, found, err := s.loggedStatement(g)
	if code, _ := errorCode(err); code == 1227 {
		if s.opts.Warn != nil {
			s.opts.Warn(fmt.Sprintf("%s is in the target's binlog though gapless had not written its position: taken for applied without reading it back (SHOW BINLOG EVENTS needs BINLOG MONITOR for the apply user): "+
				"it could also be the DROP TEMPORARY TABLE a connection of gapless's logged as it ended, which a grant of BINLOG MONITOR lets gapless tell apart", g))
		}
		return nil
	}
	if err != nil {
		return newApplyError(txn, fmt.Errorf("read %s back from the target's binlog: %w", g, err))
	}
	if !found || !endDrop.MatchString(info) {
		return nil
	}
	if g == txn.MariaDB && sourceEndDrop(txn) {
		return nil // the source's group is such a drop too: the same statement
	}
	return newApplyError(txn, fmt.Errorf("the target's binlog holds %s as %q, the DROP TEMPORARY TABLE the target logged when gapless's connection holding the source's temporary tables ended amid a group (gapless killed, the connection cut, or the target shut down), not the source's group %s: "+
		"that group is not on the target, and the source's temporary tables there are gone too (the target lost them with gapless's connection that held them); gapless stops: "+
		"rebuild the target, or apply group %s on the target by hand outside its binlog (SET sql_log_bin=0) and replicate with %s", g, info, g, g, skipFlags(txn.MariaDB, g)))
}

// skipFlags are the --skip-gtid flags that take the groups of from's
// domain and server from from through to as applied.
func skipFlags(from, to gtid.MariaDBGTID) string {
	if to.Seq < from.Seq || to.Seq-from.Seq > 4 {
		return fmt.Sprintf("--skip-gtid for each GTID %d-%d-N from %s through %s (those before %s are on the target)", from.Domain, from.Server, from, to, to)
	}
	var flags []string
	for seq := from.Seq; seq <= to.Seq; seq++ {
		flags = append(flags, fmt.Sprintf("--skip-gtid %d-%d-%d", from.Domain, from.Server, seq))
	}
	note := ""
	if to != from {
		note = fmt.Sprintf(" (those before %s are on the target)", to)
	}
	return strings.Join(flags, " ") + note
}

// sourceEndDrop reports whether txn is itself the drop a source session
// logged as it ended.
func sourceEndDrop(txn *binlog.Transaction) bool {
	for _, ev := range txn.Events {
		if q, ok := ev.Data.(*replication.QueryEvent); ok && endDrop.MatchString(string(q.Query)) {
			return true
		}
	}
	return false
}

// loggedStatement reads the target's binlog, its newest two files, for the
// group g and returns the Info of its first statement.
func (s *Session) loggedStatement(g gtid.MariaDBGTID) (info string, found bool, err error) {
	files, err := s.conn.queryRows("SHOW BINARY LOGS")
	if err != nil {
		return "", false, err
	}
	want := "GTID " + g.String()
	for i := len(files) - 1; i >= 0 && i >= len(files)-2; i-- {
		file := files[i][0]
		seen := false
		for from := ""; ; {
			// SHOW BINLOG EVENTS takes a plain literal, without an introducer.
			rows, err := s.conn.queryRows(fmt.Sprintf("SHOW BINLOG EVENTS IN '%s'%s LIMIT %d", fileQuote.Replace(file), from, endDropPage))
			if err != nil {
				return "", false, err
			}
			for _, r := range rows { // Log_name, Pos, Event_type, Server_id, End_log_pos, Info
				if len(r) < 6 {
					continue
				}
				switch {
				case r[2] == "Gtid":
					if seen {
						return "", true, nil // a group without a statement
					}
					seen = r[5] == want || strings.HasSuffix(r[5], " "+want)
				case seen && r[2] == "Query":
					return r[5], true, nil
				}
			}
			if len(rows) < endDropPage {
				break
			}
			from = " FROM " + rows[len(rows)-1][4]
		}
		if seen {
			return "", true, nil
		}
	}
	return "", false, nil
}
