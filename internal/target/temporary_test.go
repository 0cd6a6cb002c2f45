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
	} {
		s := &Session{}
		s.noteTemporary(text)
		if s.temporary != want {
			t.Errorf("%q: temporary = %v, want %v", text, s.temporary, want)
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
