// nodes.go owns a server URL that names several nodes of one cluster
// (mysql://user:password@host1:3306,host2:3306,host3:3306): where gapless
// connects now, and the move to the next node when that one fails.
//
// Every connection of a run to that side opens on the node the list names
// current: the pool's (through a dialer registered with the driver) and
// gapless's own apply and binlog connections (DialAddr). A node is left
// only when something says it failed (Failed): it refused a connection, or
// it answered that it cannot take writes (a Galera node out of the primary
// component). Nothing here decides where the applied position is: that is
// read on the new node, as after any reconnect.
package dburl

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Nodes is the node list of a URL that names several. Safe for concurrent use.
type Nodes struct {
	addrs []string // host:port, in the URL's order

	mu       sync.Mutex
	current  int      // index in addrs of the node connections go to
	switches int      // moves from one node to another
	left     []string // the node each move left, in order (len switches)
	// onSwitch, when set, hears each move (from, to, why).
	onSwitch func(from, to, why string)

	netName string // the driver's network name for the pool's dialer ("" until DSN)
}

var nodesRegistered atomic.Int64

// splitNodes returns the hosts of a URL's authority that names several
// (host1:3306,host2:3306), and the authority with the first of them alone;
// nil when it names one.
func splitNodes(raw string) (hosts []string, first string, ok bool) {
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return nil, raw, false
	}
	rest := raw[scheme+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	at := strings.LastIndex(authority, "@")
	hostPart := authority[at+1:]
	if !strings.Contains(hostPart, ",") {
		return nil, raw, false
	}
	hosts = strings.Split(hostPart, ",")
	return hosts, raw[:scheme+3] + authority[:at+1] + hosts[0] + rest[end:], true
}

// parseNodes checks each host[:port] of a node list and returns them as host:port.
func parseNodes(hosts []string) (*Nodes, error) {
	n := &Nodes{}
	seen := map[string]bool{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("server URL names an empty node in its list: want %s,host2:port2,...", urlShape)
		}
		host, port := h, strconv.Itoa(DefaultPort)
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			host, port = hh, pp
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("bad port %q of node %s in server URL: want a number from 1 to 65535", port, h)
		}
		addr := net.JoinHostPort(host, port)
		if seen[addr] {
			return nil, fmt.Errorf("server URL names node %s twice", addr)
		}
		seen[addr] = true
		n.addrs = append(n.addrs, addr)
	}
	return n, nil
}

// Addrs are the nodes, in the URL's order.
func (n *Nodes) Addrs() []string { return append([]string(nil), n.addrs...) }

// Current is the node connections go to now.
func (n *Nodes) Current() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addrs[n.current]
}

// Switches is how many times the connections moved to another node.
func (n *Nodes) Switches() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.switches
}

// Left are the nodes the moves after the first since left, in order, each
// once.
func (n *Nodes) Left(since int) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, addr := range n.left[min(max(since, 0), len(n.left)):] {
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	return out
}

// OnSwitch has f hear each move to another node.
func (n *Nodes) OnSwitch(f func(from, to, why string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onSwitch = f
}

// Failed says that addr failed, for why: when it is the current node, the
// next one in the list becomes current. A failure of a node already left
// changes nothing, so many connections that see one node die move once.
func (n *Nodes) Failed(addr, why string) {
	n.mu.Lock()
	if n.addrs[n.current] != addr {
		n.mu.Unlock()
		return
	}
	from := addr
	n.current = (n.current + 1) % len(n.addrs)
	n.switches++
	n.left = append(n.left, from)
	to, f := n.addrs[n.current], n.onSwitch
	n.mu.Unlock()
	if f != nil {
		f(from, to, why)
	}
}

// dial opens a TCP connection to the current node, moving on to the next
// when it refuses, once round the list.
func (n *Nodes) dial(ctx context.Context, timeout time.Duration) (net.Conn, error) {
	var last error
	for range n.addrs {
		addr := n.Current()
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		last = err
		n.Failed(addr, err.Error())
	}
	return nil, last
}

// network registers, once, the driver network through which the pool of
// a URL with a node list connects, and returns its name.
func (n *Nodes) network(timeout time.Duration) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.netName == "" {
		n.netName = fmt.Sprintf("gapless-nodes-%d", nodesRegistered.Add(1))
		mysql.RegisterDialContext(n.netName, func(ctx context.Context, _ string) (net.Conn, error) {
			return n.dial(ctx, timeout)
		})
	}
	return n.netName
}

// connector opens the pool's connections of a URL with a node list: each
// on the current node, and each valid only while that node stays current,
// so that the pool drops, rather than hands out again, a connection to a
// node left behind (one out of the primary component still answers).
type connector struct {
	inner driver.Connector
	nodes *Nodes
}

func (c connector) Driver() driver.Driver { return c.inner.Driver() }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	for range len(c.nodes.addrs) + 1 {
		addr := c.nodes.Current()
		conn, err := c.inner.Connect(ctx)
		if err != nil {
			return nil, err
		}
		if c.nodes.Current() == addr {
			return &nodeConn{conn: conn, addr: addr, nodes: c.nodes}, nil
		}
		conn.Close() // the dial moved on while it connected: the address is not known
	}
	return nil, fmt.Errorf("%w: the target's nodes kept failing while connecting", driver.ErrBadConn)
}

// nodeConn is a pool connection to one node of a list. It passes every
// call on to the driver's connection.
type nodeConn struct {
	conn  driver.Conn
	addr  string
	nodes *Nodes
}

var (
	_ driver.Conn               = (*nodeConn)(nil)
	_ driver.ConnBeginTx        = (*nodeConn)(nil)
	_ driver.ConnPrepareContext = (*nodeConn)(nil)
	_ driver.ExecerContext      = (*nodeConn)(nil)
	_ driver.QueryerContext     = (*nodeConn)(nil)
	_ driver.Pinger             = (*nodeConn)(nil)
	_ driver.SessionResetter    = (*nodeConn)(nil)
	_ driver.Validator          = (*nodeConn)(nil)
	_ driver.NamedValueChecker  = (*nodeConn)(nil)
)

func (c *nodeConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }
func (c *nodeConn) Close() error                              { return c.conn.Close() }

// Begin is driver.Conn's; database/sql calls BeginTx.
func (c *nodeConn) Begin() (driver.Tx, error) { return c.conn.Begin() } //nolint:staticcheck

func (c *nodeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *nodeConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *nodeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *nodeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *nodeConn) Ping(ctx context.Context) error { return c.conn.(driver.Pinger).Ping(ctx) }

func (c *nodeConn) ResetSession(ctx context.Context) error {
	if c.addr != c.nodes.Current() {
		return driver.ErrBadConn
	}
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *nodeConn) IsValid() bool {
	if c.addr != c.nodes.Current() {
		return false
	}
	v, ok := c.conn.(driver.Validator)
	return !ok || v.IsValid()
}

func (c *nodeConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
