package dburl

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestParse(t *testing.T) {
	cases := []struct {
		url  string
		want Config
	}{
		{"mysql://root:secret@127.0.0.1:3307", Config{User: "root", Password: "secret", Host: "127.0.0.1", Port: 3307}},
		{"mysql://root@db.example.com", Config{User: "root", Host: "db.example.com", Port: 3306}},
		{"mysql://root:@localhost:3306/", Config{User: "root", Host: "localhost", Port: 3306}},
		{"mariadb://app:p%40ss%2Fw%3Ard%23@[::1]:3310", Config{User: "app", Password: "p@ss/w:rd#", Host: "::1", Port: 3310}},
		{"mysql://repl:x@h:1?tls=skip-verify&time_zone=%27%2B00%3A00%27", Config{User: "repl", Password: "x", Host: "h", Port: 1,
			Params: map[string]string{"tls": "skip-verify", "time_zone": "'+00:00'"}}},
	}
	for _, c := range cases {
		got, err := Parse(c.url)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.url, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", c.url, got, c.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct{ url, wantInError string }{
		{"", "empty"},
		{"127.0.0.1:3306", "no scheme"},
		{"postgres://u:p@h:5432", `unknown URL scheme "postgres"`},
		{"mysql://u:p@:3306", "no host"},
		{"mysql:///", "no host"},
		{"mysql://u:p@h:0", `bad port "0"`},
		{"mysql://u:p@h:70000", `bad port "70000"`},
		{"mysql://u:p@h:", "empty port"},
		{"mysql://u:p@h:abc", "malformed"},
		{"mysql://h:3306", "no user"},
		{"mysql://u:p@h/shop", "path after host:port"},
		{"mysql://u:12/34@h", "path after host:port"},
		{"mysql://u:se#cret@h", "malformed"},
		{"mysql://u:secret@h#", "'#'"},
	}
	for _, c := range cases {
		_, err := Parse(c.url)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want error containing %q", c.url, c.wantInError)
			continue
		}
		if !strings.Contains(err.Error(), c.wantInError) {
			t.Errorf("Parse(%q) error %q, want it to contain %q", c.url, err, c.wantInError)
		}
		for _, secret := range []string{"secret", "34", "se#"} {
			if strings.Contains(c.url, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("Parse(%q) error %q reveals the password", c.url, err)
			}
		}
	}
}

func TestDSN(t *testing.T) {
	cfg, err := Parse("mysql://app:p%40ss%2Fw@127.0.0.1:3307?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	dsn := cfg.DSN("shop", map[string]string{"multiStatements": "true"})
	back, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ParseDSN(%q): %v", dsn, err)
	}
	if back.User != "app" || back.Passwd != "p@ss/w" || back.Net != "tcp" || back.Addr != "127.0.0.1:3307" || back.DBName != "shop" || !back.MultiStatements {
		t.Errorf("DSN %q parses back as %+v", dsn, back)
	}
	if cfg.Params["multiStatements"] != "" {
		t.Error("DSN modified the Config's own params")
	}
	if got := (Config{User: "u", Host: "::1", Port: 3306}).DSN("", nil); !strings.HasPrefix(got, "u@tcp([::1]:3306)/?") {
		t.Errorf("IPv6 DSN = %q", got)
	}
	// gapless's own sql_mode, unless the URL sets one.
	if back.Params["sql_mode"] != sqlMode {
		t.Errorf("DSN %q sets sql_mode %q, want %q", dsn, back.Params["sql_mode"], sqlMode)
	}
	own, _ := Parse("mysql://app@127.0.0.1?sql_mode=%27ANSI%27")
	if back, _ := mysql.ParseDSN(own.DSN("", nil)); back.Params["sql_mode"] != "'ANSI'" {
		t.Errorf("the URL's sql_mode became %q", back.Params["sql_mode"])
	}
}

func TestRedacted(t *testing.T) {
	cases := map[string]string{
		"mysql://root:secret@127.0.0.1:3307":        "mysql://root:***@127.0.0.1:3307",
		"mysql://root@127.0.0.1":                    "mysql://root@127.0.0.1:3306",
		"mysql://a:b@[::1]:4000?tls=true&x=1":       "mysql://a:***@[::1]:4000?tls=true&x=1",
		"mariadb://r%40dmin:p%2Fw@db.internal:3306": "mysql://r%40dmin:***@db.internal:3306",
	}
	for in, want := range cases {
		cfg, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Redacted(); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExplain(t *testing.T) {
	cfg := Config{User: "x", Host: "127.0.0.1", Port: 3307}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	cases := []struct {
		err  error
		want string
	}{
		{refused, "cannot reach 127.0.0.1:3307: connection refused"},
		{&mysql.MySQLError{Number: 1045, Message: "Access denied for user 'x'@'localhost' (using password: YES)"},
			"access denied for user 'x' on 127.0.0.1:3307 (wrong password?)"},
		{&net.DNSError{Err: "no such host", Name: "nohost", IsNotFound: true}, "cannot reach 127.0.0.1:3307: unknown host"},
		{errors.New("boom"), "cannot connect to 127.0.0.1:3307: boom"},
	}
	for _, c := range cases {
		if got := Explain(c.err, cfg).Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("Explain(%v) = %q, want prefix %q", c.err, got, c.want)
		}
	}
}

func TestOpenRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, _, err = Open("mysql://x:y@"+addr, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach "+addr+": connection refused") {
		t.Fatalf("Open on a closed port: %v", err)
	}
}

func TestURLOfSeveralNodes(t *testing.T) {
	cfg, err := Parse("mysql://u:p@10.0.0.1:3306,10.0.0.2,[::1]:3307?timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Nodes == nil || strings.Join(cfg.Nodes.Addrs(), " ") != "10.0.0.1:3306 10.0.0.2:3306 [::1]:3307" || cfg.Addr() != "10.0.0.1:3306" {
		t.Fatalf("parsed %+v, nodes %v", cfg, cfg.Nodes)
	}
	if got := cfg.Redacted(); got != "mysql://u:***@10.0.0.1:3306,10.0.0.2:3306,[::1]:3307?timeout=3s" {
		t.Errorf("redacted %q", got)
	}
	var moves []string
	cfg.Nodes.OnSwitch(func(from, to, why string) { moves = append(moves, from+">"+to) })
	cfg.Nodes.Failed("10.0.0.2:3306", "not current: no move")
	cfg.Nodes.Failed("10.0.0.1:3306", "refused")
	cfg.Nodes.Failed("10.0.0.1:3306", "the same failure seen by another connection")
	if cfg.DialAddr() != "10.0.0.2:3306" || cfg.Nodes.Switches() != 1 || len(moves) != 1 {
		t.Fatalf("after one failure: at %s, %d switches, moves %v", cfg.DialAddr(), cfg.Nodes.Switches(), moves)
	}
	cfg.Nodes.Failed("10.0.0.2:3306", "refused")
	cfg.Nodes.Failed("[::1]:3307", "refused")
	cfg.Nodes.Failed("10.0.0.1:3306", "refused")
	if left := strings.Join(cfg.Nodes.Left(0), " "); left != "10.0.0.1:3306 10.0.0.2:3306 [::1]:3307" {
		t.Errorf("left since the start: %s", left)
	}
	if left := strings.Join(cfg.Nodes.Left(2), " "); left != "[::1]:3307 10.0.0.1:3306" {
		t.Errorf("left since the second move: %s", left)
	}
	if left := cfg.Nodes.Left(4); len(left) != 0 {
		t.Errorf("left since the last move: %v", left)
	}
	again, err := Parse(cfg.URL())
	if err != nil || again.Nodes == nil || len(again.Nodes.Addrs()) != 3 {
		t.Fatalf("URL() %q parsed again: %v %v", cfg.URL(), again, err)
	}
	for _, bad := range []string{"mysql://u@h1:1,,h2:2", "mysql://u@h1:1,h1:1", "mysql://u@h1:1,h2:99999"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if r, err := Resolve("mysql://u:p@h1:1,h2:2", Credentials{Side: "target"}); err != nil || r.Nodes == nil {
		t.Errorf("Resolve lost the node list: %+v %v", r, err)
	}
}

// TestURLParameters: gapless's own parameters and session variables are
// taken; anything else is refused, never passed on silently.
func TestURLParameters(t *testing.T) {
	for _, ok := range []string{"?tls=true", "?timeout=3s", "?innodb_lock_wait_timeout=20", "?sql_mode=%27ANSI%27", "?lock_wait_timeout=1&tls=false"} {
		if _, err := Parse("mysql://u@h:1" + ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"?readTimeout=5s":     `URL parameter "readTimeout"`,
		"?tsl-mode=true":      `URL parameter "tsl-mode"`,
		"?charset=utf8":       `URL parameter "charset"`,
		"?wait_timeout=1%3B1": "want a value for SET SESSION wait_timeout",
		"?wait_timeout=":      "want a value",
	} {
		_, err := Parse("mysql://u@h:1" + bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %s", bad, err, want)
		}
	}
}
