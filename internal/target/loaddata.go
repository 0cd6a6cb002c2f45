// This file applies LOAD DATA INFILE logged as a statement (binlog_format
// STATEMENT; MIXED logs its rows). The source logs the file's bytes in a
// BEGIN_LOAD_QUERY event and any APPEND_BLOCK events after it, then the
// statement in an EXECUTE_LOAD_QUERY event, which says where in its text the
// file's name is. The target runs the statement as LOAD DATA LOCAL INFILE
// with a name of gapless's own, and the connection sends the bytes when the
// server asks for that name (wire.sendFile).
package target

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// How an EXECUTE_LOAD_QUERY event's statement treats a row whose key is
// there already.
const (
	loadDupError   = 0
	loadDupIgnore  = 1
	loadDupReplace = 2
)

// executeLoadPostHeader is the size of an EXECUTE_LOAD_QUERY event's fixed
// part: a query event's (thread id 4, execution time 4, database name
// length 1, error code 2, status variables length 2), then the file id 4,
// the start and end of the file name in the statement (4 each) and the
// duplicate handling 1.
const executeLoadPostHeader = 13 + 13

// addLoadBlock keeps the bytes of a BEGIN_LOAD_QUERY or APPEND_BLOCK event
// (a file id, then the bytes) for the statement that reads them.
func (s *Session) addLoadBlock(fileID uint32, block []byte, begin bool) error {
	if s.loads == nil {
		s.loads = map[string][]byte{}
	}
	name := loadFileName(fileID)
	if _, ok := s.loads[name]; !ok && !begin {
		return fmt.Errorf("APPEND_BLOCK for file %d without its BEGIN_LOAD_QUERY", fileID)
	}
	s.loads[name] = append(s.loads[name], block...)
	return nil
}

// appendBlock decodes an APPEND_BLOCK event's body: the file id, then bytes.
func appendBlock(ev binlog.Event, format binlog.Event) (uint32, []byte, error) {
	body := eventBody(ev.Raw, format)
	if len(body) < 4 {
		return 0, nil, fmt.Errorf("APPEND_BLOCK event of %d bytes", len(body))
	}
	return binary.LittleEndian.Uint32(body), body[4:], nil
}

// loadFileName is the name the target's statement reads file id's bytes by.
// Plain letters and digits: it reads the same under any sql_mode and
// character set, and the server sends it back as it is.
func loadFileName(fileID uint32) string {
	return fmt.Sprintf("gapless-load-%d", fileID)
}

// loadQuery turns an EXECUTE_LOAD_QUERY event into the query event the
// target runs: the statement, its file name replaced by LOCAL INFILE and
// the name its bytes were kept under, with the session state of the source.
// LOCAL makes a duplicate key a warning, as IGNORE does; the source's
// statement, logged without an error, met none.
func (s *Session) loadQuery(ev binlog.Event, format binlog.Event) (*replication.QueryEvent, error) {
	body := eventBody(ev.Raw, format)
	if len(body) < executeLoadPostHeader {
		return nil, fmt.Errorf("EXECUTE_LOAD_QUERY event of %d bytes", len(body))
	}
	fileID := binary.LittleEndian.Uint32(body[13:])
	start := binary.LittleEndian.Uint32(body[17:])
	end := binary.LittleEndian.Uint32(body[21:])
	dup := body[25]
	q := &replication.QueryEvent{}
	if err := q.Decode(append(body[:13:13], body[executeLoadPostHeader:]...)); err != nil {
		return nil, fmt.Errorf("EXECUTE_LOAD_QUERY event: %w", err)
	}
	if start > end || int(end) > len(q.Query) {
		return nil, fmt.Errorf("EXECUTE_LOAD_QUERY event: file name at [%d, %d) of a statement of %d bytes", start, end, len(q.Query))
	}
	name := loadFileName(fileID)
	if _, ok := s.loads[name]; !ok {
		return nil, fmt.Errorf("EXECUTE_LOAD_QUERY for file %d without its BEGIN_LOAD_QUERY", fileID)
	}
	text := append([]byte{}, q.Query[:start]...)
	text = append(text, " LOCAL INFILE '"+name+"'"...)
	switch dup {
	case loadDupIgnore:
		text = append(text, " IGNORE"...)
	case loadDupReplace:
		text = append(text, " REPLACE"...)
	}
	text = append(text, " INTO"...)
	q.Query = append(text, q.Query[end:]...)
	return q, nil
}

// localInfileHint says what to do when the target refuses LOAD DATA LOCAL
// INFILE (1148, or 4166 from servers that name the setting).
func localInfileHint(err error) error {
	if code, _ := errorCode(err); code == 1148 || code == 4166 {
		return &hinted{err, "LOAD DATA logged as a statement runs as LOAD DATA LOCAL INFILE: SET GLOBAL local_infile=ON on the target"}
	}
	return err
}
