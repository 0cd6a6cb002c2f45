// options_test.go checks how flags come from option files (options.go):
// !include, loose-, the stream's group, the command line's precedence, an
// unknown key, and --print-defaults's masking.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content into a new folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// noDefaultPlaces keeps the machine's and the user's my.cnf out of a test.
func noDefaultPlaces(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("MYSQL_HOME", "")
}

func TestOptionFilesGiveEveryFlag(t *testing.T) {
	noDefaultPlaces(t)
	dir := writeFiles(t, map[string]string{
		"common.cnf": "[client]\ndefault-character-set = utf8mb4\n" +
			"[gapless]\nsource = mysql://repl:Source-Secret@db1:3306\nworkers = 8\ndo-db = a\nloose-some-future-flag = 1\n" +
			"# a flag of status only is no error for replicate\njson\n",
		"shop.cnf": "!include common.cnf\n" +
			"[gapless]\ntarget = mysql://apply@db2:3306\npassword = Client-Secret\npolicy = schema\n" +
			"[gapless-other]\nworkers = 99\n" +
			"[gapless-shop]\ndo_db = b\nworkers = 4\nverbose\n",
	})
	out, err := runCommand(newReplicateCmd(), "--defaults-file", filepath.Join(dir, "shop.cnf"), "--stream", "shop", "--policy", "writeset", "--print-defaults")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"--source=mysql://repl:***@db1:3306\t# " + filepath.Join(dir, "common.cnf") + ":4 [gapless]",
		"--target=mysql://apply@db2:3306\t",
		"--workers=4\t# " + filepath.Join(dir, "shop.cnf") + ":10 [gapless-shop]", // the later line, not [gapless-other]
		"--do-db=a,b\t",                     // a repeatable flag's lines add up
		"--policy=writeset\t# command line", // the command line wins
		"--verbose=true\t",
		"# connection setting password=***",
		"would run with these flags (read: ",
		"; passwords masked)\n",
		"some-future-flag: no gapless command has a flag", // loose-: a warning, not an error
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-defaults does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Secret") {
		t.Errorf("--print-defaults shows a password:\n%s", out)
	}
}

func TestOptionFileStreamFromTheGeneralGroup(t *testing.T) {
	noDefaultPlaces(t)
	dir := writeFiles(t, map[string]string{"s.cnf": "[gapless-shop]\nworkers = 3\n[gapless]\nstream = shop\n"})
	out, err := runCommand(newReplicateCmd(), "--defaults-file", filepath.Join(dir, "s.cnf"), "--print-defaults")
	if err != nil || !strings.Contains(out, "--workers=3\t") || !strings.Contains(out, "--stream=shop\t") {
		t.Errorf("stream= of [gapless] does not choose [gapless-shop]: %v\n%s", err, out)
	}
}

func TestOptionFileDefaultPlaces(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("MYSQL_HOME", "")
	if err := os.WriteFile(filepath.Join(home, ".my.cnf"), []byte("[client]\nuser=someone\n[gapless]\nhttp = 9109\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCommand(newStopCmd(), "--print-defaults")
	if err != nil || !strings.Contains(out, "--http=9109\t# "+filepath.Join(home, ".my.cnf")+":4 [gapless]") {
		t.Errorf("~/.my.cnf's [gapless] group is not read: %v\n%s", err, out)
	}
	out, err = runCommand(newStopCmd(), "--no-defaults", "--print-defaults")
	if err != nil || strings.Contains(out, "--http=") {
		t.Errorf("--no-defaults reads ~/.my.cnf: %v\n%s", err, out)
	}
}

func TestOptionFileRefusals(t *testing.T) {
	noDefaultPlaces(t)
	dir := writeFiles(t, map[string]string{
		"unknown.cnf":  "[client]\nnot-ours = 1\n[gapless]\nworkerz = 3\n",
		"novalue.cnf":  "[gapless]\nworkers\n",
		"badvalue.cnf": "[gapless]\nworkers = many\n",
		"circular.cnf": "[gapless-shop]\nstream = other\n",
		"itself.cnf":   "[gapless]\ndefaults-file = /etc/other.cnf\n",
		"missing.cnf":  "!include nowhere.cnf\n",
	})
	for file, want := range map[string]string{
		"unknown.cnf":  `unknown.cnf:4 [gapless]: unknown option "workerz"`,
		"novalue.cnf":  "workers needs a value",
		"badvalue.cnf": "badvalue.cnf:2 [gapless]: workers=many",
		"circular.cnf": "stream= in a stream's own group",
		"itself.cnf":   "defaults-file is not read from an option file",
		"missing.cnf":  "nowhere.cnf",
	} {
		out, err := runCommand(newReplicateCmd(), "--defaults-file", filepath.Join(dir, file), "--stream", "shop", "--print-defaults")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q\n%s", file, err, want, out)
		}
	}
	if _, err := runCommand(newReplicateCmd(), "--defaults-file", filepath.Join(dir, "novalue.cnf"), "--no-defaults"); err == nil {
		t.Error("--defaults-file with --no-defaults is accepted")
	}
}

func TestMaskSecret(t *testing.T) {
	for _, c := range [][3]string{
		{"source", "mysql://repl:pw@db1:3306?tls=true", "mysql://repl:***@db1:3306?tls=true"},
		{"source", "mysql://repl:p@ss@db1", "mysql://repl:***@db1"},
		{"source", "mysql://repl@db1:3306", "mysql://repl@db1:3306"},
		{"password", "pw", "***"},
		{"source-password-file", "/etc/pw", "/etc/pw"},
		{"workers", "8", "8"},
	} {
		if got := maskSecret(c[0], c[1]); got != c[2] {
			t.Errorf("maskSecret(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
