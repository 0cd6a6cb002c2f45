// unsafe.go warns of statements the source logged in statement format that
// MariaDB calls unsafe (binlog.UnsafeKinds): the target may not end equal to
// the source, and gapless, which promises equality, says so, once per kind
// and run, with the first GTID of each.
package apply

import (
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

func (r *Replica) warnUnsafe(txn *binlog.Transaction) {
	if txn.Has(binlog.FlagKnownStatements) {
		return // the decoder read every statement, and found none unsafe
	}
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			continue
		}
		for _, kind := range binlog.UnsafeKinds(string(q.Query)) {
			if _, seen := r.unsafeSeen.LoadOrStore(kind, true); !seen {
				r.log.Warn("the source logged a statement unsafe for statement-based replication; the target may now differ from the source (the source's binlog_format=MIXED or ROW logs such statements as rows); warned once per kind",
					"kind", kind, "gtid", txn.GTID(), "statement", shortStatement(string(q.Query)))
			}
		}
	}
}

func shortStatement(q string) string {
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}
