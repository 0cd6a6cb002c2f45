// This file owns the helpers other packages' tests use to get real servers.
// A missing MariaDB skips a test on a developer machine and fails it under
// CI=true, so CI never passes by skipping everything.
package sandbox

import (
	"context"
	"os"
	"testing"
)

// RequireMariaDB fails the test under CI=true and skips it otherwise when
// MariaDB is not installed.
func RequireMariaDB(t testing.TB) {
	t.Helper()
	require(t, CheckInstalled(), "MariaDB")
}

// require fails the test under CI=true and skips it otherwise when err
// says what is missing.
func require(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true requires %s for this test: %v", what, err)
	}
	t.Skipf("skipping: %v", err)
}

// UpForTest starts a sandbox for the test (in a fresh t.TempDir when
// opts.Dir is empty) and kills both servers when the test ends.
func UpForTest(t testing.TB, opts Options) *Sandbox {
	t.Helper()
	RequireMariaDB(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	sb, err := Up(context.Background(), opts)
	t.Cleanup(func() {
		if sb == nil {
			_ = Down(opts.Dir)
			return
		}
		if err := sb.Primary.Kill(); err != nil {
			t.Errorf("killing sandbox primary: %v", err)
		}
		if err := sb.Target.Kill(); err != nil {
			t.Errorf("killing sandbox target: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("starting sandbox: %v", err)
	}
	return sb
}

// StartForTest starts one server for the test (under a fresh t.TempDir when
// cfg.Dir is empty) and kills it when the test ends.
func StartForTest(t testing.TB, cfg ServerConfig) *Server {
	t.Helper()
	RequireMariaDB(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Name == "" {
		cfg.Name = "server"
	}
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Kill(); err != nil {
			t.Errorf("killing sandbox server %s: %v", s.Config.Name, err)
		}
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("starting sandbox server: %v", err)
	}
	return s
}

// RequireGalera is RequireMariaDB for Galera clusters: galera-4 and rsync
// besides MariaDB.
func RequireGalera(t testing.TB) {
	t.Helper()
	require(t, CheckGalera(), "MariaDB and Galera")
}

// ClusterForTest starts a Galera cluster for the test (under a fresh
// t.TempDir when cfg.Dir is empty) and kills its nodes when the test ends.
func ClusterForTest(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	RequireGalera(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := StartCluster(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting a Galera cluster: %v", err)
	}
	t.Cleanup(c.Kill)
	return c
}
