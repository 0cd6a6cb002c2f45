// This file owns what one mysql-test case needs before it runs: where its
// .test file is, whether it expects a replica ("slave") beside the primary,
// and the server options its .opt, -master.opt, -slave.opt and .cnf files
// ask for, turned into my.cnf lines. Options that would take the harness's
// own settings away (the binlog's name, the ports, the datadir, the server
// id) are dropped and noted, never applied.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// caseFiles is a located test and the options it asks for.
type caseFiles struct {
	TestFile string
	SuiteDir string // passed to mariadb-test --suite-dir, so "--source include/x.inc" finds the suite's own includes
	// NeedsSlave is set for tests that set up replication (master-slave.inc,
	// rpl_init.inc), and for every test of the rpl suite.
	NeedsSlave bool
	// PrimaryOptions and SlaveOptions are my.cnf lines for [mariadbd].
	PrimaryOptions, SlaveOptions []string
	// TargetOptions are the few options the replicas' targets must share
	// with the primary for the binlog to mean the same there (the default
	// storage engine of a CREATE TABLE without ENGINE, plugins).
	TargetOptions []string
	// Notes say which options were not applied, and why.
	Notes []string
	// Text is the test as it is run (see keepHistory); when Rewritten, a
	// copy of it runs from the case's folder instead of TestFile.
	Text      string
	Rewritten bool
}

// locateCase finds a case under the mysql-test directory.
func locateCase(mtrDir string, c testCase) (caseFiles, error) {
	suiteDir := filepath.Join(mtrDir, "suite", c.Suite)
	switch plugin := filepath.Join(mtrDir, "plugin", c.Suite, c.Suite); {
	case c.Suite == "main":
		suiteDir = filepath.Join(mtrDir, "main")
	case !exists(suiteDir) && exists(plugin):
		// A plugin's suite: plugin/type_inet/type_inet/*.test.
		suiteDir = plugin
	}
	var f caseFiles
	f.SuiteDir = suiteDir
	for _, p := range []string{filepath.Join(suiteDir, "t", c.Name+".test"), filepath.Join(suiteDir, c.Name+".test")} {
		if _, err := os.Stat(p); err == nil {
			f.TestFile = p
			break
		}
	}
	if f.TestFile == "" {
		return f, fmt.Errorf("%s: no %s.test under %s (is mariadb-test-data installed? run scripts/install-conformance-deps.sh)", c.ID(), c.Name, suiteDir)
	}
	text, err := os.ReadFile(f.TestFile)
	if err != nil {
		return f, fmt.Errorf("%s: %w", c.ID(), err)
	}
	f.NeedsSlave = c.Suite == "rpl" || needsSlave.Match(text)
	var resets int
	f.Text, resets = keepHistory(string(text))
	if resets > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("RESET MASTER run as FLUSH BINARY LOGS (%d times)", resets))
		f.Text = absoluteSources(f.Text, filepath.Dir(f.TestFile))
		f.Rewritten = true
	}

	base := strings.TrimSuffix(f.TestFile, ".test")
	var all, master, slave []string
	all = append(all, readOptFile(filepath.Join(suiteDir, "suite.opt"))...)
	all = append(all, readOptFile(base+".opt")...)
	master = append(master, readOptFile(base+"-master.opt")...)
	slave = append(slave, readOptFile(base+"-slave.opt")...)
	cnfMaster, cnfSlave := readCnfFile(base + ".cnf")
	env := map[string]string{"MYSQL_TEST_DIR": mtrDir}

	for _, opt := range append(append(append([]string{}, all...), master...), cnfMaster...) {
		line, note := optionLine(opt, env)
		if note != "" {
			f.Notes = append(f.Notes, note)
		}
		if line == "" {
			continue
		}
		f.PrimaryOptions = append(f.PrimaryOptions, line)
		if sharedWithTargets(line) {
			f.TargetOptions = append(f.TargetOptions, line)
		}
	}
	for _, opt := range append(append(append([]string{}, all...), slave...), cnfSlave...) {
		if line, _ := optionLine(opt, env); line != "" {
			f.SlaveOptions = append(f.SlaveOptions, line)
		}
	}
	return f, nil
}

var needsSlave = regexp.MustCompile(`(?m)^\s*-*\s*source\s+include/(master-slave|rpl_init|rpl_topology|have_replication|multi_source)`)

// readOptFile reads an mtr .opt file: command-line options separated by
// blanks, double quotes keeping blanks inside one. A missing file has none.
func readOptFile(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return splitOptions(string(b))
}

func splitOptions(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case !quoted && (r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

// readCnfFile reads a test's .cnf: lines of [mysqld] (every server) and
// [mysqld.1] (the primary) or [mysqld.2] (the slave), as "--name=value"
// options; !include lines are not followed (they bring mtr's defaults,
// which every server gets anyway).
func readCnfFile(path string) (master, slave []string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(l, "[]")
			continue
		}
		name, value, hasValue := strings.Cut(l, "=")
		opt := "--" + strings.TrimSpace(name)
		if hasValue {
			opt += "=" + strings.TrimSpace(value)
		}
		if strings.Contains(opt, "@") { // @mysqld.N.port and the like: mtr's own references
			continue
		}
		switch section {
		case "mysqld":
			master, slave = append(master, opt), append(slave, opt)
		case "mysqld.1":
			master = append(master, opt)
		case "mysqld.2":
			slave = append(slave, opt)
		}
	}
	return master, slave
}

// harnessOptions are the settings the conformance servers keep whatever a
// test asks: where things are, who the server is, that it writes a binlog.
var harnessOptions = map[string]bool{
	"log-bin": true, "skip-log-bin": true, "disable-log-bin": true, "log-bin-index": true, "log-basename": true,
	"port": true, "socket": true, "datadir": true, "tmpdir": true, "pid-file": true, "log-error": true,
	"bind-address": true, "server-id": true, "secure-file-priv": true, "user": true, "basedir": true,
	"relay-log": true, "relay-log-index": true, "innodb-log-file-size": true, "innodb-data-file-path": true,
	"innodb-page-size": true, "core-file": true, "skip-core-file": true, "skip-stack-trace": true, "gdb": true,
}

var optionVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// optionLine turns one mtr command-line option into a my.cnf line, or ""
// with a note saying why it is not applied.
func optionLine(opt string, env map[string]string) (line, note string) {
	body, ok := strings.CutPrefix(opt, "--")
	if !ok {
		return "", fmt.Sprintf("option %q ignored: not an --option", opt)
	}
	name, value, hasValue := strings.Cut(body, "=")
	key := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(name, "loose-"), "loose_"), "_", "-")
	switch {
	case key == "timezone":
		return "", fmt.Sprintf("--timezone=%s ignored: the servers run in the runner's own time zone", value)
	case harnessOptions[key]:
		return "", fmt.Sprintf("%s ignored: the harness sets it", opt)
	case strings.HasPrefix(key, "debug"):
		return "", fmt.Sprintf("%s ignored: a release build has no debug options", opt)
	}
	if hasValue {
		missing := ""
		value = optionVar.ReplaceAllStringFunc(value, func(m string) string {
			v := optionVar.FindStringSubmatch(m)[1]
			if s, ok := env[v]; ok {
				return s
			}
			missing = v
			return ""
		})
		if missing != "" {
			return "", fmt.Sprintf("%s ignored: $%s is not known here", opt, missing)
		}
		return name + "=" + value, ""
	}
	return name, ""
}

// sharedWithTargets reports whether a primary option must also be set on
// the targets for a replica to apply the binlog as the primary meant it.
func sharedWithTargets(line string) bool {
	name, _, _ := strings.Cut(line, "=")
	key := strings.ReplaceAll(strings.TrimPrefix(name, "loose-"), "_", "-")
	switch key {
	case "default-storage-engine", "lower-case-table-names", "plugin-load-add", "plugin-load",
		"explicit-defaults-for-timestamp", "innodb-default-row-format":
		return true
	}
	return false
}

var resetMaster = regexp.MustCompile(`(?im)^(\s*)reset\s+master\s*;`)

// keepHistory rewrites the test's own RESET MASTER statements into FLUSH
// BINARY LOGS. Many binlog tests create their tables, then RESET MASTER so
// that their result shows only what follows: a replica starting from such
// a binlog lacks the tables, and no applier could be judged on it. With
// the rewrite the binlog keeps its whole history and the test still starts
// a new binlog file. RESET MASTER in included files (rpl_init.inc, at the
// start of a test) is left as it is.
func keepHistory(test string) (string, int) {
	n := len(resetMaster.FindAllStringIndex(test, -1))
	return resetMaster.ReplaceAllString(test, "${1}FLUSH BINARY LOGS;"), n
}

var localSource = regexp.MustCompile(`(?im)^(\s*-*\s*source\s+)([^\s/;]+)`)

// absoluteSources makes "source x.inc" of a file beside the test absolute,
// for a copy of the test that runs from elsewhere (mariadb-test looks for
// such files in the directory of the test file).
func absoluteSources(test, testDir string) string {
	return localSource.ReplaceAllStringFunc(test, func(m string) string {
		parts := localSource.FindStringSubmatch(m)
		p := filepath.Join(testDir, parts[2])
		if _, err := os.Stat(p); err != nil {
			return m
		}
		return parts[1] + p
	})
}

// exists reports whether path names a file or directory.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
