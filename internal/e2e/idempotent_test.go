package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestCreateOfATableTheTargetStillHolds: a primary loses objects without
// logging their DROP (here with sql_log_bin=0; in the field, files removed
// behind the server's back and FLUSH TABLES), then logs their CREATE with
// another definition, and rows. The target still holds the old objects;
// MariaDB's replica applies the CREATEs idempotently (CREATE OR REPLACE,
// CREATE DATABASE IF NOT EXISTS) and ends equal to the primary, and so must
// gapless, in every binlog format, where it stopped with 1050 ("Table 't1'
// already exists") and 1007 ("Can't create database").
func TestCreateOfATableTheTargetStillHolds(t *testing.T) {
	sb := upSandbox(t)
	for _, format := range []string{"MIXED", "ROW", "STATEMENT"} {
		db := "idem_" + format
		mustExec(t, sb.Primary,
			"SET SESSION binlog_format="+format,
			"CREATE DATABASE "+db,
			"CREATE TABLE "+db+".t1 (a INT PRIMARY KEY, b INT) ENGINE=InnoDB",
			"INSERT INTO "+db+".t1 VALUES (1, 1), (2, 2)",
			"CREATE SEQUENCE "+db+".s1 START WITH 10",
			"CREATE DATABASE "+db+"_gone",
		)
	}
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")

	for _, format := range []string{"MIXED", "ROW", "STATEMENT"} {
		db := "idem_" + format
		mustExec(t, sb.Primary,
			"SET SESSION binlog_format="+format,
			"SET SESSION sql_log_bin=0",
			"DROP TABLE "+db+".t1",
			"DROP SEQUENCE "+db+".s1",
			"DROP DATABASE "+db+"_gone",
			"SET SESSION sql_log_bin=1",
			"CREATE TABLE "+db+".t1 (id INT PRIMARY KEY, c VARCHAR(10), d INT) ENGINE=InnoDB",
			"INSERT INTO "+db+".t1 VALUES (10, 'x', 1), (20, 'y', 2), (30, 'z', 3)",
			"UPDATE "+db+".t1 SET d = d + 1 WHERE id = 20",
			"CREATE SEQUENCE "+db+".s1 START WITH 100 INCREMENT BY 5",
			"CREATE DATABASE "+db+"_gone CHARACTER SET latin1",
			"CREATE TABLE "+db+"_gone.t (a INT PRIMARY KEY) ENGINE=InnoDB",
			"INSERT INTO "+db+"_gone.t VALUES (7)",
			fmt.Sprintf("CREATE TABLE %s.t2 SELECT id, c FROM %s.t1", db, db),
		)
		if format != "STATEMENT" { // a sequence is logged in rows only
			mustExec(t, sb.Primary, "SET SESSION binlog_format="+format, "DO NEXTVAL("+db+".s1)")
		}
	}
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay2"), "--workers", "4")
	requireEqual(t, sb)
}
