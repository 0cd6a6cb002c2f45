package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitOptions(t *testing.T) {
	got := splitOptions("--binlog-format=row  --innodb\n\"--replicate-rewrite-db=a->b c\" --x=\"1 2\"\n")
	want := []string{"--binlog-format=row", "--innodb", "--replicate-rewrite-db=a->b c", "--x=1 2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestOptionLine(t *testing.T) {
	env := map[string]string{"MYSQL_TEST_DIR": "/mt"}
	for _, tc := range []struct{ opt, line, note string }{
		{"--binlog-format=row", "binlog-format=row", ""},
		{"--innodb", "innodb", ""},
		{"--loose-innodb_lock_wait_timeout=2", "loose-innodb_lock_wait_timeout=2", ""},
		{"--init-file=$MYSQL_TEST_DIR/std_data/x.sql", "init-file=/mt/std_data/x.sql", ""},
		{"--plugin-load=$HA_EXAMPLE_SO", "", "$HA_EXAMPLE_SO is not known here"},
		{"--log-bin=foo", "", "the harness sets it"},
		{"--server_id=5", "", "the harness sets it"},
		{"--loose-debug-dbug=+d,x", "", "no debug options"},
		{"--timezone=GMT-3", "", "own time zone"},
		{"innodb", "", "not an --option"},
	} {
		line, note := optionLine(tc.opt, env)
		if line != tc.line || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("optionLine(%q) = %q, %q; want %q and a note containing %q", tc.opt, line, note, tc.line, tc.note)
		}
	}
}

func TestSharedWithTargets(t *testing.T) {
	for line, want := range map[string]bool{
		"default-storage-engine=InnoDB": true,
		"default_storage_engine=MyISAM": true,
		"loose-plugin-load-add=x.so":    true,
		"binlog-format=row":             false,
		"innodb":                        false,
	} {
		if got := sharedWithTargets(line); got != want {
			t.Errorf("sharedWithTargets(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestClientDelimiters(t *testing.T) {
	in := "-- a comment\ndelimiter ||;\nCREATE PROCEDURE p() BEGIN\n  --SELECT 1;\n  SELECT 2;\nEND||\ndelimiter ;||\nSELECT 3;"
	want := "DELIMITER ||\nCREATE PROCEDURE p() BEGIN\n  SELECT 2;\nEND||\nDELIMITER ;\nSELECT 3;"
	if got := clientDelimiters(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestKeepHistory(t *testing.T) {
	in := "CREATE TABLE t (a INT);\nreset master;\n  RESET  MASTER ;\n--echo reset master;\nlet $x= `SELECT 1`;\n"
	got, n := keepHistory(in)
	want := "CREATE TABLE t (a INT);\nFLUSH BINARY LOGS;\n  FLUSH BINARY LOGS;\n--echo reset master;\nlet $x= `SELECT 1`;\n"
	if got != want || n != 2 {
		t.Fatalf("got %d rewrites:\n%s\nwant 2:\n%s", n, got, want)
	}
}

func TestAbsoluteSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "local.inc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in := "--source local.inc\nsource include/master-slave.inc;\n--source missing.inc\n"
	want := "--source " + filepath.Join(dir, "local.inc") + "\nsource include/master-slave.inc;\n--source missing.inc\n"
	if got := absoluteSources(in, dir); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
