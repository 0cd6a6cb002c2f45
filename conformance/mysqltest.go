// This file owns running a test's .test file with mariadb-test (mysqltest)
// against a case's primary, as mariadb-test-run would: the same client
// options file layout, the environment variables tests read ($MYSQL,
// $MYSQL_BINLOG, $MASTER_MYPORT, $MYSQLTEST_VARDIR, ...), a vardir laid out
// like mtr's (the primary's datadir at $MYSQLTEST_VARDIR/mysqld.1/data, so
// '../../std_data/x' in a LOAD DATA reaches std_data). The test may pass,
// fail or skip itself; what counts is the binlog it leaves on the primary.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gapless/internal/sandbox"
)

// mtrEnv is where MariaDB's test suite and tools are on this machine.
type mtrEnv struct {
	MtrDir        string // mysql-test: main/, suite/, include/, std_data/
	ShareDir      string // mysql_test_data_timezone.sql, charsets/
	Mysqltest     string // mariadb-test
	Mariadbd      string
	ServerVersion string
}

// findMtrEnv locates the mysql-test directory and mariadb-test, naming the
// packages and the script that installs them when they are missing.
func findMtrEnv(mtrDir string) (mtrEnv, error) {
	env := mtrEnv{MtrDir: mtrDir}
	const install = "install the Debian packages mariadb-test and mariadb-test-data (scripts/install-conformance-deps.sh does)"
	if err := sandbox.CheckInstalled(); err != nil {
		return env, err
	}
	for _, name := range []string{"mariadb-test", "mysqltest"} {
		if p, err := exec.LookPath(name); err == nil {
			env.Mysqltest = p
			break
		}
	}
	if env.Mysqltest == "" {
		return env, fmt.Errorf("mariadb-test is not on PATH: %s", install)
	}
	if _, err := os.Stat(filepath.Join(mtrDir, "include", "mtr_warnings.sql")); err != nil {
		return env, fmt.Errorf("no mysql-test directory at %s (include/mtr_warnings.sql missing): %s, or pass --mysql-test-dir", mtrDir, install)
	}
	if _, err := os.Stat(filepath.Join(mtrDir, "suite", "rpl")); err != nil {
		return env, fmt.Errorf("no test suites under %s: %s", mtrDir, install)
	}
	for _, dir := range []string{"/usr/share/mariadb", "/usr/share/mysql"} {
		if _, err := os.Stat(filepath.Join(dir, "mysql_test_data_timezone.sql")); err == nil {
			env.ShareDir = dir
			break
		}
	}
	if env.ShareDir == "" {
		return env, fmt.Errorf("mysql_test_data_timezone.sql not found in /usr/share/mariadb or /usr/share/mysql: install mariadb-server")
	}
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadbd"} {
		if _, err := os.Stat(p); err == nil {
			env.Mariadbd = p
			break
		}
	}
	if env.Mariadbd == "" {
		if p, err := exec.LookPath("mariadbd"); err == nil {
			env.Mariadbd = p
		}
	}
	out, err := exec.Command(env.Mariadbd, "--version").Output()
	if err != nil {
		return env, fmt.Errorf("%s --version: %w", env.Mariadbd, err)
	}
	env.ServerVersion = strings.TrimSpace(string(out))
	return env, nil
}

// Test outcomes, as mariadb-test reports them. They are recorded, not judged.
const (
	testPassed  = "passed"
	testFailed  = "failed"
	testSkipped = "skipped"
	testTimeout = "timed out"
)

// testRun is what mariadb-test did.
type testRun struct {
	Status  string
	Detail  string // the reason of a skip or the end of a failure's output
	Log     string
	Seconds float64
}

// caseVardir is one case's $MYSQLTEST_VARDIR: the servers' homes
// (mysqld.1, mysqld.2), tmp/, log/, and std_data linked to mtr's.
func prepareVardir(env mtrEnv, vardir string) error {
	for _, d := range []string{"tmp", "log", "run"} {
		if err := os.MkdirAll(filepath.Join(vardir, d), 0o755); err != nil {
			return err
		}
	}
	link := filepath.Join(vardir, "std_data")
	if _, err := os.Lstat(link); err == nil {
		return nil
	}
	return os.Symlink(filepath.Join(env.MtrDir, "std_data"), link)
}

// writeClientCnf writes the options file mtr gives every client: the
// primary as the default and as group .1, the slave as group .2.
func writeClientCnf(path string, primary, slave *sandbox.Server) error {
	var b strings.Builder
	server := func(group string, s *sandbox.Server) {
		fmt.Fprintf(&b, "[%s]\nuser=root\npassword=\nhost=localhost\nport=%d\nsocket=%s\n\n", group, s.Port, s.Socket)
	}
	server("client", primary)
	server("client.1", primary)
	if slave != nil {
		server("client.2", slave)
	}
	for _, g := range []string{"mysql", "mysqlshow", "mysqlimport", "mysqlcheck", "mysql_upgrade"} {
		fmt.Fprintf(&b, "[%s]\ndefault-character-set=latin1\n\n", g)
	}
	b.WriteString("[mysqltest]\nloose-skip-ssl\n\n[mysqlslap]\nloose-skip-ssl\n\n[mysqlbinlog]\ndisable-force-if-open\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// mysqltestEnv is the environment mtr sets for a test (mariadb-test-run.pl,
// environment_setup and run_testcase), for the variables tests use.
func mysqltestEnv(env mtrEnv, vardir, cnf string, primary, slave *sandbox.Server, format string) []string {
	client := func(prog string, more ...string) string {
		return strings.Join(append([]string{prog, "--defaults-file=" + cnf}, more...), " ")
	}
	vars := map[string]string{
		"MYSQL_TEST_DIR":          env.MtrDir,
		"MYSQLTEST_VARDIR":        vardir,
		"MYSQLTEST_REAL_VARDIR":   vardir,
		"MYSQL_TMP_DIR":           filepath.Join(vardir, "tmp"),
		"MYSQL_BINDIR":            "/usr",
		"MYSQL_SHAREDIR":          env.ShareDir,
		"MYSQL_CHARSETSDIR":       filepath.Join(env.ShareDir, "charsets"),
		"SECURE_LOAD_PATH":        filepath.Join(env.MtrDir, "std_data"),
		"MTR_SUITE_DIR":           "",
		"MASTER_MYPORT":           strconv.Itoa(primary.Port),
		"MASTER_MYSOCK":           primary.Socket,
		"SERVER_MYPORT_1":         strconv.Itoa(primary.Port),
		"SERVER_MYSOCK_1":         primary.Socket,
		"DEFAULT_MASTER_PORT":     strconv.Itoa(primary.Port),
		"MARIADB_TOPDIR":          primary.DataDir,
		"MARIADB_DATADIR":         primary.DataDir,
		"MYSQL":                   client("mariadb"),
		"EXE_MYSQL":               "mariadb",
		"MYSQL_DUMP":              client("mariadb-dump", "--defaults-group-suffix=.1", "--compact"),
		"MYSQL_BINLOG":            client("mariadb-binlog", "--local-load="+filepath.Join(vardir, "tmp")),
		"MYSQL_CHECK":             client("mariadb-check"),
		"MYSQL_IMPORT":            client("mariadb-import"),
		"MYSQL_SHOW":              client("mariadb-show"),
		"MYSQL_SLAP":              client("mariadb-slap"),
		"MYSQLADMIN":              client("mariadb-admin"),
		"MYSQL_UPGRADE":           client("mariadb-upgrade"),
		"MYSQL_TZINFO_TO_SQL":     "mariadb-tzinfo-to-sql",
		"MYSQL_MY_PRINT_DEFAULTS": "my_print_defaults",
		"MY_PERROR":               "perror",
		"MARIADB_CONV":            "mariadb-conv --character-sets-dir=" + filepath.Join(env.ShareDir, "charsets"),
		"MYSQLD":                  env.Mariadbd,
		"MYSQL_TEST":              client(env.Mysqltest),
		"LC_ALL":                  "C",
		"LC_CTYPE":                "C",
		"LC_COLLATE":              "C",
		"MTR_COMBINATIONS":        binlogFormats[format].combination,
		"MTR_COMBINATION_" + strings.ToUpper(binlogFormats[format].combination): "1",
	}
	if slave != nil {
		for k, v := range map[string]string{
			"SLAVE_MYPORT": strconv.Itoa(slave.Port), "SLAVE_MYSOCK": slave.Socket,
			"SERVER_MYPORT_2": strconv.Itoa(slave.Port), "SERVER_MYSOCK_2": slave.Socket,
			"MYSQL_SLAVE":      client("mariadb", "--defaults-group-suffix=.2"),
			"MYSQL_DUMP_SLAVE": client("mariadb-dump", "--defaults-group-suffix=.2", "--compact"),
		} {
			vars[k] = v
		}
	}
	out := os.Environ()
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// runMysqltest runs the case's test file on the primary. A test that runs
// past timeout is ended; the binlog it left still counts.
func runMysqltest(ctx context.Context, env mtrEnv, files caseFiles, vardir string, primary, slave *sandbox.Server, format string, timeout time.Duration) testRun {
	run := testRun{Log: filepath.Join(vardir, "log", "mysqltest.log")}
	cnf := filepath.Join(vardir, "my.cnf")
	if err := writeClientCnf(cnf, primary, slave); err != nil {
		return testRun{Status: testFailed, Detail: err.Error(), Log: run.Log}
	}
	// A rewritten test runs from a copy in the vardir (see keepHistory); its
	// includes are found through --suite-dir, the mysql-test directory, and
	// absolute paths for the files beside the original.
	testFile := files.TestFile
	if files.Rewritten {
		testFile = filepath.Join(vardir, filepath.Base(files.TestFile))
		if err := os.WriteFile(testFile, []byte(files.Text), 0o644); err != nil {
			return testRun{Status: testFailed, Detail: err.Error(), Log: run.Log}
		}
	}
	args := []string{
		"--defaults-file=" + cnf,
		"--silent",
		"--tmpdir=" + filepath.Join(vardir, "tmp"),
		"--character-sets-dir=" + filepath.Join(env.ShareDir, "charsets"),
		"--logdir=" + filepath.Join(vardir, "log"),
		"--database=test",
		"--suite-dir=" + files.SuiteDir + "/",
		"--test-file=" + testFile,
		"--tail-lines=20",
		"--max-connect-retries=50",
	}
	envVars := mysqltestEnv(env, vardir, cnf, primary, slave, format)
	envVars = append(envVars, "MTR_SUITE_DIR="+files.SuiteDir)
	began := time.Now()
	out, err := runLogged(ctx, env.Mysqltest, args, envVars, env.MtrDir, run.Log, timeout)
	run.Seconds = time.Since(began).Seconds()
	switch {
	case errors.Is(err, errTimedOut):
		run.Status, run.Detail = testTimeout, fmt.Sprintf("ended after %s", timeout)
	case err == nil:
		run.Status = testPassed
	default:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 62 {
			run.Status, run.Detail = testSkipped, skipReason(out)
		} else {
			run.Status, run.Detail = testFailed, lastLines(out, 3)
		}
	}
	return run
}

var skipLine = regexp.MustCompile(`(?m)^(?:.*?: )?(?:skipped|Skipped)?:?\s*(.*)$`)

// skipReason is what mariadb-test printed when the test skipped itself.
func skipReason(out string) string {
	last := lastLines(out, 1)
	if m := skipLine.FindStringSubmatch(last); m != nil && m[1] != "" {
		return strings.TrimSpace(m[1])
	}
	return last
}

var errTimedOut = errors.New("timed out")

// runLogged runs a program in its own process group with its output in
// logPath, ending the group (SIGTERM, then SIGKILL after 5 s) at timeout.
// It returns the output and the error of the run, errTimedOut at timeout.
func runLogged(ctx context.Context, prog string, args, env []string, dir, logPath string, timeout time.Duration) (string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s %s\n", prog, strings.Join(args, " "))
	cmd := exec.Command(prog, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", prog, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var runErr error
	select {
	case runErr = <-done:
	case <-timer.C:
		_ = endGroup(cmd, done)
		runErr = errTimedOut
	case <-ctx.Done():
		_ = endGroup(cmd, done)
		runErr = ctx.Err()
	}
	b, _ := os.ReadFile(logPath)
	return string(b), runErr
}

// endGroup stops a process group started by runLogged: SIGTERM, SIGKILL
// after 5 s; it returns the process's wait error.
func endGroup(cmd *exec.Cmd, done chan error) error {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-done
	}
}

// runMysqltestFile runs a mysqltest-format SQL file (mtr's bootstrap files)
// on srv; its log goes under logDir.
func runMysqltestFile(ctx context.Context, env mtrEnv, srv *sandbox.Server, file, logDir string) error {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	args := []string{"--no-defaults", "--user=root", "--socket=" + srv.Socket, "--silent", "--database=mysql",
		"--logdir=" + logDir, "--tmpdir=" + logDir, "--test-file=" + file}
	logPath := filepath.Join(logDir, filepath.Base(file)+".log")
	if _, err := runLogged(ctx, env.Mysqltest, args, os.Environ(), env.MtrDir, logPath, 2*time.Minute); err != nil {
		return fmt.Errorf("mariadb-test --test-file=%s: %w (log %s)", file, err, logPath)
	}
	return nil
}

// lastLines is the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var keep []string
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}
