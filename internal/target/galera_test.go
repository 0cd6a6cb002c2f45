package target

import (
	"testing"

	"gapless/internal/binlog"
	"gapless/internal/galera"
)

func TestWithoutServerID(t *testing.T) {
	for in, want := range map[string]string{
		"SET @@session.server_id=7":                                                                       "DO 0",
		"SET @@session.gtid_domain_id=0, @@session.server_id=1":                                           "SET @@session.gtid_domain_id=0",
		"SET @@session.server_id=@@global.server_id, @@session.sql_log_bin=0":                             "SET @@session.sql_log_bin=0",
		"SET @@session.gtid_domain_id=9, @@session.server_id=@@global.server_id, @@session.gtid_seq_no=0": "SET @@session.gtid_domain_id=9, @@session.gtid_seq_no=0",
		"SET @@session.gtid_seq_no=5":                                                                     "SET @@session.gtid_seq_no=5",
		"INSERT INTO t VALUES ('@@session.server_id=1')":                                                  "INSERT INTO t VALUES ('@@session.server_id=1')",
	} {
		if got := withoutServerID(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestSourceAutoIncrementOnACluster(t *testing.T) {
	state := binlog.SessionState{HasAutoIncrement: true, AutoIncrementIncrement: 2, AutoIncrementOffset: 1}
	s := &Session{}
	if got := s.withSourceAutoIncrement("INSERT INTO t VALUES ()", &state, false); got != "INSERT INTO t VALUES ()" {
		t.Errorf("a lone server got %q", got)
	}
	s.cluster = galera.Node{On: true, AutoIncrementControl: true}
	if got := s.withSourceAutoIncrement("INSERT INTO t VALUES ()", &state, false); got != "SET STATEMENT auto_increment_increment=2, auto_increment_offset=1 FOR INSERT INTO t VALUES ()" {
		t.Errorf("a node got %q", got)
	}
	if got := s.withSourceAutoIncrement("CREATE TABLE t (a int)", &state, true); got != "CREATE TABLE t (a int)" {
		t.Errorf("a DDL got %q", got)
	}
	s.cluster.AutoIncrementControl = false
	if got := s.withSourceAutoIncrement("INSERT INTO t VALUES ()", &state, false); got != "INSERT INTO t VALUES ()" {
		t.Errorf("a node without wsrep_auto_increment_control got %q", got)
	}
}

func TestTemporaryDDL(t *testing.T) {
	for text, want := range map[string]bool{
		"CREATE TEMPORARY TABLE t (a int)":            true,
		"create or replace temporary table t (a int)": true,
		"DROP TEMPORARY TABLE IF EXISTS t":            true,
		"/* c */ DROP TEMPORARY TABLE t":              true,
		"CREATE TABLE t (a int)":                      false,
		"CALL p()":                                    false,
	} {
		if got := temporaryDDL(text); got != want {
			t.Errorf("%q: %v", text, got)
		}
	}
}

func TestBatchLimitsStayUnderTheWritesetLimits(t *testing.T) {
	if _, _, ok := BatchLimits(galera.Node{}); ok {
		t.Error("a lone server has batch limits")
	}
	if b, n, ok := BatchLimits(galera.Node{On: true, MaxWSSize: 2147483647}); !ok || b != 4<<20 || n != 0 {
		t.Errorf("the cluster's defaults: %d bytes, %d transactions", b, n)
	}
	if b, n, _ := BatchLimits(galera.Node{On: true, MaxWSSize: 1 << 20, MaxWSRows: 1000}); b != 256<<10 || n != 1 {
		t.Errorf("small limits: %d bytes, %d transactions", b, n)
	}
}
