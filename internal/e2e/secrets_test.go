// secrets_test.go runs replicate with each way of giving a password that
// keeps it off the command line (password file, ?password-file=, the
// per-side environment variables, an option file, the URL variables) and
// checks that neither the running process's command line (what ps shows)
// nor --help holds it, and that the run replicates.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

const (
	secretSourcePassword = "Src-Pw-7f3a9c"
	secretTargetPassword = "Tgt-Pw-2b8e41"
)

func TestPasswordsStayOutOfPsAndHelp(t *testing.T) {
	sb := upSandbox(t)
	// Accounts of their own, with passwords no other word of the command line contains.
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin=0",
		"CREATE USER 'sec_repl'@'%' IDENTIFIED BY '"+secretSourcePassword+"'",
		"GRANT "+sandbox.ReplPrivileges+" ON *.* TO 'sec_repl'@'%'")
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0",
		"CREATE USER 'sec_apply'@'%' IDENTIFIED BY '"+secretTargetPassword+"'",
		"GRANT ALL PRIVILEGES ON *.* TO 'sec_apply'@'%'")
	dir := t.TempDir()
	src := fmt.Sprintf("mysql://sec_repl@127.0.0.1:%d", sb.Primary.Port)
	tgt := fmt.Sprintf("mysql://sec_apply@127.0.0.1:%d", sb.Target.Port)
	srcPwFile := filepath.Join(dir, "source.pw")
	tgtPwFile := filepath.Join(dir, "target.pw")
	os.WriteFile(srcPwFile, []byte(secretSourcePassword+"\n"), 0o600)
	os.WriteFile(tgtPwFile, []byte(secretTargetPassword+"\n"), 0o600)
	srcCnf := filepath.Join(dir, "source.cnf")
	tgtCnf := filepath.Join(dir, "target.cnf")
	os.WriteFile(srcCnf, []byte(fmt.Sprintf("[client]\nuser=sec_repl\npassword=\"%s\"\nhost=127.0.0.1\nport=%d\n", secretSourcePassword, sb.Primary.Port)), 0o600)
	os.WriteFile(tgtCnf, []byte(fmt.Sprintf("[client-mariadb]\nuser = sec_apply\npassword = %s # the apply account\nhost=127.0.0.1\nport=%d\n", secretTargetPassword, sb.Target.Port)), 0o600)

	ways := []struct {
		name string
		env  []string
		args []string // server arguments of the command line
	}{
		{"password file flags", nil, []string{"--source", src, "--source-password-file", srcPwFile, "--target", tgt, "--target-password-file", tgtPwFile}},
		{"password-file URL parameter", nil, []string{"--source", src + "?password-file=" + srcPwFile, "--target", tgt + "?password-file=" + tgtPwFile}},
		{"password variables", []string{"GAPLESS_SOURCE_PASSWORD=" + secretSourcePassword, "GAPLESS_TARGET_PASSWORD=" + secretTargetPassword},
			[]string{"--source", src, "--target", tgt}},
		{"option files", nil, []string{"--source-defaults-file", srcCnf, "--target-defaults-file", tgtCnf}},
		{"URL variables", []string{
			fmt.Sprintf("GAPLESS_SOURCE=mysql://sec_repl:%s@127.0.0.1:%d", secretSourcePassword, sb.Primary.Port),
			fmt.Sprintf("GAPLESS_TARGET=mysql://sec_apply:%s@127.0.0.1:%d", secretTargetPassword, sb.Target.Port)}, nil},
	}
	for i, way := range ways {
		smallWorkload(t, sb, 100, int64(40+i))
		args := append([]string{"replicate", "--relay-dir", filepath.Join(dir, "relay"), "--progress", "0"}, way.args...)
		cmd, stderr, wait := startWithEnv(t, way.env, args...)
		waitApplied(t, sb, primaryPosition(t, sb), 60*time.Second, stderr)

		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		shown := strings.ReplaceAll(string(cmdline), "\x00", " ")
		t.Logf("%s: ps shows: %s", way.name, shown)
		for _, pw := range []string{secretSourcePassword, secretTargetPassword} {
			if strings.Contains(shown, pw) {
				t.Errorf("%s: the command line shows the password: %s", way.name, shown)
			}
		}
		help := gapless(t, way.env, append(args, "--help")...)
		if help.code != 0 || strings.Contains(help.stdout+help.stderr, "-Pw-") {
			t.Errorf("%s: --help exited %d or shows a password:\n%s%s", way.name, help.code, help.stdout, help.stderr)
		}
		r := stopAndRequireExit0(t, cmd.Process.Pid, wait)
		if strings.Contains(r.stdout+r.stderr, "-Pw-") {
			t.Errorf("%s: the output shows a password:\n%s%s", way.name, r.stdout, r.stderr)
		}
	}
	requireEqual(t, sb)
}
