package binlog

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// ExecuteLoad is an EXECUTE_LOAD_QUERY event: a LOAD DATA INFILE logged as
// a statement (binlog_format=STATEMENT). Its file's bytes came before it,
// in a BEGIN_LOAD_QUERY event and any APPEND_BLOCK events of the same file
// id.
type ExecuteLoad struct {
	// Query is the statement with its session state and default database,
	// as a query event holds them.
	Query *replication.QueryEvent
	// FileID names the file; Start and End are where its name is in
	// Query.Query: " INFILE '...' [IGNORE|REPLACE] INTO".
	FileID     uint32
	Start, End uint32
	// Dup is how the statement treats a row whose key is there already:
	// LoadDupError, LoadDupIgnore or LoadDupReplace.
	Dup byte
}

// How a LOAD DATA statement treats a duplicate key.
const (
	LoadDupError   = 0
	LoadDupIgnore  = 1
	LoadDupReplace = 2
)

// executeLoadPostHeader is the size of the event's fixed part: a query
// event's (thread id 4, execution time 4, database name length 1, error
// code 2, status variables length 2), then the file id 4, the start and
// end of the file name (4 each) and the duplicate handling 1.
const executeLoadPostHeader = 13 + 13

// DecodeExecuteLoad reads an EXECUTE_LOAD_QUERY event (go-mysql decodes its
// fixed part only) under the format description of its group.
func DecodeExecuteLoad(ev Event, format Event) (ExecuteLoad, error) {
	body := Payload(ev.Raw, format)
	if len(body) < executeLoadPostHeader {
		return ExecuteLoad{}, fmt.Errorf("EXECUTE_LOAD_QUERY event of %d bytes", len(body))
	}
	el := ExecuteLoad{
		FileID: binary.LittleEndian.Uint32(body[13:]),
		Start:  binary.LittleEndian.Uint32(body[17:]),
		End:    binary.LittleEndian.Uint32(body[21:]),
		Dup:    body[25],
		Query:  &replication.QueryEvent{},
	}
	// Without the five LOAD DATA fields, the body is a query event's.
	if err := el.Query.Decode(append(body[:13:13], body[executeLoadPostHeader:]...)); err != nil {
		return ExecuteLoad{}, fmt.Errorf("EXECUTE_LOAD_QUERY event: %w", err)
	}
	if el.Start > el.End || int(el.End) > len(el.Query.Query) {
		return ExecuteLoad{}, fmt.Errorf("EXECUTE_LOAD_QUERY event: file name at [%d, %d) of a statement of %d bytes",
			el.Start, el.End, len(el.Query.Query))
	}
	return el, nil
}

// Payload is an event without its common header and its checksum, under
// the format description format.
func Payload(raw []byte, format Event) []byte {
	const headerSize = 19
	end := len(raw)
	if fde, ok := format.Data.(*replication.FormatDescriptionEvent); ok && fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		end -= 4
	}
	if end < headerSize {
		return nil
	}
	return raw[headerSize:end]
}
