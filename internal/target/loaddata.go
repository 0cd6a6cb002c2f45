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
	body := binlog.Payload(ev.Raw, format)
	if len(body) < 4 {
		return 0, nil, fmt.Errorf("APPEND_BLOCK event of %d bytes", len(body))
	}
	return binary.LittleEndian.Uint32(body), body[4:], nil
}

// deletedFile decodes a DELETE_FILE event's body: the file id.
func deletedFile(ev binlog.Event, format binlog.Event) (uint32, error) {
	body := binlog.Payload(ev.Raw, format)
	if len(body) < 4 {
		return 0, fmt.Errorf("DELETE_FILE event of %d bytes", len(body))
	}
	return binary.LittleEndian.Uint32(body), nil
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
	el, err := binlog.DecodeExecuteLoad(ev, format)
	if err != nil {
		return nil, err
	}
	name := loadFileName(el.FileID)
	if _, ok := s.loads[name]; !ok {
		return nil, fmt.Errorf("EXECUTE_LOAD_QUERY for file %d without its BEGIN_LOAD_QUERY", el.FileID)
	}
	q := el.Query
	text := append([]byte{}, q.Query[:el.Start]...)
	text = append(text, " LOCAL INFILE '"+name+"'"...)
	switch el.Dup {
	case binlog.LoadDupIgnore:
		text = append(text, " IGNORE"...)
	case binlog.LoadDupReplace:
		text = append(text, " REPLACE"...)
	}
	text = append(text, " INTO"...)
	q.Query = append(text, q.Query[el.End:]...)
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
