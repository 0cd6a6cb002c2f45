// This file owns the contenders: MariaDB's own replica, serial and in its
// three parallel modes (conservative, optimistic, aggressive), gapless with
// a policy and a worker count, and mariadb-binlog piped into the mariadb
// client. Each replays a recording onto a fresh target and
// reports its catch-up time: from its start to the last GTID applied.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gapless/internal/dburl"
	"gapless/internal/sandbox"
)

// contender is one way of bringing a target up to a recording's end.
type contender struct {
	ID    string // as given to --contenders
	Label string // as shown in tables and charts
	Kind  string // "mariadb", "gapless", "mariadb-binlog"
	// MariaDB replica settings.
	ParallelThreads int
	ParallelMode    string
	// gapless settings.
	Policy  string
	Workers int
	Binary  string // another gapless binary than --gapless, for comparing builds side by side
	// The target: durable or not, and whether the applied transactions go
	// to its binlog (log_slave_updates for MariaDB's replica,
	// --no-target-binlog for gapless, sql_log_bin for mariadb-binlog's pipe).
	Durable, TargetBinlog bool
	// Remote: gapless reaches the target through a delaying link of
	// linkRoundTrip (link.go), as an applier on another host would.
	Remote bool
	// Failover: on a cluster workload, the node gapless writes to is killed
	// with SIGKILL amid the run (cluster.go); the attempt then says how long
	// gapless took to commit again on another node.
	Failover bool
	variant  string // the target configuration's label, "" for the run's default
}

// variantWords name, after an id's slash, target configurations other than
// the run's default, the link to the target and the kill of a cluster's
// node, joined by dashes: gapless-writeset-N/fast-nobinlog-remote.
var variantWords = map[string]string{
	"durable":  "durable",
	"fast":     "non-durable",
	"nobinlog": "binlog off",
	"remote":   "1 ms link",
	"failover": "node killed",
}

// Variant is the contender's target configuration as a label part, "" for
// the run's default. The link and the kill are not part of it: a remote or
// failover contender is set beside MariaDB's replica on targets configured
// the same way.
func (c contender) Variant() string { return c.variant }

// applyVariant sets the target configuration and the link that v names.
func (c *contender) applyVariant(v string) error {
	var labels, config []string
	seen := map[string]bool{}
	for _, word := range strings.Split(v, "-") {
		label, known := variantWords[word]
		if !known || seen[word] || (word == "durable" && seen["fast"]) || (word == "fast" && seen["durable"]) {
			return fmt.Errorf("unknown target variant %q in %q: want dash-joined words, at most one of durable and fast, nobinlog, remote, failover", v, c.ID)
		}
		seen[word] = true
		labels = append(labels, label)
		switch word {
		case "durable", "fast":
			c.Durable = word == "durable"
		case "nobinlog":
			c.TargetBinlog = false
		case "remote":
			if c.Kind != "gapless" {
				return fmt.Errorf("%q: only gapless reaches its target over the link (remote)", c.ID)
			}
			c.Remote = true
			continue
		case "failover":
			if c.Kind != "gapless" {
				return fmt.Errorf("%q: only gapless moves to another node (failover)", c.ID)
			}
			c.Failover = true
			continue
		}
		config = append(config, label)
	}
	c.variant = strings.Join(config, ", ")
	c.Label += " [" + strings.Join(labels, ", ") + "]"
	return nil
}

// runEnv is what one contender run needs.
type runEnv struct {
	rec     *recording
	target  *sandbox.Server  // the target, or the cluster's node 1 (MariaDB's replica runs there)
	cluster *sandbox.Cluster // the target cluster of a cluster workload, else nil
	dir     string           // the run's own folder
	gapless string           // the gapless binary
	extra   []string         // more gapless flags, from --gapless-flags
}

// attempt is the outcome of one contender run.
type attempt struct {
	Seconds float64
	Err     error
	Equal   bool
	Detail  string // the differing tables when not equal
	Command string // how the contender was invoked, for reproduction
	// TargetCPU and ApplierCPU are the CPU seconds the target server and the
	// applier's own processes (gapless; mariadb-binlog and mariadb) used
	// during the run; 0 when unknown (MariaDB's replica runs inside the target).
	TargetCPU, ApplierCPU float64
	MachineBusy           float64 // share of all cores busy during the run, whoever used them
	LinkRoundTrip         float64 // seconds, a ping's median through a remote contender's link
	// LinkCPU is the CPU seconds the bench process used during a remote
	// contender's run: the link's proxy, which runs in it, and little else.
	LinkCPU float64
	// FailoverSeconds is, for a failover contender, the time from the kill
	// of the node gapless wrote to until a transaction it applied after the
	// kill was committed on another node, and ViewChangeSeconds until the
	// surviving nodes had formed a cluster without it (no commit can be
	// certified before); Moves is how many times gapless logged a move to
	// another node.
	FailoverSeconds, ViewChangeSeconds float64
	Moves                              int
}

var gaplessPolicies = []string{"serial", "commit-id", "writeset", "schema", "domain"}

// parseContender reads an id: mariadb-serial, mariadb-conservative,
// mariadb-optimistic, mariadb-aggressive, gapless-POLICY-WORKERS, or
// mariadb-binlog. Parallel MariaDB modes use workers threads.
//
// An id may name a target variant after a slash (gapless-writeset-N/fast,
// words joined by dashes: durable or fast, nobinlog, remote, failover; see
// variantWords), and a gapless id another gapless binary after an @, so
// that two builds are compared in one run: gapless-writeset-8@/tmp/old-gapless,
// or with a variant, gapless-writeset-8/fast@/tmp/old-gapless.
func parseContender(id string, workers int, durable bool) (contender, error) {
	spec, binary, hasBinary := strings.Cut(id, "@")
	base, v, hasVariant := strings.Cut(spec, "/")
	c, err := parseBaseContender(base, workers)
	if err != nil {
		return c, err
	}
	c.ID, c.Durable, c.TargetBinlog = id, durable, true
	if hasBinary {
		if c.Kind != "gapless" || binary == "" {
			return contender{}, fmt.Errorf("%q: only a gapless contender takes @BINARY", id)
		}
		c.Binary, c.Label = binary, c.Label+" ("+filepath.Base(binary)+")"
	}
	if hasVariant {
		if err := c.applyVariant(v); err != nil {
			return contender{}, err
		}
	}
	return c, nil
}

func parseBaseContender(id string, workers int) (contender, error) {
	switch id {
	case "mariadb-serial":
		return contender{ID: id, Label: "MariaDB replica, serial", Kind: "mariadb", ParallelMode: "conservative"}, nil
	case "mariadb-conservative", "mariadb-optimistic", "mariadb-aggressive":
		mode := strings.TrimPrefix(id, "mariadb-")
		return contender{ID: id, Label: fmt.Sprintf("MariaDB replica, %d %s", workers, mode), Kind: "mariadb", ParallelThreads: workers, ParallelMode: mode}, nil
	case "mariadb-binlog":
		return contender{ID: id, Label: "mariadb-binlog | mariadb", Kind: "mariadb-binlog"}, nil
	}
	if rest, ok := strings.CutPrefix(id, "gapless-"); ok {
		i := strings.LastIndex(rest, "-")
		if i > 0 {
			policy, n := rest[:i], rest[i+1:]
			w := workers
			var err error
			if n != "N" {
				w, err = strconv.Atoi(n)
			}
			for _, p := range gaplessPolicies {
				if p == policy && err == nil && w >= 1 {
					return contender{ID: fmt.Sprintf("gapless-%s-%d", policy, w), Label: fmt.Sprintf("gapless %d %s", w, policy), Kind: "gapless", Policy: policy, Workers: w}, nil
				}
			}
		}
	}
	return contender{}, fmt.Errorf("unknown contender %q: want mariadb-serial, mariadb-conservative, mariadb-optimistic, mariadb-aggressive, mariadb-binlog or gapless-POLICY-WORKERS (POLICY one of %s, WORKERS a number or N)",
		id, strings.Join(gaplessPolicies, ", "))
}

func (c contender) run(ctx context.Context, env runEnv) attempt {
	switch c.Kind {
	case "mariadb":
		return c.runMariaDBReplica(ctx, env)
	case "gapless":
		return c.runGapless(ctx, env)
	default:
		return c.runMariaDBBinlog(ctx, env)
	}
}

// runMariaDBReplica times START SLAVE UNTIL the end position to the moment
// MASTER_GTID_WAIT sees it applied.
func (c contender) runMariaDBReplica(ctx context.Context, env runEnv) attempt {
	db, err := env.target.Open("")
	if err != nil {
		return attempt{Err: fmt.Errorf("target: %w", err)}
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return attempt{Err: fmt.Errorf("target: %w", err)}
	}
	defer conn.Close()
	src := env.rec.Primary
	setup := []string{
		fmt.Sprintf("SET GLOBAL slave_parallel_threads=%d", c.ParallelThreads),
		fmt.Sprintf("SET GLOBAL slave_parallel_mode='%s'", c.ParallelMode),
		fmt.Sprintf("SET GLOBAL gtid_slave_pos='%s'", env.rec.Start),
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
			src.Port, sandbox.ReplUser, sandbox.ReplPassword),
	}
	startSlave := fmt.Sprintf("START SLAVE UNTIL master_gtid_pos='%s'", env.rec.End)
	command := strings.Join(append(setup, startSlave), "; ")
	for _, stmt := range setup {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return attempt{Err: fmt.Errorf("target: %s: %w", stmt, err), Command: command}
		}
	}
	began := time.Now()
	if _, err := conn.ExecContext(ctx, startSlave); err != nil {
		return attempt{Err: fmt.Errorf("target: %s: %w", startSlave, err), Command: command}
	}
	for {
		var reached int
		if err := conn.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 1)", env.rec.End).Scan(&reached); err != nil {
			return attempt{Err: fmt.Errorf("target: MASTER_GTID_WAIT: %w", err), Command: command}
		}
		if reached == 0 {
			return attempt{Seconds: time.Since(began).Seconds(), Command: command}
		}
		status, err := rowAsMap(ctx, db, "SHOW SLAVE STATUS")
		if err != nil {
			return attempt{Err: fmt.Errorf("target: %w", err), Command: command}
		}
		if status["Slave_SQL_Running"] == "No" || status["Last_IO_Errno"] != "0" {
			return attempt{Err: fmt.Errorf("MariaDB replica stopped before %s: SQL error %s %q, IO error %s %q, at %s",
				env.rec.End, status["Last_SQL_Errno"], status["Last_SQL_Error"], status["Last_IO_Errno"], status["Last_IO_Error"], status["Gtid_Slave_Pos"]), Command: command}
		}
	}
}

func (c contender) gaplessArgs(env runEnv, targetURL string) []string {
	return append(append([]string{"replicate",
		"--source", env.rec.Primary.URL(sandbox.ReplUser, sandbox.ReplPassword),
		"--target", targetURL,
		"--start-position", env.rec.Start, "--until", env.rec.End,
		"--workers", strconv.Itoa(c.Workers), "--policy", c.Policy, "--commit-order", "strict",
		"--progress", "0", "--relay-dir", filepath.Join(env.dir, "relay"),
	}, c.binlogFlags()...), env.extra...)
}

func (c contender) binlogFlags() []string {
	if c.TargetBinlog {
		return nil
	}
	return []string{"--no-target-binlog"}
}

// throughLink starts a link of linkRoundTrip to the local server at port,
// and returns it with mysqlURL pointed at it.
func throughLink(mysqlURL string, port int) (*delayLink, string, error) {
	u, err := url.Parse(mysqlURL)
	if err != nil {
		return nil, "", err
	}
	link, err := startDelayLink(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), linkRoundTrip/2)
	if err != nil {
		return nil, "", err
	}
	u.Host = link.Addr()
	return link, u.String(), nil
}

// runGapless times the gapless process from its start to its exit at --until.
// A remote contender reaches the target through a delaying link, whose
// round trip it measures first.
func (c contender) runGapless(ctx context.Context, env runEnv) attempt {
	targetURL := env.target.URL(sandbox.ApplierUser, sandbox.ApplierPassword)
	if env.cluster != nil {
		targetURL = nodesURL(env.cluster)
	}
	var linkRTT float64
	if c.Remote {
		link, linked, err := throughLink(targetURL, env.target.Port)
		if err != nil {
			return attempt{Err: fmt.Errorf("link to the target: %w", err)}
		}
		defer link.Close()
		targetURL = linked
		if linkRTT, err = pingRoundTrip(ctx, targetURL); err != nil {
			return attempt{Err: fmt.Errorf("link to the target: %w", err)}
		}
	}
	args := c.gaplessArgs(env, targetURL)
	binary := env.gapless
	if c.Binary != "" {
		binary = c.Binary
	}
	command := binary + " " + strings.Join(args, " ")
	cmd := exec.CommandContext(ctx, binary, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return attempt{Err: fmt.Errorf("gapless replicate: %w", err), Command: command}
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	var failover failoverTimes
	var failoverErr error
	if c.Failover {
		failover, failoverErr = killWritingNode(ctx, env, exited)
	}
	<-exited
	elapsed := time.Since(began).Seconds()
	if waitErr != nil {
		return attempt{Err: fmt.Errorf("gapless replicate: %w: %s", waitErr, lastLines(out.String(), 8)), Command: command}
	}
	if failoverErr != nil {
		return attempt{Err: fmt.Errorf("failover: %w; gapless said: %s", failoverErr, lastLines(out.String(), 8)), Command: command}
	}
	if len(env.extra) > 0 {
		// An experiment: show what gapless said about its run.
		fmt.Println(lastLines(out.String(), 4))
	}
	return attempt{Seconds: elapsed, Command: command, ApplierCPU: cpuSeconds(cmd.ProcessState), LinkRoundTrip: linkRTT,
		FailoverSeconds: failover.Commit, ViewChangeSeconds: failover.View, Moves: strings.Count(out.String(), targetMoveLog)}
}

// pingRoundTrip is the median time of a MySQL ping (COM_PING) to the server
// at a mysql:// URL, in seconds.
func pingRoundTrip(ctx context.Context, mysqlURL string) (float64, error) {
	db, _, err := dburl.Open(mysqlURL, nil)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var trips []float64
	for range 50 {
		began := time.Now()
		if err := conn.PingContext(ctx); err != nil {
			return 0, err
		}
		trips = append(trips, time.Since(began).Seconds())
	}
	slices.Sort(trips)
	return trips[len(trips)/2], nil
}

// runMariaDBBinlog times mariadb-binlog --start-position=START over the
// primary's binlog files, which end at the recording's end, piped into the
// mariadb client on the target.
func (c contender) runMariaDBBinlog(ctx context.Context, env runEnv) attempt {
	dumpArgs := append([]string{"--start-position=" + env.rec.Start}, env.rec.BinlogFiles...)
	loadArgs := clientArgs(env.target)
	if !c.TargetBinlog {
		loadArgs = append(loadArgs, "--init-command=SET sql_log_bin=0")
	}
	command := "mariadb-binlog " + strings.Join(dumpArgs, " ") + " | mariadb " + strings.Join(loadArgs, " ")
	dump := exec.CommandContext(ctx, "mariadb-binlog", dumpArgs...)
	load := exec.CommandContext(ctx, "mariadb", loadArgs...)
	var dumpErr, loadErr strings.Builder
	dump.Stderr, load.Stderr = &dumpErr, &loadErr
	pipe, err := dump.StdoutPipe()
	if err != nil {
		return attempt{Err: err, Command: command}
	}
	load.Stdin = pipe
	began := time.Now()
	if err := dump.Start(); err != nil {
		return attempt{Err: fmt.Errorf("starting mariadb-binlog: %w", err), Command: command}
	}
	if err := load.Start(); err != nil {
		_ = dump.Process.Kill()
		_ = dump.Wait()
		return attempt{Err: fmt.Errorf("starting mariadb: %w", err), Command: command}
	}
	loadWait := load.Wait()
	if loadWait != nil {
		_ = dump.Process.Kill()
	}
	dumpWait := dump.Wait()
	elapsed := time.Since(began).Seconds()
	var errs []error
	if loadWait != nil {
		errs = append(errs, fmt.Errorf("mariadb: %w: %s", loadWait, lastLines(loadErr.String(), 5)))
	} else if dumpWait != nil {
		errs = append(errs, fmt.Errorf("mariadb-binlog: %w: %s", dumpWait, lastLines(dumpErr.String(), 5)))
	}
	if err := errors.Join(errs...); err != nil {
		return attempt{Err: err, Command: command}
	}
	return attempt{Seconds: elapsed, Command: command, ApplierCPU: cpuSeconds(dump.ProcessState) + cpuSeconds(load.ProcessState)}
}

func cpuSeconds(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// serverCPU is the CPU seconds a running server has used so far, from
// /proc/PID/stat (utime and stime, in clock ticks of 1/100 s); 0 if unknown.
func serverCPU(srv *sandbox.Server) float64 {
	pid := srv.Pid()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in field 2 may hold spaces; fields after it are plain.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (utime + stime) / 100
}

// machineBusy reads /proc/stat's first line: the busy and total clock ticks of
// every core so far, for the share of the machine a run kept busy.
func machineBusy() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	for i, f := range fields[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i != 3 && i != 4 { // idle and iowait
			busy += v
		}
	}
	return busy, total
}
