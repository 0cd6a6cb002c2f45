package dburl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadOptionFileFollowsTheClientsRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "conf.d/20-late.cnf", "[client]\nport=3310\n")
	writeFile(t, dir, "conf.d/10-early.cnf", "[client]\nport=3309\nhost=early\n")
	writeFile(t, dir, "conf.d/ignored.txt", "[client]\nport=1\n")
	writeFile(t, dir, "extra.cnf", "[client-mariadb]\nloose_user = from-extra\n")
	main := writeFile(t, dir, "my.cnf", `# a comment
; another
[mysqld]
user=mysql
password=not-this
[client]
user=first
password = "sp ace#not-a-comment\"q" # a comment
host=db1 # trailing comment
ssl
!include extra.cnf
!includedir conf.d
[mariadb-client]
socket=/run/x.sock
`)
	opts, err := ReadOptionFile(main, ClientGroups)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range opts {
		got[o.Name] = o.Value
	}
	want := map[string]string{"user": "from-extra", "password": `sp ace#not-a-comment"q`, "host": "early",
		"ssl": "", "port": "3310", "socket": "/run/x.sock"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("options %v, want %v", got, want)
	}
}

func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	pwFile := writeFile(t, dir, "pw", "from-file\n")
	cnf := writeFile(t, dir, "my.cnf", "[client]\nuser=cnfuser\npassword=from-cnf\nhost=cnfhost\nport=3311\nssl-verify-server-cert\n")
	cnfNoPassword := writeFile(t, dir, "nopw.cnf", "[client]\nuser=cnfuser\nhost=cnfhost\n")
	t.Setenv("GAPLESS_SOURCE_PASSWORD", "from-env")

	cases := []struct {
		name, url string
		creds     Credentials
		want      string // user:password@host:port?params
	}{
		{"URL only", "mysql://u:inurl@h:1", Credentials{}, "u:inurl@h:1?"},
		{"URL without password takes the environment", "mysql://u@h:1", Credentials{}, "u:from-env@h:1?"},
		{"URL password file", "mysql://u@h:1?password-file=" + pwFile + "&tls=true", Credentials{}, "u:from-file@h:1?true"},
		{"flag password file", "mysql://u@h:1", Credentials{PasswordFile: pwFile}, "u:from-file@h:1?"},
		{"option file alone", "", Credentials{DefaultsFile: cnf}, "cnfuser:from-cnf@cnfhost:3311?true"},
		{"URL wins over the option file", "mysql://u@h:1?tls=false", Credentials{DefaultsFile: cnf}, "u:from-cnf@h:1?false"},
		{"URL host only", "mysql://other", Credentials{DefaultsFile: cnf}, "cnfuser:from-cnf@other:3311?true"},
		{"password file wins over the option file", "", Credentials{DefaultsFile: cnf, PasswordFile: pwFile}, "cnfuser:from-file@cnfhost:3311?true"},
		{"option file without password takes the environment", "", Credentials{DefaultsFile: cnfNoPassword}, "cnfuser:from-env@cnfhost:3306?"},
	}
	for _, c := range cases {
		c.creds.Side = "source"
		cfg, err := Resolve(c.url, c.creds)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := cfg.User + ":" + cfg.Password + "@" + cfg.Addr() + "?"
		if cfg.Params != nil {
			got += cfg.Params["tls"]
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if _, leaked := cfg.Params[PasswordFileParam]; leaked {
			t.Errorf("%s: password-file left among the driver parameters", c.name)
		}
	}
}

func TestResolveRefusesWithoutShowingThePassword(t *testing.T) {
	dir := t.TempDir()
	pwFile := writeFile(t, dir, "pw", "Secret-1\n")
	twoLines := writeFile(t, dir, "pw2", "Secret-1\nSecret-2\n")
	prompt := writeFile(t, dir, "prompt.cnf", "[client]\nuser=u\npassword\n")
	socket := writeFile(t, dir, "socket.cnf", "[client]\nuser=u\nsocket=/run/mysqld.sock\n")
	ca := writeFile(t, dir, "ca.cnf", "[client]\nuser=u\nhost=h\nssl-ca=/etc/ca.pem\n")
	cases := []struct {
		url   string
		creds Credentials
		want  string
	}{
		{"mysql://u:Secret-1@h", Credentials{PasswordFile: pwFile}, "give one"},
		{"mysql://u:Secret-1@h?password-file=" + pwFile, Credentials{}, "give one"},
		{"mysql://u@h?password-file=" + twoLines, Credentials{}, "more than one line"},
		{"mysql://u@h?password-file=/nonexistent/pw", Credentials{}, "no such file"},
		{"", Credentials{DefaultsFile: prompt}, "does not prompt"},
		{"", Credentials{DefaultsFile: socket}, "TCP only"},
		{"", Credentials{DefaultsFile: ca}, "ssl-ca is not supported"},
		{"", Credentials{DefaultsFile: "/nonexistent/my.cnf"}, "no such file"},
		{"mysql://h:1", Credentials{}, "no user name"},
		{"", Credentials{}, "empty server URL"},
	}
	for _, c := range cases {
		c.creds.Side = "target"
		_, err := Resolve(c.url, c.creds)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%q, %+v) = %v, want an error saying %q", c.url, c.creds, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "Secret-") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// with tls set in the URL, the option file's ssl-ca does not matter
	if _, err := Resolve("mysql://u@h?tls=skip-verify", Credentials{Side: "target", DefaultsFile: ca}); err != nil {
		t.Errorf("ssl-ca with ?tls=skip-verify: %v", err)
	}
}

func TestConfigURLRoundTrips(t *testing.T) {
	in := Config{User: "app", Password: "p@ss/w:rd#?&", Host: "::1", Port: 3310, Params: map[string]string{"tls": "true"}}
	out, err := Parse(in.URL())
	if err != nil {
		t.Fatal(err)
	}
	if out.User != in.User || out.Password != in.Password || out.Addr() != in.Addr() || out.Params["tls"] != "true" {
		t.Errorf("round trip: %+v -> %s -> %+v", in, in.URL(), out)
	}
}
