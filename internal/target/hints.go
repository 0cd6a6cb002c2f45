// hints.go says, of a group the target refuses, what the user can do about
// it: each hint names a cause no replica can undo (a temporary table lost
// with a connection, rows that differ from the source's, a full disk, a
// foreign write in the stream's GTID domain, a missing privilege) and how
// to go on. A hint only adds words to the target's error (hinted); it never
// changes which error stops the run.
package target

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// privilegeHint names what the apply user lacks when the target says access denied.
func privilegeHint(err error) error {
	if code, _ := errorCode(err); code == 1227 || code == 1044 || code == 1142 {
		return &hinted{err, "the target user needs SUPER, BINLOG REPLAY and the data privileges; e.g. GRANT ALL ON *.* TO the apply user"}
	}
	return err
}

// errReadOnly is ER_OPTION_PREVENTS_STATEMENT, which a read-only target
// answers a user without READ_ONLY ADMIN (read_only set during a run: a
// run that starts on such a target is refused before anything is applied).
const errReadOnly = 1290

// readOnlyHint says what to do when the target refuses to write.
func readOnlyHint(err error) error {
	if code, _ := errorCode(err); code == errReadOnly && strings.Contains(err.Error(), "read-only") {
		return &hinted{err, "the target is read-only: GRANT READ_ONLY ADMIN ON *.* TO the apply user, or SET GLOBAL read_only=OFF"}
	}
	return err
}

// explain adds to err, the target's refusal of txn, what the user needs
// to know to act on it (the hints below).
func (s *Session) explain(err error, txn *binlog.Transaction) error {
	err = readOnlyHint(err)
	err = s.missingTableHint(err, txn)
	err = s.rowsDifferHint(err, txn)
	err = outOfOrderHint(err, txn)
	err = roomHint(err)
	err = clusterHint(err)
	if s.loads != nil {
		err = localInfileHint(err)
	}
	return err
}

// missingTableHint says, of a statement that names a table the target
// lacks (1146), what may have happened that no replica can undo: the table
// was a temporary table of the source's session, lost with gapless's
// connection to the target that held it (a crash of gapless, the target
// restarted, the connection cut); a run that ends kept them for the next
// (kept.go). When the session knows the statement's source session held
// that table as the target lost it (Lose), it says so outright. (Row
// events never name a temporary table.)
func (s *Session) missingTableHint(err error, txn *binlog.Transaction) error {
	if code, _ := errorCode(err); code != 1146 || len(txn.RowEvents()) > 0 {
		return err
	}
	const cannot = "what the statement read from it cannot be applied, so rebuild the target, or skip the transaction knowing its changes are lost"
	if k, ok := s.lostMissing(err, txn); ok {
		return &hinted{err, fmt.Sprintf("the source's session %d held the temporary table %s.%s, which the target lost with gapless's connection that held it (gapless killed, or the connection cut); %s",
			k.thread, quoteName(k.db), quoteName(k.name), cannot)}
	}
	return &hinted{err, "if it was a temporary table of the source's session, it was lost: gapless keeps the source's temporary tables from one run to the next when a run ends, " +
		"but not when gapless was killed or crashed, the target restarted, or gapless's connection holding them was cut (as a replica's end with its server); " + cannot}
}

// missingName reads the table of a 1146 error: Table 'db.name' doesn't exist.
var missingName = regexp.MustCompile(`Table '(.*)' doesn't exist`)

// lostMissing finds the table a 1146 error names among those the target
// lost of the source sessions whose statements txn holds.
func (s *Session) lostMissing(err error, txn *binlog.Transaction) (lostKey, bool) {
	m := missingName.FindStringSubmatch(err.Error())
	if m == nil || len(s.lost) == 0 {
		return lostKey{}, false
	}
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		for k := range s.lost {
			if k.thread == q.SlaveProxyID && strings.EqualFold(k.db+"."+k.name, m[1]) {
				return k, true
			}
		}
	}
	return lostKey{}, false
}

// roomHint says what to do when the target has no room for a group: a
// table it will not grow (1114: a MEMORY table at its max_heap_table_size,
// a tablespace at its size limit, a full disk) or a full disk (errno 28 in
// a file error). Room made, the group applies; skipping it would lose it.
func roomHint(err error) error {
	code, _ := errorCode(err)
	msg := err.Error()
	switch {
	case code == 1114:
		return &hinted{err, "the target will not grow the table: a MEMORY table at the target's max_heap_table_size (fixed when the table was created; raise it, then ALTER TABLE ... ENGINE=MEMORY on the target), " +
			"an InnoDB tablespace at its size limit, or a full disk on the target; make room there and run again (a table that is not transactional, as MEMORY, keeps the rows written before the error: compare it with `gapless verify`); skipping the transaction would lose it"}
	case strings.Contains(msg, "Errcode: 28") || strings.Contains(msg, "errno: 28") || strings.Contains(msg, "No space left on device"):
		return &hinted{err, "the target's disk is full (its datadir, tmpdir or binlog folder): free space there and run again: nothing of this transaction is applied, and skipping it would lose it"}
	}
	return err
}

// errGTIDOutOfOrder is ER_GTID_STRICT_OUT_OF_ORDER: the target, in
// gtid_strict_mode, would binlog a GTID at or below its domain's last.
const errGTIDOutOfOrder = 1950

// existingGTID names the GTID the target's binlog holds in a 1950.
var existingGTID = regexp.MustCompile(`existing GTID (\d+)-(\d+)-(\d+)`)

// outOfOrderHint says, of a group the target refuses to binlog because its
// binlog already holds a GTID at or past it in its domain (1950), that
// something besides gapless wrote that domain on the target: most often a
// client's write on the target itself, binlogged in the target's
// gtid_domain_id, which is the source's when both are 0. Skipping the
// group would lose it and mend nothing.
func outOfOrderHint(err error, txn *binlog.Transaction) error {
	if code, _ := errorCode(err); code != errGTIDOutOfOrder {
		return err
	}
	existing := "a GTID"
	if m := existingGTID.FindStringSubmatch(err.Error()); m != nil {
		existing = m[1] + "-" + m[2] + "-" + m[3]
		if existing == txn.MariaDB.String() {
			// Under the source's own server id and this very number: no
			// client of the target's writes that (enddrop.go).
			return &hinted{err, "the target's binlog holds this transaction's own GTID, though gapless has not applied it: most likely as the DROP TEMPORARY TABLE the target logged when gapless's connection holding the source's temporary tables ended amid it (gapless killed, the connection cut, or the target shut down; SHOW BINLOG EVENTS on the target shows it); " +
				"the transaction is not on the target: rebuild the target, or apply it by hand outside the target's binlog (SET sql_log_bin=0) and replicate with --skip-gtid " + existing}
		}
	}
	return &hinted{err, "the target's binlog already holds " + existing + ", at or past this transaction in its GTID domain, and gapless did not write it: " +
		"something else wrote the domain on the target, " + foreignWritesAdvice + "; skipping this transaction would lose its changes and mend nothing"}
}

// foreignWritesAdvice says what writes a GTID domain of the stream on the
// target besides gapless, and what to do.
const foreignWritesAdvice = "most often a client's write on the target itself (binlogged in the target's @@gtid_domain_id, the source's domain when both are 0; its server id is then the target's). " +
	"Keep such writes out of the stream's domain (SET GLOBAL gtid_domain_id on the target to one the source does not use, or SET SESSION sql_log_bin=0 for them), " +
	"compare the tables with `gapless verify`, and to go on either SET GLOBAL gtid_strict_mode=OFF on the target (its binlog then holds both GTIDs, which replicas of the target in strict mode refuse too) or re-seed the target"

// recordNotFound names the table of a 1032 (Can't find record in 'NAME').
var recordNotFound = regexp.MustCompile(`Can't find record in '([^']+)'`)

// rowsDifferHint says, of a row event the target's rows refuse (1032: the
// row to change is not there; 1062: the row to add is there already), that
// the target's rows differ from the source's there, the usual causes, and
// what skipping leaves. Where the row not found is a SEQUENCE's, it names
// the cause no client is behind: a target that crashed right after a
// CREATE SEQUENCE, which MariaDB answers before the sequence's row is
// durable, recovers the sequence without its row.
func (s *Session) rowsDifferHint(err error, txn *binlog.Transaction) error {
	code, _ := errorCode(err)
	if (code != 1032 && code != 1062) || len(txn.RowEvents()) == 0 {
		return err
	}
	if m := recordNotFound.FindStringSubmatch(err.Error()); code == 1032 && m != nil {
		for _, t := range txn.Tables {
			if !strings.EqualFold(t.Table, m[1]) || !s.isSequence(t.Schema, t.Table) {
				continue
			}
			return &hinted{err, fmt.Sprintf("the sequence %s.%s has no row on the target: a target that crashed right after its CREATE SEQUENCE (MariaDB answers that before the row is on disk) recovers it so; "+
				"on the target, with SET SESSION sql_log_bin=0, DROP SEQUENCE it and create it again as SHOW CREATE SEQUENCE shows it on the source, at the value it had at this point (SETVAL), then run again", t.Schema, t.Table)}
		}
	}
	return &hinted{err, "the target's rows differ from the source's here: a client wrote the table on the target, or the target was not seeded at the position gapless started from; " +
		"compare with `gapless verify`, and mend the rows on the target (outside its binlog) or re-seed it; skipping the transaction leaves them different"}
}

// isSequence reports whether the target holds schema.table as a SEQUENCE.
func (s *Session) isSequence(schema, table string) bool {
	if s.utf8ClientNow(schema, table) != nil {
		return false
	}
	r, err := s.conn.c.Execute("SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table)
	if err != nil {
		return false
	}
	defer r.Close()
	kind, _ := r.GetString(0, 0)
	return r.RowNumber() > 0 && kind == "SEQUENCE"
}
