// ddlrecovery.go tells a DDL that the target's DDL recovery finished from
// a client's write on the target.
//
// A target that crashes amid an ALTER TABLE whose change is complete in
// the engine, but not yet in the binlog, finishes it as it starts again
// and logs the statement it stored for that, the ALTER's own text under
// its default database, with no comment added (MariaDB 10.6 and later,
// sql/ddl_log.cc). It logs it under the target's own server id and its
// default GTID domain: in the domain of the source's group, with the
// group's sequence number when it was the next one. The target's binlog
// then holds the DDL, the source's GTID does not name it, and gapless
// would otherwise stop on a write it cannot tell from a client's.
package target

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// finishedByDDLRecovery reports whether last, the target's own GTID past
// txn in its domain, is txn's DDL as the target's DDL recovery logged it
// after a crash amid it: txn began on the target (its begun mark), last
// has txn's sequence number and the target's server id, and its event is
// txn's statement, word for word, under txn's default database. A binlog
// the apply user may not read (BINLOG MONITOR) tells nothing: false.
func (s *Session) finishedByDDLRecovery(txn *binlog.Transaction, last gtid.MariaDBGTID, began bool) (bool, error) {
	if !began || !txn.Has(binlog.FlagDDL) || last.Seq != txn.MariaDB.Seq || last.Domain != txn.MariaDB.Domain {
		return false, nil
	}
	own, err := s.conn.queryString("SELECT @@global.server_id")
	if err != nil || own != fmt.Sprint(last.Server) {
		return false, err
	}
	want, ok := ddlInfo(txn)
	if !ok {
		return false, nil
	}
	info, found, err := s.loggedStatement(last)
	if code, _ := errorCode(err); code == 1227 {
		return false, nil
	}
	if err != nil || !found {
		return false, err
	}
	return strings.TrimSpace(info) == want, nil
}

// ddlInfo is how SHOW BINLOG EVENTS shows txn's one DDL statement when the
// target's DDL recovery logs it: "use `db`; " and the statement's text as
// gapless ran it (sourceStatement: an ALTER TABLE is not rewritten but
// for the terminator and comments after it, which go).
func ddlInfo(txn *binlog.Transaction) (string, bool) {
	info, n := "", 0
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok || binlog.ControlStatement(q.Query) != "" {
			continue
		}
		if n++; n > 1 {
			return "", false
		}
		info = withoutTrailer(queryStatement(q.Query))
		if len(q.Schema) > 0 {
			info = "use `" + strings.ReplaceAll(string(q.Schema), "`", "``") + "`; " + info
		}
	}
	return info, n == 1
}
