// This file owns a sandbox: a primary and a target server under one
// directory, described by Dir/sandbox.json. The state file is written before
// either server starts, so Down from any process finds every server Up may
// have left running.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// StateFile is the name of the file in a sandbox dir that describes it.
const StateFile = "sandbox.json"

// ErrNoSandbox is wrapped by Load when a directory holds no sandbox.
var ErrNoSandbox = errors.New("no sandbox")

// Options configure Up.
type Options struct {
	Dir                       string
	PrimaryPort, TargetPort   int  // 0 = the port of the previous run if free, else any free port
	Fast                      bool // innodb_flush_log_at_trx_commit=2, sync_binlog=0
	PrimaryExtra, TargetExtra []string
}

// Sandbox is a running (or stopped) primary and target.
type Sandbox struct {
	Dir             string
	Primary, Target *Server
	SourceURL       string // the primary, as the repl user
	TargetURL       string // the target, as the gapless user
}

type sandboxState struct {
	Primary serverState `json:"primary"`
	Target  serverState `json:"target"`
}

type serverState struct {
	Name         string   `json:"name"`
	Port         int      `json:"port"`
	ServerID     uint32   `json:"server_id,omitempty"`
	Binlog       bool     `json:"binlog"`
	BinlogFormat string   `json:"binlog_format,omitempty"`
	Durable      bool     `json:"durable"`
	Extra        []string `json:"extra,omitempty"`
}

// Up starts the primary and the target, both with binlogs so the target can
// feed further replicas. Servers of a sandbox already running in Dir are
// returned as they are; stopped ones are started again on their datadirs,
// with the settings in opts.
func Up(ctx context.Context, opts Options) (*Sandbox, error) {
	if _, err := findBinaries(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("sandbox: no directory given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: creating %s: %w", dir, err)
	}
	primary, err := newServer(ServerConfig{Name: "primary", Dir: dir, Port: opts.PrimaryPort, Binlog: true, Durable: !opts.Fast, Extra: opts.PrimaryExtra})
	if err != nil {
		return nil, err
	}
	target, err := newServer(ServerConfig{Name: "target", Dir: dir, Port: opts.TargetPort, Binlog: true, Durable: !opts.Fast, Extra: opts.TargetExtra})
	if err != nil {
		return nil, err
	}
	if opts.PrimaryPort != 0 && opts.PrimaryPort == opts.TargetPort {
		return nil, fmt.Errorf("sandbox: primary and target cannot share port %d", opts.PrimaryPort)
	}
	prev, err := Load(dir)
	if err != nil && !errors.Is(err, ErrNoSandbox) {
		return nil, err
	}
	for i, s := range []*Server{primary, target} {
		if !s.Running() {
			continue
		}
		if prev != nil {
			s.Config = []*Server{prev.Primary, prev.Target}[i].Config
		}
		running := s.portInMyCnf()
		if s.Port != 0 && s.Port != running {
			return nil, fmt.Errorf("sandbox: %s in %s is already running on port %d, not %d; run down first", s.Config.Name, dir, running, s.Port)
		}
		s.Port = running
	}
	if err := primary.choosePort(target.Port); err != nil {
		return nil, err
	}
	if err := target.choosePort(primary.Port); err != nil {
		return nil, err
	}
	primary.avoidPort, target.avoidPort = target.Port, primary.Port

	sb := newSandbox(dir, primary, target)
	if err := sb.save(); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*Server{primary, target} {
		wg.Go(func() { errs[i] = s.Start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w\n(stop whatever did start with Down(%q))", err, dir)
	}
	// A server may have moved to another port if its chosen one was taken.
	sb = newSandbox(dir, primary, target)
	if err := sb.save(); err != nil {
		return nil, err
	}
	return sb, nil
}

func newSandbox(dir string, primary, target *Server) *Sandbox {
	return &Sandbox{
		Dir:       dir,
		Primary:   primary,
		Target:    target,
		SourceURL: primary.URL(ReplUser, ReplPassword),
		TargetURL: target.URL(ApplierUser, ApplierPassword),
	}
}

func (sb *Sandbox) save() error {
	st := sandboxState{Primary: stateOf(sb.Primary), Target: stateOf(sb.Target)}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	path := filepath.Join(sb.Dir, StateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("sandbox: writing state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sandbox: writing state: %w", err)
	}
	return nil
}

func stateOf(s *Server) serverState {
	c := s.Config
	return serverState{Name: c.Name, Port: s.Port, ServerID: c.ServerID, Binlog: c.Binlog, BinlogFormat: c.BinlogFormat, Durable: c.Durable, Extra: c.Extra}
}

// Load describes the sandbox in dir from its state file, running or not.
func Load(dir string) (*Sandbox, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	path := filepath.Join(abs, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (%s is missing); start one with `gapless sandbox up --dir %s`", ErrNoSandbox, abs, StateFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading state: %w", err)
	}
	var st sandboxState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("sandbox: %s is corrupt: %w", path, err)
	}
	servers := make([]*Server, 2)
	for i, ss := range []serverState{st.Primary, st.Target} {
		s, err := newServer(ServerConfig{Name: ss.Name, Dir: abs, Port: ss.Port, ServerID: ss.ServerID, Binlog: ss.Binlog, BinlogFormat: ss.BinlogFormat, Durable: ss.Durable, Extra: ss.Extra})
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s is corrupt: %w", path, err)
		}
		servers[i] = s
	}
	return newSandbox(abs, servers[0], servers[1]), nil
}

// Running reports whether both servers are running.
func (sb *Sandbox) Running() bool { return sb.Primary.Running() && sb.Target.Running() }

// Stop shuts both servers down cleanly and keeps their datadirs.
func (sb *Sandbox) Stop() error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*Server{sb.Primary, sb.Target} {
		wg.Go(func() { errs[i] = s.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Down shuts down the servers of the sandbox in dir and keeps the datadirs.
// A dir with no sandbox or nothing running is not an error.
func Down(dir string) error {
	sb, err := Load(dir)
	if errors.Is(err, ErrNoSandbox) {
		return nil
	}
	if err != nil {
		return err
	}
	return sb.Stop()
}

// Remove runs Down and then deletes dir. It refuses to delete a non-empty dir
// that holds no sandbox state file.
func Remove(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if _, err := os.Stat(filepath.Join(abs, StateFile)); err != nil && len(entries) > 0 {
		return fmt.Errorf("sandbox: refusing to delete %s: it holds no %s, so it may not be a sandbox", abs, StateFile)
	}
	if err := Down(abs); err != nil {
		return fmt.Errorf("%w\n(%s was not deleted)", err, abs)
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("sandbox: deleting %s: %w", abs, err)
	}
	return nil
}
