// This file tests transactions logged as statements (binlog_format=MIXED,
// MariaDB's default) applied in batches: many source transactions in one
// target transaction, each statement still under the session state it had
// on the primary (auto-increment values, user variables, RAND seeds,
// timestamps, sql_mode, the default database).
package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		switch rng.Intn(6) {
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
		case 4:
			// The time, the thread id and RAND seeds of each statement.
			stmts = append(stmts, fmt.Sprintf("SET TIMESTAMP = %d.%06d", 1700000000+i, rng.Intn(1000000)),
				fmt.Sprintf("INSERT INTO st.log (acct, delta, at, r, tag) VALUES (%d, CONNECTION_ID() %% 7, NOW(6), RAND(), 't')", id),
				fmt.Sprintf("UPDATE st.acct SET note = DATE_FORMAT(NOW(6), '%%s.%%f') WHERE id = %d", id),
				"SET TIMESTAMP = DEFAULT")
			if i%10 == 0 {
				// Statements that answer rows, between others.
				stmts = append(stmts, fmt.Sprintf("INSERT INTO st.log (acct, delta, tag) VALUES (%d, 1, 'ret') RETURNING id, tag", id),
					fmt.Sprintf("UPDATE st.acct SET balance = balance - 1 WHERE id = %d", id),
					fmt.Sprintf("DELETE FROM st.log WHERE acct = %d AND tag = 'ret' AND id %% 2 = 0 RETURNING id", id))
			}
		default:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM st.acct WHERE id = %d", id))
		}
	}
	mustExec(t, sb.Primary, stmts...)
	compound := func() int64 {
		var name string
		var n int64
		if err := rootDB(t, sb.Target).QueryRow("SHOW GLOBAL STATUS LIKE 'Com_compound_sql'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := compound()
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "8", "--batch", "64", "-v")
	requireEqual(t, sb)
	if compound() == before {
		t.Error("no batch ran its statements as compound statements")
	}
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

// TestStatementTransactionsRunInParallel replays a MIXED primary's
// statements, written by many clients at once, with 8 workers: plain DML on
// tables the statements name leaves the statement session, while what must
// not stays on it (a temporary table that shadows a real table's name, a view, a
// table with a trigger), and every table ends equal. Statement transactions
// must have run on more than one worker.
func TestStatementTransactionsRunInParallel(t *testing.T) {
	sb := upSandbox(t)
	setup := []string{
		"SET GLOBAL binlog_format=MIXED",
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE par",
		"CREATE TABLE par.log (id BIGINT AUTO_INCREMENT PRIMARY KEY, t INT, at DATETIME(6), r DOUBLE, tag VARCHAR(32)) ENGINE=InnoDB",
		"CREATE TABLE par.parent (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE par.child (id BIGINT AUTO_INCREMENT PRIMARY KEY, parent INT NOT NULL, v INT, " +
			"FOREIGN KEY (parent) REFERENCES par.parent (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"INSERT INTO par.parent SELECT seq, 0 FROM par.seq_1_to_4",
		"CREATE TABLE par.audited (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE par.audit (id INT PRIMARY KEY, n INT NOT NULL, last INT) ENGINE=InnoDB",
		"INSERT INTO par.audited SELECT seq, 0 FROM par.seq_1_to_20",
		"INSERT INTO par.audit SELECT seq, 0, NULL FROM par.seq_0_to_4",
		// On the target too (it replicates): a statement on par.audited writes par.audit there.
		"CREATE TRIGGER par.audited_up AFTER UPDATE ON par.audited FOR EACH ROW UPDATE par.audit SET n = n + 1, last = NEW.v WHERE id = NEW.id % 5",
		"CREATE TABLE par.copy (id INT PRIMARY KEY, k INT, c VARCHAR(64)) ENGINE=InnoDB",
	}
	for i := 1; i <= 4; i++ {
		setup = append(setup,
			fmt.Sprintf("CREATE TABLE par.t%d (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(64) NOT NULL, KEY (k)) ENGINE=InnoDB", i),
			fmt.Sprintf("INSERT INTO par.t%d SELECT seq, seq %% 97, CONCAT('row-', seq) FROM par.seq_1_to_300", i))
	}
	// A view over par.t2: a statement through it names the view, not t2.
	setup = append(setup, "CREATE VIEW par.v2 AS SELECT id, k FROM par.t2")
	mustExec(t, sb.Primary, setup...)
	relay := filepath.Join(t.TempDir(), "relay")
	replicateUntilCaughtUp(t, sb, relay)
	db := rootDB(t, sb.Primary)
	runClients(t, db, 8, 80, func(rng *rand.Rand, client, i int) error {
		tbl := func() string { return fmt.Sprintf("par.t%d", 1+rng.Intn(4)) }
		id := 1 + rng.Intn(300)
		var stmts []string
		switch rng.Intn(10) {
		case 0, 1, 2:
			// sysbench's oltp_write_only
			stmts = []string{
				fmt.Sprintf("UPDATE %s SET k=k+1 WHERE id=%d", tbl(), id),
				fmt.Sprintf("UPDATE %s SET c='%d-%d' WHERE id=%d", tbl(), client, i, 1+rng.Intn(300)),
			}
			t := tbl()
			stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE id=%d", t, id),
				fmt.Sprintf("INSERT INTO %s (id, k, c) VALUES (%d, %d, 'ins-%d')", t, id, rng.Intn(97), client))
		case 3:
			// AUTO_INCREMENT, NOW(), RAND(), a user variable and LAST_INSERT_ID()
			stmts = []string{
				fmt.Sprintf("SET @tag = 'c%d-%d'", client, i),
				fmt.Sprintf("INSERT INTO par.log (t, at, r, tag) VALUES (%d, NOW(6), RAND(), @tag)", client),
				"UPDATE par.log SET r = r + RAND() WHERE id = LAST_INSERT_ID()",
			}
		case 4:
			// a range, and a multi-table UPDATE
			a, b := tbl(), tbl()
			stmts = []string{
				fmt.Sprintf("UPDATE %s SET k = k + 1 WHERE id BETWEEN %d AND %d", a, id, id+10),
				fmt.Sprintf("UPDATE %s x JOIN %s y ON x.id = y.id SET x.k = y.k + 1 WHERE x.id = %d", a, b, id),
			}
			if rng.Intn(2) == 0 {
				stmts = append(stmts, fmt.Sprintf("UPDATE par.v2 SET k = k * 2 WHERE id = %d", id))
			}
		case 5:
			// INSERT ... SELECT across tables
			stmts = []string{fmt.Sprintf("REPLACE INTO par.copy SELECT id, k, c FROM %s WHERE id BETWEEN %d AND %d", tbl(), id, id+5)}
		case 6:
			// foreign keys: children, and a parent's cascade
			p := 1 + rng.Intn(4)
			if rng.Intn(3) == 0 {
				stmts = []string{fmt.Sprintf("DELETE FROM par.parent WHERE id = %d", p), fmt.Sprintf("INSERT INTO par.parent VALUES (%d, %d)", p, i)}
			} else {
				stmts = []string{fmt.Sprintf("INSERT INTO par.child (parent, v) VALUES (%d, %d)", p, rng.Intn(100))}
			}
		case 7:
			// a table with a trigger
			stmts = []string{fmt.Sprintf("UPDATE par.audited SET v = v + %d WHERE id = %d", 1+rng.Intn(9), 1+rng.Intn(20))}
		default:
			stmts = []string{fmt.Sprintf("UPDATE %s SET c = CONCAT(c, '+') WHERE k = %d", tbl(), rng.Intn(97))}
		}
		return runTransaction(db, stmts)
	})
	// A session with a temporary table named as a real table: its
	// statements, and every statement on that name while it lives, must
	// stay where the temporary table is.
	session, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, s := range []string{
		"SET SESSION binlog_format=MIXED",
		"CREATE TEMPORARY TABLE par.t1 (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(64) NOT NULL) ENGINE=InnoDB",
		"INSERT INTO par.t1 VALUES (1, -1, 'temporary'), (2, -2, 'temporary')",
	} {
		if _, err := session.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	mustExec(t, sb.Primary, "UPDATE par.t1 SET k = k + 1000 WHERE id <= 3", "UPDATE par.t2 SET k = k + 1 WHERE id = 7")
	for _, s := range []string{
		"UPDATE par.t1 SET k = k - 1",
		"INSERT INTO par.copy SELECT id + 1000, k, c FROM par.t1",
		"DROP TEMPORARY TABLE par.t1",
	} {
		if _, err := session.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	mustExec(t, sb.Primary, "UPDATE par.t1 SET k = k + 1 WHERE id = 5", "SET GLOBAL binlog_format=ROW")
	// The workers meet a backlog, as when a replica catches up: the tables
	// most statements write are locked on the target for a while.
	lock, err := rootDB(t, sb.Target).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), "LOCK TABLES par.t1 WRITE, par.t2 WRITE, par.t3 WRITE, par.t4 WRITE"); err != nil {
		t.Fatal(err)
	}
	_, _, wait := background(t, "replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0", "--workers", "8", "--batch", "8", "-v")
	time.Sleep(3 * time.Second)
	if _, err := lock.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if r.code != 0 {
		t.Fatalf("gapless replicate exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	requireEqual(t, sb)
	var perWorker string
	for _, line := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "statement transactions per worker (0: the statement session): "); ok {
			perWorker = rest
		}
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
	t.Logf("statement transactions per worker: %s", perWorker)
}

// TestStatementsEndingInNUL replays statements a client sent with a NUL
// byte at their end, as mysqlslap does (main.mysqlslap): the source's server
// ends the statement there, and so must the target, where gapless sends
// several statements in one packet.
func TestStatementsEndingInNUL(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE nul\x00",
		"CREATE TABLE nul.t (a INT PRIMARY KEY, b VARCHAR(10)) ENGINE=InnoDB\x00",
		"INSERT INTO nul.t VALUES (1, 'a\x00b')\x00",
		"INSERT INTO nul.t VALUES (2, 'c')\x00",
		"UPDATE nul.t SET b = 'd' WHERE a = 2\x00",
	)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireEqual(t, sb)
}

// TestStatementsEndingInTerminatorAndComment replays statements a client
// sent with their own terminator and a comment after it ("...; -- why"),
// which the source logs as they came: joined to the next statement of a
// packet or a compound statement with another ';', they left an empty
// statement between the two (1064). InnoDB statements (batched, in
// compound statements), MyISAM ones (groups that share round trips) and
// DDL.
func TestStatementsEndingInTerminatorAndComment(t *testing.T) {
	sb := upSandbox(t)
	stmts := []string{
		"SET SESSION binlog_format=MIXED",
		"CREATE DATABASE term; -- made here",
		"CREATE TABLE term.t (a INT PRIMARY KEY, b INT) ENGINE=InnoDB; /* rows */",
		"CREATE TABLE term.m (a INT PRIMARY KEY, b INT) ENGINE=MyISAM; # rows too",
	}
	for i := range 40 {
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO term.t VALUES (%d, 0); -- row %d", i, i),
			fmt.Sprintf("UPDATE term.t SET b = b + 1 WHERE a = %d; /* ; */", i/2),
			fmt.Sprintf("INSERT INTO term.m VALUES (%d, 0);  # ; row %d\n", i, i),
			fmt.Sprintf("UPDATE term.m SET b = b + 1 WHERE a = %d; /* one */ -- two", i/2),
		)
	}
	stmts = append(stmts, "BEGIN", "INSERT INTO term.t VALUES (100, 1); -- in a transaction", "COMMIT; -- done",
		"ALTER TABLE term.t ADD c INT; -- at last")
	// Without multiStatements: the server would end each statement at its
	// ';' and log the comment as nothing.
	db, err := sql.Open("mysql", fmt.Sprintf("root@unix(%s)/", sb.Primary.Socket))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireEqual(t, sb)
}
