package e2e

import (
	"bytes"
	"fmt"
	"math/rand"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

// typesWorkload writes many column types, DDL in the middle, a table without
// a primary key, statement-format transactions and one 100 000-row transaction.
func typesWorkload(t *testing.T, sb *sandboxT) {
	t.Helper()
	p := sb.Primary
	mustExec(t, p,
		"CREATE DATABASE app",
		`CREATE TABLE app.types (
			id INT AUTO_INCREMENT PRIMARY KEY,
			ti TINYINT, usi SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT, ubi BIGINT UNSIGNED,
			de DECIMAL(20,6), fl FLOAT, db DOUBLE,
			dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(4), d DATE, y YEAR,
			vc VARCHAR(100) CHARACTER SET utf8mb4, tx TEXT CHARACTER SET latin1, bl BLOB,
			js JSON, en ENUM('a','b','c'), st SET('x','y','z'), bt BIT(10)
		) ENGINE=InnoDB`,
		`INSERT INTO app.types (ti, usi, mi, bi, ubi, de, fl, db, dt, ts, tm, d, y, vc, tx, bl, js, en, st, bt) VALUES
			(-128, 65535, -8388608, -9223372036854775808, 18446744073709551615, -12345678901234.123456, 3.25, -1.5e300,
			 '2024-02-29 23:59:59.999999', '2038-01-19 03:14:07.123', '-838:59:59.0000', '1000-01-01', 1901,
			 'emoji 😀 and ''quote''', 'caf\xe9 latin1', x'00ff10', '{"a": [1, 2.5, "x"], "b": null}', 'b', 'x,z', b'1010101010'),
			(127, 0, 8388607, 9223372036854775807, 0, 0.000001, -0.0, 2.2250738585072014e-308,
			 '1970-01-01 00:00:01', NULL, '838:59:59.9999', '9999-12-31', 2155,
			 '', '', '', '[]', 'a', '', b'0'),
			(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		"UPDATE app.types SET vc = CONCAT(vc, ' updated'), de = de * 2, js = JSON_SET(js, '$.c', 3) WHERE id = 1",
		"DELETE FROM app.types WHERE id = 2",
		"ALTER TABLE app.types ADD COLUMN extra INT NOT NULL DEFAULT 7, ADD INDEX bi_idx (bi)",
		"INSERT INTO app.types (vc, extra) VALUES ('after alter', 8)",
		"CREATE TABLE app.nopk (a INT, b VARCHAR(10)) ENGINE=InnoDB",
		"INSERT INTO app.nopk VALUES (1, 'one'), (1, 'one'), (2, 'two'), (NULL, NULL)",
		"UPDATE app.nopk SET b = 'uno' WHERE a = 1 LIMIT 1",
		"DELETE FROM app.nopk WHERE a = 2",
		"CREATE TABLE app.gone (x INT PRIMARY KEY)",
		"INSERT INTO app.gone VALUES (1)",
		"RENAME TABLE app.gone TO app.renamed",
		"CREATE TABLE app.dropped (x INT PRIMARY KEY)",
		"DROP TABLE app.dropped",
		// Statement-format transactions: session state, user variables, INSERT_ID.
		"CREATE TABLE app.stmt (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(50), n BIGINT, t DATETIME) ENGINE=InnoDB",
		"SET SESSION binlog_format = 'STATEMENT'",
		"SET @who = 'user variable é'",
		"SET @n = 42",
		"INSERT INTO app.stmt (v, n, t) VALUES (@who, @n, '2020-01-01 10:00:00')",
		"BEGIN",
		"INSERT INTO app.stmt (v, n) VALUES ('in a transaction', LAST_INSERT_ID())",
		"UPDATE app.stmt SET n = n + 1 WHERE id = 1",
		"COMMIT",
		"SET SESSION sql_mode = 'ANSI_QUOTES'",
		`INSERT INTO app.stmt (v) VALUES ('ansi quotes mode')`,
		"SET SESSION sql_mode = DEFAULT",
		"SET SESSION binlog_format = 'ROW'",
		// One large transaction.
		"CREATE TABLE app.big (id INT PRIMARY KEY, pad VARCHAR(100), k INT, UNIQUE KEY (k)) ENGINE=InnoDB",
		"USE app",
		"INSERT INTO app.big SELECT seq, REPEAT(CHAR(65 + seq % 26), 60), seq FROM seq_1_to_100000",
		"UPDATE app.big SET pad = 'changed' WHERE id % 1000 = 0",
	)
}

func TestReplicateColumnTypesDDLAndLargeTransaction(t *testing.T) {
	sb := upSandbox(t)
	typesWorkload(t, sb)
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	if !strings.Contains(r.stdout, "until reached") {
		t.Errorf("expected the run to end at --until, got:\n%s", r.stdout)
	}
	requireEqual(t, sb)

	// A second run from the position on the target applies nothing twice.
	mustExec(t, sb.Primary, "INSERT INTO app.types (vc) VALUES ('second run')")
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay2"))
	requireEqual(t, sb)
}

// smallWorkload writes n small transactions: inserts, updates and deletes on three tables.
func smallWorkload(t *testing.T, sb *sandboxT, n int, seed int64) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS w",
		"CREATE TABLE IF NOT EXISTS w.acct (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS w.log (id BIGINT AUTO_INCREMENT PRIMARY KEY, acct INT, delta INT) ENGINE=InnoDB",
	}
	for i := 0; i < n; i++ {
		id := rng.Intn(200)
		switch rng.Intn(4) {
		case 0:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO w.acct VALUES (%d, 0, 'new') ON DUPLICATE KEY UPDATE note = 'again'", id))
		case 1:
			d := rng.Intn(100) - 50
			stmts = append(stmts, "BEGIN",
				fmt.Sprintf("UPDATE w.acct SET balance = balance + %d WHERE id = %d", d, id),
				fmt.Sprintf("INSERT INTO w.log (acct, delta) VALUES (%d, %d)", id, d),
				"COMMIT")
		case 2:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM w.acct WHERE id = %d", id))
		default:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO w.log (acct, delta) VALUES (%d, 0)", id))
		}
	}
	mustExec(t, sb.Primary, stmts...)
}

func TestKillDuringApplyThenRestart(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 3000, 1)
	relay := filepath.Join(t.TempDir(), "relay")
	// A crash after the Nth commit leaves the batches that other workers
	// had sent to commit landing after it, up to workers x batch more
	// transactions: with 16 workers and batches of 16, the first three
	// crashes apply at most 1 619 of the 3 000, so the fourth comes too.
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0", "--batch", "16"}
	for _, after := range []int{1, 150, 700, 1200} {
		r := gapless(t, []string{fmt.Sprintf("GAPLESS_CRASH_AFTER_COMMITS=%d", after)}, args...)
		if !r.signaled {
			t.Fatalf("run with a crash after %d commits exited %d without being killed:\n%s%s", after, r.code, r.stdout, r.stderr)
		}
	}
	replicateUntilCaughtUp(t, sb, relay)
	requireEqual(t, sb)
}

// TestTargetBinlogHoldsNoBinlogStatementText checks that the row events the
// target logs for gapless are not annotated with the BINLOG statements that
// made them: that annotation wrote every transaction twice into the target's
// binlog and took a third of the target's CPU per transaction.
func TestTargetBinlogHoldsNoBinlogStatementText(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 200, 41)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	requireEqual(t, sb)
	out := targetBinlogText(t, sb)
	if !bytes.Contains(out, []byte("Write_rows")) && !bytes.Contains(out, []byte("Update_rows")) {
		t.Fatalf("the target's binlog holds no row events:\n%.2000s", out)
	}
	if i := bytes.Index(out, []byte("#Q> BINLOG")); i >= 0 {
		t.Fatalf("the target's binlog annotates row events with BINLOG statements: %.200s", out[i:])
	}
}

// targetBinlogText is the target's binlog files as mariadb-binlog prints them.
func targetBinlogText(t *testing.T, sb *sandboxT) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sb.Target.Config.Dir, sb.Target.Config.Name, "binlog", "mariadb-bin.[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no binlog files on the target (%v)", err)
	}
	out, err := exec.Command("mariadb-binlog", files...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog: %v: %s", err, out)
	}
	return out
}

// TestLargeTransactionsAmidSmallOnes replicates transactions of tens of
// megabytes of row events between small ones on the same tables: the relay
// log writes them as they arrive, the decoder leaves their rows undecoded
// (they are scheduled by table), and they reach the target in BINLOG
// statements of at most a round trip each.
func TestLargeTransactionsAmidSmallOnes(t *testing.T) {
	sb := upSandbox(t)
	smallWorkload(t, sb, 300, 7)
	mustExec(t, sb.Primary,
		"SET SESSION binlog_format = 'ROW'",
		"CREATE TABLE w.big (id INT PRIMARY KEY, pad VARCHAR(200), n INT) ENGINE=InnoDB",
		"USE w",
		// About 26 MB of row events, then 52 MB (before and after images).
		"INSERT INTO w.big SELECT seq, REPEAT(CHAR(65 + seq % 26), 200), 0 FROM seq_1_to_120000",
		"UPDATE w.big SET pad = REPEAT(CHAR(97 + id % 26), 200), n = n + 1",
		"UPDATE w.big SET n = 7 WHERE id = 5",
		"BEGIN",
		"UPDATE w.acct SET balance = balance + 1",
		"DELETE FROM w.big WHERE id % 3 = 0",
		"UPDATE w.big SET n = n + 1 WHERE id = 5",
		"COMMIT",
		"INSERT INTO w.big VALUES (3, 'again', 1)",
	)
	smallWorkload(t, sb, 300, 8)
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "8")
	requireEqual(t, sb)
}

// TestNamesNotInASCII replicates rows, statements and a sequence whose
// names are not ASCII, in turns: the target reads BINLOG statements in
// latin1, so a statement after them must be read in its own character set
// again, and a name gapless writes itself (USE, a sequence's SETVAL) in
// utf8mb4.
func TestNamesNotInASCII(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE `café`",
		"CREATE TABLE `café`.`naïve` (id INT PRIMARY KEY, v VARCHAR(40) CHARACTER SET utf8mb4) ENGINE=InnoDB",
		"CREATE SEQUENCE `café`.`séq` START WITH 10 INCREMENT BY 1 ENGINE=InnoDB",
		// One transaction of statements around row events (MIXED
		// logs the UPDATE with LIMIT as rows).
		"SET SESSION binlog_format = 'MIXED'",
		"BEGIN",
		"INSERT INTO `café`.`naïve` VALUES (0, 'statement before the rows à')",
		"UPDATE `café`.`naïve` SET v = CONCAT(v, ' rows') WHERE id >= 0 LIMIT 1",
		"INSERT INTO `café`.`naïve` VALUES (5, 'statement after the rows é ñ 😀')",
		"COMMIT",
		"SET SESSION binlog_format = 'ROW'",
		"INSERT INTO `café`.`naïve` VALUES (1, 'row é'), (2, 'row ü')",
		"SET SESSION binlog_format = 'STATEMENT'",
		"USE `café`",
		"INSERT INTO `naïve` VALUES (3, 'statement é ñ 😀')",
		"SET SESSION binlog_format = 'ROW'",
		"UPDATE `café`.`naïve` SET v = CONCAT(v, ' ß') WHERE id = 1",
		"SELECT NEXTVAL(`café`.`séq`)",
		"INSERT INTO `café`.`naïve` VALUES (4, 'after the sequence ø')",
		"SET SESSION binlog_format = 'STATEMENT'",
		"UPDATE `naïve` SET v = CONCAT(v, ' ç') WHERE id = 4",
		"USE mysql",
	)
	// One worker: the statements and the rows share its connection.
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "1")
	requireEqual(t, sb)
	for _, srv := range []*sandbox.Server{sb.Primary, sb.Target} {
		db, err := srv.Open("")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRow("SELECT v FROM `café`.`naïve` WHERE id = 5").Scan(&v); err != nil || v != "statement after the rows é ñ 😀" {
			t.Fatalf("%s: row 5 reads %q (%v), want the statement's text as written", srv.Config.Name, v, err)
		}
	}
	db, err := sb.Target.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var next int64
	if err := db.QueryRow("SELECT NEXTVAL(`café`.`séq`)").Scan(&next); err != nil || next <= 10 {
		t.Fatalf("the target's sequence gives %d (%v), want past the source's 10", next, err)
	}
}
