package target

import (
	"slices"
	"testing"

	"gapless/internal/gtid"
)

func TestResumedScript(t *testing.T) {
	g := gtid.MariaDBGTID{Domain: 0, Server: 7, Seq: 19}
	script := append(gtidStatements(g), "SET TIMESTAMP=1", "XA COMMIT X'31',X'',1")
	got := resumedScript(script, g)
	want := []string{"SET @@session.server_id=7", "SET TIMESTAMP=1", "XA COMMIT X'31',X'',1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCreatesTemporary(t *testing.T) {
	for text, want := range map[string]bool{
		"CREATE TEMPORARY TABLE t (a INT)":           true,
		"create or replace temporary table t LIKE u": true,
		"CREATE TABLE temporary_things (a INT)":      false,
		"INSERT INTO t VALUES (1)":                   false,
		// A client's comment first (binlog.binlog_parallel_replication_marks_stm_mix).
		"/* GTID */ CREATE TEMPORARY TABLE t4 (a INT PRIMARY KEY) ENGINE=InnoDB": true,
		"# app: checkout\n-- step 2\n CREATE TEMPORARY TABLE t (a INT)":          true,
		"/* CREATE TEMPORARY TABLE */ INSERT INTO t VALUES (1)":                  false,
	} {
		s := &Session{}
		s.noteTemporary(text)
		if s.temporary != want {
			t.Errorf("%q: temporary = %v, want %v", text, s.temporary, want)
		}
		s.noteHeld(0, 1, 7, "test", text, 0)
		if held := len(s.held) > 0; held != want {
			t.Errorf("%q: held %v, want %v", text, s.held, want)
		}
	}
}

func TestTransactionalTemporary(t *testing.T) {
	for text, want := range map[string]bool{
		"CREATE TEMPORARY TABLE t (a INT)":                  true,
		"create or replace temporary table t select 1 AS a": true,
		"CREATE TEMPORARY TABLE t (a INT) ENGINE=MyISAM":    false,
		"CREATE TEMPORARY TABLE t (a INT) engine = Aria":    false,
		"CREATE TEMPORARY SEQUENCE s":                       false,
		"CREATE TABLE t (a INT)":                            false,
		"INSERT INTO t SELECT * FROM temporary_things":      false,
		"  CREATE\n TEMPORARY  TABLE `t` (`engine` INT)":    false, // a column named so: left as it is
	} {
		got := transactionalTemporary(text, text)
		if changed := len(got) > 1; changed != want {
			t.Errorf("%q: made InnoDB = %v, want %v", text, changed, want)
		}
		if want && (got[1] != text || got[0] != "SET @@session.default_tmp_storage_engine=InnoDB" ||
			got[2] != "SET @@session.default_tmp_storage_engine=DEFAULT") {
			t.Errorf("%q: got %q", text, got)
		}
	}
}

func TestTemporaryDropInParts(t *testing.T) {
	for text, first := range map[string]string{
		"DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `c`,`b`,`a`": "DROP TEMPORARY TABLE IF EXISTS `c`, `b`",
		"DROP TEMPORARY TABLE IF EXISTS d.x, `e``1`.y, z":        "DROP TEMPORARY TABLE IF EXISTS `d`.`x`, `e``1`.`y`",
		"DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `a`":         "", // one table: one group
		"DROP TEMPORARY TABLE a, b":                              "", // without IF EXISTS the second run would fail
		"DROP TABLE IF EXISTS a, b":                              "",
		"INSERT INTO a VALUES (1)":                               "",
	} {
		got := temporaryDropInParts(text, "stmt", 0)
		if first == "" {
			if !slices.Equal(got, []string{"stmt"}) {
				t.Errorf("%q: got %q, want it as it is", text, got)
			}
			continue
		}
		want := []string{"SET @@session.sql_log_bin=0", first, binlogAgain, "stmt"}
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
}
