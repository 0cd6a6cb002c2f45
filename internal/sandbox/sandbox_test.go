package sandbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dsnFromURL turns mysql://user:pass@host:port into a go-sql-driver TCP DSN.
func dsnFromURL(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parsing %q: %v", raw, err)
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)/", u.User.Username(), pass, u.Host)
}

func openURL(t *testing.T, raw string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsnFromURL(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(0)
	return db
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.String
}

func TestSandbox(t *testing.T) {
	RequireMariaDB(t)
	ctx := context.Background()
	dir := t.TempDir()
	t.Cleanup(func() { _ = Down(dir) })

	began := time.Now()
	sb, err := Up(ctx, Options{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Up took %s", time.Since(began))
	if sb.Primary.Port == sb.Target.Port {
		t.Fatalf("primary and target share port %d", sb.Primary.Port)
	}
	if sb.Primary.ServerID() == sb.Target.ServerID() {
		t.Fatalf("primary and target share server_id %d", sb.Primary.ServerID())
	}

	source := openURL(t, sb.SourceURL)
	for q, want := range map[string]string{
		"SELECT @@log_bin":             "1",
		"SELECT @@binlog_format":       "ROW",
		"SELECT @@binlog_row_image":    "FULL",
		"SELECT @@binlog_row_metadata": "FULL",
		"SELECT @@gtid_strict_mode":    "1",
		"SELECT @@log_slave_updates":   "1",
		"SELECT @@gtid_domain_id":      "0",
		"SELECT @@binlog_checksum":     "CRC32",
		"SELECT @@sync_binlog":         "0",
		"SELECT @@gtid_binlog_pos":     "",
		"SELECT @@bind_address":        "127.0.0.1",
		"SELECT CURRENT_USER()":        "repl@%",
	} {
		if got := queryString(t, source, q); got != want {
			t.Errorf("primary %s = %q, want %q", q, got, want)
		}
	}
	rows, err := source.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatalf("repl user cannot SHOW MASTER STATUS: %v", err)
	}
	rows.Close()
	if _, err := source.Exec("SHOW BINARY LOGS"); err != nil {
		t.Fatalf("repl user cannot SHOW BINARY LOGS: %v", err)
	}

	if err := sb.Primary.Exec(ctx, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO app.t VALUES (1, 'a')"); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, source, "SELECT v FROM app.t WHERE id=1"); got != "a" {
		t.Errorf("repl user reads %q from app.t, want a", got)
	}
	if got := queryString(t, source, "SELECT @@gtid_binlog_pos"); got != fmt.Sprintf("0-%d-3", sb.Primary.ServerID()) {
		t.Errorf("primary gtid_binlog_pos = %q after three statements", got)
	}

	target := openURL(t, sb.TargetURL)
	if got := queryString(t, target, "SELECT @@log_bin"); got != "1" {
		t.Errorf("target log_bin = %q, want 1", got)
	}
	conn, err := target.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"SET SESSION gtid_domain_id=0",
		fmt.Sprintf("SET SESSION server_id=%d", sb.Primary.ServerID()),
		"SET SESSION gtid_seq_no=3",
		"CREATE DATABASE app",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("gapless user on target: %s: %v", stmt, err)
		}
	}
	conn.Close()
	if got := queryString(t, target, "SELECT @@gtid_binlog_pos"); got != fmt.Sprintf("0-%d-3", sb.Primary.ServerID()) {
		t.Errorf("target gtid_binlog_pos = %q after applying as the primary's GTID 3", got)
	}

	again, err := Up(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("Up on a running sandbox: %v", err)
	}
	if again.SourceURL != sb.SourceURL || again.TargetURL != sb.TargetURL {
		t.Errorf("Up on a running sandbox moved it: %s %s, was %s %s", again.SourceURL, again.TargetURL, sb.SourceURL, sb.TargetURL)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.SourceURL != sb.SourceURL || !loaded.Running() {
		t.Errorf("Load gave %s (running %v), want %s running", loaded.SourceURL, loaded.Running(), sb.SourceURL)
	}

	if err := sb.Target.Stop(); err != nil {
		t.Fatal(err)
	}
	if sb.Target.Running() {
		t.Fatal("target still running after Stop")
	}
	if err := target.Ping(); err == nil {
		t.Error("target answers after Stop")
	}
	if err := sb.Target.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, target, "SELECT @@gtid_binlog_pos"); got != fmt.Sprintf("0-%d-3", sb.Primary.ServerID()) {
		t.Errorf("target gtid_binlog_pos = %q after restart", got)
	}

	if err := sb.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if sb.Primary.Running() {
		t.Fatal("primary still running after Kill")
	}
	if err := sb.Primary.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, source, "SELECT v FROM app.t WHERE id=1"); got != "a" {
		t.Errorf("after crash and restart the primary reads %q, want a", got)
	}

	if err := Down(dir); err != nil {
		t.Fatal(err)
	}
	if sb.Primary.Running() || sb.Target.Running() {
		t.Fatal("servers still running after Down")
	}
	if err := Down(dir); err != nil {
		t.Errorf("Down with nothing running: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "primary", "data", "app")); err != nil {
		t.Errorf("Down lost the primary's datadir: %v", err)
	}

	began = time.Now()
	restarted, err := Up(ctx, Options{Dir: dir, Fast: true})
	if err != nil {
		t.Fatalf("Up after Down: %v", err)
	}
	t.Logf("Up on stopped datadirs took %s", time.Since(began))
	if restarted.SourceURL != sb.SourceURL || restarted.TargetURL != sb.TargetURL {
		t.Errorf("Up after Down moved the sandbox: %s %s, was %s %s", restarted.SourceURL, restarted.TargetURL, sb.SourceURL, sb.TargetURL)
	}
	if got := queryString(t, source, "SELECT v FROM app.t WHERE id=1"); got != "a" {
		t.Errorf("after Down and Up the primary reads %q, want a", got)
	}

	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Remove left %s behind (%v)", dir, err)
	}
}

func TestLoadWithoutSandbox(t *testing.T) {
	_, err := Load(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no sandbox") {
		t.Fatalf("Load of an empty dir = %v, want a no-sandbox error", err)
	}
	if err := Down(t.TempDir()); err != nil {
		t.Errorf("Down of an empty dir: %v", err)
	}
}

func TestRemoveRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir); err == nil {
		t.Fatal("Remove deleted a dir without a sandbox state file")
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestLongDirMovesSocket(t *testing.T) {
	home := "/" + strings.Repeat("d", 120) + "/primary"
	p := socketPath(home)
	if len(p) > maxSocketPath {
		t.Fatalf("socket path %q is %d bytes", p, len(p))
	}
	if p != socketPath(home) {
		t.Fatal("socket path is not stable")
	}
}

func TestMissingMariaDBSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := fallbackDirs
	fallbackDirs = nil
	t.Cleanup(func() { fallbackDirs = saved })

	_, err := Up(context.Background(), Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrMariaDBNotFound) {
		t.Fatalf("Up without MariaDB = %v, want ErrMariaDBNotFound", err)
	}
	for _, want := range []string{"mariadbd", "mariadb-server", "mariadb-client"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestStartServerMovesOffATakenPort(t *testing.T) {
	RequireMariaDB(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	s, err := newServer(ServerConfig{Name: "stmt", Dir: t.TempDir(), BinlogFormat: "STATEMENT", Binlog: true, Extra: []string{"binlog_commit_wait_count=16"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Port, s.portChosen = takenPort, true
	t.Cleanup(func() { _ = s.Kill() })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Port == takenPort {
		t.Fatalf("server claims taken port %d", takenPort)
	}
	db := openURL(t, s.URL(ApplierUser, ApplierPassword))
	for q, want := range map[string]string{
		"SELECT @@binlog_format":                  "STATEMENT",
		"SELECT @@binlog_commit_wait_count":       "16",
		"SELECT @@port":                           fmt.Sprint(s.Port),
		"SELECT @@innodb_flush_log_at_trx_commit": "2",
	} {
		if got := queryString(t, db, q); got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
}

// A server that starts but cannot be set up (here --skip-grant-tables,
// which refuses CREATE USER, as a mysql-test case's options may) is not
// left running: the error is the caller's only handle on it.
func TestStartServerStopsAServerItCannotSetUp(t *testing.T) {
	RequireMariaDB(t)
	s, err := newServer(ServerConfig{Name: "nogrants", Dir: t.TempDir(), Extra: []string{"skip-grant-tables"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	err = s.Start(context.Background())
	if err == nil {
		t.Fatal("started a server with skip-grant-tables, whose accounts cannot be made")
	}
	if pid, running := s.runningPid(); running {
		t.Errorf("the server (pid %d) still runs after its start failed: %v", pid, err)
	}
}
