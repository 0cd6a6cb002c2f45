package e2e

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatementsTakeRowKeys replays a MIXED primary where 8 clients write
// the same few rows and many others, in statements whose rows their text
// says (sysbench's, REPLACE, composite keys of small and unsigned
// integers), in statements that take their table whole, and in unsafe
// statements the primary logs as rows on the very same rows. The updates
// do not commute (k = k * 3 + client): a pair of transactions on one row
// applied out of order leaves another value. With 8 workers, in causal and
// in strict commit order, every table must end equal, and statements must
// have taken row keys.
func TestStatementsTakeRowKeys(t *testing.T) {
	sb := upSandbox(t)
	setup := []string{
		"SET GLOBAL binlog_format=MIXED",
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE rk",
		"CREATE TABLE rk.uq (id INT PRIMARY KEY, u INT NOT NULL, v INT NOT NULL, UNIQUE KEY (u)) ENGINE=InnoDB",
		"INSERT INTO rk.uq SELECT seq, 100 + seq, 0 FROM rk.seq_1_to_8",
		"CREATE TABLE rk.small (a TINYINT UNSIGNED, b BIGINT UNSIGNED, v INT NOT NULL, PRIMARY KEY (a, b)) ENGINE=InnoDB",
		"INSERT INTO rk.small SELECT a.seq, b.seq, 0 FROM rk.seq_1_to_3 a, rk.seq_1_to_2 b",
		"INSERT INTO rk.small SELECT a.seq, 1099511627776, 0 FROM rk.seq_200_to_202 a",
		"INSERT INTO rk.small SELECT 200 + a.seq, b.seq, 0 FROM rk.seq_0_to_2 a, rk.seq_1_to_2 b",
	}
	for i := 1; i <= 4; i++ {
		setup = append(setup,
			fmt.Sprintf("CREATE TABLE rk.t%d (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(64) NOT NULL, KEY (k)) ENGINE=InnoDB", i),
			fmt.Sprintf("INSERT INTO rk.t%d SELECT seq, seq %% 97, CONCAT('row-', seq) FROM rk.seq_1_to_2000", i))
	}
	mustExec(t, sb.Primary, setup...)
	db := rootDB(t, sb.Primary)
	runClients(t, db, 8, 100, func(rng *rand.Rand, client, i int) error {
		tbl := func() string { return fmt.Sprintf("rk.t%d", 1+rng.Intn(4)) }
		id := func() int {
			if rng.Intn(2) == 0 {
				return 1 + rng.Intn(4) // hot
			}
			return 1 + rng.Intn(2000)
		}
		var stmts []string
		switch rng.Intn(8) {
		case 0, 1, 2:
			// sysbench's oltp_write_only, updates that do not commute
			x, tb := id(), tbl()
			stmts = []string{
				fmt.Sprintf("UPDATE %s SET k=(k*3+%d)%%1000003 WHERE id=%d", tbl(), client, id()),
				fmt.Sprintf("UPDATE %s SET c=CONCAT(LEFT(c, 40), '-%d-%d') WHERE id=%d", tbl(), client, i, id()),
				fmt.Sprintf("DELETE FROM %s WHERE id=%d", tb, x),
				fmt.Sprintf("INSERT INTO %s (id, k, c) VALUES (%d, %d, 'ins-%d-%d')", tb, x, rng.Intn(97), client, i),
			}
		case 3:
			// unsafe, so logged as rows: the same rows as the statements
			for range 3 {
				stmts = append(stmts, fmt.Sprintf("UPDATE %s SET k=k*2+1, c=CONCAT(LEFT(UUID(), 0), c, '/%d') WHERE id=%d", tbl(), client, id()))
			}
		case 4:
			// a second unique key: the update by id takes row keys, a
			// delete of a u value (logged as rows) frees it for an insert
			// that takes it by its row keys
			u := 200 + client*3 + rng.Intn(3) // a client's own: no duplicate on the primary
			stmts = []string{
				fmt.Sprintf("UPDATE rk.uq SET v=(v*3+%d)%%1000003 WHERE id=%d", client, 1+rng.Intn(8)),
				fmt.Sprintf("DELETE FROM rk.uq WHERE u=%d AND UUID() IS NOT NULL", u),
				fmt.Sprintf("INSERT INTO rk.uq (id, u, v) VALUES (%d, %d, %d)", 1000+client*1000+i, u, i),
			}
		case 5:
			// a composite key of a small unsigned and a large unsigned
			// integer; 200 and more is beyond TINYINT's signed range
			a := []int{1, 2, 3, 200, 201, 202}[rng.Intn(6)]
			b := "1099511627776"
			if a < 200 || rng.Intn(2) == 0 {
				b = fmt.Sprint(1 + rng.Intn(2))
			}
			if rng.Intn(3) == 0 {
				stmts = []string{fmt.Sprintf("UPDATE rk.small SET v=v+LENGTH(UUID())*%d WHERE a=%d AND b=%s", client, a, b)}
			} else {
				stmts = []string{fmt.Sprintf("UPDATE rk.small SET v=(v*3+%d)%%1000003 WHERE b=%s AND a=%d", client, b, a)}
			}
		case 6:
			stmts = []string{fmt.Sprintf("REPLACE INTO %s (id, k, c) VALUES (%d, %d, 'rep-%d-%d')", tbl(), id(), rng.Intn(97), client, i)}
		default:
			// a statement that takes its table whole
			stmts = []string{fmt.Sprintf("UPDATE %s SET k=(k*3+%d)%%1000003 WHERE id IN (%d, %d)", tbl(), client, id(), id())}
		}
		return runTransaction(db, stmts)
	})
	mustExec(t, sb.Primary, "SET GLOBAL binlog_format=ROW")
	// Causal commit order first: a pair on one row that the keys let
	// overlap would commit out of order, where strict order and row locks
	// might hide it (a later transaction holding the row's lock is rolled
	// back for the earlier one).
	var r run
	for _, order := range []string{"causal", "strict"} {
		mustExec(t, sb.Target, "SET SESSION sql_log_bin = 0", "DROP DATABASE IF EXISTS rk", "DROP DATABASE IF EXISTS gapless", "RESET MASTER")
		r = replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay-"+order), "--workers", "8", "--batch", "1", "--commit-order", order, "-v")
		requireEqualData(t, sb, order == "causal")
	}
	var rowKeys, whole int
	var perWorker string
	for _, line := range strings.Split(r.stdout, "\n") {
		fmt.Sscanf(line, "tables named by statement transactions: %d by row keys, %d whole", &rowKeys, &whole)
		if rest, ok := strings.CutPrefix(line, "statement transactions per worker (0: the statement session): "); ok {
			perWorker = rest
		}
	}
	if rowKeys == 0 || whole == 0 {
		t.Fatalf("statements took row keys on %d tables and %d tables whole, want both:\n%s", rowKeys, whole, r.stdout)
	}
	workers := 0
	for _, f := range strings.Fields(perWorker) {
		if !strings.HasPrefix(f, "0:") && !strings.HasSuffix(f, ":0") {
			workers++
		}
	}
	if workers < 2 {
		t.Fatalf("statement transactions ran on %d workers besides the statement session (%q), want several:\n%s", workers, perWorker, r.stdout)
	}
	t.Logf("tables by row keys %d, whole %d; statement transactions per worker: %s", rowKeys, whole, perWorker)
}
