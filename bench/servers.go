// This file owns the MariaDB servers a benchmark starts: every one is
// registered so an error or an interrupt kills it, and a target is started
// from a copy of a template datadir that already holds the prepared tables
// (prepared.go).
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gapless/internal/sandbox"
)

// fleet remembers the servers this process started, to kill them all on exit.
type fleet struct {
	mu      sync.Mutex
	servers map[*sandbox.Server]bool
}

func newFleet() *fleet { return &fleet{servers: map[*sandbox.Server]bool{}} }

// start starts a server, and once more on the same datadir when the first
// start fails: sandbox.StartServer can report a mariadbd that is in fact
// starting as "exited during startup" (it reads the new process's
// /proc/PID/cmdline before the kernel has filled it in) and leaves it
// running; the second start adopts it once it has written its pid file.
func (f *fleet) start(ctx context.Context, cfg sandbox.ServerConfig) (*sandbox.Server, error) {
	srv, err := sandbox.StartServer(ctx, cfg)
	if err != nil {
		fmt.Printf("warning: starting server %s in %s: %s; starting it again\n", cfg.Name, cfg.Dir, strings.ReplaceAll(err.Error(), "\n", " | "))
		waitForFile(ctx, filepath.Join(cfg.Dir, cfg.Name, "mariadbd.pid"), 15*time.Second)
		var again error
		srv, again = sandbox.StartServer(ctx, cfg)
		err = errors.Join(err, again)
		if again == nil {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("starting server %s in %s: %w", cfg.Name, cfg.Dir, err)
	}
	f.mu.Lock()
	f.servers[srv] = true
	f.mu.Unlock()
	return srv, nil
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

// kill ends a server at once (its data is thrown away) and forgets it.
func (f *fleet) kill(srv *sandbox.Server) error {
	f.mu.Lock()
	delete(f.servers, srv)
	f.mu.Unlock()
	if err := srv.Kill(); err != nil {
		return fmt.Errorf("killing server %s: %w", srv.Config.Name, err)
	}
	return nil
}

// stop shuts a server down cleanly, so its datadir can be copied, and forgets it.
func (f *fleet) stop(srv *sandbox.Server) error {
	f.mu.Lock()
	delete(f.servers, srv)
	f.mu.Unlock()
	if err := srv.Stop(); err != nil {
		return fmt.Errorf("stopping server %s: %w", srv.Config.Name, err)
	}
	return nil
}

// forget leaves a server running past the end of the benchmark.
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
		if err := s.Kill(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: killing %s: %v\n", s.Config.Name, err)
		}
	}
}

// targetConfig is the one configuration every contender's target on a
// workload gets (the sandbox's, with the workload's TargetConf), but for
// durability and, with binlog false, log_slave_updates OFF (only MariaDB's
// replica reads it; gapless is told --no-target-binlog).
func targetConfig(dir string, w *workload, durable, binlog bool) sandbox.ServerConfig {
	cfg := sandbox.ServerConfig{Name: "target", Dir: dir, Binlog: true, Durable: durable, Extra: slices.Clone(w.TargetConf)}
	if !binlog {
		cfg.Extra = append(cfg.Extra, "log_slave_updates=OFF")
	}
	return cfg
}

// copyDatadir copies a stopped server's datadir to dst, which must not exist.
func copyDatadir(ctx context.Context, src, dst string) error {
	// cp copies into a folder that exists: a workload's primary left by an
	// interrupted run (--workdir) would then start as it was, with the
	// snapshot nested inside, and every contender would diverge alike.
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("copying datadir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copying datadir: %w", err)
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copying datadir %s to %s: %w: %s", src, dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// clientArgs are the mariadb client options that reach srv as root.
func clientArgs(srv *sandbox.Server) []string {
	return []string{"--no-defaults", "--user=root", "--socket=" + srv.Socket}
}

func queryString(ctx context.Context, db *sql.DB, query string) (string, error) {
	var s sql.NullString
	if err := db.QueryRowContext(ctx, query).Scan(&s); err != nil {
		return "", fmt.Errorf("%s: %w", query, err)
	}
	return s.String, nil
}

// rowAsMap reads the single row of a SHOW statement keyed by column name;
// an empty map when it returns no row.
func rowAsMap(ctx context.Context, db *sql.DB, query string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	out := map[string]string{}
	if !rows.Next() {
		return out, rows.Err()
	}
	values := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	for i, c := range cols {
		out[c] = values[i].String
	}
	return out, rows.Err()
}
