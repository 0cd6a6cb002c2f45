// This file owns one sandbox mariadbd: its directory layout, its process and
// its accounts. A process counts as this server only when its command line
// names this server's my.cnf, so a stale pid file or a reused pid is never
// signalled, and a server started by another process is managed the same way
// as one started by this process.
package sandbox

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// Accounts created on every sandbox server.
const (
	ReplUser        = "repl"
	ReplPassword    = "repl"
	ApplierUser     = "gapless"
	ApplierPassword = "gapless"
)

// ReplPrivileges are what the repl account holds on *.*: enough to dump the
// binlog with GTID positioning, watch binlog and replica state, and read
// every table for comparisons.
const ReplPrivileges = "REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER ADMIN, SLAVE MONITOR, " +
	"SELECT, SHOW VIEW, SHOW DATABASES, RELOAD"

const (
	startTimeout = 60 * time.Second
	stopTimeout  = 60 * time.Second
	// maxSocketPath is the usable length of sun_path on Linux.
	maxSocketPath = 107
)

// ServerConfig describes one mariadbd started by the sandbox.
type ServerConfig struct {
	Name         string   // "primary", "target", anything; used in paths and messages
	Dir          string   // base directory; datadir is Dir/Name/data, socket, pid, error log, my.cnf under Dir/Name
	Port         int      // 0 = reuse the port of an earlier start if free, else choose a free loopback port
	ServerID     uint32   // 0 = derive from the port, so servers running side by side differ
	Binlog       bool     // log_bin, ROW format with FULL image and metadata, log_slave_updates, gtid_strict_mode
	BinlogFormat string   // overrides binlog_format when Binlog is true; "" = ROW
	Durable      bool     // true: innodb_flush_log_at_trx_commit=1, sync_binlog=1; false: 2 and 0
	Extra        []string // extra my.cnf lines for [mariadbd], e.g. "binlog_commit_wait_count=16"
	// Launcher is a command mariadbd starts under, with mariadbd and its
	// arguments appended; it must exec them, so the pid it starts with is
	// mariadbd's (the conformance runner gives a target a mount namespace
	// of its own this way). Nil = mariadbd starts directly.
	Launcher []string
	// User is the system user mariadbd runs as when started by root; ""
	// = root. A Galera node runs as mysql: its rsync state transfer
	// refuses root (galera.go).
	User string
	// Args are extra command-line arguments of this start only (a Galera
	// node's --wsrep-new-cluster).
	Args []string
	// NoAccounts leaves the sandbox accounts alone at start: a node joining
	// a cluster gets them from the cluster (galera.go).
	NoAccounts bool
	// StartTimeout bounds the wait for connections at start (0: 60 s); a
	// Galera node copies its datadir from a donor first.
	StartTimeout time.Duration
}

// Server is one sandbox mariadbd. Its methods are not safe for concurrent use.
type Server struct {
	Config   ServerConfig
	Port     int
	Socket   string
	DataDir  string
	PidFile  string
	ErrorLog string

	home       string
	logStart   int64 // the error log's size when the server was last launched
	cnfPath    string
	stdoutPath string
	// pid of the mariadbd this process started, known before the pid file is written.
	startedPid int
	// startedExit is closed when the mariadbd this process started exits.
	startedExit chan struct{}
	// portChosen is set when the sandbox picked the port, so it may pick
	// another if something takes it before mariadbd binds it.
	portChosen bool
	// avoidPort is a port a sibling server is about to take.
	avoidPort int
}

// StartServer initialises the datadir if it is empty, writes my.cnf, starts
// mariadbd detached in its own session, waits until it accepts connections
// and creates the sandbox accounts. If the server is already running it is
// left as is and returned once it answers.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func newServer(cfg ServerConfig) (*Server, error) {
	if cfg.Name == "" || strings.ContainsAny(cfg.Name, `/\`) {
		return nil, fmt.Errorf("sandbox server name %q must be non-empty and contain no path separator", cfg.Name)
	}
	if cfg.Dir == "" {
		return nil, fmt.Errorf("sandbox server %s: no base directory given", cfg.Name)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox server %s: %w", cfg.Name, err)
	}
	cfg.Dir = dir
	home := filepath.Join(dir, cfg.Name)
	return &Server{
		Config:     cfg,
		Port:       cfg.Port,
		Socket:     socketPath(home),
		DataDir:    filepath.Join(home, "data"),
		PidFile:    filepath.Join(home, "mariadbd.pid"),
		ErrorLog:   filepath.Join(home, "error.log"),
		home:       home,
		cnfPath:    filepath.Join(home, "my.cnf"),
		stdoutPath: filepath.Join(home, "mariadbd.out"),
	}, nil
}

// socketPath keeps the socket beside the datadir unless that path is too
// long for a unix socket; then it moves to the temp dir under a name derived
// from the server's home, so every start of the server agrees on it.
func socketPath(home string) string {
	p := filepath.Join(home, "mariadbd.sock")
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(home))
	return filepath.Join(os.TempDir(), "gapless-"+hex.EncodeToString(sum[:6])+".sock")
}

// runAs is the system user mariadbd runs as under root.
func (s *Server) runAs() string {
	if s.Config.User == "" {
		return "root"
	}
	return s.Config.User
}

// giveToUser makes the server's home the user's it runs as (User), and
// the folders above it within reach: a test's temporary folder is root's
// alone (0700).
func (s *Server) giveToUser() error {
	if s.Config.User == "" || os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(s.Config.User)
	if err != nil {
		return fmt.Errorf("sandbox server %s: the system user %s: %w", s.Config.Name, s.Config.User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.WalkDir(s.home, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("sandbox server %s: giving %s to %s: %w", s.Config.Name, s.home, s.Config.User, err)
	}
	for dir := filepath.Dir(s.home); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("sandbox server %s: opening %s to %s: %w", s.Config.Name, dir, s.Config.User, err)
			}
		}
	}
	return nil
}

// tmpDir is the server's own temporary directory: servers sharing /tmp
// remove each other's temporary files when they start.
func (s *Server) tmpDir() string { return filepath.Join(s.home, "tmp") }

func (s *Server) binlogBase() string { return filepath.Join(s.home, "binlog", "mariadb-bin") }

// ServerID is the server_id the server runs with.
func (s *Server) ServerID() uint32 {
	if s.Config.ServerID != 0 {
		return s.Config.ServerID
	}
	return uint32(s.Port)
}

// RootDSN is a go-sql-driver DSN for root over the unix socket.
func (s *Server) RootDSN(db string) string {
	return fmt.Sprintf("root@unix(%s)/%s?multiStatements=true&interpolateParams=false", s.Socket, db)
}

// URL is a mysql:// URL for user over loopback TCP.
func (s *Server) URL(user, password string) string {
	u := url.URL{Scheme: "mysql", User: url.UserPassword(user, password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))}
	return u.String()
}

// Open returns a pool of root connections over the unix socket.
func (s *Server) Open(db string) (*sql.DB, error) {
	return sql.Open("mysql", s.RootDSN(db))
}

// Running reports whether this server's mariadbd process is alive.
func (s *Server) Running() bool {
	_, ok := s.runningPid()
	return ok
}

// Pid is the running mariadbd's process id, 0 when it is not running.
func (s *Server) Pid() int {
	pid, _ := s.runningPid()
	return pid
}

// Start starts the server again after Stop or Kill, on the same datadir and
// port. It does nothing but wait for readiness if the server is running.
func (s *Server) Start(ctx context.Context) error {
	bin, err := findBinaries()
	if err != nil {
		return err
	}
	if _, running := s.runningPid(); running {
		port := s.portInMyCnf()
		if s.Port != 0 && port != 0 && port != s.Port {
			return fmt.Errorf("sandbox server %s is already running on port %d, not %d; stop it first", s.Config.Name, port, s.Port)
		}
		if port != 0 {
			s.Port = port
		}
		if err := s.waitReady(ctx); err != nil {
			return err
		}
		return s.ensureAccounts(ctx)
	}
	if err := s.choosePort(s.avoidPort); err != nil {
		return err
	}
	for _, d := range []string{s.home, s.tmpDir(), filepath.Dir(s.binlogBase())} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
		}
	}
	if err := s.giveToUser(); err != nil {
		return err
	}
	if err := s.initDataDir(ctx, bin.installDB); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := s.launchAndWait(ctx, bin.mariadbd)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || !s.portChosen || attempt == 3 {
			return err
		}
		s.Port = 0
		if err := s.choosePort(s.avoidPort); err != nil {
			return err
		}
	}
	if s.Config.NoAccounts {
		return nil
	}
	if err := s.ensureAccounts(ctx); err != nil {
		// A server this call started and cannot set up (a test's
		// --skip-grant-tables refuses CREATE USER) is not left running
		// with nobody to stop it.
		_ = s.Kill()
		return err
	}
	return nil
}

var errPortTaken = errors.New("port already in use")

func (s *Server) launchAndWait(ctx context.Context, mariadbd string) error {
	if err := s.writeMyCnf(); err != nil {
		return err
	}
	var logOffset int64
	if fi, err := os.Stat(s.ErrorLog); err == nil {
		logOffset = fi.Size()
	}
	s.logStart = logOffset
	if err := s.launch(mariadbd); err != nil {
		return err
	}
	err := s.waitReady(ctx)
	if err == nil {
		return nil
	}
	_ = s.Kill()
	if since, readErr := readFrom(s.ErrorLog, logOffset); readErr == nil && strings.Contains(since, "Address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

func readFrom(path string, offset int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	return string(b), err
}

// choosePort settles s.Port for a server that is not running: the requested
// port, else the port of the previous start if it is still free, else a free
// loopback port. avoid is a port another server is about to take.
func (s *Server) choosePort(avoid int) error {
	if s.Port != 0 {
		return nil
	}
	if p := s.portInMyCnf(); p != 0 && p != avoid && portFree(p) {
		s.Port = p
		s.portChosen = true
		return nil
	}
	for range 20 {
		p, err := freePort()
		if err != nil {
			return fmt.Errorf("sandbox server %s: choosing a free loopback port: %w", s.Config.Name, err)
		}
		if p != avoid {
			s.Port = p
			s.portChosen = true
			return nil
		}
	}
	return fmt.Errorf("sandbox server %s: no free loopback port found", s.Config.Name)
}

// freePort is a loopback port no one listens on, below the range the
// kernel gives the local end of outgoing connections: a server killed and
// started again binds its ports anew, and a port in that range may by
// then be the local end of some client's connection (the start then fails
// on "address in use"). From the kernel's choice when nothing below the
// range is free.
func freePort() (int, error) {
	low, high := belowEphemeral()
	for range 64 {
		if high <= low {
			break
		}
		p := low + rand.IntN(high-low)
		if portFree(p) {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// belowEphemeral is the range of ports freePort chooses from: the 16 384
// below the kernel's ephemeral range (ip_local_port_range), and not below
// 10 000, where services listen.
func belowEphemeral() (low, high int) {
	high = 32768 // the kernel's default start
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				high = v
			}
		}
	}
	return max(10000, high-16384), high
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func (s *Server) initDataDir(ctx context.Context, installDB string) error {
	if _, err := os.Stat(filepath.Join(s.DataDir, "mysql")); err == nil {
		return nil
	}
	if entries, err := os.ReadDir(s.DataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("sandbox server %s: %s is not empty but holds no initialised datadir (no mysql/ schema); remove it and start again", s.Config.Name, s.DataDir)
	}
	logPath := filepath.Join(s.home, "install-db.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer logFile.Close()
	args := []string{
		"--no-defaults",
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		"--datadir=" + s.DataDir,
		"--tmpdir=" + s.tmpDir(),
		"--innodb-log-file-size=256M",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user="+s.runAs())
	}
	cmd := exec.CommandContext(ctx, installDB, args...)
	cmd.Dir = s.home
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(s.DataDir)
		return fmt.Errorf("sandbox server %s: mariadb-install-db failed for %s: %w\n%s", s.Config.Name, s.DataDir, err, tailFile(logPath, 20))
	}
	return nil
}

func (s *Server) launch(mariadbd string) error {
	args := []string{"--defaults-file=" + s.cnfPath}
	if os.Geteuid() == 0 {
		args = append(args, "--user="+s.runAs())
	}
	args = append(args, s.Config.Args...)
	out, err := os.Create(s.stdoutPath)
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer out.Close()
	program := mariadbd
	if l := s.Config.Launcher; len(l) > 0 {
		program, args = l[0], append(append(l[1:len(l):len(l)], mariadbd), args...)
	}
	cmd := exec.Command(program, args...)
	cmd.Dir = s.home
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sandbox server %s: starting %s: %w", s.Config.Name, program, err)
	}
	s.startedPid = cmd.Process.Pid
	// Reap the child whenever it exits so it never lingers as a zombie, and
	// say so: right after the start its /proc cmdline may still read empty.
	exited := make(chan struct{})
	s.startedExit = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

func (s *Server) waitReady(ctx context.Context) error {
	limit := startTimeout
	if s.Config.StartTimeout > 0 {
		limit = s.Config.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	db, err := s.Open("")
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer db.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		pingCtx, cancelPing := context.WithTimeout(ctx, 2*time.Second)
		lastErr = db.PingContext(pingCtx)
		cancelPing()
		if lastErr == nil {
			return nil
		}
		if s.exitedDuringStart() {
			return fmt.Errorf("sandbox server %s exited during startup; error log %s ends with:\n%s", s.Config.Name, s.ErrorLog, s.startupLogs())
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("sandbox server %s did not accept connections on %s within %s (last error: %v); error log %s ends with:\n%s",
					s.Config.Name, s.Socket, limit, lastErr, s.ErrorLog, s.startupLogs())
			}
			return fmt.Errorf("sandbox server %s: waiting for startup: %w", s.Config.Name, ctx.Err())
		}
	}
}

func (s *Server) startupLogs() string {
	logs := tailFile(s.ErrorLog, 20)
	if since, err := readFrom(s.ErrorLog, s.logStart); err == nil {
		// What went wrong is often long before the last lines (a
		// cluster node's state transfer, then its shutdown).
		var errs []string
		for _, line := range strings.Split(since, "\n") {
			if strings.Contains(line, "[ERROR]") || strings.Contains(line, "WSREP_SST: [ERROR]") {
				errs = append(errs, line)
			}
		}
		if len(errs) > 15 {
			errs = errs[len(errs)-15:]
		}
		if len(errs) > 0 {
			logs = "errors logged since this start:\n" + strings.Join(errs, "\n") + "\nlast lines:\n" + logs
		}
	}
	if out := tailFile(s.stdoutPath, 10); out != "" {
		logs += "\n" + out
	}
	return logs
}

// ensureAccounts creates or resets the sandbox accounts without writing to
// the binlog, so a fresh server starts with an empty gtid_binlog_pos.
func (s *Server) ensureAccounts(ctx context.Context) error {
	if err := s.waitWsrepReady(ctx); err != nil {
		return err
	}
	db, err := s.Open("")
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer db.Close()
	stmts := []string{"SET SESSION sql_log_bin=0"}
	rows, err := db.QueryContext(ctx, "SELECT host FROM mysql.user WHERE user=''")
	if err != nil {
		return fmt.Errorf("sandbox server %s: listing anonymous accounts: %w", s.Config.Name, err)
	}
	for rows.Next() {
		var host string
		if err := rows.Scan(&host); err != nil {
			rows.Close()
			return fmt.Errorf("sandbox server %s: listing anonymous accounts: %w", s.Config.Name, err)
		}
		stmts = append(stmts, "DROP USER ''@"+quote(host))
	}
	rows.Close()

	account := func(user, password, privileges, grantSuffix string) {
		acct := quote(user) + "@'%'"
		stmts = append(stmts,
			"CREATE USER IF NOT EXISTS "+acct+" IDENTIFIED BY "+quote(password),
			"ALTER USER "+acct+" IDENTIFIED BY "+quote(password),
			"GRANT "+privileges+" ON *.* TO "+acct+grantSuffix,
		)
	}
	account(ReplUser, ReplPassword, ReplPrivileges, "")
	account(ApplierUser, ApplierPassword, "ALL PRIVILEGES", " WITH GRANT OPTION")
	// ALL PRIVILEGES leaves out PROXY: a GRANT PROXY from the source needs
	// its grantor to hold it (1698).
	stmts = append(stmts, "GRANT PROXY ON ''@'%' TO "+quote(ApplierUser)+"@'%' WITH GRANT OPTION")
	return s.Exec(ctx, stmts...)
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Exec runs statements in order as root on one connection.
func (s *Server) Exec(ctx context.Context, stmts ...string) error {
	db, err := s.Open("")
	if err != nil {
		return fmt.Errorf("sandbox server %s: %w", s.Config.Name, err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox server %s: connecting as root: %w", s.Config.Name, err)
	}
	defer conn.Close()
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sandbox server %s: %s: %w", s.Config.Name, abbreviate(stmt, 200), err)
		}
	}
	return nil
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Stop shuts the server down cleanly: SIGTERM, then up to 60 s for it to
// exit. Stopping a server that is not running is not an error.
func (s *Server) Stop() error {
	pid, ok := s.runningPid()
	if !ok {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sandbox server %s: stopping pid %d: %w", s.Config.Name, pid, err)
	}
	if !s.waitExit(pid, stopTimeout) {
		return fmt.Errorf("sandbox server %s (pid %d) did not shut down within %s; see %s, or Kill it", s.Config.Name, pid, stopTimeout, s.ErrorLog)
	}
	return nil
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to exit.
func (s *Server) Kill() error {
	pid, ok := s.runningPid()
	if !ok && s.startedExit != nil && !s.exitedDuringStart() {
		pid, ok = s.startedPid, true // started by this process, not yet readable in /proc
	}
	if !ok {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sandbox server %s: killing pid %d: %w", s.Config.Name, pid, err)
	}
	if !s.waitExit(pid, stopTimeout) {
		return fmt.Errorf("sandbox server %s (pid %d) still running %s after SIGKILL", s.Config.Name, pid, stopTimeout)
	}
	_ = os.Remove(s.PidFile)
	return nil
}

func (s *Server) waitExit(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.isThisServer(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// exitedDuringStart reports whether the server this process is starting has
// exited: from the child's own exit when this process started it, from the
// pid file otherwise.
func (s *Server) exitedDuringStart() bool {
	if s.startedExit != nil {
		select {
		case <-s.startedExit:
			return true
		default:
			return false
		}
	}
	return !s.Running()
}

func (s *Server) runningPid() (int, bool) {
	if b, err := os.ReadFile(s.PidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && s.isThisServer(pid) {
			return pid, true
		}
	}
	if s.startedPid != 0 && s.isThisServer(s.startedPid) {
		return s.startedPid, true
	}
	return 0, false
}

// isThisServer reports whether pid is a live (not zombie) process whose
// command line names this server's my.cnf.
func (s *Server) isThisServer(pid int) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		if _, procErr := os.Stat("/proc/self"); procErr != nil {
			return syscall.Kill(pid, 0) == nil
		}
		return false
	}
	want := "--defaults-file=" + s.cnfPath
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if arg == want {
			return true
		}
	}
	return false
}

// tailFile returns up to the last n lines of a file, or "" if it cannot be read.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 16 << 10
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-window, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
