package e2e

// Tests of a target whose binlog_format is ROW fed by a source that logs
// statements (internal/target/rowformat.go): the target's binlog holds rows
// for the source's DML, one GTID group for each source group.

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// binlogEvent is one event as mariadb-binlog prints it: the GTID of the
// group it belongs to, its type, and the text printed under its header.
type binlogEvent struct {
	gtid, kind, text string
}

var (
	binlogHeader = regexp.MustCompile(`(?m)^#\d{6} +\d+:\d+:\d+ server id \d+ +end_log_pos \d+ .*?\t(\w+)`)
	binlogGTID   = regexp.MustCompile(`GTID (\d+-\d+-\d+)`)
	dmlText      = regexp.MustCompile(`(?im)^\s*(INSERT|UPDATE|DELETE|REPLACE|LOAD)\b`)
)

// targetBinlogEvents reads the target's binlog files with mariadb-binlog.
func targetBinlogEvents(t *testing.T, sb *sandboxT) []binlogEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sb.Target.Config.Dir, sb.Target.Config.Name, "binlog", "mariadb-bin.[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no binlog files on the target (%v)", err)
	}
	out, err := exec.Command("mariadb-binlog", append([]string{"--base64-output=decode-rows", "--verbose"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog: %v: %s", err, out)
	}
	var events []binlogEvent
	group := ""
	for _, chunk := range bytes.Split(out, []byte("\n# at ")) {
		m := binlogHeader.FindSubmatchIndex(chunk)
		if m == nil {
			continue
		}
		kind := string(chunk[m[2]:m[3]])
		text := string(chunk[m[1]:])
		if kind == "GTID" {
			if g := binlogGTID.FindSubmatch(chunk); g != nil {
				group = string(g[1])
			}
		}
		events = append(events, binlogEvent{gtid: group, kind: kind, text: text})
	}
	return events
}

// TestRowTargetLogsRowsForAStatementSource replicates a source in MIXED
// (and, for some groups, STATEMENT) format to a target whose binlog_format
// is ROW: DML on InnoDB, MyISAM and Aria tables, a temporary table feeding
// permanent ones, groups of statements on several engines (one naming the
// temporary table). The target's
// binlog must hold the source's DML as row events only, no Query event with
// DML in it, and the source's GTIDs; the tables must equal the primary's.
func TestRowTargetLogsRowsForAStatementSource(t *testing.T) {
	sb := upSandbox(t)
	if f := queryText(t, sb.Target, "SELECT @@global.binlog_format"); f != "ROW" {
		t.Fatalf("the sandbox's target logs in %s; this test needs ROW", f)
	}
	mustExec(t, sb.Primary,
		"CREATE DATABASE rt",
		"CREATE TABLE rt.i (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE rt.m (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
		"CREATE TABLE rt.a (id INT PRIMARY KEY, v INT) ENGINE=Aria",
	)
	sourceSession(t, sb.Primary,
		"SET SESSION binlog_format=MIXED",
		"INSERT INTO rt.i VALUES (1, 1), (2, 2), (3, 3)",
		"UPDATE rt.i SET v = v + 10 WHERE id >= 2",
		"DELETE FROM rt.i WHERE id = 1",
		"BEGIN", "INSERT INTO rt.i VALUES (4, 4)", "UPDATE rt.i SET v = v * 2 WHERE id = 4", "COMMIT",
		"INSERT INTO rt.m VALUES (1, 1), (2, 2)",
		"UPDATE rt.m SET v = v + 1",
		"INSERT INTO rt.a VALUES (1, 1)",
		"BEGIN", "INSERT INTO rt.m VALUES (3, 3)", "INSERT INTO rt.a VALUES (2, 2)", "COMMIT",
		// The source's temporary table, held by the statement session on
		// the target, feeding permanent tables of every engine.
		"CREATE TEMPORARY TABLE rt.tmp (id INT, v INT)",
		"INSERT INTO rt.tmp VALUES (100, 1), (101, 2), (102, 3)",
		"INSERT INTO rt.i SELECT id, v FROM rt.tmp",
		"INSERT INTO rt.m SELECT id, v FROM rt.tmp",
		"UPDATE rt.i JOIN rt.tmp USING (id) SET rt.i.v = rt.tmp.v * 7",
		"BEGIN", "INSERT INTO rt.a SELECT id, v FROM rt.tmp", "COMMIT",
		// One group of statements on InnoDB, MyISAM and Aria (STATEMENT
		// format logs it so): applied in parts, each logged as rows.
		"SET SESSION binlog_format=STATEMENT",
		"BEGIN", "INSERT INTO rt.i VALUES (200, 1)", "INSERT INTO rt.m VALUES (200, 1), (201, 2)", "INSERT INTO rt.a VALUES (200, 2)", "COMMIT",
		// One such group that names the source's temporary table: its
		// parts must find it on the statement session.
		"BEGIN", "INSERT INTO rt.m VALUES (400, 4)", "INSERT INTO rt.tmp VALUES (400, 4)", "INSERT INTO rt.i SELECT id, v FROM rt.tmp WHERE id = 400", "COMMIT",
		"SET SESSION binlog_format=MIXED",
		"DROP TEMPORARY TABLE rt.tmp",
		"INSERT INTO rt.i VALUES (300, 3)",
	)
	r := replicateUntilCaughtUp(t, sb, filepath.Join(t.TempDir(), "relay"))
	requireEqual(t, sb)
	if strings.Contains(r.stderr, "binlog_format=MIXED") {
		t.Fatalf("a group was applied in MIXED, though each could be applied as rows:\n%s", r.stderr)
	}
	events := targetBinlogEvents(t, sb)
	rows := map[string]bool{}
	for _, ev := range events {
		if ev.kind == "Query" && dmlText.MatchString(ev.text) {
			t.Errorf("the target's binlog holds DML as a statement, in %s:\n%s", ev.gtid, ev.text)
		}
		if strings.HasSuffix(ev.kind, "_rows") {
			rows[ev.gtid] = true
		}
	}
	for _, table := range []string{"i", "m", "a"} {
		if !bytes.Contains([]byte(joinText(events)), []byte("`rt`.`"+table+"`")) {
			t.Errorf("the target's binlog holds no row of rt.%s", table)
		}
	}
	if len(rows) < 10 {
		t.Errorf("the target's binlog holds row events in %d groups; want one for each of the source's DML groups", len(rows))
	}
}

func joinText(events []binlogEvent) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString(ev.text)
	}
	return b.String()
}
