package apply

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// TestUnsafeStatementsWarnOncePerKind: statements the source logged unsafe
// are warned of, with the first GTID of each kind, and not again.
func TestUnsafeStatementsWarnOncePerKind(t *testing.T) {
	var logged bytes.Buffer
	r := &Replica{log: slog.New(slog.NewTextHandler(&logged, nil))}
	txn := func(seq uint64, queries ...string) *binlog.Transaction {
		tx := &binlog.Transaction{MariaDB: gtid.MariaDBGTID{Domain: 0, Server: 1, Seq: seq}}
		for _, q := range queries {
			tx.Events = append(tx.Events, binlog.Event{Data: &replication.QueryEvent{Query: []byte(q)}})
		}
		return tx
	}
	r.warnUnsafe(txn(1, "BEGIN", "INSERT INTO t VALUES (1, NOW())", "COMMIT"))
	r.warnUnsafe(txn(2, "BEGIN", "INSERT INTO t VALUES (2, SYSDATE())", "COMMIT"))
	r.warnUnsafe(txn(3, "INSERT INTO t VALUES (3, SYSDATE(), UUID())"))
	r.warnUnsafe(txn(4, "INSERT INTO t VALUES (4, UUID())"))
	out := logged.String()
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Fatalf("%d warnings, want 2 (SYSDATE() and UUID(), once each):\n%s", n, out)
	}
	for _, w := range []string{`kind=SYSDATE() gtid=0-1-2`, `kind=UUID() gtid=0-1-3`} {
		if !strings.Contains(out, w) {
			t.Errorf("the warnings lack %q:\n%s", w, out)
		}
	}
}
