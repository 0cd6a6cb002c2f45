// This file owns the apply connection's wire: one target connection that
// sends a whole script as one multi-statement packet and reads exactly one
// result per statement.
//
// Why not database/sql: MariaDB answers a BINLOG statement of row events
// without the "more results" flag even when statements follow it in the
// same packet, though it goes on to run them and answer each. A driver that
// trusts the flag stops reading there and finds the rest as garbage on its
// next query, so with it every BINLOG statement had to end a round trip. Here
// the number of answers comes from the script, not from the flag: a batch
// of 32 transactions is one round trip instead of a dozen.
package target

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"gapless/internal/dburl"
)

// wire is one target connection.
type wire struct {
	c *client.Conn
	// packet is send's buffer, kept for the next script while it is
	// no larger than keptPacket; parts its pieces on plain TCP.
	packet []byte
	parts  [][]byte
	// affected: per statement of the last exec that answered, the rows it
	// changed (0 for a result set); empty when its packet was not sent.
	affected []uint64
	answer   []byte // readPacket's buffer
	// files are what a LOAD DATA LOCAL INFILE of the next exec reads, by
	// the names its statements give (sendFile).
	files map[string][]byte
	// lowat is the connection when it is plain TCP: exec tells it how many
	// answers are still to come (lowat.go). Nil under TLS.
	lowat *lowatConn
	// fixedServerID: the server refuses any SET of the session's
	// server_id (a Galera node with wsrep_gtid_mode=ON), so exec leaves
	// the assignments out (galera.go).
	fixedServerID bool
	// addr is the server's host:port (a node of a list: dburl.Nodes).
	addr string
	// awaiting, when set, hears when exec waits for answers (Awaiting).
	awaiting *Awaiting
	// singleByteClient: the connection's character_set_client is
	// binlogCharset, set for BINLOG statements (rows.go). Only a hint for
	// leaving the next SET out: what a script needs of the character set
	// never rests on it.
	singleByteClient bool
}

const keptPacket = 4 << 20

// dialTimeout bounds the TCP connect and the handshake when the URL sets no timeout.
const dialTimeout = 10 * time.Second

// clientParams are URL parameters that configure a client, not the session;
// the apply connection needs none of them (or sets them itself).
var clientParams = map[string]bool{
	"allowAllFiles": true, "allowCleartextPasswords": true, "allowFallbackToPlaintext": true,
	"allowNativePasswords": true, "allowOldPasswords": true, "charset": true, "checkConnLiveness": true,
	"clientFoundRows": true, "collation": true, "columnsWithAlias": true, "compress": true,
	"connectionAttributes": true, "interpolateParams": true, "loc": true, "maxAllowedPacket": true,
	"multiStatements": true, "parseTime": true, "readTimeout": true, "rejectReadOnly": true,
	"serverPubKey": true, "timeTruncate": true, "writeTimeout": true,
}

// dial opens an apply connection to cfg's server. The URL's tls and timeout
// parameters apply; any other parameter that is not a client setting is a
// session variable, set after login.
func dial(ctx context.Context, cfg dburl.Config) (*wire, error) {
	timeout, err := cfg.Timeout(dialTimeout)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := cfg.TLS()
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: timeout}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The deadline covers the handshake too: a server that accepts the
	// connection but does not answer (one starting up or shutting down)
	// must not hold a worker forever.
	var raw net.Conn
	dialAndLimit := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		raw = conn
		conn.SetDeadline(time.Now().Add(timeout))
		if tlsConfig == nil {
			conn = newLowatConn(conn)
		}
		return conn, nil
	}
	addr := cfg.DialAddr()
	c, err := client.ConnectWithDialer(dctx, "tcp", addr, cfg.User, cfg.Password, "", dialAndLimit,
		func(c *client.Conn) error {
			c.SetCapability(mysql.CLIENT_MULTI_STATEMENTS)
			c.SetCapability(mysql.CLIENT_MULTI_RESULTS)
			// LOAD DATA logged as a statement reads its file from gapless (loaddata.go).
			c.SetCapability(mysql.CLIENT_LOCAL_FILES)
			if tlsConfig != nil {
				c.SetTLSConfig(tlsConfig)
			}
			return c.SetCollation("utf8mb4_general_ci")
		})
	if err != nil {
		if cfg.Nodes != nil && raw == nil {
			// The node refused the connection: the next one is tried.
			cfg.Nodes.Failed(addr, err.Error())
		}
		return nil, connError(err)
	}
	raw.SetDeadline(time.Time{})
	w := &wire{c: c, addr: addr}
	w.lowat, _ = c.Conn.Conn.(*lowatConn)
	var set []string
	for k, v := range cfg.Params {
		if k != "tls" && k != "timeout" && !clientParams[k] {
			set = append(set, "SET @@session."+k+"="+v)
		}
	}
	if err := w.exec(set); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// exec sends stmts as one packet and reads one answer for each. The server
// stops at the first statement that fails and answers nothing after its
// error, so the error is the last answer.
func (w *wire) exec(stmts []string) error {
	// The answers are this packet's alone, none when it is not sent.
	w.affected = w.affected[:0]
	if len(stmts) == 0 {
		return nil
	}
	if err := w.send(stmts); err != nil {
		return connError(err)
	}
	if w.awaiting != nil {
		w.awaiting.begin(w.connectionID())
		defer w.awaiting.end()
	}
	defer w.expect(0)
	answers := answersAwaited(len(stmts))
	// A LOAD DATA statement's request for its file holds the script's
	// other answers back until the file is sent: such a script's answers
	// are read as they come, not awaited by the low-water mark.
	loads := len(w.files) > 0
	for i := range answers {
		if !loads {
			w.expect(answers - i)
		}
		if err := w.readOK(); err != nil {
			return err
		}
	}
	return nil
}

// Awaiting says which connection of a session waits for a script's
// answers, and since when: what a watchdog needs to tell a script the
// target ended without answering all of its statements from one that
// runs long (the target then shows the connection running, not idle).
// Safe for concurrent use.
type Awaiting struct {
	conn  atomic.Int64
	since atomic.Int64 // Unix nanoseconds; 0 while no answer is awaited
}

// Since returns the connection that awaits answers and since when; ok is
// false while none does.
func (a *Awaiting) Since() (conn int64, since time.Time, ok bool) {
	at := a.since.Load()
	if at == 0 {
		return 0, time.Time{}, false
	}
	return a.conn.Load(), time.Unix(0, at), true
}

func (a *Awaiting) begin(conn int64) {
	a.conn.Store(conn)
	a.since.Store(time.Now().UnixNano())
}

func (a *Awaiting) end() { a.since.Store(0) }

// send writes stmts, joined by ";\n", as one COM_QUERY packet. On plain
// TCP the statements go where they lie, in one writev; otherwise (TLS, or
// a script of 16 MiB or more, which the packet layer splits) they are
// copied into one buffer first. A script is most of what gapless sends, so
// the copy is a few percent of its CPU. The packet's length is counted
// from the statements as sent: withoutServerID shortens some.
func (w *wire) send(stmts []string) error {
	w.c.ResetSequence()
	header := [5]byte{4: mysql.COM_QUERY} // the length goes in below
	parts := append(w.parts[:0], header[:])
	length := 1 // the command byte, the statements and their separators
	for i, s := range stmts {
		if i > 0 {
			parts = append(parts, separator)
			length += len(separator)
		}
		if w.fixedServerID {
			s = withoutServerID(s)
		}
		parts = append(parts, unsafe.Slice(unsafe.StringData(s), len(s)))
		length += len(s)
	}
	defer func() {
		clear(parts) // the statements are not kept
		w.parts = parts[:0]
	}()
	if w.lowat != nil && w.c.Conn.Compression == mysql.MYSQL_COMPRESS_NONE && length < mysql.MaxPayloadLen {
		header[0], header[1], header[2] = byte(length), byte(length>>8), byte(length>>16)
		buffers := net.Buffers(parts) // WriteTo consumes its slice, not parts
		_, err := buffers.WriteTo(w.lowat.TCPConn)
		w.c.Sequence++
		return err
	}
	// Four bytes of packet header, the command byte, then the script:
	// WritePacket fills in the header.
	buf := w.packet[:0]
	if cap(buf) < 4+length {
		buf = make([]byte, 0, 4+length)
	}
	for _, p := range parts {
		buf = append(buf, p...)
	}
	if cap(buf) <= keptPacket {
		w.packet = buf
	}
	return w.c.WritePacket(buf)
}

// separator joins the statements of a script.
var separator = []byte(";\n")

// expect passes on to the connection how many answers are still to come.
func (w *wire) expect(answers int) {
	if w.lowat != nil {
		w.lowat.expect(answers)
	}
}

// readOK reads one statement's answer: OK, or its error. A result set is
// read to its end; none of the statements gapless sends returns rows.
func (w *wire) readOK() error {
	p, err := w.readPacket()
	if err != nil {
		return connError(err)
	}
	switch p[0] {
	case mysql.OK_HEADER:
		rows, _, _ := mysql.LengthEncodedInt(p[1:])
		w.affected = append(w.affected, rows)
		return nil
	case mysql.ERR_HEADER:
		return serverError(w.c.HandleErrorPacket(p))
	case mysql.LocalInFile_HEADER:
		return w.sendFile(string(p[1:]))
	}
	w.affected = append(w.affected, 0)
	// A result set: column definitions, rows, each list ended by EOF (or
	// an OK in the EOF's place).
	for ends := 0; ends < 2; {
		if p, err = w.readPacket(); err != nil {
			return connError(err)
		}
		switch {
		case p[0] == mysql.ERR_HEADER:
			return serverError(w.c.HandleErrorPacket(p))
		case p[0] == mysql.EOF_HEADER && len(p) < 9:
			ends++
		}
	}
	return nil
}

// fileChunk is the most bytes of a LOAD DATA LOCAL file sent in one packet:
// well under any max_allowed_packet a server accepts.
const fileChunk = 16 << 10

// sendFile answers a LOAD DATA LOCAL INFILE statement's request for name
// with the bytes kept under that name, then reads the statement's answer.
// A name gapless did not give gets no bytes, and an error: an empty file
// would load nothing, silently.
func (w *wire) sendFile(name string) error {
	data, ok := w.files[name]
	for ok && len(data) > 0 {
		n := min(len(data), fileChunk)
		if err := w.c.WritePacket(append([]byte{0, 0, 0, 0}, data[:n]...)); err != nil {
			return connError(err)
		}
		data = data[n:]
	}
	if err := w.c.WritePacket([]byte{0, 0, 0, 0}); err != nil {
		return connError(err)
	}
	if err := w.readOK(); err != nil || ok {
		return err
	}
	return fmt.Errorf("the target asked for a LOAD DATA file %q that gapless does not have", name)
}

// readPacket reads the next packet into the wire's answer buffer: it is
// valid until the next read (serverError copies what it keeps of it).
func (w *wire) readPacket() ([]byte, error) {
	p, err := w.c.ReadPacketReuseMem(w.answer[:0])
	if err == nil && cap(p) <= keptPacket {
		w.answer = p
	}
	return p, err
}

// queryString runs a query that returns one row and returns its first column.
func (w *wire) queryString(query string) (string, error) {
	r, err := w.c.Execute(query)
	if err != nil {
		return "", connError(err)
	}
	defer r.Close()
	if r.RowNumber() == 0 {
		return "", fmt.Errorf("%s returned no row", query)
	}
	// The value points into the result's buffers, which Close gives back
	// for the next query to overwrite: a session's CURRENT_USER() read so
	// once became the text of a later answer ("binlog_ch").
	v, err := r.GetString(0, 0)
	return strings.Clone(v), err
}

// queryRows runs a query and returns its rows, every value as text (NULL
// as "").
func (w *wire) queryRows(query string) ([][]string, error) {
	r, err := w.c.Execute(query)
	if err != nil {
		return nil, connError(err)
	}
	defer r.Close()
	rows := make([][]string, r.RowNumber())
	for i := range rows {
		rows[i] = make([]string, r.ColumnNumber())
		for j := range rows[i] {
			v, err := r.GetString(i, j)
			if err != nil {
				return nil, err
			}
			rows[i][j] = strings.Clone(v)
		}
	}
	return rows, nil
}

// connectionID is the server's id of this connection.
func (w *wire) connectionID() int64 { return int64(w.c.GetConnectionID()) }

func (w *wire) close() {
	w.c.Close()
}

// connError marks an error of the connection itself (not one the server
// answered) as driver.ErrBadConn, which Lost recognizes, keeping the text.
func connError(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return serverError(me)
	}
	return fmt.Errorf("%w: %v", driver.ErrBadConn, err)
}

// serverError copies an error the server answered out of the packet buffer
// it may point into.
func serverError(err error) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return err
	}
	return &mysql.MyError{Code: me.Code, State: strings.Clone(me.State), Message: strings.Clone(me.Message)}
}
