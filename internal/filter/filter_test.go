// filter_test.go checks the rules' matching: wild table patterns, database
// rules, and the table a DDL statement names.
package filter

import "testing"

func TestRules(t *testing.T) {
	var r Rules
	r.IgnoreDB = []string{"skip"}
	for _, p := range []string{"db.%", "app.tmp%", "app.t_"} {
		if err := r.AddIgnoreTable(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.AddIgnoreTable("nodot"); err == nil {
		t.Error("a pattern without a dot was accepted")
	}
	tables := []struct {
		db, table string
		keep      bool
	}{
		{"db", "anything", false},
		{"app", "tmp_1", false},
		{"app", "t1", false},
		{"app", "t12", true},
		{"app", "users", true},
		{"skip", "users", false},
		{"dbx", "t", true},
		{"app", "tmpl", false},
		{"APP", "tmp1", true}, // names are compared as written, as the server does on Linux
	}
	for _, c := range tables {
		if got := r.KeepTable(c.db, c.table); got != c.keep {
			t.Errorf("KeepTable(%s.%s) = %v, want %v", c.db, c.table, got, c.keep)
		}
	}
	statements := []struct {
		db, query string
		keep      bool
	}{
		{"app", "CREATE TABLE tmp_a (id INT)", false},
		{"other", "CREATE TABLE IF NOT EXISTS `app`.`tmp_a` (id INT)", false},
		{"app", "ALTER TABLE users ADD COLUMN c INT", true},
		{"app", "create unique index i on tmp2 (a)", false},
		{"app", "DROP TABLE IF EXISTS db.x", false},
		{"skip", "INSERT INTO app.users VALUES (1)", false},
		{"app", "INSERT INTO db.x VALUES (1)", true}, // only DDL names its table to the filter
		{"app", "TRUNCATE TABLE t1", false},
	}
	for _, c := range statements {
		if got := r.keepStatement(c.db, c.query); got != c.keep {
			t.Errorf("keepStatement(%s, %q) = %v, want %v", c.db, c.query, got, c.keep)
		}
	}
	do := Rules{DoDB: []string{"only"}}
	if do.KeepDB("other") || !do.KeepDB("only") {
		t.Error("--do-db keeps the wrong databases")
	}
}
