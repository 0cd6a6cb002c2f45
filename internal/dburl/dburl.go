// Package dburl turns the server URLs gapless accepts on its command line
// (mysql://user:password@host:port?param=value) into go-sql-driver
// connections, and turns connection failures into messages a DBA can act on.
//
// Invariant: no error or redacted form produced here contains the password.
package dburl

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"gapless/internal/sqltext"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultPort is used when the URL names no port.
const DefaultPort = 3306

// PingTimeout bounds how long Open waits for the server to answer when the
// URL sets no timeout; ?timeout= replaces it (Config.ConnectTimeout).
const PingTimeout = 5 * time.Second

const urlShape = "mysql://user:password@host:port"

// Config is a parsed server URL.
type Config struct {
	User     string
	Password string
	Host     string
	Port     int
	// Params are the URL's query parameters, passed on to the driver as DSN
	// parameters (for example tls=true or a session variable).
	Params map[string]string
	// Nodes, for a URL that names several nodes of a cluster, says which
	// one connections go to (nodes.go); Host and Port are the first. Nil
	// for one server. Copies of a Config share it.
	Nodes *Nodes
}

// Parse reads a server URL of the form mysql://user:password@host:port. The
// password may be empty or absent; special characters in it must be
// percent-encoded. The scheme mariadb:// is accepted as a synonym.
func Parse(raw string) (Config, error) {
	if raw == "" {
		return Config{}, fmt.Errorf("empty server URL: want %s", urlShape)
	}
	if !strings.Contains(raw, "://") {
		return Config{}, fmt.Errorf("server URL has no scheme: want %s", urlShape)
	}
	hosts, raw, several := splitNodes(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("malformed server URL: want %s, with special characters in the password percent-encoded (/ as %%2F, @ as %%40, # as %%23)", urlShape)
	}
	switch u.Scheme {
	case "mysql", "mariadb":
	default:
		return Config{}, fmt.Errorf("unknown URL scheme %q: want %s", u.Scheme, urlShape)
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return Config{}, fmt.Errorf("server URL contains '#': percent-encode it as %%23 if it is part of the password")
	}
	if u.Path != "" && u.Path != "/" {
		return Config{}, fmt.Errorf("server URL has a path after host:port: want %s (percent-encode a / in the password as %%2F)", urlShape)
	}
	cfg := Config{Host: u.Hostname(), Port: DefaultPort}
	if cfg.Host == "" {
		return Config{}, fmt.Errorf("server URL has no host: want %s", urlShape)
	}
	if p := u.Port(); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil || port < 1 || port > 65535 {
			return Config{}, fmt.Errorf("bad port %q in server URL: want a number from 1 to 65535", p)
		}
		cfg.Port = port
	} else if strings.HasSuffix(u.Host, ":") {
		return Config{}, fmt.Errorf("empty port in server URL: want %s", urlShape)
	}
	if u.User == nil || u.User.Username() == "" {
		return Config{}, fmt.Errorf("server URL has no user name: want %s", urlShape)
	}
	cfg.User = u.User.Username()
	cfg.Password, _ = u.User.Password()
	if several {
		if cfg.Nodes, err = parseNodes(hosts); err != nil {
			return Config{}, err
		}
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Config{}, fmt.Errorf("bad parameters in server URL: %v", err)
	}
	if len(query) > 0 {
		cfg.Params = make(map[string]string, len(query))
		for key, values := range query {
			if err := checkParam(key, values[len(values)-1]); err != nil {
				return Config{}, err
			}
			cfg.Params[key] = values[len(values)-1]
		}
	}
	if file, ok := cfg.Params[PasswordFileParam]; ok {
		if _, inURL := u.User.Password(); inURL {
			return Config{}, fmt.Errorf("server URL has both a password and ?%s=: give one", PasswordFileParam)
		}
		if cfg.Password, err = ReadPasswordFile(file); err != nil {
			return Config{}, err
		}
		delete(cfg.Params, PasswordFileParam)
		if len(cfg.Params) == 0 {
			cfg.Params = nil
		}
	}
	return cfg, nil
}

// OwnParams are the URL parameters gapless reads itself; every other
// parameter is a session variable of the server (SessionVariable).
var OwnParams = []string{PasswordFileParam, "tls", "timeout"}

// SessionVariable is the shape of a URL parameter that sets a session
// variable on each of gapless's connections to that server
// (?innodb_lock_wait_timeout=20): a server variable's name, lower case.
// The server refuses a name it does not know when gapless connects.
var SessionVariable = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// driverParams are the go-sql-driver parameters whose names look like a
// session variable's: refused, so that none is taken for one.
var driverParams = []string{"charset", "collation", "loc", "compress"}

// checkParam refuses a URL parameter that is neither one of gapless's nor
// a session variable, and a value that would end the SET statement.
func checkParam(key, value string) error {
	switch {
	case slices.Contains(OwnParams, key):
		return nil
	case !SessionVariable.MatchString(key) || slices.Contains(driverParams, key):
		return fmt.Errorf("URL parameter %q: want %s, or a session variable of the server in lower case (?innodb_lock_wait_timeout=20)", key, strings.Join(OwnParams, ", "))
	case value == "" || strings.ContainsAny(value, ";\n"):
		return fmt.Errorf("URL parameter %s=%q: want a value for SET SESSION %s (a number, a word, or a 'quoted' string)", key, value, key)
	}
	return nil
}

// URL is the configuration as a server URL, password included: for handing
// a resolved configuration to code that takes URLs, never for printing.
func (c Config) URL() string {
	u := url.URL{Scheme: "mysql", Host: c.hosts()}
	if c.Password != "" {
		u.User = url.UserPassword(c.User, c.Password)
	} else {
		u.User = url.User(c.User)
	}
	if len(c.Params) > 0 {
		q := url.Values{}
		for k, v := range c.Params {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// TLS is the TLS setting of the URL's tls parameter for connections that
// gapless makes itself (apply connections, the binlog dump): nil for none
// ("false" or absent); "true" verifies the server's certificate against the
// system's roots and the host name; "skip-verify" and "preferred" encrypt
// without verifying.
func (c Config) TLS() (*tls.Config, error) {
	switch v := c.Params["tls"]; v {
	case "", "false":
		return nil, nil
	case "true":
		return &tls.Config{ServerName: c.Host}, nil
	case "skip-verify", "preferred":
		return &tls.Config{InsecureSkipVerify: true}, nil
	default:
		return nil, fmt.Errorf("URL parameter tls=%s: want true, skip-verify, preferred or false", v)
	}
}

// Timeout is the URL's timeout parameter (for connecting), or def.
func (c Config) Timeout(def time.Duration) (time.Duration, error) {
	v, ok := c.Params["timeout"]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("URL parameter timeout=%s: want a duration such as 10s", v)
	}
	return d, nil
}

// ConnectTimeout is how long connecting may take: the URL's timeout, else
// PingTimeout (a bad timeout is refused earlier, by Open).
func (c Config) ConnectTimeout() time.Duration {
	d, err := c.Timeout(PingTimeout)
	if err != nil {
		return PingTimeout
	}
	return d
}

// Addr is host:port, bracketing IPv6 hosts: the first node of a list.
func (c Config) Addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// DialAddr is where a new connection goes: the current node of a list,
// else Addr.
func (c Config) DialAddr() string {
	if c.Nodes != nil {
		return c.Nodes.Current()
	}
	return c.Addr()
}

// hosts is the URL's host part: Addr, or every node of a list.
func (c Config) hosts() string {
	if c.Nodes != nil {
		return strings.Join(c.Nodes.addrs, ",")
	}
	return c.Addr()
}

// sqlMode is the sql_mode of the pools' connections: what they run (its
// tables, the positions, the comparisons of verify) must read the same
// whatever the server's global sql_mode is.
const sqlMode = sqltext.SQLMode

// DSN is a go-sql-driver data source name for database db (may be empty) over
// TCP. params are added to the URL's own parameters and win over them; the
// session's sql_mode is gapless's own (sqltext.SQLMode) unless one of them
// sets it.
func (c Config) DSN(db string, params map[string]string) string {
	dc := mysql.NewConfig()
	dc.User = c.User
	dc.Passwd = c.Password
	dc.Net = "tcp"
	dc.Addr = c.Addr()
	dc.DBName = db
	dc.Params = make(map[string]string, len(c.Params)+len(params)+1)
	dc.Params["sql_mode"] = sqlMode
	// Never cut for idleness, as a replica's threads are not (the target's
	// wait_timeout may be short).
	dc.Params["wait_timeout"] = "31536000"
	// Nor bound in time (verify reads whole tables).
	dc.Params["max_statement_time"] = "0"
	// Each statement its own transaction unless gapless begins one: a
	// server whose global autocommit is 0 would leave gapless's writes
	// uncommitted.
	dc.Params["autocommit"] = "1"
	if c.Nodes != nil {
		// Every connection opens on the list's current node; its reads
		// wait until the node has applied what the cluster certified
		// before them, so that a position read after a move is the
		// cluster's, not one the node has yet to catch up to.
		dc.Net = c.Nodes.network(c.ConnectTimeout())
		dc.Addr = c.Addr() // not dialled (the network's dialer picks the node); TLS verifies this name
		dc.Params["wsrep_sync_wait"] = "1"
	}
	for k, v := range c.Params {
		dc.Params[k] = v
	}
	for k, v := range params {
		dc.Params[k] = v
	}
	return dc.FormatDSN()
}

// Redacted is the URL with the password replaced by ***, fit for logs.
func (c Config) Redacted() string {
	var b strings.Builder
	b.WriteString("mysql://")
	b.WriteString(url.User(c.User).String())
	if c.Password != "" {
		b.WriteString(":***")
	}
	b.WriteString("@")
	b.WriteString(c.hosts())
	if len(c.Params) > 0 {
		q := url.Values{}
		for k, v := range c.Params {
			q.Set(k, v)
		}
		b.WriteString("?")
		b.WriteString(q.Encode())
	}
	return b.String()
}

// Open parses url, opens a connection pool with the extra driver params and
// checks within the URL's timeout (PingTimeout without one) that the server
// accepts the credentials.
func Open(url string, params map[string]string) (*sql.DB, Config, error) {
	cfg, err := Parse(url)
	if err != nil {
		return nil, Config{}, err
	}
	limit, err := cfg.Timeout(PingTimeout)
	if err != nil {
		return nil, Config{}, err
	}
	db, err := cfg.openPool(params)
	if err != nil {
		return nil, Config{}, fmt.Errorf("bad driver parameters for %s: %v", cfg.Addr(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if requiresTLS(ctx, err, cfg, params) {
			return nil, Config{}, fmt.Errorf("%s refused user '%s' over an unencrypted connection and accepts it over TLS (require_secure_transport, or REQUIRE SSL): add ?tls=true to the URL (or tls=skip-verify, which does not check the server's certificate)", cfg.Addr(), cfg.User)
		}
		return nil, Config{}, Explain(err, cfg)
	}
	return db, cfg, nil
}

// OpenNode opens a pool to one node, addr (host:port), of a URL's node
// list, whichever node the list names current; nothing is checked until
// it is used.
func (c Config) OpenNode(addr string) (*sql.DB, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	one := c
	one.Nodes = nil
	one.Host = host
	if one.Port, err = strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("bad port in node %s: %w", addr, err)
	}
	return one.openPool(nil)
}

// openPool opens the pool of cfg's server, or, for a node list, of the
// current node (connector).
func (c Config) openPool(params map[string]string) (*sql.DB, error) {
	if c.Nodes == nil {
		return sql.Open("mysql", c.DSN("", params))
	}
	dc, err := mysql.ParseDSN(c.DSN("", params))
	if err != nil {
		return nil, err
	}
	inner, err := mysql.NewConnector(dc)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector{inner: inner, nodes: c.Nodes}), nil
}

// requiresTLS reports whether an access denied without TLS is the server's
// demand for an encrypted connection: MariaDB answers both with error 1045.
// It tries once more over TLS, without checking the certificate.
func requiresTLS(ctx context.Context, err error, cfg Config, params map[string]string) bool {
	var myErr *mysql.MySQLError
	if _, set := cfg.Params["tls"]; set || !errors.As(err, &myErr) || myErr.Number != 1045 {
		return false
	}
	withTLS := maps.Clone(params)
	if withTLS == nil {
		withTLS = map[string]string{}
	}
	withTLS["tls"] = "skip-verify"
	db, err := sql.Open("mysql", cfg.DSN("", withTLS))
	if err != nil {
		return false
	}
	defer db.Close()
	return db.PingContext(ctx) == nil
}

// Explain rewrites a driver error from connecting to cfg's server as a
// sentence naming the server and the likely cause.
func Explain(err error, cfg Config) error {
	addr := cfg.Addr()
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1045:
			return fmt.Errorf("access denied for user '%s' on %s (wrong password?)", cfg.User, addr)
		case 1044:
			return fmt.Errorf("access denied for user '%s' on %s: %s", cfg.User, addr, myErr.Message)
		case 1130:
			return fmt.Errorf("%s does not let user '%s' connect from this host (MySQL error 1130); check the user's host part", addr, cfg.User)
		case 1040:
			return fmt.Errorf("%s refused the connection: too many connections", addr)
		default:
			return fmt.Errorf("%s refused the connection: %s (MySQL error %d)", addr, myErr.Message, myErr.Number)
		}
	}
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach %s: connection refused (is the server running and listening on that port?)", addr)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("cannot reach %s: unknown host %q", addr, cfg.Host)
	case errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Errorf("cannot reach %s: no route to host", addr)
	case errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("cannot reach %s: network unreachable", addr)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return fmt.Errorf("cannot reach %s: no answer within %s (the URL's ?timeout=, default %s)", addr, cfg.ConnectTimeout(), PingTimeout)
	case errors.Is(err, mysql.ErrInvalidConn):
		return fmt.Errorf("cannot connect to %s: the server closed the connection during login (is it a MariaDB/MySQL server, does it require TLS?)", addr)
	}
	return fmt.Errorf("cannot connect to %s: %v", addr, err)
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
