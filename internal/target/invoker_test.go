package target

import (
	"slices"
	"testing"

	"gapless/internal/binlog"
)

func TestAsInvoker(t *testing.T) {
	root := &binlog.SessionState{HasInvoker: true, InvokerUser: "root", InvokerHost: "localhost"}
	for _, tc := range []struct {
		in, want string
		roles    []string
		st       *binlog.SessionState
	}{
		{"CREATE ROLE r1", "CREATE ROLE r1 WITH ADMIN 'root'@'localhost'", []string{"r1"}, root},
		{"CREATE ROLE IF NOT EXISTS `a``b`", "CREATE ROLE IF NOT EXISTS `a``b` WITH ADMIN 'root'@'localhost'", []string{"a`b"}, root},
		{"create or replace role r1", "create or replace role r1 WITH ADMIN 'root'@'localhost'", []string{"r1"}, root},
		{"CREATE ROLE r1 WITH ADMIN u@h", "CREATE ROLE r1 WITH ADMIN u@h", []string{"r1"}, root},
		{"CREATE ROLE r2 WITH ADMIN CURRENT_USER", "CREATE ROLE r2 WITH ADMIN 'root'@'localhost'", []string{"r2"}, root},
		{"rename user current_user to a@a", "rename user 'root'@'localhost' to a@a", nil, root},
		{"GRANT r1 TO current_user()", "GRANT r1 TO 'root'@'localhost'", nil, root},
		{"ALTER USER u IDENTIFIED BY 'current_user'", "ALTER USER u IDENTIFIED BY 'current_user'", nil, root},
		{"GRANT SELECT ON db.* TO u /* current_user */", "GRANT SELECT ON db.* TO u /* current_user */", nil, root},
		{"INSERT INTO t VALUES (CURRENT_USER)", "INSERT INTO t VALUES (CURRENT_USER)", nil, root},
		{"CREATE ROLE r1", "CREATE ROLE r1", nil, &binlog.SessionState{}},
		{"CREATE ROLE r1", "CREATE ROLE r1 WITH ADMIN 'o\\'b'@'%'", []string{"r1"}, &binlog.SessionState{HasInvoker: true, InvokerUser: "o'b", InvokerHost: "%"}},
		{"create role r1, `r 2`", "create role r1, `r 2` WITH ADMIN 'root'@'localhost'", []string{"r1", "r 2"}, root},
		{"grant select on db.* to current_role", "grant select on db.* to 'r1'", nil, &binlog.SessionState{HasInvoker: true, InvokerUser: "r1"}},
		{"grant select on db.* to current_role", "grant select on db.* to current_role", nil, root},
	} {
		if got, roles := asInvoker(tc.in, tc.st); got != tc.want || !slices.Equal(roles, tc.roles) {
			t.Errorf("asInvoker(%q) = %q, %q; want %q, %q", tc.in, got, roles, tc.want, tc.roles)
		}
	}
}

func TestCreatedRoutine(t *testing.T) {
	for _, tc := range []struct {
		in, db, kind, routineDB, name string
		ok                            bool
	}{
		{"CREATE DEFINER=`userTest`@`localhost` PROCEDURE `testProc`()\nBEGIN\nSELECT 1;\nEND", "test", "PROCEDURE", "test", "testProc", true},
		{"CREATE OR REPLACE DEFINER=`a`@`%` FUNCTION IF NOT EXISTS `d 2`.`f``x`() RETURNS INT RETURN 1", "test", "FUNCTION", "d 2", "f`x", true},
		{"create definer=root@localhost aggregate function agg(x INT) returns int begin return 1; end", "db1", "FUNCTION", "db1", "agg", true},
		{"CREATE FUNCTION metaphon RETURNS STRING SONAME 'udf_example.so'", "test", "", "", "", false},
		{"CREATE TABLE procedure_log (a INT)", "test", "", "", "", false},
		{"CREATE DEFINER=`root`@`localhost` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW CALL p()", "test", "", "", "", false},
		{"CREATE PROCEDURE p()", "", "", "", "", false},
	} {
		kind, db, name, ok := createdRoutine(tc.in, tc.db)
		if kind != tc.kind || db != tc.routineDB || name != tc.name || ok != tc.ok {
			t.Errorf("createdRoutine(%q) = %q %q %q %v; want %q %q %q %v", tc.in, kind, db, name, ok, tc.kind, tc.routineDB, tc.name, tc.ok)
		}
	}
}
