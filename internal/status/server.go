// server.go serves a running replica. A sampler takes a Snapshot of the run
// once a second and keeps it with a history of the last minutes; every
// request answers from the last sample and never reads the run itself, so a
// scrape or a page load answers while the run starts, stops or has failed,
// and never holds up a worker or a stop. POST /stop asks for the gap-less
// stop, as SIGTERM does, and returns at once.
package status

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gapless/internal/apply"
	"gapless/internal/binlog"
	"gapless/internal/target"
)

const (
	// SampleEvery is how often the run is sampled.
	SampleEvery = time.Second
	// HistoryLength is how much history the server keeps for the page.
	HistoryLength = 10 * time.Minute
	// ChainWindow is how far back the chains look.
	ChainWindow = 5 * time.Minute
)

// Options describe the run being served.
type Options struct {
	Stream      string
	Policy      string
	CommitOrder string
	Workers     int
	// Stop asks the run for its gap-less stop; it must not block.
	Stop func()
	// Stopping is closed when the run is asked to stop, by any means.
	Stopping <-chan struct{}
	// Target is the target's URL without its password, for /status.
	Target string
	// Secrets are taken out of every message served.
	Secrets []string
}

// Server serves one run.
type Server struct {
	opts     Options
	started  time.Time
	replica  atomic.Pointer[apply.Replica]
	listener net.Listener
	http     *http.Server
	metrics  http.Handler
	done     chan struct{}
	sampled  chan struct{} // closed after the first sample
	ended    chan struct{} // closed by Finish
	wg       sync.WaitGroup
	stopOnce sync.Once

	mu       sync.Mutex
	state    string
	last     *apply.Snapshot
	history  []Sample
	serials  []serialized // for the chains, one per 10 s
	lastErr  *Error
	finished bool
}

type serialized struct {
	at     time.Time
	counts map[string]int64
}

// ListenAddress is where --http ADDR listens: a bare port, or one with an
// empty host, is on the loopback interface; all interfaces only when the
// address says so (0.0.0.0:PORT, [::]:PORT).
func ListenAddress(addr string) (string, error) {
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %s: want PORT or HOST:PORT (e.g. 9104 or 127.0.0.1:9104)", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("--http %s: the port must be a number from 0 to 65535", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Start listens on addr (see ListenAddress) and serves until Close.
func Start(addr string, opts Options) (*Server, error) {
	listen, err := ListenAddress(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	s := newServer(opts)
	s.listener = ln
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.http.Serve(ln) }()
	go func() { defer s.wg.Done(); s.sample() }()
	return s, nil
}

func newServer(opts Options) *Server {
	s := &Server{opts: opts, started: time.Now(), state: "starting", done: make(chan struct{}), sampled: make(chan struct{}), ended: make(chan struct{})}
	s.metrics = newMetrics(s)
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Attach is apply.Config.Observe: the run to serve.
func (s *Server) Attach(r *apply.Replica) { s.replica.Store(r) }

// Finish records how the run ended, takes a last sample, and keeps serving
// until Close.
func (s *Server) Finish(res apply.Result, err error) {
	s.takeSample(time.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	defer close(s.ended)
	s.finished = true
	s.state = "stopped"
	if err != nil {
		s.state = "failed"
		e := &Error{Position: res.Position.String(), Error: Redact(err.Error(), s.opts.Secrets...), StoppedAt: time.Now().UTC()}
		if s.last != nil && e.Position == "" {
			e.Position = s.last.Position.String()
		}
		var ae *target.ApplyError
		var de *binlog.DecodeError
		switch {
		case errors.As(err, &ae):
			e.GTID = ae.GTID
		case errors.As(err, &de):
			e.GTID = de.GTID
		}
		s.lastErr = e
	}
}

// Close stops serving, letting requests in flight answer for up to a second.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.http.Shutdown(ctx) != nil {
		s.http.Close()
	}
	s.wg.Wait()
}

// sample takes a snapshot of the run every SampleEvery until Close.
func (s *Server) sample() {
	tick := time.NewTicker(SampleEvery)
	defer tick.Stop()
	s.takeSample(time.Now())
	close(s.sampled)
	for {
		select {
		case <-s.done:
			return
		case now := <-tick.C:
			s.takeSample(now)
		}
	}
}

func (s *Server) takeSample(now time.Time) {
	r := s.replica.Load()
	if r == nil {
		return
	}
	snap := r.Snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	prev := s.last
	s.last = &snap
	switch {
	case s.stopping():
		s.state = "stopping"
	case snap.Started:
		s.state = "running"
	}
	sample := Sample{At: now.UTC().Truncate(time.Millisecond), LagSeconds: snap.LagSeconds, Behind: snap.Behind}
	if prev != nil && snap.At.After(prev.At) {
		sample.AppliedPerSecond = float64(snap.Applied-prev.Applied) / snap.At.Sub(prev.At).Seconds()
	}
	s.history = append(s.history, sample)
	if keep := int(HistoryLength / SampleEvery); len(s.history) > keep {
		s.history = slices.Delete(s.history, 0, len(s.history)-keep)
	}
	if n := len(s.serials); n == 0 || now.Sub(s.serials[n-1].at) >= 10*time.Second {
		s.serials = append(s.serials, serialized{at: now, counts: snap.Serialized})
		for len(s.serials) > 1 && now.Sub(s.serials[1].at) >= ChainWindow {
			s.serials = s.serials[1:]
		}
	}
}

func (s *Server) stopping() bool {
	if s.opts.Stopping == nil {
		return false
	}
	select {
	case <-s.opts.Stopping:
		return true
	default:
		return false
	}
}

// Handler serves /, /status, /metrics and /stop.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", s.metrics)
	mux.HandleFunc("POST /stop", s.stop)
	return mux
}

//go:embed page.html
var page []byte

func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Write(page)
}

func (s *Server) status(w http.ResponseWriter, req *http.Request) {
	history, _ := strconv.Atoi(req.URL.Query().Get("history"))
	report := Report{Target: s.opts.Target, Streams: []Stream{s.Stream(time.Duration(history) * time.Second)}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(report)
}

// stop asks for the stop and answers at once with the state, or, with
// ?wait=SECONDS, once the run has ended (200) or that long has passed
// (202), whichever comes first.
func (s *Server) stop(w http.ResponseWriter, req *http.Request) {
	s.stopOnce.Do(func() {
		if s.opts.Stop != nil {
			s.opts.Stop()
		}
	})
	s.mu.Lock()
	if !s.finished {
		s.state = "stopping"
	}
	s.mu.Unlock()
	code := http.StatusAccepted
	if wait, _ := strconv.ParseFloat(req.URL.Query().Get("wait"), 64); wait > 0 {
		select {
		case <-s.ended:
		case <-time.After(time.Duration(wait * float64(time.Second))):
		case <-req.Context().Done():
		}
	}
	select {
	case <-s.ended:
		code = http.StatusOK
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(Report{Target: s.opts.Target, Streams: []Stream{s.Stream(0)}})
}

// Stream is the run's state as /status serves it, with the history of the
// last window (none for 0).
func (s *Server) Stream(window time.Duration) Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stream{Name: s.opts.Stream, State: s.state, Workers: []Worker{}, LastError: s.lastErr}
	st.Running = s.state == "starting" || s.state == "running" || s.state == "stopping"
	live := &Live{Policy: s.opts.Policy, CommitOrder: s.opts.CommitOrder, StartedAt: s.started.UTC(),
		Retries: map[string]int64{}, Conflicts: map[string]int64{}, Chains: []Chain{}}
	st.Live = live
	if n := len(s.history); n > 0 {
		live.AppliedPerSecond = s.history[n-1].AppliedPerSecond
		if window > 0 {
			from := max(0, n-int(window/SampleEvery))
			live.History = slices.Clone(s.history[from:])
		}
	}
	snap := s.last
	if snap == nil {
		return st
	}
	st.Position = snap.Position.String()
	st.SourcePosition = snap.ReceivedPosition.String()
	lag, behind := snap.LagSeconds, snap.Behind
	st.LagSeconds, st.BehindTransactions = &lag, &behind
	for _, w := range snap.Workers {
		st.Workers = append(st.Workers, Worker{Slot: w.Slot, State: string(w.State), GTID: w.GTID, Since: w.Since.UTC(),
			WaitingFor: w.WaitingFor, On: w.On, Transactions: w.Transactions, Bytes: w.Bytes})
	}
	live.Applied, live.AppliedBytes, live.Filtered, live.TargetTransactions = snap.Applied, snap.AppliedBytes, snap.Filtered, snap.Batches
	live.ReceivedTransactions, live.RelayLogBytes = snap.ReceivedTransactions, snap.RelayBytes
	live.QueuedTransactions, live.QueuedBytes, live.SourceConnected = snap.QueuedTransactions, snap.QueuedBytes, snap.SourceConnected
	live.TargetNode, live.TargetNodeSwitches = snap.TargetNode, snap.TargetSwitches
	if w := snap.TargetWait; w != nil {
		live.TargetWait = &TargetWait{Text: w.Text, Since: w.Since.UTC(), HolderConnection: w.Holder}
	}
	maps.Copy(live.Retries, snap.Retries)
	maps.Copy(live.Conflicts, snap.Conflicts)
	live.WatchdogKills = snap.WatchdogKills
	live.StatementTables = maps.Clone(snap.StatementTables)
	live.Chains = s.chainsLocked(snap.Serialized)
	return st
}

// chainsLocked lists the tables that serialized the most transactions
// within ChainWindow, most first, at most 10.
func (s *Server) chainsLocked(now map[string]int64) []Chain {
	var before map[string]int64
	if len(s.serials) > 0 {
		before = s.serials[0].counts
	}
	chains := []Chain{}
	for table, n := range now {
		if d := n - before[table]; d > 0 {
			chains = append(chains, Chain{Table: table, Transactions: d})
		}
	}
	slices.SortFunc(chains, func(a, b Chain) int {
		return cmp.Or(cmp.Compare(b.Transactions, a.Transactions), cmp.Compare(a.Table, b.Table))
	})
	return chains[:min(len(chains), 10)]
}

// ErrNotRunning says that no gapless replicate answers at an address.
var ErrNotRunning = errors.New("no gapless replicate answers there")
