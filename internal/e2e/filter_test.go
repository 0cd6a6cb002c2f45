// filter_test.go proves the replication filters: --ignore-db and
// --ignore-table keep row events, DDL and statements of the filtered
// databases and tables off the target, a transaction that is only partly
// filtered applies the rest, and the position passes filtered transactions.
package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func checksum(t *testing.T, srv *sandboxT, server string, table string) string {
	t.Helper()
	s := srv.Primary
	if server == "target" {
		s = srv.Target
	}
	var name, sum string
	if err := rootDB(t, s).QueryRow("CHECKSUM TABLE "+table+" EXTENDED").Scan(&name, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestFiltersKeepDatabasesAndTablesOffTheTarget(t *testing.T) {
	sb := upSandbox(t)
	dir := t.TempDir()
	skipRows, keepRows := filepath.Join(dir, "skip.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(skipRows, []byte("10\n11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keepRows, []byte("20\t20\n21\t21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary,
		"CREATE DATABASE keep", "CREATE DATABASE skipme",
		"CREATE TABLE keep.t1 (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE keep.tmp_x (id INT PRIMARY KEY) ENGINE=InnoDB",
		"USE skipme",
		"CREATE TABLE skipme.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO keep.t1 VALUES (1, 1), (2, 2)",
		"INSERT INTO keep.tmp_x VALUES (1)",
		"INSERT INTO skipme.t VALUES (1)",
		// One transaction, partly filtered.
		"BEGIN", "INSERT INTO keep.t1 VALUES (3, 3)", "INSERT INTO skipme.t VALUES (2)", "INSERT INTO keep.tmp_x VALUES (2)", "COMMIT",
		// One statement writing a kept and a filtered table.
		"UPDATE keep.t1 JOIN keep.tmp_x ON keep.t1.id = keep.tmp_x.id SET keep.t1.v = 10, keep.tmp_x.id = keep.tmp_x.id + 100",
		"SET SESSION binlog_format = 'STATEMENT'",
		"INSERT INTO skipme.t VALUES (3)",
		// LOAD DATA logged as a statement, filtered by its default database.
		"LOAD DATA INFILE '"+skipRows+"' INTO TABLE skipme.t (id)",
		"USE keep",
		"LOAD DATA INFILE '"+keepRows+"' INTO TABLE keep.t1",
		"USE skipme",
		"SET SESSION binlog_format = 'ROW'",
		"ALTER TABLE skipme.t ADD COLUMN c INT",
		"INSERT INTO keep.t1 VALUES (4, 4)",
	)
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--ignore-db", "skipme", "--ignore-table", "keep.tmp%")
	t.Log(r.stdout)
	var n int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'skipme' OR TABLE_NAME LIKE 'tmp%'").Scan(&n)
	if n != 0 {
		t.Errorf("filtered tables reached the target: %d", n)
	}
	if src, tgt := checksum(t, sb, "primary", "keep.t1"), checksum(t, sb, "target", "keep.t1"); src != tgt {
		t.Errorf("keep.t1 differs: checksum %s on the primary, %s on the target", src, tgt)
	}
	if got, want := appliedOn(t, sb), binlogPos(t, sb.Primary); got != want {
		t.Errorf("the target's position is %q, the primary's %q: filtered transactions must advance it", got, want)
	}
}

func appliedOn(t *testing.T, sb *sandboxT) string {
	t.Helper()
	var pos string
	rows, err := rootDB(t, sb.Target).Query("SELECT domain_id, server_id, MAX(seq_no) FROM gapless.checkpoint GROUP BY domain_id, server_id ORDER BY MAX(seq_no) DESC LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var d, s, q int
		rows.Scan(&d, &s, &q)
		pos = itoa(d) + "-" + itoa(s) + "-" + itoa(q)
	}
	return pos
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestEveryFilteredTransactionIsPassed counts: each source transaction is
// either applied or passed as filtered, none lost between the decoder and
// the workers (a lost one would be skipped silently by the position).
func TestEveryFilteredTransactionIsPassed(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary,
		"CREATE DATABASE s", "CREATE DATABASE f",
		"CREATE TABLE s.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT) ENGINE=InnoDB",
		"CREATE TABLE f.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT) ENGINE=InnoDB",
		`CREATE PROCEDURE s.gen(n INT) BEGIN
			DECLARE i INT DEFAULT 0;
			WHILE i < n DO
				INSERT INTO s.t (k) VALUES (i);
				INSERT INTO f.t (k) VALUES (i);
				IF i % 50 = 0 THEN
					INSERT INTO f.t (k) VALUES (-i);
				END IF;
				SET i = i + 1;
			END WHILE;
		END`,
		"CALL s.gen(3000)")
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--ignore-db", "f", "--workers", "8")
	// Applied: 2 DDL + the procedure + 3000 rows of s.t; filtered: 2 DDL + 3000 + 60 rows of f.t.
	want := "applied 3003 transactions (and passed 3062 filtered out)"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the run says\n%s\nwant %q", r.stdout, want)
	}
	var rows int
	rootDB(t, sb.Target).QueryRow("SELECT COUNT(*) FROM s.t").Scan(&rows)
	if rows != 3000 {
		t.Errorf("s.t has %d rows on the target, want 3000", rows)
	}
}
