// optionfile_test.go runs replicate as gapless@STREAM.service does, every
// setting from an option file: the command line holds --defaults-file alone,
// and neither it (what ps shows) nor the output holds a password; gapless
// stop and gapless status find the run from the same file; the log is JSON
// lines naming the stream.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/checkpoint"
	"gapless/internal/sandbox"
)

func TestEverySettingFromAnOptionFile(t *testing.T) {
	sb := upSandbox(t)
	mustExec(t, sb.Primary, "SET SESSION sql_log_bin=0",
		"CREATE USER 'opt_repl'@'%' IDENTIFIED BY '"+secretSourcePassword+"'",
		"GRANT "+sandbox.ReplPrivileges+" ON *.* TO 'opt_repl'@'%'")
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0",
		"CREATE USER 'opt_apply'@'%' IDENTIFIED BY '"+secretTargetPassword+"'",
		"GRANT ALL PRIVILEGES ON *.* TO 'opt_apply'@'%'")
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	common := filepath.Join(dir, "common.cnf")
	cnf := filepath.Join(dir, "e2eopt.cnf")
	writeFile(t, common, fmt.Sprintf("[gapless]\nworkers = 4\nprogress = 0\n"+
		"# the target's account as the [client] keys of an option file\n"+
		"[client]\nuser = opt_apply\npassword = %s\n", secretTargetPassword))
	writeFile(t, cnf, fmt.Sprintf("!include %s\n"+
		"[gapless]\nstream = e2eopt\n"+
		"source = mysql://opt_repl:%s@127.0.0.1:%d\n"+
		"target = mysql://127.0.0.1:%d\n"+
		"loose-a-flag-of-a-later-gapless = 1\n"+
		"[gapless-e2eopt]\nrelay_dir = %s\nhttp = %s\nlog-format = json\nverbose\npolicy = writeset\n",
		common, secretSourcePassword, sb.Primary.Port, sb.Target.Port, filepath.Join(dir, "relay"), addr))

	printed := gapless(t, nil, "replicate", "--defaults-file", cnf, "--print-defaults")
	if printed.code != 0 || strings.Contains(printed.stdout, "-Pw-") || !strings.Contains(printed.stdout, "--http="+addr) {
		t.Fatalf("--print-defaults exited %d, shows a password or not the file's http:\n%s%s", printed.code, printed.stdout, printed.stderr)
	}

	smallWorkload(t, sb, 200, 71)
	want := primaryPosition(t, sb)
	cmd, stderr, wait := background(t, "replicate", "--defaults-file", cnf)
	db := rootDB(t, sb.Target)
	deadline := time.Now().Add(60 * time.Second)
	for {
		pos, err := checkpoint.ForStream(db, "e2eopt").Position(t.Context())
		if err == nil && pos.Covers(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream e2eopt is at %v (%v) after 60 s, want %s\n%s", pos, err, want, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
	t.Logf("ps shows: %s", shown)
	if !strings.HasSuffix(shown, "replicate --defaults-file "+cnf) || strings.Contains(shown, "-Pw-") {
		t.Errorf("the command line holds more than --defaults-file, or a password: %s", shown)
	}

	status := gapless(t, nil, "status", "--defaults-file", cnf)
	if status.code != 0 || !strings.Contains(status.stdout, "e2eopt") || strings.Contains(status.stdout, "-Pw-") {
		t.Errorf("gapless status --defaults-file exited %d:\n%s%s", status.code, status.stdout, status.stderr)
	}
	stop := gapless(t, nil, "stop", "--defaults-file", cnf)
	if stop.code != 0 || !strings.Contains(stop.stdout, "stream e2eopt") {
		t.Errorf("gapless stop --defaults-file exited %d:\n%s%s", stop.code, stop.stdout, stop.stderr)
	}
	r := waitExit(t, cmd, wait, 30*time.Second, "replicate after gapless stop", stderr)
	if r.code != 0 {
		t.Fatalf("replicate exited %d after gapless stop\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "-Pw-") {
		t.Errorf("the output shows a password:\n%s%s", r.stdout, r.stderr)
	}
	logged := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.HasPrefix(line, "gapless: warning: ") {
			continue // said before the log begins
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry["stream"] != "e2eopt" {
			t.Errorf("a log line is not JSON naming the stream (%v): %s", err, line)
		}
		logged++
	}
	if logged == 0 {
		t.Errorf("no log line with verbose from the option file:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "a-flag-of-a-later-gapless") {
		t.Errorf("no warning for the loose- key:\n%s", r.stderr)
	}
	requireEqual(t, sb)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
