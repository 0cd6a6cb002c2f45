package statement

import (
	"fmt"
	"strings"
	"testing"
)

// rowsOf reads text and prints its rows as "kind cols=values; ..." with
// each value taken from the text, "?" where none is.
func rowsOf(t *testing.T, a *Analyzer, text string) string {
	t.Helper()
	d, numbers, ok := a.DMLNumbers(text, 0, true, nil)
	if !ok {
		return "not DML"
	}
	if d.Rows == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d", d.Rows.Kind)
	if len(d.Rows.Assigned) > 0 {
		fmt.Fprintf(&b, " set %s", strings.Join(d.Rows.Assigned, ","))
	}
	for _, lits := range d.Rows.Literals {
		b.WriteString(" |")
		for c, n := range lits {
			v, ok := Value(text, numbers, n, 1<<63-1)
			if ok {
				fmt.Fprintf(&b, " %s=%d", d.Rows.Columns[c], v)
			} else {
				fmt.Fprintf(&b, " %s=?", d.Rows.Columns[c])
			}
		}
	}
	return b.String()
}

func TestRowsFromText(t *testing.T) {
	a := NewAnalyzer()
	for _, c := range []struct{ text, want string }{
		// sysbench's
		{"UPDATE sbtest3 SET k=k+1 WHERE id=5012", "3 set k | id=5012"},
		{"UPDATE sbtest3 SET c='12-34' WHERE id=77", "3 set c | id=77"},
		{"DELETE FROM sbtest1 WHERE id=5001", "4 | id=5001"},
		{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (5001, 4998, '678-48', '221')", "1 | id=5001 k=4998 c=? pad=?"},
		// the same shapes again, from the cache, with their own values
		{"UPDATE sbtest3 SET k=k+1 WHERE id=6", "3 set k | id=6"},
		{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (7, 0008, 'x', 'y')", "1 | id=7 k=8 c=? pad=?"},
		{"REPLACE INTO t (A, b) VALUES (1, 2), (3, -4), (5, 6+1)", "2 | a=1 b=2 | a=3 b=? | a=5 b=?"},
		{"UPDATE t AS x SET x.v = CONCAT(v, 'a') WHERE (x.a = 1 AND 2 = b) AND v IS NOT NULL AND a = 9", "3 set v | a=1 b=2"},
		{"UPDATE t SET v = 1 WHERE a = 1 AND (b = 2 OR c = 3)", "3 set v | a=1"},
		{"DELETE FROM db.t WHERE `Id` = 3 AND v IN (1, 2)", "4 | id=3"},
		{"UPDATE t SET v = 1 WHERE a = 1.5 AND b = 2", "3 set v | b=2"},
		{"INSERT INTO t (a, b) VALUES (1.5, 1e3)", ""}, // no plain number at all
		{"INSERT INTO t (a, b) VALUES (0x10, 99999999999999999999999)", "1 | a=? b=?"},
		// not read: the table whole
		{"UPDATE t SET v = 1 WHERE a = 1 OR a = 2", ""},
		{"UPDATE t SET v = 1 WHERE a = -1", ""},
		{"UPDATE t SET v = 1 WHERE a = '1'", ""},
		{"UPDATE t SET v = 1 WHERE a > 1", ""},
		{"UPDATE t SET v = 1", ""},
		{"UPDATE t SET v = 1 WHERE a = 1 LIMIT 1", ""},
		{"UPDATE t SET v = 1 WHERE a = 1 ORDER BY b", ""},
		{"UPDATE IGNORE t SET v = 1 WHERE a = 1", ""},
		{"UPDATE t SET v = (SELECT MAX(v) FROM t) WHERE a = 1", ""},
		{"UPDATE t SET v = 1 WHERE a = 1 AND v > (SELECT AVG(v) FROM t)", ""},
		{"UPDATE t SET v = 1 WHERE a = 1 AND EXISTS (SELECT 1 FROM t AS u WHERE u.a = 2)", ""},
		{"UPDATE t SET v = @x WHERE a = 1", ""},
		{"UPDATE t SET v = DEFAULT(v) WHERE a = 1", ""},
		{"UPDATE t1, t2 SET t1.v = 1 WHERE t1.a = 1 AND t2.a = 1", ""},
		{"UPDATE t PARTITION (p0) SET v = 1 WHERE a = 1", ""},
		{"UPDATE t SET v = 1 WHERE u.a = 1", ""},
		{"DELETE FROM t WHERE a = 1 LIMIT 1", ""},
		{"DELETE t FROM t WHERE a = 1", ""},
		{"DELETE FROM t", ""},
		{"INSERT INTO t VALUES (1, 2)", ""},
		{"INSERT INTO t SET a = 1", ""},
		{"INSERT IGNORE INTO t (a) VALUES (1)", ""},
		{"INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1", ""},
		{"INSERT INTO t (a) SELECT a FROM u", ""},
		{"INSERT INTO t (a, b) VALUES (1, (SELECT MAX(b) FROM t))", ""},
		{"INSERT INTO t (a) VALUES ('x')", ""},
	} {
		if got := rowsOf(t, a, c.text); got != c.want {
			t.Errorf("%q: rows %q, want %q", c.text, got, c.want)
		}
	}
}

// A number longer than a marker could be taken for one: such a shape is
// not read.
func TestRowsRefuseLongKeptNumbers(t *testing.T) {
	a := NewAnalyzer()
	text := "UPDATE t SET v = 1." + strings.Repeat("0", 20) + " WHERE a = 1"
	if got := rowsOf(t, a, text); got != "" {
		t.Errorf("%q: rows %q, want none", text, got)
	}
}
