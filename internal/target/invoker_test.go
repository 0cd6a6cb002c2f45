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
