// group.go cuts the raw event stream into event groups with the rule of
// internal/binlog/group.go, reading only event types, a MariaDB GTID event's
// flags and a query event's text from the bytes, so that the one goroutine
// that must see every event in order does not decode them.
//
// A group opens with a GTID event. A MariaDB GTID event without the
// standalone flag stands for BEGIN; otherwise context events may come, then a
// BEGIN query or the group's only statement, which closes it. After BEGIN the
// group runs to an XID event, a COMMIT or ROLLBACK query, or an XA prepare.
//
// Invariant: a group is emitted whole, with the format description event it
// was written under.
package analyze

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

const xaPrepareEvent replication.EventType = 38

// formatDesc is a format description event and what the cutter needs of it.
type formatDesc struct {
	raw      []byte
	checksum int // bytes of checksum ending every other event
	flavor   binlog.Flavor
	version  string
}

// rawGroup is one event group, not yet decoded.
type rawGroup struct {
	format *formatDesc
	events []rawEvent
	// single is true when the group had no BEGIN: one statement.
	single bool
}

type groupState uint8

const (
	outsideGroup groupState = iota
	afterGTID
	inTransaction
)

type groupCutter struct {
	state  groupState
	format *formatDesc
	open   *rawGroup
	events int64
}

// rawQuery returns the statement text of a raw (uncompressed) query event body.
func rawQuery(body []byte) []byte {
	const postHeader = 13
	if len(body) < postHeader {
		return nil
	}
	start := postHeader + int(binary.LittleEndian.Uint16(body[11:])) + int(body[8]) + 1
	if start > len(body) {
		return nil
	}
	return bytes.TrimSpace(body[start:])
}

func isRawQuery(t replication.EventType, body []byte, words ...string) bool {
	if t != replication.QUERY_EVENT {
		return false
	}
	text := rawQuery(body)
	for _, w := range words {
		if bytes.EqualFold(text, []byte(w)) {
			return true
		}
	}
	return false
}

// add takes one event; it returns a group when the event closed one.
func (c *groupCutter) add(ev rawEvent) (*rawGroup, error) {
	c.events++
	t := replication.EventType(ev.data[4])
	if t == replication.FORMAT_DESCRIPTION_EVENT {
		f, err := parseFormat(ev)
		if err != nil {
			return nil, err
		}
		c.format = f
		return nil, nil
	}
	if c.format == nil {
		return nil, fmt.Errorf("%s: %s event at byte %d comes before any format description event", ev.file, t, ev.pos)
	}
	if len(ev.data) < replication.EventHeaderSize+c.format.checksum {
		return nil, fmt.Errorf("%s: %s event at byte %d is shorter than its header", ev.file, t, ev.pos)
	}
	body := ev.data[replication.EventHeaderSize : len(ev.data)-c.format.checksum]
	where := func(problem string) error {
		return fmt.Errorf("%s: %s event at byte %d %s", ev.file, t, ev.pos, problem)
	}
	switch c.state {
	case outsideGroup:
		if binlog.IsGTIDEvent(t) {
			c.state = afterGTID
			if t == replication.MARIADB_GTID_EVENT && len(body) > 12 && body[12]&replication.BINLOG_MARIADB_FL_STANDALONE == 0 {
				c.state = inTransaction
			}
			c.open = &rawGroup{format: c.format, events: make([]rawEvent, 0, 8)}
			c.open.events = append(c.open.events, ev)
			return nil, nil
		}
		if binlog.IsControlEvent(t) {
			return nil, nil
		}
		return nil, where("is outside any GTID event group (binlogs written without GTIDs are not supported)")
	case afterGTID:
		if binlog.IsGTIDEvent(t) {
			return nil, where("opens a group before the previous one ended")
		}
		c.open.events = append(c.open.events, ev)
		if binlog.IsContextEvent(t) {
			return nil, nil
		}
		if isRawQuery(t, body, "BEGIN") {
			c.state = inTransaction
			return nil, nil
		}
		c.open.single = true
		return c.close(), nil
	default:
		if binlog.IsGTIDEvent(t) {
			return nil, where("opens a group before the previous one committed")
		}
		c.open.events = append(c.open.events, ev)
		if t == replication.XID_EVENT || t == xaPrepareEvent || isRawQuery(t, body, "COMMIT", "ROLLBACK") {
			return c.close(), nil
		}
		return nil, nil
	}
}

func (c *groupCutter) close() *rawGroup {
	g := c.open
	c.open, c.state = nil, outsideGroup
	return g
}

func parseFormat(ev rawEvent) (*formatDesc, error) {
	fde := &replication.FormatDescriptionEvent{}
	if len(ev.data) <= replication.EventHeaderSize {
		return nil, fmt.Errorf("%s: format description event at byte %d is empty", ev.file, ev.pos)
	}
	if err := fde.Decode(ev.data[replication.EventHeaderSize:]); err != nil {
		return nil, fmt.Errorf("%s: format description event at byte %d: %w", ev.file, ev.pos, err)
	}
	f := &formatDesc{raw: ev.data, flavor: binlog.FormatFlavor(fde), version: fde.ServerVersion}
	if fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		f.checksum = replication.BinlogChecksumLength
	}
	return f, nil
}
