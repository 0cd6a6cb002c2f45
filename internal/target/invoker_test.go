package target

import (
	"testing"

	"gapless/internal/binlog"
)

func TestAsInvoker(t *testing.T) {
	root := &binlog.SessionState{HasInvoker: true, InvokerUser: "root", InvokerHost: "localhost"}
	for _, tc := range []struct {
		in, want, role string
		st             *binlog.SessionState
	}{
		{"CREATE ROLE r1", "CREATE ROLE r1 WITH ADMIN 'root'@'localhost'", "r1", root},
		{"CREATE ROLE IF NOT EXISTS `a``b`", "CREATE ROLE IF NOT EXISTS `a``b` WITH ADMIN 'root'@'localhost'", "a`b", root},
		{"create or replace role r1", "create or replace role r1 WITH ADMIN 'root'@'localhost'", "r1", root},
		{"CREATE ROLE r1 WITH ADMIN u@h", "CREATE ROLE r1 WITH ADMIN u@h", "r1", root},
		{"CREATE ROLE r2 WITH ADMIN CURRENT_USER", "CREATE ROLE r2 WITH ADMIN 'root'@'localhost'", "r2", root},
		{"rename user current_user to a@a", "rename user 'root'@'localhost' to a@a", "", root},
		{"GRANT r1 TO current_user()", "GRANT r1 TO 'root'@'localhost'", "", root},
		{"ALTER USER u IDENTIFIED BY 'current_user'", "ALTER USER u IDENTIFIED BY 'current_user'", "", root},
		{"GRANT SELECT ON db.* TO u /* current_user */", "GRANT SELECT ON db.* TO u /* current_user */", "", root},
		{"INSERT INTO t VALUES (CURRENT_USER)", "INSERT INTO t VALUES (CURRENT_USER)", "", root},
		{"CREATE ROLE r1", "CREATE ROLE r1", "", &binlog.SessionState{}},
		{"CREATE ROLE r1", "CREATE ROLE r1 WITH ADMIN 'o\\'b'@'%'", "r1", &binlog.SessionState{HasInvoker: true, InvokerUser: "o'b", InvokerHost: "%"}},
	} {
		if got, role := asInvoker(tc.in, tc.st); got != tc.want || role != tc.role {
			t.Errorf("asInvoker(%q) = %q, %q; want %q, %q", tc.in, got, role, tc.want, tc.role)
		}
	}
}
