// incident.go stops a run at an incident the source logged. A source
// writes an INCIDENT_EVENT (LOST_EVENTS) when it changed data that it
// could not write to its binlog (a statement larger than
// max_binlog_stmt_cache_size on a table that is not transactional, a
// write error): past it, its binlog no longer describes its tables, and
// no replica that applies the binlog can stay equal to it. MariaDB's
// replica stops there with error 1590; so does gapless, once every group
// before the incident is applied.
package binlog

import (
	"encoding/binary"
	"fmt"
)

// IncidentError is an incident the source logged after the group After.
type IncidentError struct {
	After   string // GTID of the last group before it, or ""
	Number  uint16 // 1: LOST_EVENTS
	Message string
}

func (e *IncidentError) Error() string {
	where := "after " + e.After
	if e.After == "" {
		where = "before the first group this run read"
	}
	kind := fmt.Sprintf("incident %d", e.Number)
	if e.Number == incidentLostEvents {
		kind = "LOST_EVENTS incident"
	}
	msg := fmt.Sprintf("the source logged a %s %s", kind, where)
	if e.Message != "" {
		msg += " (" + e.Message + ")"
	}
	return msg + ": it changed data its binlog does not hold, so no replica can follow it past this point and stay equal " +
		"(MariaDB's replica stops here too, error 1590). Everything before it is applied. " +
		"Rebuild the target from a backup of the source taken after the incident, then gapless reset and replicate from the backup's position"
}

// incidentLostEvents is INCIDENT_LOST_EVENTS.
const incidentLostEvents = 1

// incidentError reads an incident event (in relay log format: a CRC32 at
// its end): after the header, the incident's number (2 bytes), then its
// message (a length byte, the text).
func incidentError(raw []byte, after string) *IncidentError {
	e := &IncidentError{After: after}
	body := raw[min(eventHeaderSize, len(raw)):max(eventHeaderSize, len(raw)-checksumSize)]
	if len(body) >= 2 {
		e.Number = binary.LittleEndian.Uint16(body)
		if len(body) >= 3 {
			n := int(body[2])
			e.Message = string(body[3:min(3+n, len(body))])
		}
	}
	return e
}
