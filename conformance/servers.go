// This file owns the MariaDB servers of a conformance run. Every server
// starts from a copy of one template datadir, bootstrapped as mtr
// bootstraps its own (the test and mtr databases, the time zone tables mtr
// loads, no binlog history), and runs with mtr's default server options, so
// the primary, the throwaway slave and the three targets begin in the same
// state. Every server is registered so an error or an interrupt kills it.
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gapless/internal/sandbox"
)

// templateRecipe changes whenever the template's bootstrap changes, so a
// cached template of an older recipe is rebuilt.
const templateRecipe = "conformance-template-3"

// mtrServerOptions are the settings of mtr's include/default_mysqld.cnf
// that change what a test writes or how a replica applies it, with the
// secure_file_priv check off (tests read and write files under their vardir).
// The memory settings are mtr's too, which keeps five servers a case small.
func mtrServerOptions() []string {
	return []string{
		"character_set_server=latin1",
		"secure_file_priv=",
		"local_infile=ON",
		"log_bin_trust_function_creators=1",
		"key_buffer_size=1M",
		"sort_buffer_size=256K",
		"max_heap_table_size=1M",
		"binlog_direct_non_transactional_updates=ON",
		"default_storage_engine=MyISAM",
		"use_stat_tables=preferably",
		"histogram_type=json_hb",
		"slave_net_timeout=120",
		"connect_timeout=60",
		"plugin_maturity=unknown",
		"loose-aria_pagecache_buffer_size=8M",
		"innodb_buffer_pool_size=32M",
		"innodb_log_file_size=16M",
		"innodb_log_buffer_size=2M",
		"loose-performance_schema=OFF",
		"event_scheduler=OFF",
	}
}

// fleet remembers the servers this process started, to kill them all on exit.
type fleet struct {
	mu      sync.Mutex
	servers map[*sandbox.Server]bool
}

func newFleet() *fleet { return &fleet{servers: map[*sandbox.Server]bool{}} }

// start starts a server from a copy of the template datadir (when template
// is not "") and registers it. A first failed start is tried once more:
// the sandbox may mistake a starting mariadbd for one that exited.
func (f *fleet) start(ctx context.Context, cfg sandbox.ServerConfig, template string) (*sandbox.Server, error) {
	if template != "" {
		if err := copyDatadir(ctx, template, filepath.Join(cfg.Dir, cfg.Name, "data")); err != nil {
			return nil, err
		}
	}
	pidFile := filepath.Join(cfg.Dir, cfg.Name, "mariadbd.pid")
	sctx, cancel := context.WithTimeout(ctx, serverStartLimit)
	defer cancel()
	srv, err := sandbox.StartServer(sctx, cfg)
	if err != nil && sctx.Err() == nil && !strings.Contains(err.Error(), "[ERROR]") {
		waitForFile(sctx, pidFile, 10*time.Second)
		var again error
		if srv, again = sandbox.StartServer(sctx, cfg); again == nil {
			err = nil
		}
	}
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		// Not ready in time: the server may run still, and no case owns it.
		killPidFile(pidFile)
		err = fmt.Errorf("not ready within %s: %w", serverStartLimit, err)
	}
	if err != nil {
		return nil, fmt.Errorf("starting server %s in %s: %w", cfg.Name, cfg.Dir, err)
	}
	f.mu.Lock()
	f.servers[srv] = true
	f.mu.Unlock()
	return srv, nil
}

// serverStartLimit bounds starting one server, its readiness and accounts
// included: one that accepts a connection and never answers
// (--thread-handling=no-threads, whose one thread the start's first
// connection holds) must not hold the run forever.
const serverStartLimit = 3 * time.Minute

// killPidFile kills the process whose pid the file holds, if any.
func killPidFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func waitForFile(ctx context.Context, path string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill ends a server at once and forgets it.
func (f *fleet) kill(srv *sandbox.Server) {
	if srv == nil {
		return
	}
	f.mu.Lock()
	delete(f.servers, srv)
	f.mu.Unlock()
	if err := srv.Kill(); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: killing %s: %v\n", srv.Config.Name, err)
	}
}

// forget leaves a server running past the end of the run (--keep-failed).
func (f *fleet) forget(srv *sandbox.Server) {
	f.mu.Lock()
	delete(f.servers, srv)
	f.mu.Unlock()
}

func (f *fleet) killAll() {
	f.mu.Lock()
	servers := make([]*sandbox.Server, 0, len(f.servers))
	for s := range f.servers {
		servers = append(servers, s)
	}
	f.servers = map[*sandbox.Server]bool{}
	f.mu.Unlock()
	for _, s := range servers {
		_ = s.Kill()
	}
}

// copyDatadir copies a stopped server's datadir to dst, which must not exist.
func copyDatadir(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copying datadir: %w", err)
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copying datadir %s to %s: %w: %s", src, dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ensureTemplate returns the datadir every server of the run is copied
// from, building it under workDir/template unless a complete one of this
// recipe and this server version is there already.
func ensureTemplate(ctx context.Context, f *fleet, env mtrEnv, workDir string) (string, error) {
	dir := filepath.Join(workDir, "template")
	datadir := filepath.Join(dir, "tpl", "data")
	stamp := filepath.Join(dir, "ready")
	want := templateRecipe + " " + env.ServerVersion
	// Runs sharing a work folder take turns: the first builds, the others reuse.
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(workDir, "template.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("template lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("template lock: %w", err)
	}
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == want {
		return datadir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("removing the old template %s: %w", dir, err)
	}
	fmt.Printf("building the template datadir in %s (once per server version)\n", dir)
	srv, err := f.start(ctx, sandbox.ServerConfig{Name: "tpl", Dir: dir, ServerID: 1, Extra: mtrServerOptions()}, "")
	if err != nil {
		return "", fmt.Errorf("template server: %w", err)
	}
	defer f.kill(srv)
	// What mtr's bootstrap adds to a fresh install (mariadb-test-run.pl):
	// the time zone test data, the test and mtr databases, mtr's suppression
	// table and procedures, no anonymous accounts (the sandbox drops them).
	tz := filepath.Join(env.ShareDir, "mysql_test_data_timezone.sql")
	if err := runClientFile(ctx, srv, "mysql", tz); err != nil {
		return "", fmt.Errorf("template: loading %s: %w", tz, err)
	}
	if err := srv.Exec(ctx,
		"CREATE DATABASE IF NOT EXISTS test CHARACTER SET latin1 COLLATE latin1_swedish_ci",
		"CREATE DATABASE IF NOT EXISTS mtr CHARACTER SET latin1"); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	for _, file := range []string{"include/mtr_warnings.sql", "include/mtr_check.sql"} {
		b, err := os.ReadFile(filepath.Join(env.MtrDir, file))
		if err != nil {
			return "", fmt.Errorf("template: %w", err)
		}
		converted := filepath.Join(dir, filepath.Base(file))
		if err := os.WriteFile(converted, []byte(clientDelimiters(string(b))), 0o644); err != nil {
			return "", fmt.Errorf("template: %w", err)
		}
		if err := runClientFile(ctx, srv, "mtr", converted); err != nil {
			return "", fmt.Errorf("template: loading %s: %w", file, err)
		}
	}
	if err := srv.Stop(); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	f.forget(srv)
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	return datadir, nil
}

// runClientFile feeds a SQL file to the mariadb client as root on srv.
func runClientFile(ctx context.Context, srv *sandbox.Server, db, file string) error {
	in, err := os.Open(file)
	if err != nil {
		return err
	}
	defer in.Close()
	cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--user=root", "--socket="+srv.Socket, db)
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb < %s: %w: %s", file, err, lastLines(string(out), 5))
	}
	return nil
}

// caseServerConfig is the configuration of one server of a case: mtr's
// defaults, a binlog named as mtr names it (master-bin / slave-bin in the
// datadir, so tests that name binlog files find them), and extra lines.
func caseServerConfig(dir, name string, serverID uint32, format string, extra []string) sandbox.ServerConfig {
	opts := append(mtrServerOptions(), binlogFormats[format].options...)
	base := "master"
	if name == "mysqld.2" {
		// mtr's slave: tests write on it too, which gtid_strict_mode refuses.
		base = "slave"
		opts = append(opts, "gtid_strict_mode=OFF")
	}
	opts = append(opts,
		"log_bin="+base+"-bin", "log_bin_index="+base+"-bin.index", "relay_log="+base+"-relay-bin",
		"skip_slave_start", "slave_load_tmpdir="+filepath.Join(dir, name, "tmp"))
	opts = append(opts, extra...)
	return sandbox.ServerConfig{Name: name, Dir: dir, ServerID: serverID, Binlog: true, BinlogFormat: binlogFormats[format].binlog, Extra: opts}
}

// binlogFormat is one of the primary's binlog formats a run may take: the
// servers' binlog_format, the my.cnf lines beside it (before a test's own),
// and mtr's name for the combination, which tests read.
type binlogFormat struct {
	binlog, combination string
	options             []string
}

// binlogFormats are the --formats values. row-minimal is ROW with minimal
// row images (binlog_row_image=MINIMAL: a row's key and changed columns),
// row-noblob ROW without unchanged BLOB and TEXT columns
// (binlog_row_image=NOBLOB). The -compressed ones write compressed query
// and row events (log_bin_compress, down to 10 bytes so that nearly every
// event is compressed).
var binlogFormats = map[string]binlogFormat{
	"mixed":            {binlog: "MIXED", combination: "mix"},
	"row":              {binlog: "ROW", combination: "row"},
	"statement":        {binlog: "STATEMENT", combination: "stmt"},
	"row-minimal":      {binlog: "ROW", combination: "row", options: []string{"binlog_row_image=MINIMAL"}},
	"row-noblob":       {binlog: "ROW", combination: "row", options: []string{"binlog_row_image=NOBLOB"}},
	"mixed-compressed": {binlog: "MIXED", combination: "mix", options: compressedEvents},
	"row-compressed":   {binlog: "ROW", combination: "row", options: compressedEvents},
}

var compressedEvents = []string{"log_bin_compress=ON", "log_bin_compress_min_len=10"}

// binlogFormatNames lists the --formats values for messages.
func binlogFormatNames() string {
	names := slices.Sorted(maps.Keys(binlogFormats))
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// errServerOptions marks a primary that does not start with the options a
// test asks for: the case cannot run here.
var errServerOptions = errors.New("the server does not start with the test's options")

// clientDelimiters rewrites mysqltest's "delimiter X<old>" lines, as mtr's
// bootstrap files use them ("delimiter ||;"), into the mariadb client's
// "DELIMITER X", and drops lines that start with "--" as mtr does (some are
// not comments to the server: "--SELECT").
func clientDelimiters(sql string) string {
	delimiter := ";"
	var out []string
	for _, l := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--") {
			continue
		}
		if rest, ok := strings.CutPrefix(t, "delimiter "); ok {
			next := strings.TrimSuffix(strings.TrimSpace(rest), delimiter)
			out = append(out, "DELIMITER "+next)
			delimiter = next
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
