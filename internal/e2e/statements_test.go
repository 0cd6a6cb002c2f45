// This file tests transactions logged as statements (binlog_format=MIXED,
// MariaDB's default) applied in batches: many source transactions in one
// target transaction, each statement still under the session state it had
// on the primary (auto-increment values, user variables, RAND seeds,
// timestamps, sql_mode, the default database).
package e2e

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatementTransactionsInBatches(t *testing.T) {
	sb := upSandbox(t)
	rng := rand.New(rand.NewSource(7))
	stmts := []string{
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE st",
		"CREATE TABLE st.acct (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TABLE st.log (id BIGINT AUTO_INCREMENT PRIMARY KEY, acct INT, delta INT, at DATETIME(6), r DOUBLE, tag VARCHAR(32)) ENGINE=InnoDB",
	}
	for i := 0; i < 600; i++ {
		id := rng.Intn(50)
		d := rng.Intn(100) - 50
		switch rng.Intn(5) {
		case 0:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO st.acct VALUES (%d, 0, 'new') ON DUPLICATE KEY UPDATE note = CONCAT(note, '+')", id))
		case 1:
			stmts = append(stmts, "BEGIN",
				fmt.Sprintf("UPDATE st.acct SET balance = balance + %d WHERE id = %d", d, id),
				fmt.Sprintf("INSERT INTO st.log (acct, delta, at) VALUES (%d, %d, NOW(6))", id, d),
				"COMMIT")
		case 2:
			// A user variable and LAST_INSERT_ID() read by the next statement.
			stmts = append(stmts, "BEGIN",
				fmt.Sprintf("SET @tag = 'u%d'", i),
				fmt.Sprintf("INSERT INTO st.log (acct, delta, tag) VALUES (%d, 0, @tag)", id),
				"UPDATE st.log SET delta = delta + 1 WHERE id = LAST_INSERT_ID()",
				"COMMIT")
		case 3:
			// Under its own sql_mode and default database.
			stmts = append(stmts, "USE st", "SET SESSION sql_mode = 'ANSI_QUOTES'",
				fmt.Sprintf(`UPDATE "acct" SET note = 'ansi' WHERE id = %d`, id),
				"SET SESSION sql_mode = DEFAULT", "USE mysql")
		default:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM st.acct WHERE id = %d", id))
		}
	}
	mustExec(t, sb.Primary, stmts...)
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "8", "--batch", "64", "-v")
	requireEqual(t, sb)
	// The statement transactions shared target transactions.
	var batches int
	var each float64
	for _, line := range strings.Split(r.stdout, "\n") {
		if _, err := fmt.Sscanf(line, "%d target transactions, %g source transactions each", &batches, &each); err == nil {
			break
		}
	}
	if batches == 0 || each < 2 {
		t.Fatalf("the statement transactions were not batched (%d target transactions, %.1f source transactions each):\n%s", batches, each, r.stdout)
	}
	t.Logf("%d target transactions, %.1f source transactions each", batches, each)
}
