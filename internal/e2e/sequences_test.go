package e2e

import (
	"fmt"
	"path/filepath"
	"testing"

	"gapless/internal/sandbox"
)

// TestSequencesFromMinimalRowImages replays sequences of a source that logs
// minimal row images (binlog_row_image=MINIMAL): a sequence's new cache of
// values is then a row event of its next value and round alone, which a
// BINLOG statement cannot apply (4085: out of range value for options);
// gapless sets them as MariaDB's replica does. NEXTVAL past the cache, in
// InnoDB transactions and alone, with a MyISAM table's rows in one
// statement, SETVAL, ALTER SEQUENCE, a sequence that
// cycles through rounds, and a column defaulting to a sequence's next
// value; every sequence must equal the primary's (verify compares them).
func TestSequencesFromMinimalRowImages(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, PrimaryExtra: []string{"binlog_row_image=MINIMAL"}})
	stmts := []string{
		"CREATE DATABASE sq",
		"CREATE SEQUENCE sq.s START WITH 1 INCREMENT BY 3 CACHE 5",
		"CREATE SEQUENCE sq.c START WITH 1 MINVALUE 1 MAXVALUE 7 INCREMENT BY 2 CACHE 2 CYCLE",
		"CREATE TABLE sq.t (id INT PRIMARY KEY, v BIGINT, w BIGINT DEFAULT (NEXTVAL(sq.c))) ENGINE=InnoDB",
		// On a non-transactional table a sequence's new values and the
		// table's rows are one row statement of one group.
		"CREATE TABLE sq.m (id INT PRIMARY KEY, v BIGINT) ENGINE=MyISAM",
	}
	for i := range 40 {
		switch i % 4 {
		case 0:
			stmts = append(stmts, "BEGIN", fmt.Sprintf("INSERT INTO sq.t (id, v) VALUES (%d, NEXTVAL(sq.s))", i), "COMMIT")
		case 1:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO sq.t (id, v) VALUES (%d, NEXTVAL(sq.s) + NEXTVAL(sq.c))", i))
		case 2:
			stmts = append(stmts, "SELECT NEXTVAL(sq.s), NEXTVAL(sq.c)", fmt.Sprintf("INSERT INTO sq.m VALUES (%d, NEXTVAL(sq.s)), (%d, NEXTVAL(sq.c))", i, i+1000))
		case 3:
			stmts = append(stmts, fmt.Sprintf("SELECT SETVAL(sq.s, %d)", 200+10*i))
		}
		if i == 20 {
			stmts = append(stmts, "ALTER SEQUENCE sq.s INCREMENT BY 7 CACHE 3")
		}
	}
	for _, format := range []string{"ROW", "MIXED"} {
		mustExec(t, sb.Primary, append([]string{"SET SESSION binlog_format=" + format}, stmts...)...)
		if format == "ROW" {
			stmts = append([]string{"DROP DATABASE sq"}, stmts...)
		}
	}
	replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"), "--workers", "4")
	requireEqual(t, sb)
}
