// tablemaps.go keeps one decoded table map per table while its map stays
// the same. Every statement of the source maps its tables again, and
// go-mysql decodes each map into a new TableMapEvent of some twenty slices,
// which the transactions waiting in the queue hold, and the garbage
// collector scans, once per statement. The relay reader hands out the
// first one decoded from the same bytes instead, decoded once more from a
// copy of them (so it holds no piece of the relay log read ahead), and
// points row events at it: its content is the same, only shared, and
// nothing changes a TableMapEvent once decoded.
package binlog

import (
	"bytes"

	"github.com/go-mysql-org/go-mysql/replication"
)

// maxTableMaps bounds the table maps kept: past it, they are forgotten
// and made again as met.
const maxTableMaps = 4096

type keptMap struct {
	raw   []byte // the event's body (its header and checksum differ by position and time)
	event []byte // the whole event raw is the body of
	tm    *replication.TableMapEvent
}

// tableMaps is the table maps kept, by table id, and the parser that
// decodes their copies.
type tableMaps struct {
	fde    []byte // the format description the events are written under
	parser *replication.BinlogParser
	byID   map[uint64]keptMap
	// now is, by table id, the table map the last table map event of that
	// id was handed out as: what its row events are to point at (the
	// parser points them at its own decoding of that event).
	now map[uint64]*replication.TableMapEvent
}

// format gives the parser of copies the format description the events
// that follow were written under.
func (m *tableMaps) format(fde []byte) {
	m.fde = bytes.Clone(fde)
	m.reset()
}

// reset forgets every table map kept.
func (m *tableMaps) reset() {
	m.parser = replication.NewBinlogParser()
	m.parser.SetFlavor("mariadb")
	m.parser.SetVerifyChecksum(false)
	m.parser.SetTableMapOptionalMetaDecodeFunc(func([]byte) error { return nil })
	if _, err := safeParse(m.parser, m.fde); err != nil {
		m.parser = nil
	}
	m.byID, m.now = make(map[uint64]keptMap), make(map[uint64]*replication.TableMapEvent)
}

// same returns the kept table map decoded from the same body as tm's event
// (data, with a checksum or not), keeping tm itself when there is none.
func (m *tableMaps) same(tm *replication.TableMapEvent, data []byte, checksum bool) *replication.TableMapEvent {
	out := m.kept(tm, data, checksum)
	if m.now != nil {
		m.now[tm.TableID] = out
	}
	return out
}

func (m *tableMaps) kept(tm *replication.TableMapEvent, data []byte, checksum bool) *replication.TableMapEvent {
	end := len(data)
	if checksum {
		end -= checksumSize
	}
	if m.parser == nil || end < eventHeaderSize {
		return tm
	}
	body := data[eventHeaderSize:end]
	if k, ok := m.byID[tm.TableID]; ok && bytes.Equal(k.raw, body) {
		return k.tm
	}
	if len(m.byID) >= maxTableMaps {
		m.reset()
		if m.parser == nil {
			return tm
		}
	}
	copied := bytes.Clone(data)
	ev, err := safeParse(m.parser, copied)
	if err != nil {
		return tm
	}
	kept, ok := ev.Event.(*replication.TableMapEvent)
	if !ok || kept.TableID != tm.TableID {
		return tm
	}
	m.byID[tm.TableID] = keptMap{raw: copied[eventHeaderSize:end], event: copied, tm: kept}
	return kept
}

// current is the table map a row event of table id is to point at, tm
// (the parser's) when none was handed out for it.
func (m *tableMaps) current(id uint64, tm *replication.TableMapEvent) *replication.TableMapEvent {
	if kept, ok := m.now[id]; ok && kept.TableID == tm.TableID {
		return kept
	}
	return tm
}
