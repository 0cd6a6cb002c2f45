package target

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// statementsGroup is a group of statements that the source did not flag
// transactional, BEGIN ... COMMIT, from server 7.
func statementsGroup(statements ...string) *binlog.Transaction {
	query := func(text string) binlog.Event {
		return binlog.Event{Header: &replication.EventHeader{EventType: replication.QUERY_EVENT},
			Data: &replication.QueryEvent{Schema: []byte("test"), Query: []byte(text)}}
	}
	events := []binlog.Event{query("BEGIN")}
	for _, text := range statements {
		events = append(events, query(text))
	}
	events = append(events, query("COMMIT"))
	return &binlog.Transaction{
		Flavor:  binlog.FlavorMariaDB,
		MariaDB: gtid.MariaDBGTID{Domain: 0, Server: 7, Seq: 59},
		Events:  events,
	}
}

// TestPartsRunAsTheSourcesServer checks that the parts of a group of
// statements applied in parts switch to gapless's own domain under the
// source's server id, under which the server files the temporary tables
// of the source's session, and that the last part takes the source's GTID.
func TestPartsRunAsTheSourcesServer(t *testing.T) {
	for _, row := range []bool{false, true} {
		s := &Session{opts: Options{KeepGTID: true, WriteBinlog: true, RowFormat: row}, maxStatement: 1 << 20}
		txn := statementsGroup("INSERT INTO t VALUES (4)", "INSERT INTO tmp_i VALUES (4)", "INSERT INTO t SELECT * FROM tmp_i")
		body, _, err := s.script(txn, "CHECKPOINT")
		if err != nil {
			t.Fatal(err)
		}
		own := slices.Index(body, "SET @@session.gtid_domain_id=2147483647, @@session.server_id=7, @@session.gtid_seq_no=0")
		source := slices.Index(body, "SET @@session.gtid_domain_id=0, @@session.server_id=7")
		last := slices.Index(body, "INSERT INTO t SELECT * FROM tmp_i")
		if own < 0 || source < own || last < source || slices.Index(body, "INSERT INTO tmp_i VALUES (4)") > source {
			t.Errorf("row format %v: script %q: want the switch to domain 2147483647 as server 7 first, the source's GTID before the last statement only", row, body)
		}
		if slices.Contains(body, ownDomainStatement) || slices.Contains(body, mixedForGroup) {
			t.Errorf("row format %v: script %q: a part under the target's server id, or MIXED", row, body)
		}
		if !strings.HasPrefix(body[own], ownDomainSwitch) {
			t.Errorf("%q does not begin with %q, which send.go looks for", body[own], ownDomainSwitch)
		}
	}
}
