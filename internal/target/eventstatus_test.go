package target

import (
	"testing"

	"gapless/internal/binlog"
)

func TestDisabledOnTarget(t *testing.T) {
	invoker := &binlog.SessionState{HasInvoker: true, InvokerUser: "u", InvokerHost: "%"}
	for _, c := range []struct{ in, want string }{
		{"CREATE DEFINER=`root`@`localhost` EVENT e.x ON SCHEDULE EVERY 1 HOUR DO SELECT 1",
			"CREATE DEFINER=`root`@`localhost` EVENT e.x ON SCHEDULE EVERY 1 HOUR DISABLE ON SLAVE DO SELECT 1"},
		{"CREATE OR REPLACE DEFINER=`root`@`localhost` EVENT IF NOT EXISTS `e`.`enable` ON SCHEDULE EVERY 1 DAY ON COMPLETION NOT PRESERVE ENABLE COMMENT 'do it' DO select 2",
			"CREATE OR REPLACE DEFINER=`root`@`localhost` EVENT IF NOT EXISTS `e`.`enable` ON SCHEDULE EVERY 1 DAY ON COMPLETION NOT PRESERVE DISABLE ON SLAVE COMMENT 'do it' DO select 2"},
		{"CREATE DEFINER=`root`@`localhost` EVENT x ON SCHEDULE AT '2030-01-01' DISABLE DO INSERT INTO t VALUES ('ENABLE')",
			"CREATE DEFINER=`root`@`localhost` EVENT x ON SCHEDULE AT '2030-01-01' DISABLE ON SLAVE DO INSERT INTO t VALUES ('ENABLE')"},
		{"ALTER EVENT e.x COMMENT 'c'", "ALTER DEFINER='u'@'%' EVENT e.x DISABLE ON SLAVE COMMENT 'c'"},
		{"ALTER EVENT e.x ENABLE", "ALTER DEFINER='u'@'%' EVENT e.x DISABLE ON SLAVE"},
		{"ALTER EVENT x RENAME TO enable; -- renamed", "ALTER DEFINER='u'@'%' EVENT x RENAME TO enable DISABLE ON SLAVE; -- renamed"},
		{"ALTER DEFINER=v@localhost EVENT x DISABLE ON SLAVE DO SELECT 3", "ALTER DEFINER=v@localhost EVENT x DISABLE ON SLAVE DO SELECT 3"},
		{"ALTER TABLE event ADD enable INT", "ALTER TABLE event ADD enable INT"},
		{"CREATE TABLE t (event INT, enable INT)", "CREATE TABLE t (event INT, enable INT)"},
		{"DROP EVENT x", "DROP EVENT x"},
		{"CREATE DEFINER=`root`@`localhost` PROCEDURE p(event INT) COMMENT 'c' BEGIN DO 1; END",
			"CREATE DEFINER=`root`@`localhost` PROCEDURE p(event INT) COMMENT 'c' BEGIN DO 1; END"},
		{"CREATE DEFINER=event@127.0.0.1 EVENT e ON SCHEDULE EVERY 1 DAY DO SELECT 1",
			"CREATE DEFINER=event@127.0.0.1 EVENT e ON SCHEDULE EVERY 1 DAY DISABLE ON SLAVE DO SELECT 1"},
		{"ALTER DEFINER=CURRENT_USER() EVENT e ENABLE", "ALTER DEFINER=CURRENT_USER() EVENT e DISABLE ON SLAVE"},
		{"CREATE DEFINER=`u`@`%` SQL SECURITY INVOKER VIEW event AS SELECT 1", "CREATE DEFINER=`u`@`%` SQL SECURITY INVOKER VIEW event AS SELECT 1"},
	} {
		if got := disabledOnTarget(c.in, invoker); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}
