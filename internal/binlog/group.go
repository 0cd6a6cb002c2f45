// group.go finds where event groups begin and end. The receiver, the relay
// log's recovery and the decoder all cut the stream with this one rule, so a
// group the receiver wrote whole is a group the decoder reads whole.
//
// A group opens with a GTID event. A MariaDB GTID event without the
// standalone flag stands for BEGIN itself; otherwise INTVAR, RAND, USER_VAR and
// annotate events may come, then either a BEGIN query, or any other event,
// which is the group's only statement (DDL, a standalone statement) and closes
// it. After BEGIN the group runs to an XID event, a COMMIT or ROLLBACK query,
// or an XA prepare event.
package binlog

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/replication"
)

// xaPrepareEvent is XA_PREPARE_LOG_EVENT, the end of an XA transaction's first phase.
const xaPrepareEvent replication.EventType = 38

type groupState uint8

const (
	outsideGroup  groupState = iota
	afterGTID                // GTID event seen, waiting for BEGIN or the single statement
	inTransaction            // BEGIN seen, waiting for the commit
)

// groupCut is what adding one event did to the group being assembled.
type groupCut uint8

const (
	cutControl  groupCut = iota // an event outside any group (format description, rotate, GTID list, ...)
	cutInside                   // part of the open group, which is not complete yet
	cutComplete                 // the event closed the group
)

// groupTracker follows the state of the current group; it keeps no events.
type groupTracker struct {
	state groupState
}

// IsGTIDEvent reports whether the event type opens a group.
func IsGTIDEvent(t replication.EventType) bool {
	switch t {
	case replication.MARIADB_GTID_EVENT, replication.GTID_EVENT, replication.ANONYMOUS_GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT:
		return true
	}
	return false
}

// IsContextEvent reports whether the event only sets context for the statement that follows it.
func IsContextEvent(t replication.EventType) bool {
	switch t {
	case replication.INTVAR_EVENT, replication.RAND_EVENT, replication.USER_VAR_EVENT,
		replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.ROWS_QUERY_EVENT:
		return true
	}
	return false
}

// isQuery reports whether ev is a query event whose text is one of words,
// each BEGIN, COMMIT or ROLLBACK (ControlStatement).
func isQuery(ev replication.Event, words ...string) bool {
	q, ok := ev.(*replication.QueryEvent)
	if !ok {
		return false
	}
	w := ControlStatement(q.Query)
	return w != "" && slices.Contains(words, w)
}

// add moves the tracker past one event and says what the event was. An event
// that cannot be where it is (a GTID event inside an open group, a statement
// outside any group) is an error: the stream is not one gapless can apply.
func (g *groupTracker) add(ev *replication.BinlogEvent) (groupCut, error) {
	t := ev.Header.EventType
	switch g.state {
	case outsideGroup:
		if IsGTIDEvent(t) {
			g.state = afterGTID
			// A MariaDB GTID event stands for BEGIN unless the group is a standalone statement.
			if e, ok := ev.Event.(*replication.MariadbGTIDEvent); ok && !e.IsStandalone() {
				g.state = inTransaction
			}
			return cutInside, nil
		}
		if IsControlEvent(t) {
			return cutControl, nil
		}
		return cutControl, fmt.Errorf("%s event at source position %d is outside any GTID event group", t, ev.Header.LogPos)
	case afterGTID:
		if IsGTIDEvent(t) {
			return cutInside, fmt.Errorf("GTID event at source position %d opens a group before the previous one ended", ev.Header.LogPos)
		}
		if IsContextEvent(t) {
			return cutInside, nil
		}
		if isQuery(ev.Event, "BEGIN") {
			g.state = inTransaction
			return cutInside, nil
		}
		g.state = outsideGroup
		return cutComplete, nil
	default: // inTransaction
		if IsGTIDEvent(t) {
			return cutInside, fmt.Errorf("GTID event at source position %d opens a group before the previous one committed", ev.Header.LogPos)
		}
		if t == replication.XID_EVENT || t == xaPrepareEvent || isQuery(ev.Event, "COMMIT", "ROLLBACK") {
			g.state = outsideGroup
			return cutComplete, nil
		}
		return cutInside, nil
	}
}

// open reports whether a group has begun and not ended.
func (g *groupTracker) open() bool { return g.state != outsideGroup }

// IsControlEvent reports whether the event type describes the stream rather than data.
func IsControlEvent(t replication.EventType) bool {
	switch t {
	case replication.FORMAT_DESCRIPTION_EVENT, replication.ROTATE_EVENT, replication.STOP_EVENT,
		replication.HEARTBEAT_EVENT, replication.HEARTBEAT_LOG_EVENT_V2, replication.MARIADB_GTID_LIST_EVENT,
		replication.MARIADB_BINLOG_CHECKPOINT_EVENT, replication.PREVIOUS_GTIDS_EVENT,
		replication.MARIADB_START_ENCRYPTION_EVENT, replication.IGNORABLE_EVENT, replication.INCIDENT_EVENT:
		return true
	}
	return false
}

// ControlStatement returns BEGIN, COMMIT or ROLLBACK when a query event's
// text is that word alone (any case, blanks around it), and "" for any
// other statement. It copies nothing: it runs on every statement of a
// statement-format binlog, several times.
func ControlStatement(query []byte) string {
	text := bytes.TrimSpace(query)
	for _, w := range [...]string{"BEGIN", "COMMIT", "ROLLBACK"} {
		if len(text) == len(w) && bytes.EqualFold(text, []byte(w)) {
			return w
		}
	}
	return ""
}
