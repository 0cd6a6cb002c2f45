// receiver.go attaches to the source as a replica and writes what it receives
// to the relay log, whole groups only. It resumes from the relay log's end
// after every disconnect, so a group is received once however often the
// connection drops; errors the source answers with (privileges, purged
// binlogs) and failed relay log writes end it, a lost connection or a source
// shutting down only makes it reconnect.
package binlog

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/gtid"
)

// ReceiverConfig says where the source is and how to attach to it.
type ReceiverConfig struct {
	Host     string
	Port     uint16
	User     string
	Password string
	// ServerID is the replica server id gapless presents to the source; it
	// must differ from every server id in the topology.
	ServerID  uint32
	Heartbeat time.Duration // default 1 s
	// TLS encrypts the dump connection when set (the source URL's tls).
	TLS *tls.Config
	// DialTimeout bounds connecting to the source (the source URL's
	// timeout); 0: the binlog library's 10 s.
	DialTimeout time.Duration
	Logger      *slog.Logger
	// Skip names the groups the user passes (--skip-gtid): one whose
	// sequence number goes back in its domain (outOfOrder) is left out of
	// the relay log instead of stopping the run. nil: none.
	Skip func(gtid.MariaDBGTID) bool
	// Nodes, when the source URL names several nodes of a cluster whose
	// nodes write the same GTIDs, is where the dump connects now (Host and
	// Port are the first node): a node that fails, or cannot serve the
	// position, is left for the next. Nil: Host and Port alone.
	Nodes SourceNodes
}

// SourceNodes is a list of nodes of one cluster, one of them current
// (dburl.Nodes).
type SourceNodes interface {
	Current() string
	Failed(addr, why string)
	Addrs() []string
}

// Receiver copies the source's binlog into a relay log.
type Receiver struct {
	cfg   ReceiverConfig
	relay *RelayLog

	received   atomic.Int64 // groups appended since start
	lastSource atomic.Int64 // unix seconds of the newest group received
	connected  atomic.Bool
	// downSince is when the source stopped answering (Unix ns): the first
	// failed session since the last one that received an event; 0 while
	// a dump runs or before the first attempt fails.
	downSince atomic.Int64
	// lastGroupAt is when the dump last brought a whole group (Unix ns).
	lastGroupAt atomic.Int64
	// fullSince is when the relay folder's filesystem became full (Unix
	// ns), while the receiver waits for space; 0 otherwise.
	fullSince atomic.Int64
	// fullLogged is when the log last said the folder is full (Run's alone).
	fullLogged time.Time
	// clockOffset is how far the local clock runs ahead of the source's
	// (ns), measured at each connection (dump.go measureClock).
	clockOffset atomic.Int64
	// sourceWritten is the source's @@gtid_binlog_pos as the last
	// connection read it (dump.go checkContinues; the session's alone):
	// how classify tells a target ahead of its source.
	sourceWritten gtid.MariaDBPosition
}

// NewReceiver returns a receiver that appends to relay.
func NewReceiver(cfg ReceiverConfig, relay *RelayLog) *Receiver {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Receiver{cfg: cfg, relay: relay}
}

// Received is the number of groups received since start.
func (r *Receiver) Received() int64 { return r.received.Load() }

// Connected reports whether a binlog dump is running now.
func (r *Receiver) Connected() bool { return r.connected.Load() }

// ClockOffset is how far the local clock runs ahead of the source's, as
// measured when the receiver last connected (0 before): the source's
// timestamps plus it are on the local clock, as MariaDB's replica corrects
// Seconds_Behind_Master by the difference it reads at connect.
func (r *Receiver) ClockOffset() time.Duration { return time.Duration(r.clockOffset.Load()) }

// DownSince is when the source stopped answering, for as long as the
// receiver has not reached it again; the zero time while it answers.
func (r *Receiver) DownSince() time.Time {
	if ns := r.downSince.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// SourceError is an error the source answered with; reconnecting will not help.
type SourceError struct {
	Code    uint16 // the source's error number
	Message string // the source's error text
	Problem string // what is wrong, in gapless's words; "" to show the source's text alone
	Hint    string // what to do about it
	// Drain: the groups received before it are applied before the run
	// stops (the stop is at a point of the source's binlog).
	Drain bool
}

func (e *SourceError) Error() string {
	source := fmt.Sprintf("error %d: %s", e.Code, e.Message)
	if e.Problem == "" {
		msg := "source refused the binlog dump (" + source + ")"
		if e.Hint != "" {
			msg += "; " + e.Hint
		}
		return msg
	}
	msg := e.Problem
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	if e.Code == 0 && e.Message == "" {
		return msg // gapless's own finding, not the source's answer
	}
	return msg + " (source " + source + ")"
}

// streamError is a source's binlog that gapless cannot cut into whole
// groups; reconnecting would read the same events again.
type streamError struct{ err error }

func (e *streamError) Error() string {
	return "the source's binlog is not one gapless can apply: " + e.err.Error() +
		"; reading it again would meet the same, so the run stops: report it as a gapless bug with the source's binlog around that position"
}
func (e *streamError) Unwrap() error { return e.err }

// relayError is a relay log write that failed; reconnecting will not help.
type relayError struct{ err error }

func (e *relayError) Error() string {
	if e.full() {
		return e.err.Error() + "; the relay folder's filesystem is full: free space there (gapless removes applied segments as it goes; a smaller --relay-segment-size frees them sooner), or give a --relay-dir with room, then run again: what the target applied stays, and the rest is fetched again from the source"
	}
	return e.err.Error()
}
func (e *relayError) Unwrap() error { return e.err }

// full reports whether the write failed for want of space.
func (e *relayError) full() bool {
	return errors.Is(e.err, syscall.ENOSPC) || errors.Is(e.err, syscall.EDQUOT)
}

const (
	// relayFullRetry is how often the receiver tries again while the
	// relay folder's filesystem is full.
	relayFullRetry = 5 * time.Second
	// relayFullLogEvery is how often at most the log says it is full.
	relayFullLogEvery = time.Minute
)

// RelayFullSince is when the relay folder's filesystem became full, while
// the receiver waits for space; the zero time otherwise.
func (r *Receiver) RelayFullSince() time.Time {
	if ns := r.fullSince.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Run receives until ctx ends or the source refuses to serve; it returns nil when ctx ends.
// A lost connection is logged once as a warning; the attempts to reconnect
// that fail after it, only at info level.
func (r *Receiver) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	lost := false
	refused := 0 // nodes of a list that could not serve the position, in a row
	for {
		start := time.Now()
		addr := r.addr()
		err := r.session(ctx)
		wasConnected := r.connected.Swap(false)
		if ctx.Err() != nil {
			return nil
		}
		var se *SourceError
		var re *relayError
		var st *streamError
		if errors.As(err, &re) && re.full() && r.relay.Usable() == nil {
			// As MariaDB's IO thread does: wait for space, which the
			// workers free too as they apply (applied segments go).
			if r.fullSince.CompareAndSwap(0, time.Now().UnixNano()) && time.Since(r.fullLogged) >= relayFullLogEvery {
				// Once a minute at most: a folder on the edge fills and
				// empties (applied segments go) every few seconds.
				r.fullLogged = time.Now()
				r.cfg.Logger.Warn("the relay folder's filesystem is full; receiving waits for space, applying goes on with what was received (gapless removes applied segments; free space there, or stop and give a --relay-dir with room)",
					"error", re.err.Error())
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(relayFullRetry):
			}
			continue
		}
		if wasConnected {
			refused = 0
		}
		if errors.As(err, &se) && r.nextNode(addr, err, &refused, true) {
			continue
		}
		if errors.As(err, &se) || errors.As(err, &re) || errors.As(err, &st) {
			return err
		}
		if r.cfg.Nodes != nil && !wasConnected {
			r.nextNode(addr, err, &refused, false)
		}
		if time.Since(start) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		if wasConnected {
			lost = false
		}
		r.downSince.CompareAndSwap(0, time.Now().UnixNano())
		if !lost {
			r.cfg.Logger.Warn("source connection lost; reconnecting", "source", r.addr(), "error", err.Error())
			lost = true
		} else {
			r.cfg.Logger.Info("source not back yet; retrying", "source", r.addr(), "error", err.Error(), "in", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (r *Receiver) addr() string {
	if r.cfg.Nodes != nil {
		return r.cfg.Nodes.Current()
	}
	return net.JoinHostPort(r.cfg.Host, strconv.Itoa(int(r.cfg.Port)))
}

// nextNode leaves the node the dump failed on for the next of the list,
// and says whether there is another to try: a node list not yet gone
// round since the last dump that received an event. refused counts the
// nodes that could not serve the position since then.
func (r *Receiver) nextNode(addr string, err error, refused *int, fatal bool) bool {
	if r.cfg.Nodes == nil {
		return false
	}
	if fatal {
		*refused++
		if *refused >= len(r.cfg.Nodes.Addrs()) {
			return false
		}
		r.cfg.Logger.Warn("source node cannot serve the position; reading from the next node", "source", addr, "error", err.Error())
	}
	r.cfg.Nodes.Failed(addr, err.Error())
	return true
}

// session runs one binlog dump, from the relay log's end, until it fails.
func (r *Receiver) session(ctx context.Context) (err error) {
	from := r.relay.End()
	d, loggedIn, err := r.openDump(ctx, from)
	if err != nil {
		return r.classify(err, from, loggedIn)
	}
	defer d.close()
	// Events are buffered (relay.AddEvent) while the source's bytes are at
	// hand, and written before the dump reads the socket again, which may
	// wait: a busy stream costs a write per read, not per group. A group the
	// connection loses midway is cut off again.
	d.guard.beforeRead = r.relay.Flush
	defer func() {
		if ferr := errors.Join(r.relay.AbandonGroup(), r.relay.Flush()); ferr != nil && ctx.Err() == nil {
			err = &relayError{ferr}
		}
	}()
	stopWatch := d.guard.watch(r.cfg.Heartbeat)
	defer stopWatch()
	var back atomic.Pointer[SourceError]
	r.lastGroupAt.Store(time.Now().UnixNano())
	stopBack := r.watchBack(ctx, d, &back)
	defer stopBack()
	s := &sessionEvents{r: r, cutter: newCutter()}
	for {
		ev, err := d.next()
		if err != nil {
			if ferr := d.guard.flushErr; ferr != nil {
				return &relayError{ferr}
			}
			if b := back.Load(); b != nil {
				return b
			}
			return r.classify(err, from, true)
		}
		r.connected.Store(true)
		r.downSince.Store(0)
		if ev, err = s.cutter.decode(ev); err != nil {
			return err
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			err = s.format(ev)
		} else {
			err = s.event(ev)
		}
		if err != nil {
			return err
		}
	}
}

// sessionEvents is what a dump session keeps between the events it puts
// in the relay log: the format description in force, where the open group
// is (groups, current), and whether it is left out (dropping: goesBack,
// --skip-gtid).
type sessionEvents struct {
	r        *Receiver
	cutter   *cutter
	fde      []byte
	groups   groupTracker
	current  gtid.MariaDBGTID
	dropping bool
}

// format takes a format description event. One with its creation time
// set begins the first binlog the source wrote after it started (the
// description a source sends first has none, unless the replica starts at
// the beginning of that binlog): it goes in the relay log even when the
// one before was the same, in the same second, so that the decoder learns
// of the start (Transaction.SourceStarts).
func (s *sessionEvents) format(ev *replication.BinlogEvent) error {
	r := s.r
	if s.fde != nil && sameFormat(s.fde, ev.RawData) && !sourceStarted(ev) {
		return nil
	}
	if s.groups.open() {
		if !sourceStarted(ev) {
			return &streamError{fmt.Errorf("a format description event inside group %s", s.current)}
		}
		// The source's binlog ends amid the group, and the source
		// started after it: it crashed while writing the group, and its
		// crash recovery rolled the transaction back (its XID is not in
		// the binlog).
		r.cfg.Logger.Warn("the source's binlog holds only the first events of a group, cut off where the source restarted; "+
			"the source rolled it back as it started, and gapless does not apply it either, as MariaDB's replica does not",
			"gtid", s.current.String())
		if err := r.relay.AbandonGroup(); err != nil {
			return &relayError{err}
		}
		s.groups = groupTracker{}
	}
	s.fde = bytes.Clone(ev.RawData)
	if err := r.relay.BeginSession(s.fde); err != nil {
		return &relayError{err}
	}
	return nil
}

// event takes any other event: a control event (an incident stops the
// decoder there), an event inside a group, or the one that completes it.
func (s *sessionEvents) event(ev *replication.BinlogEvent) error {
	r := s.r
	cut, err := s.groups.add(ev)
	if err != nil {
		return &streamError{err}
	}
	switch cut {
	case cutControl:
		if ev.Header.EventType == replication.INCIDENT_EVENT {
			// The decoder stops there, once all before it is applied.
			if err := r.relay.AddControl(ev.RawData); err != nil {
				return &relayError{err}
			}
		}
	case cutInside:
		if g, ok := ev.Event.(*replication.MariadbGTIDEvent); ok {
			s.current = mariaDBGTID(g)
			if last, back := r.goesBack(s.current); back {
				if r.cfg.Skip == nil || !r.cfg.Skip(s.current) {
					return outOfOrder(s.current, last)
				}
				r.cfg.Logger.Warn("leaving out, as --skip-gtid says, a group whose sequence number goes back in its domain", "gtid", s.current.String(), "after", last.String())
				s.dropping = true
			}
		}
		if s.dropping {
			return nil
		}
		if err := r.relay.AddEvent(ev.RawData); err != nil {
			return &relayError{err}
		}
	case cutComplete:
		if s.dropping {
			s.dropping = false
			return nil
		}
		return s.complete(ev)
	}
	return nil
}

// complete puts the event that completes the open group in the relay log,
// ends the group there, and counts it.
func (s *sessionEvents) complete(ev *replication.BinlogEvent) error {
	r := s.r
	if err := r.relay.AddEvent(ev.RawData); err != nil {
		return &relayError{err}
	}
	if err := r.relay.EndGroup(s.current); err != nil {
		return &relayError{err}
	}
	r.received.Add(1)
	r.lastSource.Store(int64(ev.Header.Timestamp))
	r.lastGroupAt.Store(time.Now().UnixNano())
	if since := r.fullSince.Swap(0); since != 0 && time.Unix(0, since).Sub(r.fullLogged) < relayFullRetry {
		r.cfg.Logger.Warn("the relay folder has room again; receiving goes on", "waited", time.Since(time.Unix(0, since)).Round(time.Second).String())
	}
	return nil
}

// goesBack reports whether g's sequence number is not past the last group
// the relay log holds of its domain: the source's binlog goes back there
// (returned as last). A MariaDB source in gtid_strict_mode=OFF, its
// default, writes such a group when a session sets gtid_seq_no (as
// mariadb-binlog's output replayed into it does) or when two servers write
// one domain.
func (r *Receiver) goesBack(g gtid.MariaDBGTID) (last gtid.MariaDBGTID, back bool) {
	last, ok := r.relay.End().Get(g.Domain)
	return last, ok && g.Seq <= last.Seq
}

// outOfOrder is the stop for a group whose sequence number goes back in
// its domain. gapless keeps one position per domain, as a MariaDB replica
// in gtid_strict_mode does: it would take such a group for one applied
// already and pass it (silently, before this check), and a position that
// named it would be ambiguous to the source on the next connection.
func outOfOrder(g, last gtid.MariaDBGTID) error {
	return &SourceError{
		Problem: fmt.Sprintf("the source's binlog holds %s after %s: its sequence numbers go back in GTID domain %d (the source runs with gtid_strict_mode=OFF, its default, and a session set gtid_seq_no, as mariadb-binlog's output replayed into it does, or two servers write the domain); "+
			"gapless keeps one position per domain, as a MariaDB replica in gtid_strict_mode does, and cannot place such a group: nothing of it is applied, everything before it is", g, last, g.Domain),
		Hint:  fmt.Sprintf("apply its changes on the target by hand (with SET SESSION sql_log_bin=0) and replicate with --skip-gtid %s, or re-seed the target; SET GLOBAL gtid_strict_mode=ON on the source refuses such groups there", g),
		Drain: true,
	}
}

// cutter decodes the few events groupTracker reads (GTID and query events)
// of the dump (dump.go), which reads events without decoding them: the
// receiver keeps events as they came, and decoding the rest (table maps
// above all) only cost CPU. A MariaDB GTID event, one in every group, is
// decoded here into the one value kept for it (gtid): the parser would
// make a header, an event and the BinlogEvent around them for each.
type cutter struct {
	parser *replication.BinlogParser
	gtid   replication.MariadbGTIDEvent
}

func newCutter() *cutter {
	p := replication.NewBinlogParser()
	p.SetFlavor("mariadb")
	p.SetVerifyChecksum(false) // the dump checked it
	return &cutter{parser: p}
}

// decode returns ev decoded when groupTracker reads its content, as it is
// otherwise. A format description is read too: it says how to read the
// rest. A GTID event decoded comes back in ev itself, valid until the next
// call.
func (c *cutter) decode(ev *replication.BinlogEvent) (*replication.BinlogEvent, error) {
	switch ev.Header.EventType {
	case replication.MARIADB_GTID_EVENT:
		if c.gtidEvent(ev) {
			return ev, nil
		}
	case replication.FORMAT_DESCRIPTION_EVENT, replication.QUERY_EVENT, replication.MARIADB_QUERY_COMPRESSED_EVENT:
	default:
		return ev, nil
	}
	decoded, err := safeParse(c.parser, ev.RawData)
	if err != nil {
		return nil, fmt.Errorf("source event %s at source position %d: %w", ev.Header.EventType, ev.Header.LogPos, err)
	}
	return decoded, nil
}

// gtidEvent decodes ev, a MariaDB GTID event, as the parser does (seq_no,
// domain_id, flags, the commit id when its flag is set; the server id from
// the header), and reports false when its body is too short for that: the
// parser then says what is wrong with it.
func (c *cutter) gtidEvent(ev *replication.BinlogEvent) bool {
	body := ev.RawData[min(eventHeaderSize, len(ev.RawData)):]
	if !gtidBodyWhole(body) {
		return false
	}
	c.gtid = replication.MariadbGTIDEvent{}
	c.gtid.GTID.ServerID = ev.Header.ServerID
	if c.gtid.Decode(body) != nil {
		return false
	}
	ev.Event = &c.gtid
	return true
}

// sourceStarted reports whether a format description event has its
// creation time set.
func sourceStarted(ev *replication.BinlogEvent) bool {
	fde, ok := ev.Event.(*replication.FormatDescriptionEvent)
	return ok && fde.CreateTimestamp != 0
}

// sameFormat compares two format description events, ignoring the header
// (timestamp, position) and the checksum.
func sameFormat(a, b []byte) bool {
	if len(a) != len(b) || len(a) < eventHeaderSize+checksumSize {
		return false
	}
	return bytes.Equal(a[eventHeaderSize:len(a)-checksumSize], b[eventHeaderSize:len(b)-checksumSize])
}

// behind names the last GTIDs of the source's binlog, as the last
// connection read them, in the domains where it ends before from; "" when
// it ends before from in none.
func (r *Receiver) behind(from gtid.MariaDBPosition) string {
	var ends []string
	for _, d := range from.Domains() {
		f, _ := from.Get(d)
		if w, ok := r.sourceWritten.Get(d); ok && w.Seq < f.Seq {
			ends = append(ends, w.String())
		}
	}
	return strings.Join(ends, ",")
}

// erConnectionKilled is MariaDB's ER_CONNECTION_KILLED, which go-mysql does not name.
const erConnectionKilled = 1927

// accountInMessage finds 'user'@'host' in an access denied message.
var accountInMessage = regexp.MustCompile(`'[^']*'@'[^']*'`)

// classify turns errors the source answered with into a SourceError saying
// what is wrong and what to do; anything else (the network, a source shutting
// down or out of connections) stays retryable.
// loggedIn tells a refused login from a refused dump: the source answers both
// with error 1045 when the user lacks REPLICATION SLAVE.
func (r *Receiver) classify(err error, from gtid.MariaDBPosition, loggedIn bool) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return err
	}
	switch me.Code {
	case mysql.ER_SERVER_SHUTDOWN, erConnectionKilled, mysql.ER_QUERY_INTERRUPTED,
		mysql.ER_CON_COUNT_ERROR, mysql.ER_TOO_MANY_USER_CONNECTIONS:
		return err
	}
	se := &SourceError{Code: me.Code, Message: me.Message}
	addr := r.addr()
	lacksReplicationSlave := func() {
		se.Problem = fmt.Sprintf("source %s refused the binlog dump: user '%s' lacks the REPLICATION SLAVE privilege", addr, r.cfg.User)
		account := fmt.Sprintf("'%s'", r.cfg.User)
		if m := accountInMessage.FindString(me.Message); m != "" {
			account = m
		}
		se.Hint = "on the source, GRANT REPLICATION SLAVE ON *.* TO " + account
	}
	switch me.Code {
	case mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR:
		if loggedIn {
			lacksReplicationSlave()
		} else {
			se.Problem = fmt.Sprintf("source %s refused the login of user '%s'", addr, r.cfg.User)
			se.Hint = "check the user and password in --source"
		}
	case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR, mysql.ER_TABLEACCESS_DENIED_ERROR:
		lacksReplicationSlave()
	case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		position := "the target's position " + from.String()
		purged := "it has purged the binlogs after " + position
		if from.IsEmpty() {
			position = "the start of its history (the target has no position yet)"
			purged = "the target has no position yet, and the source has purged its first binlogs"
		}
		reseed := "re-seed the target from a backup of the source, then run again"
		msg := strings.ToLower(me.Message)
		switch {
		case strings.Contains(msg, "purged"):
			se.Problem = fmt.Sprintf("source %s no longer has the binlogs the target needs: %s", addr, purged)
			se.Hint = "re-seed the target from a backup of the source (mariadb-dump --gtid --master-data=2), clear its old position with `gapless reset --target URL [--stream NAME]`, and run again with --start-position set to the backup's GTID position (its gtid_slave_pos)"
		case strings.Contains(msg, "diverged"):
			se.Problem = fmt.Sprintf("source %s cannot continue from %s: the target holds transactions the source never wrote (after a failover: the old primary's last ones, which the promoted replica never got)", addr, position)
			se.Hint = "check that --source names the server the target was seeded from, or " + reseed
		case strings.Contains(msg, "gtid") && r.behind(from) != "":
			// The source's binlog ends before the position in one of its
			// domains and has not written past it (MariaDB says diverged
			// once it has): after a failover, a promoted replica that
			// lacks the old primary's last transactions.
			se.Problem = fmt.Sprintf("source %s cannot continue from %s: the target holds transactions the source never wrote (its binlog ends at %s; after a failover: the old primary's last ones, which the promoted replica never got)", addr, position, r.behind(from))
			se.Hint = "check that --source names the server the target was seeded from, or " + reseed
		case strings.Contains(msg, "gtid"):
			se.Problem = fmt.Sprintf("source %s cannot continue from %s", addr, position)
			se.Hint = "check that --source names the server the target was seeded from, or " + reseed
		}
	case mysql.ER_NO_BINARY_LOGGING:
		se.Problem = fmt.Sprintf("source %s has no binlog", addr)
		se.Hint = "start it with log_bin and binlog_format=ROW"
	}
	return se
}
