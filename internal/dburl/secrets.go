// secrets.go resolves a server's connection settings from every place a
// password may be kept without showing it to other local users: a password
// file, an environment variable per side, a MariaDB option file.
//
// Precedence, per setting, as the mariadb client's (command line, then
// option files, then MYSQL_PWD):
//
//  1. the URL: its user, host, port, parameters, and its password, written
//     in it or read from its ?password-file=; or --<side>-password-file.
//     Two of these passwords at once are refused, not ranked;
//  2. the option file (--<side>-defaults-file, else --defaults-file, from
//     the client groups and gapless's), else the [gapless] groups of the
//     files the mariadb client reads by default (their [client] groups are
//     that client's, and do not choose gapless's account);
//  3. $GAPLESS_<SIDE>_PASSWORD, for the password only.
//
// Invariant: the password never reaches an error message.
package dburl

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// PasswordFileParam is the URL parameter naming a file that holds the password.
const PasswordFileParam = "password-file"

// Credentials say where a side's settings may come from besides its URL.
type Credentials struct {
	Side         string // "source" or "target": names the environment variable and the messages
	PasswordFile string // --<side>-password-file
	DefaultsFile string // an option file (--<side>-defaults-file or --defaults-file)
	// StreamGroup is read from the option files besides ClientGroups
	// ("gapless-STREAM"), or "".
	StreamGroup string
	// DefaultFiles are read, for their [gapless] and StreamGroup groups
	// only, when DefaultsFile is "" (DefaultOptionFiles, unless
	// --no-defaults).
	DefaultFiles []string
}

// ConnectionOption reports whether name (as Option.Name) is a connection
// setting Resolve reads from an option file's groups, or one of the client
// options that other programs read from those groups.
func ConnectionOption(name string) bool {
	switch name {
	case "user", "host", "port", "password", "socket", "ssl", "skip-ssl", "disable-ssl",
		"ssl-verify-server-cert", "skip-ssl-verify-server-cert", "disable-ssl-verify-server-cert",
		"ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-crl", "ssl-crlpath":
		return true
	}
	return false
}

// PasswordEnv is the environment variable that may hold side's password.
func PasswordEnv(side string) string {
	return "GAPLESS_" + strings.ToUpper(side) + "_PASSWORD"
}

// ReadPasswordFile returns the password a file holds: its content without
// one trailing line end.
func ReadPasswordFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	s = strings.TrimSuffix(s, "\r")
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("password file %s holds more than one line; it should hold only the password", path)
	}
	return s, nil
}

// Resolve builds side's configuration from its URL (may be empty when an
// option file names the server) and c, in the precedence this file's
// comment gives.
func Resolve(raw string, c Credentials) (Config, error) {
	opts, err := c.readOptionFiles()
	if err != nil {
		return Config{}, err
	}
	if raw == "" && c.DefaultsFile == "" {
		return Config{}, fmt.Errorf("empty server URL: want %s", urlShape)
	}
	fromFile, err := optionSettings(opts)
	if err != nil {
		return Config{}, err
	}
	cfg, urlPort, urlPassword, err := urlOverFile(raw, fromFile)
	if err != nil {
		return Config{}, err
	}
	if err := c.completeSettings(&cfg, fromFile, urlPort); err != nil {
		return Config{}, err
	}
	if cfg.Password, err = c.password(cfg.Password, urlPassword, fromFile); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// readOptionFiles reads the options of c.DefaultsFile's client groups and
// stream group, or else of the [gapless] and stream groups of
// c.DefaultFiles, in the order the files are named.
func (c Credentials) readOptionFiles() ([]Option, error) {
	if c.DefaultsFile != "" {
		groups := ClientGroups
		if c.StreamGroup != "" {
			groups = append(slices.Clone(groups), c.StreamGroup)
		}
		return ReadOptionFile(c.DefaultsFile, groups)
	}
	groups := []string{"gapless"}
	if c.StreamGroup != "" {
		groups = append(groups, c.StreamGroup)
	}
	var opts []Option
	for _, path := range c.DefaultFiles {
		more, err := ReadOptionFile(path, groups)
		if err != nil {
			return nil, err
		}
		opts = append(opts, more...)
	}
	return opts, nil
}

// urlOverFile is the URL with what the option file gives for what it lacks
// (the host may still be ""). urlPort and urlPassword report that the URL
// names the port and sets the password (cfg.Password then holds it).
func urlOverFile(raw string, fromFile fileSettings) (cfg Config, urlPort, urlPassword bool, err error) {
	cfg = Config{Host: fromFile.host, Port: DefaultPort, User: fromFile.user}
	if raw != "" {
		partial, err := parsePartial(raw)
		if err != nil {
			return Config{}, false, false, err
		}
		if partial.Host != "" {
			cfg.Host = partial.Host
		}
		if partial.User != "" {
			cfg.User = partial.User
		}
		cfg.Params = partial.Params
		cfg.Password = partial.Password
		cfg.Nodes = partial.Nodes
		urlPort, urlPassword = partial.Port != 0, partial.passwordSet
		if urlPort {
			cfg.Port = partial.Port
		}
	}
	if !urlPort && fromFile.port != 0 {
		cfg.Port = fromFile.port
	}
	return cfg, urlPort, urlPassword, nil
}

// completeSettings gives cfg what neither the URL nor the option file set:
// localhost for the host (unless the file names only a socket, which
// gapless cannot use) and tls from the file's ssl options. A user name is
// required.
func (c Credentials) completeSettings(cfg *Config, fromFile fileSettings, urlPort bool) error {
	if cfg.Host == "" {
		if fromFile.socket != "" && fromFile.port == 0 && !urlPort {
			return fmt.Errorf("%s (socket=%s): gapless connects over TCP only; give host and port", fromFile.socketWhere, fromFile.socket)
		}
		cfg.Host = "localhost"
	}
	if cfg.User == "" {
		return fmt.Errorf("no user name for the %s: give it in the URL (%s) or as user= in the option file", c.Side, urlShape)
	}
	if _, set := cfg.Params["tls"]; !set && fromFile.unsupportedTLS != "" {
		return fmt.Errorf("%s", fromFile.unsupportedTLS)
	}
	if _, set := cfg.Params["tls"]; !set && fromFile.tls != "" {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["tls"] = fromFile.tls
	}
	return nil
}

// password chooses side's password: the URL's (fromURL, when urlPassword)
// or --<side>-password-file's, never both; else the option file's; else
// $GAPLESS_<SIDE>_PASSWORD.
func (c Credentials) password(fromURL string, urlPassword bool, fromFile fileSettings) (string, error) {
	switch {
	case urlPassword && c.PasswordFile != "":
		return "", fmt.Errorf("the %s URL carries a password and --%s-password-file names another: give one", c.Side, c.Side)
	case urlPassword:
		return fromURL, nil
	case c.PasswordFile != "":
		password, err := ReadPasswordFile(c.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("--%s-password-file: %w", c.Side, err)
		}
		return password, nil
	case fromFile.passwordSet:
		return fromFile.password, nil
	default:
		return os.Getenv(PasswordEnv(c.Side)), nil
	}
}

// partialConfig is a URL parsed without requiring the settings an option file may give.
type partialConfig struct {
	Config
	passwordSet bool
}

// parsePartial parses raw as Parse does, but accepts a URL without user or
// host ("mysql://db1", "mysql://" or "mysql://repl@") and leaves Port 0 when
// the URL names none.
func parsePartial(raw string) (partialConfig, error) {
	// Parse wants a user and a host: stand them in, then take them out again.
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return partialConfig{}, fmt.Errorf("server URL has no scheme: want %s", urlShape)
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hostport, hasUser := strings.Cut(authority, "@")
	if !hasUser {
		hostport, userinfo = authority, ""
	}
	noUser := userinfo == "" || strings.HasPrefix(userinfo, ":")
	noHost := hostport == "" || strings.HasPrefix(hostport, ":")
	if noUser {
		userinfo = "gapless-no-user" + userinfo
	}
	if noHost {
		hostport = "gapless-no-host" + hostport
	}
	probe := scheme + "://" + userinfo + "@" + hostport + tail
	cfg, err := Parse(probe)
	if err != nil {
		return partialConfig{}, err
	}
	out := partialConfig{Config: cfg}
	if noUser {
		out.User = ""
	}
	if noHost {
		out.Host = ""
	}
	out.passwordSet = strings.Contains(userinfo, ":")
	if _, ok := cfg.Params[PasswordFileParam]; ok || strings.Contains(tail, PasswordFileParam+"=") {
		out.passwordSet = true
	}
	if port := hostport[strings.LastIndexByte(hostport, ']')+1:]; !strings.Contains(port, ":") {
		out.Port = 0
	}
	return out, nil
}

// fileSettings are the connection settings an option file gives.
type fileSettings struct {
	user, host, password, socket, socketWhere, tls string
	unsupportedTLS                                 string // an ssl option gapless cannot map, unless the URL sets tls
	port                                           int
	passwordSet                                    bool
}

// optionSettings takes the options gapless understands; the others (such
// as default-character-set) are for other client programs and are ignored.
func optionSettings(opts []Option) (fileSettings, error) {
	var s fileSettings
	ssl, verify := false, false
	for _, o := range opts {
		switch o.Name {
		case "user":
			s.user = o.Value
		case "host":
			s.host = o.Value
		case "port":
			p, err := strconv.Atoi(o.Value)
			if err != nil || p < 1 || p > 65535 {
				return s, fmt.Errorf("%s: port=%s: want a number from 1 to 65535", o.Where, o.Value)
			}
			s.port = p
		case "password":
			if !o.HasValue {
				return s, fmt.Errorf("%s: password without a value asks the mariadb client to prompt; gapless does not prompt: write password=...", o.Where)
			}
			s.password, s.passwordSet = o.Value, true
		case "socket":
			s.socket, s.socketWhere = o.Value, o.Where
		case "ssl":
			ssl = boolOption(o)
		case "skip-ssl", "disable-ssl":
			ssl = false
		case "ssl-verify-server-cert":
			verify = boolOption(o)
		case "skip-ssl-verify-server-cert", "disable-ssl-verify-server-cert":
			verify = false
		case "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-crl", "ssl-crlpath":
			s.unsupportedTLS = fmt.Sprintf("%s: %s is not supported by gapless yet: add ?tls=true to the URL (the CA in the system's trust store), or tls=skip-verify", o.Where, o.Name)
		}
	}
	switch {
	case verify:
		s.tls = "true"
	case ssl:
		s.tls = "skip-verify"
	}
	return s, nil
}

// boolOption reads "name" (true) or "name=0/1/on/off/true/false".
func boolOption(o Option) bool {
	if !o.HasValue {
		return true
	}
	switch strings.ToLower(o.Value) {
	case "0", "off", "false", "no":
		return false
	}
	return true
}
