package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gapless/internal/analyze"
	"gapless/internal/apply"
	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/filter"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
	"gapless/internal/status"
	"gapless/internal/target"
)

const urlShape = "mysql://user:password@host:port"

// targetParams are the driver settings every target connection uses.
var targetParams = map[string]string{"multiStatements": "true", "maxAllowedPacket": "0", "loc": "UTC"}

type replicateFlags struct {
	source, target *serverFlags
	until, start   string
	relayDir       string
	stream         string
	serverID       uint32
	skip           []string
	noTargetBinlog bool
	progress       time.Duration
	segmentSize    int64
	verbose        bool
	logFormat      string
	cpuProfile     string
	memProfile     string
	workers        int
	maxQueued      int64
	doDB, ignoreDB []string
	ignoreTable    []string
	batch          int
	policy         string
	commitOrder    string
	http           string
	// untilGiven, startGiven: the flag was on the command line, maybe empty
	// (a shell variable that held nothing).
	untilGiven, startGiven bool
}

func newReplicateCmd() *cobra.Command {
	var f replicateFlags
	cmd := &cobra.Command{
		Use:   "replicate --source URL --target URL [flags]",
		Short: "Replicate the source's binlog to the target until --until, a stop, or a fatal error",
		Long:  replicateLong,
		Example: `  # the sandbox's servers, from its environment
  eval "$(gapless sandbox env)"; gapless replicate
  # passwords kept out of ps, until a position, then exit 0
  gapless replicate --source mysql://repl@db1:3306 --source-password-file /etc/gapless/repl.pw \
      --target 'mysql://gapless@db2:3306?password-file=/etc/gapless/apply.pw&tls=true' --until 0-1-51253
  # both servers from an option file's [client] groups
  gapless replicate --source-defaults-file ~/.db1.cnf --target-defaults-file ~/.db2.cnf --workers 8
  # every flag from /etc/gapless/shop.cnf's [gapless] and [gapless-shop] groups, as gapless@shop.service runs it
  gapless replicate --defaults-file /etc/gapless/shop.cnf --stream shop --print-defaults
  # after re-seeding the target from a dump
  gapless reset --target mysql://gapless@db2:3306
  gapless replicate --source ... --target ... --start-position 0-1-51253`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.untilGiven, f.startGiven = cmd.Flags().Changed("until"), cmd.Flags().Changed("start-position")
			return runReplicate(cmd.Context(), f)
		},
	}
	files := f.add(cmd.Flags())
	readsOptionFiles(cmd, files)
	return cmd
}

// replicateLong is replicate's help.
const replicateLong = `Attach to the source as a replica, keep its binlog in a relay log and apply it to the target.

The applied position is written on the target in the same transaction as the
data (table gapless.checkpoint), so a restart after any crash continues exactly
once. SIGINT or SIGTERM let the transaction in flight commit, then exit 0.

When the target has no position yet, replication starts from --start-position,
else from the target's @@gtid_slave_pos (in the domains the source has
written: the others are the target's replication from other servers), else
from the source's first binlog.
A --start-position while the target has another position is refused: after
re-seeding the target, clear the old one with gapless reset.

After a failover, give the promoted server as --source, with the same
--relay-dir: what the relay log fetched from another server is dropped and
fetched again from the target's position. A source that has never written
the target's GTID domains, and a target whose own replica still runs from
the source (STOP SLAVE first), are refused.

URLs: mysql://user@host:port (mariadb:// too), with parameters
  ?password-file=FILE   read the password from FILE (a password written in the
                        URL, mysql://user:password@host, shows in ps)
  ?tls=true             TLS, checking the certificate (skip-verify, preferred:
                        without checking; false: none)
  ?timeout=10s          connect timeout
  ?name=value           any other parameter is a session variable of gapless's
                        connections to that server, named in lower case as
                        the server names it (innodb_lock_wait_timeout=20);
                        a name the server does not know fails at connecting,
                        and driver-style names (readTimeout) are refused
Passwords also come from --source-password-file/--target-password-file,
$GAPLESS_SOURCE_PASSWORD/$GAPLESS_TARGET_PASSWORD, or a MariaDB option file
(--defaults-file, --source-defaults-file, --target-defaults-file).

` + optionFilesUsage + `

Privileges: on the source, REPLICATION SLAVE (and BINLOG MONITOR); on the
target, BINLOG REPLAY, BINLOG ADMIN, PROCESS, and SELECT, INSERT, UPDATE,
DELETE, CREATE, DROP, ALTER, INDEX on the replicated schemas and gapless.*;
READ_ONLY ADMIN too on a target set read_only=ON.

Positions (--until, --start-position) are MariaDB GTID positions, as
@@gtid_binlog_pos shows them: one domain-server-sequence per domain, e.g.
0-1-51253 or 0-1-51253,1-1-10. --skip-gtid takes one GTID (0-1-51254).`

// add defines replicate's flags on fl, into f, and returns its option files.
func (f *replicateFlags) add(fl *pflag.FlagSet) *optionFiles {
	files := addOptionFileFlags(fl)
	f.source = addServerFlags(fl, "source", "source", "GAPLESS_SOURCE", "source (primary) URL mysql://user@host:port", files)
	f.target = addServerFlags(fl, "target", "target", "GAPLESS_TARGET", "target URL mysql://user@host:port", files)
	fl.IntVar(&f.workers, "workers", 16, "parallel target connections")
	fl.StringSliceVar(&f.doDB, "do-db", nil, "apply only these databases (repeatable or comma-separated)")
	fl.StringSliceVar(&f.ignoreDB, "ignore-db", nil, "do not apply these databases (repeatable or comma-separated)")
	fl.StringSliceVar(&f.ignoreTable, "ignore-table", nil, "do not apply tables matching db.table, with % and _ as wildcards (e.g. db.%, db.t%)")
	fl.Int64Var(&f.maxQueued, "max-queued", 64<<20, "bytes of decoded transactions held in memory ahead of the workers (the decoder waits beyond it)")
	fl.IntVar(&f.batch, "batch", analyze.DefaultBatch, "most consecutive transactions a worker applies in one target transaction, or, for non-transactional groups (MyISAM statements), as one job (1: no batching)")
	fl.StringVar(&f.policy, "policy", "writeset", "what may run in parallel: "+strings.Join(schedule.Names, " | "))
	fl.StringVar(&f.commitOrder, "commit-order", "strict", "strict (commit in source order) | causal (commit once dependencies have)")
	fl.StringVar(&f.until, "until", "", "stop, exit 0, once this GTID position is applied (e.g. 0-1-51253,1-1-10)")
	fl.StringVar(&f.start, "start-position", "", "GTID position to start from when the target has none (refused while it has one: see gapless reset)")
	fl.StringVar(&f.relayDir, "relay-dir", "./gapless-relay", "relay log folder")
	fl.StringVar(&f.stream, "stream", "default", "name of this replication stream on the target (one applier per stream)")
	fl.Uint32Var(&f.serverID, "server-id", 0, "replica server id shown to the source (default: derived from the target and stream)")
	fl.StringArrayVar(&f.skip, "skip-gtid", nil, "record this GTID as applied without applying it (repeatable)")
	fl.BoolVar(&f.noTargetBinlog, "no-target-binlog", false, "do not write applied transactions to the target's binlog")
	fl.DurationVar(&f.progress, "progress", time.Second, "print progress this often (0: never): applied, lag, position, busy workers, and what holds them (a long job, a lock of the target's, a full relay folder)")
	fl.Int64Var(&f.segmentSize, "relay-segment-size", 64<<20, "rotate relay log segments after this many bytes")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log each reconnect and retry")
	fl.StringVar(&f.logFormat, "log-format", "text", "text | json: the log on stderr as lines of key=value, or as one JSON object a line (time, level, msg, stream, and gtid, worker where they apply) for log shippers")
	fl.StringVar(&f.http, "http", "", "serve the status page, /metrics and /status at this address (PORT or HOST:PORT; a bare port is on 127.0.0.1)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file (for gapless's developers)")
	fl.MarkHidden("cpuprofile")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a Go profile of the run's allocations to this file at its end (for gapless's developers)")
	fl.MarkHidden("memprofile")
	return files
}

// runReplicate is one replicate run: the flags checked, the source and the
// target opened and checked, the relay folder taken (only then may anything
// be written), the pieces wired, and the run to its end.
func runReplicate(ctx context.Context, f replicateFlags) (err error) {
	in, err := f.check()
	if err != nil {
		return usageError(err)
	}

	// A stop (SIGINT, SIGTERM, gapless stop) from here on is taken, not
	// left to end the process: one while the checks below run ends them,
	// and the run, as a stop while starting (exit 0, nothing applied).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	running := false
	defer func() {
		if err != nil && !running && ctx.Err() != nil {
			fmt.Printf("%v: %v; the next run starts from the target's position\n", apply.ErrStoppedWhileStarting, err)
			err = nil
		}
	}()

	logger := runLogger(f.logFormat, f.verbose, f.stream)
	servers, err := openServers(ctx, f, in, logger)
	if err != nil {
		return err
	}
	defer servers.close()
	relayLock, err := openRelayDir(f.relayDir, f.stream)
	if err != nil {
		return err
	}
	defer relayLock.release()

	cfg := applyConfig(f, in, servers, logger)
	fmt.Printf("replicating %s -> %s (stream %q, relay log %s)\n", servers.sourceCfg.Redacted(), servers.targetCfg.Redacted(), f.stream, f.relayDir)
	stopProfiles, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()
	tuneGC(f.maxQueued)
	began := time.Now()
	// runCtx, not ctx: the deferred check above reads ctx, and startHTTP
	// returns no context when it fails.
	runCtx, finishHTTP, err := startHTTP(ctx, f.http, &cfg, servers.targetCfg.Redacted(), servers.sourceCfg.Password, servers.targetCfg.Password)
	if err != nil {
		return err
	}
	running = true
	return runAndReport(runCtx, cfg, finishHTTP, began, f.verbose)
}

// runAndReport runs the replica to its end (--until, a stop, or an error),
// hands the outcome to the status server, and says where the run ended.
func runAndReport(ctx context.Context, cfg apply.Config, finishHTTP func(apply.Result, error), began time.Time, verbose bool) error {
	res, err := apply.Run(ctx, cfg)
	if errors.Is(err, apply.ErrStoppedWhileStarting) {
		// Stopped (SIGINT, SIGTERM, gapless stop) before the run began to
		// apply: what it was opening gave up. Nothing is lost; the next run
		// starts from the target's position.
		finishHTTP(res, nil)
		fmt.Printf("%v; the next run starts from the target's position\n", err)
		return nil
	}
	finishHTTP(res, err)
	if err != nil {
		return err
	}
	printResult(res, time.Since(began), verbose)
	return nil
}

// applyConfig wires the run from the flags and the checked servers: the
// receiver dumps the source's binlog into the relay log, and the replica
// applies it to the target.
func applyConfig(f replicateFlags, in checkedFlags, servers *checkedServers, logger *slog.Logger) apply.Config {
	src := servers.sourceCfg
	batchBytes, batch := clusterBatch(servers.cluster, f.batch)
	cfg := apply.Config{
		Stream: f.stream,
		Receiver: binlog.ReceiverConfig{
			Host: src.Host, Port: uint16(src.Port), User: src.User, Password: src.Password,
			ServerID: replicaServerID(f.serverID, servers.targetCfg, f.stream), TLS: servers.sourceTLS,
			DialTimeout: servers.sourceTimeout, Logger: logger, Nodes: sourceNodes(src),
		},
		Relay:          binlog.RelayOptions{Dir: f.relayDir, SegmentSize: f.segmentSize, Logger: logger, Source: servers.sourceID.String()},
		Target:         servers.target,
		TargetServerID: servers.targetID.serverID,
		Session:        target.Options{KeepGTID: servers.keepGTID, WriteBinlog: servers.writeBinlog, RowFormat: servers.rowFormat, Server: servers.targetCfg},
		Workers:        f.workers,
		BatchMax:       batch,
		BatchBytes:     batchBytes,
		Filter:         in.rules,
		MaxQueued:      f.maxQueued,
		Policy:         f.policy,
		CommitOrder:    apply.CommitOrder(f.commitOrder),
		Start:          servers.start,
		Until:          in.until,
		Skip:           in.skip,
		Logger:         logger,
	}
	if f.progress > 0 {
		cfg.ProgressEvery = f.progress
		cfg.Progress = progressPrinter(in.until)
	}
	return cfg
}

// replicaServerID is the server id the receiver shows the source:
// --server-id, else one derived from the target's address and the stream,
// so that every run of a stream shows the same one.
func replicaServerID(given uint32, target dburl.Config, stream string) uint32 {
	if given != 0 {
		return given
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s:%d/%s", target.Host, target.Port, stream)
	return 1<<30 | h.Sum32()>>2
}

// startProfiles starts --cpuprofile and arms --memprofile (for gapless's
// developers); the func it returns writes them at the run's end.
func startProfiles(cpuProfile, memProfile string) (stop func(), err error) {
	var cpuOut *os.File
	if cpuProfile != "" {
		if cpuOut, err = os.Create(cpuProfile); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		pprof.StartCPUProfile(cpuOut)
	}
	return func() {
		if memProfile != "" {
			if out, err := os.Create(memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(out, 0)
				out.Close()
			}
		}
		if cpuOut != nil {
			pprof.StopCPUProfile()
			cpuOut.Close()
		}
	}, nil
}

// checkedFlags are replicate's flags read and checked, before any server
// is reached.
type checkedFlags struct {
	sourceURL, targetURL string
	rules                *filter.Rules
	until, start         *gtid.MariaDBPosition
	skip                 []gtid.MariaDBGTID
}

// check reads and checks the flags: one clear message for the first that
// is wrong.
func (f replicateFlags) check() (checkedFlags, error) {
	switch {
	case !f.source.given() && !f.target.given():
		return checkedFlags{}, fmt.Errorf("--source and --target are required (or $GAPLESS_SOURCE and $GAPLESS_TARGET)")
	case !f.source.given():
		return checkedFlags{}, fmt.Errorf("--source is required (or $GAPLESS_SOURCE): the URL of the primary, %s", urlShape)
	case !f.target.given():
		return checkedFlags{}, fmt.Errorf("--target is required (or $GAPLESS_TARGET): the URL of the server to apply to, %s", urlShape)
	}
	_, sourceURL, err := f.source.resolve()
	if err != nil {
		return checkedFlags{}, err
	}
	_, targetURL, err := f.target.resolve()
	if err != nil {
		return checkedFlags{}, err
	}
	if f.workers < 1 || f.workers > checkpoint.MaxSlots {
		return checkedFlags{}, fmt.Errorf("--workers %d: want 1 to %d", f.workers, checkpoint.MaxSlots)
	}
	rules := &filter.Rules{DoDB: f.doDB, IgnoreDB: f.ignoreDB}
	for _, p := range f.ignoreTable {
		if err := rules.AddIgnoreTable(p); err != nil {
			return checkedFlags{}, err
		}
	}
	if f.maxQueued < 1<<20 {
		return checkedFlags{}, fmt.Errorf("--max-queued %d: want at least 1 MiB (1048576)", f.maxQueued)
	}
	if f.batch < 1 || f.batch > 10000 {
		return checkedFlags{}, fmt.Errorf("--batch %d: want 1 to 10000", f.batch)
	}
	if !slices.Contains(schedule.Names, f.policy) {
		return checkedFlags{}, fmt.Errorf("--policy %q: want one of %s", f.policy, strings.Join(schedule.Names, ", "))
	}
	if f.commitOrder != string(apply.Strict) && f.commitOrder != string(apply.Causal) {
		return checkedFlags{}, fmt.Errorf("--commit-order %q: want strict or causal", f.commitOrder)
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return checkedFlags{}, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	if f.http != "" {
		if _, err := status.ListenAddress(f.http); err != nil {
			return checkedFlags{}, err
		}
	}
	until, err := parseOptionalPosition("--until", f.until, f.untilGiven)
	if err != nil {
		return checkedFlags{}, err
	}
	start, err := parseOptionalPosition("--start-position", f.start, f.startGiven)
	if err != nil {
		return checkedFlags{}, err
	}
	var skip []gtid.MariaDBGTID
	for _, s := range f.skip {
		g, err := gtid.ParseMariaDBGTID(s)
		if err != nil {
			return checkedFlags{}, fmt.Errorf("--skip-gtid: %s (want one GTID domain-server-sequence, e.g. 0-1-51253)", strings.TrimPrefix(err.Error(), "gtid: "))
		}
		skip = append(skip, g)
	}
	return checkedFlags{sourceURL: sourceURL, targetURL: targetURL, rules: rules, until: until, start: start, skip: skip}, nil
}

// printResult says where the run ended and, with -v, how it went.
func printResult(res apply.Result, took time.Duration, verbose bool) {
	filtered := ""
	if res.Filtered > 0 {
		filtered = fmt.Sprintf(" (and passed %d filtered out)", res.Filtered)
	}
	fmt.Printf("%s: applied %d transactions%s in %s; position %s\n", res.Reason, res.Applied, filtered, took.Round(time.Millisecond), emptyAsNone(res.Position.String()))
	if res.RolledBack > 0 {
		fmt.Printf("the stop rolled back %d transactions of batches still executing; the next run applies them\n", res.RolledBack)
	}
	if verbose && res.Batches > 0 {
		fmt.Printf("%d target transactions, %.1f source transactions each; %d ran ahead of what their batch waited for (%d of them in part)\n", res.Batches, float64(res.Applied)/float64(res.Batches), res.RanAhead, res.RanAheadInPart)
		fmt.Printf("worker time: %s\n", stateShares(res.StateTime))
		if hint := dependencyHint(res.StateTime, float64(res.Applied)/float64(res.Batches)); hint != "" {
			fmt.Println(hint)
		}
	}
	if verbose && len(res.Statements) > 0 {
		slots := slices.Sorted(maps.Keys(res.Statements))
		var per []string
		for _, slot := range slots {
			per = append(per, fmt.Sprintf("%d:%d", slot, res.Statements[slot]))
		}
		fmt.Printf("statement transactions per worker (0: the statement session): %s\n", strings.Join(per, " "))
	}
	if verbose && res.StatementRowKeys+res.StatementWholeTables > 0 {
		fmt.Printf("tables named by statement transactions: %d by row keys, %d whole\n", res.StatementRowKeys, res.StatementWholeTables)
	}
}

func emptyAsNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func parseOptionalPosition(flag, s string, given bool) (*gtid.MariaDBPosition, error) {
	if given && strings.TrimSpace(s) == "" {
		// Given empty (a shell variable that held nothing): --until "" would
		// otherwise run on for ever instead of stopping where it was meant to.
		return nil, fmt.Errorf("%s is empty: give a GTID position (e.g. 0-1-51253), or leave the flag out", flag)
	}
	if s == "" {
		return nil, nil
	}
	p, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %s (want one GTID domain-server-sequence per domain, e.g. 0-1-51253,1-1-10)", flag, strings.TrimPrefix(err.Error(), "gtid: "))
	}
	return &p, nil
}

// tuneGC trades memory for CPU: replication allocates a little for every
// event, and with Go's default GC target a third of gapless's CPU went to
// the collector. A target of 400% with a soft limit of a few times the queue
// bound halved that (W1: 1.2 s -> 0.75 s of gapless CPU). GOGC and
// GOMEMLIMIT in the environment win.
func tuneGC(maxQueued int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(4*maxQueued + 256<<20)
	}
}

// dependencyHint explains a run whose workers mostly waited for earlier
// transactions, "" for any other: batches that depend on each other run
// one after another, however many workers there are.
func dependencyHint(spent map[apply.WorkerState]time.Duration, perBatch float64) string {
	var total, waiting time.Duration
	for s, d := range spent {
		total += d
		if s == apply.StateWaitingDeps || s == apply.StateAhead {
			waiting += d
		}
	}
	if total <= 0 || float64(waiting) < 0.6*float64(total) {
		return ""
	}
	ahead := ""
	if spent[apply.StateAhead] > 0 {
		ahead = fmt.Sprintf(" (%.0f%% with the statements that waited for nothing run ahead already)", 100*float64(spent[apply.StateAhead])/float64(total))
	}
	return fmt.Sprintf("the workers spent %.0f%% of their time waiting for earlier transactions%s: each batch (%.1f transactions on average) "+
		"depended on one before it (rows or tables they share, or a DDL), so the target applied their statements that wait about one batch at a time; "+
		"gapless analyze over the same binlog says what they share", 100*float64(waiting)/float64(total), ahead, perBatch)
}

// stateShares says what share of the workers' time each state took, in
// the order a job goes through them, leaving out states never entered.
func stateShares(spent map[apply.WorkerState]time.Duration) string {
	var total time.Duration
	for _, d := range spent {
		total += d
	}
	if total <= 0 {
		return "none"
	}
	var parts []string
	for _, s := range []apply.WorkerState{apply.StateWaitingDeps, apply.StateApplying, apply.StateAhead, apply.StateWaitingCommit,
		apply.StateRetrying, apply.StateConnecting, apply.StateReconnecting, apply.StateIdle} {
		if d := spent[s]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", s, 100*float64(d)/float64(total)))
		}
	}
	return strings.Join(parts, ", ")
}
