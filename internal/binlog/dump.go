// dump.go owns the binlog dump connection: it logs in to the source as a
// replica (the same requests the binlog library's syncer makes: checksum
// awareness, GTID capability, heartbeat period, COM_REGISTER_SLAVE, then
// COM_BINLOG_DUMP from a GTID position) and reads the events it sends one
// after the other (packets.go, in place), checking each event's checksum.
//
// Why not the library's syncer: it reads each event into a new buffer,
// decodes it into new structures and hands it to the receiver through a
// channel, a goroutine switch per event; on a busy stream that was a fifth
// of gapless's CPU. Here an event is read in place and decoded only when
// the receiver needs its content (GTID and query events, see cutter).
//
// The event dumpStream.next returns is valid until the next call.
package binlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"gapless/internal/sqltext"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// dumpStream is one binlog dump from the source.
type dumpStream struct {
	conn    *client.Conn
	guard   *dumpConn
	packets *packetReader // the dump's packets, once it is asked for
	// crc says the events carry CRC32 checksums (the source's format
	// description says so).
	crc    bool
	header replication.EventHeader
	event  replication.BinlogEvent
	stop   func() bool // undoes the context's hook
}

// openDump logs in to the source and starts a binlog dump after from. It
// reports whether the login succeeded, so that a refused dump (error 1045
// too, when the user lacks REPLICATION SLAVE) is told from a refused login.
func (r *Receiver) openDump(ctx context.Context, from gtid.MariaDBPosition) (d *dumpStream, loggedIn bool, err error) {
	guard := &dumpConn{timeout: 5*r.cfg.Heartbeat + 5*time.Second}
	dialTimeout := r.cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := client.ConnectWithDialer(dctx, "tcp", r.addr(), r.cfg.User, r.cfg.Password, "", guard.dialer(dialTimeout),
		func(c *client.Conn) error {
			c.SetTLSConfig(r.cfg.TLS)
			c.SetAttributes(map[string]string{"_client_role": "binary_log_listener"})
			return nil
		})
	if err != nil {
		return nil, false, err
	}
	if err := r.checkContinues(conn, from); err != nil {
		conn.Close()
		return nil, true, err
	}
	r.measureClock(conn)
	d = &dumpStream{conn: conn, guard: guard}
	if err := d.request(r.cfg, from); err != nil {
		conn.Close()
		return nil, true, err
	}
	// Reads have no deadline of their own (guard moves one): the end of
	// ctx closes the connection, which ends a read in progress.
	d.stop = context.AfterFunc(ctx, func() { conn.Close() })
	return d, true, nil
}

// backCheckEvery is how long the dump may bring no group before the
// receiver asks the source, on a connection of its own, whether its binlog
// went back (wentBack).
const backCheckEvery = 10 * time.Second

// watchBack asks the source every backCheckEvery, while the dump brings no
// group, whether its binlog went back behind what the relay log holds, and
// then closes the dump (d) with the reason kept in back: a RESET MASTER on
// the source leaves the dump connected and silent, and the source writes
// its new groups where the dump does not read.
func (r *Receiver) watchBack(ctx context.Context, d *dumpStream, back *atomic.Pointer[SourceError]) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(backCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if time.Since(time.Unix(0, r.lastGroupAt.Load())) < backCheckEvery {
				continue
			}
			if err := r.wentBack(ctx); err != nil {
				back.Store(err)
				d.conn.Close()
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// wentBack reads the source's @@gtid_binlog_pos and returns the stop when
// a domain of it is behind the relay log's end: the source's binlog was
// reset (RESET MASTER) or the server was restored from an older backup,
// and what it writes now reuses GTIDs gapless has. nil when it is not, or
// when the source does not answer (the dump's own checks see to that).
func (r *Receiver) wentBack(ctx context.Context) *SourceError {
	timeout := 5 * time.Second
	if r.cfg.DialTimeout > 0 {
		timeout = min(timeout, r.cfg.DialTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The whole look has the deadline: a source that accepts and then
	// says nothing (stopped) must not hold the session's end.
	deadline := time.Now().Add(timeout)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{Deadline: deadline}).DialContext(ctx, network, addr)
		if err == nil {
			conn.SetDeadline(deadline)
		}
		return conn, err
	}
	conn, err := client.ConnectWithDialer(ctx, "tcp", r.addr(), r.cfg.User, r.cfg.Password, "", dial,
		func(c *client.Conn) error {
			c.SetTLSConfig(r.cfg.TLS)
			return nil
		})
	if err != nil {
		return nil
	}
	defer conn.Close()
	res, err := conn.Execute("SELECT @@gtid_binlog_pos")
	if err != nil {
		return nil
	}
	text, _ := res.GetString(0, 0)
	written, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return nil
	}
	received := r.relay.End()
	for _, g := range received.GTIDs() {
		now, ok := written.Get(g.Domain)
		if !ok || now.Seq >= g.Seq {
			continue
		}
		return &SourceError{
			Problem: fmt.Sprintf("source %s went back: its binlog ends at %s in GTID domain %d, where gapless has received up to %s (RESET MASTER on the source, or the server restored from an older backup); what it writes now reuses GTIDs gapless has applied, and MariaDB's replica stops here too (1236)", r.addr(), now, g.Domain, g),
			Hint:    "nothing it wrote since is applied, everything received before is; re-seed the target from the source, then gapless reset and replicate from the seed's position",
			Drain:   true,
		}
	}
	return nil
}

// measureClock reads the source's clock and keeps how far the local one runs
// ahead of it (the middle of the round trip against the source's answer).
// A source that does not answer keeps the offset measured before.
func (r *Receiver) measureClock(conn *client.Conn) {
	sent := time.Now()
	res, err := conn.Execute("SELECT CAST(UNIX_TIMESTAMP(NOW(6)) AS CHAR)")
	if err != nil {
		r.cfg.Logger.Debug("cannot read the source's clock", "error", err)
		return
	}
	answered := time.Now()
	text, _ := res.GetString(0, 0)
	whole, fraction, _ := strings.Cut(text, ".")
	sec, err1 := strconv.ParseInt(whole, 10, 64)
	micro, err2 := strconv.ParseInt((fraction + "000000")[:6], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	offset := sent.Add(answered.Sub(sent) / 2).Sub(time.Unix(sec, micro*1000))
	if old := time.Duration(r.clockOffset.Swap(int64(offset))); offset.Abs() >= time.Second && (offset-old).Abs() >= time.Second {
		r.cfg.Logger.Warn("the source's clock differs from this host's; gapless's lag allows for it", "this_host_ahead_by", offset.Round(time.Millisecond).String())
	}
}

// checkContinues refuses a source whose binlog has held no GTID domain of
// from: MariaDB would send such a replica the rest of its binlog, whatever
// it holds, without an error. Checked at every connection, as another
// server may answer at the source's address after a reconnect.
func (r *Receiver) checkContinues(conn *client.Conn, from gtid.MariaDBPosition) error {
	if from.IsEmpty() {
		return nil
	}
	res, err := conn.Execute("SELECT @@gtid_binlog_pos")
	if err != nil {
		return err
	}
	s, _ := res.GetString(0, 0)
	written, err := gtid.ParseMariaDBPosition(s)
	if err != nil { // not a MariaDB GTID position: asking again gets the same
		return &SourceError{Problem: fmt.Sprintf("source %s answered @@gtid_binlog_pos %q, which is not a MariaDB GTID position: %v", r.addr(), s, err), Hint: "give a MariaDB source"}
	}
	r.sourceWritten = written
	for _, d := range from.Domains() {
		if _, ok := written.Get(d); ok {
			return nil
		}
	}
	if s == "" {
		s = "empty"
	}
	return &SourceError{
		Problem: fmt.Sprintf("source %s has never written any GTID domain of %s, the position gapless goes on from (its @@gtid_binlog_pos is %s): another server than the target's source answers at that address, or the source's binlog history was reset (RESET MASTER)", r.addr(), from, s),
		Hint:    "check --source, or re-seed the target from the source",
	}
}

// request asks for the dump, as the library's syncer does for a MariaDB source.
func (d *dumpStream) request(cfg ReceiverConfig, from gtid.MariaDBPosition) error {
	if r, err := d.conn.Execute("SHOW GLOBAL VARIABLES LIKE 'BINLOG_CHECKSUM'"); err != nil {
		return err
	} else if s, _ := r.GetString(0, 1); s != "" {
		if _, err := d.conn.Execute("SET @master_binlog_checksum='NONE', @source_binlog_checksum='NONE'"); err != nil {
			return err
		}
	}
	period := cfg.Heartbeat.Nanoseconds()
	for _, set := range []string{
		// Under the source's global sql_mode the empty position below
		// could be NULL (EMPTY_STRING_IS_NULL), which asks for a dump by
		// file name (1236).
		"SET SESSION sql_mode=" + sqltext.SQLMode,
		"SET @mariadb_slave_capability=4", // MARIA_SLAVE_CAPABILITY_GTID
		"SET @master_heartbeat_period=" + strconv.FormatInt(period, 10) + ", @source_heartbeat_period=" + strconv.FormatInt(period, 10),
	} {
		if _, err := d.conn.Execute(set); err != nil {
			return err
		}
	}
	host, _ := os.Hostname()
	if len(host) > 255 {
		host = host[:255]
	}
	user := cfg.User
	if len(user) > 255 {
		user = user[:255]
	}
	register := make([]byte, 0, 4+1+4+1+len(host)+1+len(user)+1+2+4+4)
	register = append(register, 0, 0, 0, 0, mysql.COM_REGISTER_SLAVE)
	register = binary.LittleEndian.AppendUint32(register, cfg.ServerID)
	register = append(append(register, byte(len(host))), host...)
	register = append(append(register, byte(len(user))), user...)
	register = append(register, 0) // no password
	register = binary.LittleEndian.AppendUint16(register, cfg.Port)
	register = binary.LittleEndian.AppendUint32(register, 0) // rank
	register = binary.LittleEndian.AppendUint32(register, 0) // source id
	d.conn.ResetSequence()
	if err := d.conn.WritePacket(register); err != nil {
		return err
	}
	if _, err := d.conn.ReadOKPacket(); err != nil {
		return err
	}
	for _, set := range []string{
		"SET @slave_connect_state='" + from.String() + "'",
		"SET @slave_gtid_strict_mode=1",
	} {
		if _, err := d.conn.Execute(set); err != nil {
			return err
		}
	}
	// The file and position are ignored: @slave_connect_state says where to start.
	dump := make([]byte, 0, 4+1+4+2+4)
	dump = append(dump, 0, 0, 0, 0, mysql.COM_BINLOG_DUMP)
	dump = binary.LittleEndian.AppendUint32(dump, 0)
	dump = binary.LittleEndian.AppendUint16(dump, 0)
	dump = binary.LittleEndian.AppendUint32(dump, cfg.ServerID)
	d.conn.ResetSequence()
	if err := d.conn.WritePacket(dump); err != nil {
		return err
	}
	return d.readPackets()
}

// readPackets takes the reading of the connection over from the binlog
// library, for the dump's packets (packets.go). Nothing the source sent is
// left behind in the library's buffered reader: it fills it only when it
// reads, with what the socket holds, and the source sent nothing after the
// answer to the last SET, read whole, until it got the dump request. With
// TLS on, the library's net.Conn is the TLS connection it opened over the
// dialer's (whose own buffers are read through it still); without, the
// dialer's hookedConn. Either way each read from the socket still runs
// beforeRead. The library compresses only when asked (CLIENT_COMPRESS or
// CLIENT_ZSTD_COMPRESSION_ALGORITHM), which gapless never does for the
// dump: a compressed connection is refused rather than misread.
func (d *dumpStream) readPackets() error {
	if d.conn.Compression != mysql.MYSQL_COMPRESS_NONE {
		return fmt.Errorf("binlog dump: the connection is compressed (%d), which gapless does not read", d.conn.Compression)
	}
	d.packets = newPacketReader(d.conn.Conn.Conn, d.conn.Sequence)
	return nil
}

// next returns the next event, its header decoded and its content not
// (Event is nil); it is valid until the next call. An error the source
// answers with is a *mysql.MyError.
func (d *dumpStream) next() (*replication.BinlogEvent, error) {
	for {
		d.guard.waiting.Store(true)
		packet, err := d.packets.next()
		d.guard.waiting.Store(false)
		if err != nil {
			return nil, err
		}
		if len(packet) == 0 {
			return nil, fmt.Errorf("binlog dump: an empty packet")
		}
		switch packet[0] {
		case mysql.OK_HEADER:
		case mysql.ERR_HEADER:
			// The error's strings point into the packet it is given, and
			// the packet into the reader's buffer.
			return nil, d.conn.HandleErrorPacket(bytes.Clone(packet))
		case mysql.EOF_HEADER:
			continue // the end of a non-blocking dump; this one blocks
		default:
			return nil, fmt.Errorf("binlog dump: unexpected packet type %#x", packet[0])
		}
		data := packet[1:]
		if err := d.header.Decode(data); err != nil {
			return nil, fmt.Errorf("binlog dump: %w", err)
		}
		if int(d.header.EventSize) != len(data) {
			return nil, fmt.Errorf("binlog dump: %s event of %d bytes in a packet of %d", d.header.EventType, d.header.EventSize, len(data))
		}
		if d.header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			d.crc = formatHasChecksum(data)
		} else if d.crc && !checkedOnRead(d.header.EventType) && !checksumHolds(data) {
			return nil, fmt.Errorf("binlog dump: %s event at source position %d: %w", d.header.EventType, d.header.LogPos, replication.ErrChecksumMismatch)
		}
		d.guard.events.Add(1)
		d.event = replication.BinlogEvent{Header: &d.header, RawData: data}
		return &d.event, nil
	}
}

// checkedOnRead reports whether the receiver leaves an event's checksum to
// the relay log's reader: row events and table maps, most of a busy
// stream's bytes, which the receiver stores as they came without looking
// past their header. The reader checks every event's checksum (the
// source's own, kept in the segment) before it decodes it, and a mismatch
// there, damage on the wire or on the disk, is fetched again from the
// source (apply's sessions); so each byte is checked once before it is
// applied, not twice. The events the receiver reads (GTIDs, statements,
// commits, rotates, heartbeats) are checked here, before it acts on them.
func checkedOnRead(t replication.EventType) bool {
	switch t {
	case replication.TABLE_MAP_EVENT,
		replication.WRITE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv0,
		replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
		replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

// close ends the dump.
func (d *dumpStream) close() {
	d.stop()
	d.conn.Close()
}

// dumpConn keeps a silent source from holding the receiver for ever, in
// place of the binlog library's read timeout, which reads the clock and moves
// the socket's deadline for every packet (a tenth of gapless's CPU on a busy
// stream). Here the deadline moves once per heartbeat period, while events
// arrive or the receiver is busy with those it has: a source that sends
// neither an event nor a heartbeat for timeout (less one period) while the
// receiver waits ends the read with a timeout, and the receiver
// reconnects. The login and the dump request are bounded by timeout too.
type dumpConn struct {
	timeout time.Duration
	events  atomic.Uint64 // events received
	waiting atomic.Bool   // the receiver waits for the next event

	mu   sync.Mutex
	conn net.Conn // the dump connection: the first one dialed

	// beforeRead runs before each read from the socket (when the packets
	// already read are used up), on the reading goroutine; an error it
	// returns fails the read and stays in flushErr. nil: nothing runs.
	beforeRead func() error
	flushErr   error
}

// hookedConn is the dump connection as the MySQL client reads it: each
// read from the socket first runs the dumpConn's beforeRead.
type hookedConn struct {
	net.Conn
	d *dumpConn
}

func (c hookedConn) Read(p []byte) (int, error) {
	if c.d.beforeRead != nil && c.d.flushErr == nil {
		if err := c.d.beforeRead(); err != nil {
			c.d.flushErr = err
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

// dialer dials the source, with a deadline of timeout on everything until
// watch takes over.
func (d *dumpConn) dialer(dialTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := (&net.Dialer{Timeout: dialTimeout}).DialContext
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn.SetDeadline(time.Now().Add(d.timeout))
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.conn != nil {
			return conn, nil
		}
		d.conn = conn
		return hookedConn{Conn: conn, d: d}, nil
	}
}

// watch moves the dump connection's read deadline every period until the
// returned function is called.
func (d *dumpConn) watch(period time.Duration) (stop func()) {
	d.mu.Lock()
	conn := d.conn
	d.mu.Unlock()
	if conn == nil {
		return func() {}
	}
	conn.SetWriteDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		seen := d.events.Load()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if n := d.events.Load(); n != seen || !d.waiting.Load() {
				seen = n
				conn.SetReadDeadline(time.Now().Add(d.timeout))
			}
		}
	}()
	return func() { close(done) }
}
