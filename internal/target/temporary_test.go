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
