// group.go cuts the event stream into event groups with the rule of
// internal/binlog/group.go (copied: that tracker is unexported), so analyze
// sees exactly the transactions the applier would.
//
// A group opens with a GTID event. A MariaDB GTID event without the
// standalone flag stands for BEGIN; otherwise context events may come, then a
// BEGIN query or the group's only statement, which closes it. After BEGIN the
// group runs to an XID event, a COMMIT or ROLLBACK query, or an XA prepare.
package analyze

import (
	"bytes"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

const xaPrepareEvent replication.EventType = 38

type groupState uint8

const (
	outsideGroup groupState = iota
	afterGTID
	inTransaction
)

type groupCut uint8

const (
	cutControl groupCut = iota
	cutInside
	cutComplete
)

type groupTracker struct{ state groupState }

func isGTIDEvent(t replication.EventType) bool {
	switch t {
	case replication.MARIADB_GTID_EVENT, replication.GTID_EVENT, replication.ANONYMOUS_GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT:
		return true
	}
	return false
}

func isContextEvent(t replication.EventType) bool {
	switch t {
	case replication.INTVAR_EVENT, replication.RAND_EVENT, replication.USER_VAR_EVENT,
		replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.ROWS_QUERY_EVENT:
		return true
	}
	return false
}

func isControlEvent(t replication.EventType) bool {
	switch t {
	case replication.FORMAT_DESCRIPTION_EVENT, replication.ROTATE_EVENT, replication.STOP_EVENT,
		replication.HEARTBEAT_EVENT, replication.HEARTBEAT_LOG_EVENT_V2, replication.MARIADB_GTID_LIST_EVENT,
		replication.MARIADB_BINLOG_CHECKPOINT_EVENT, replication.PREVIOUS_GTIDS_EVENT,
		replication.MARIADB_START_ENCRYPTION_EVENT, replication.IGNORABLE_EVENT, replication.INCIDENT_EVENT:
		return true
	}
	return false
}

func isQuery(ev replication.Event, words ...string) bool {
	q, ok := ev.(*replication.QueryEvent)
	if !ok {
		return false
	}
	text := bytes.TrimSpace(q.Query)
	for _, w := range words {
		if bytes.EqualFold(text, []byte(w)) {
			return true
		}
	}
	return false
}

func (g *groupTracker) add(ev *replication.BinlogEvent) (groupCut, error) {
	t := ev.Header.EventType
	switch g.state {
	case outsideGroup:
		if isGTIDEvent(t) {
			g.state = afterGTID
			if e, ok := ev.Event.(*replication.MariadbGTIDEvent); ok && !e.IsStandalone() {
				g.state = inTransaction
			}
			return cutInside, nil
		}
		if isControlEvent(t) {
			return cutControl, nil
		}
		return cutControl, fmt.Errorf("%s event outside any GTID event group (binlogs without GTIDs are not supported)", t)
	case afterGTID:
		if isGTIDEvent(t) {
			return cutInside, fmt.Errorf("GTID event opens a group before the previous one ended")
		}
		if isContextEvent(t) {
			return cutInside, nil
		}
		if isQuery(ev.Event, "BEGIN") {
			g.state = inTransaction
			return cutInside, nil
		}
		g.state = outsideGroup
		return cutComplete, nil
	default:
		if isGTIDEvent(t) {
			return cutInside, fmt.Errorf("GTID event opens a group before the previous one committed")
		}
		if t == replication.XID_EVENT || t == xaPrepareEvent || isQuery(ev.Event, "COMMIT", "ROLLBACK") {
			g.state = outsideGroup
			return cutComplete, nil
		}
		return cutInside, nil
	}
}
