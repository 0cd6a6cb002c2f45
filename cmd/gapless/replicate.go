package main

import (
	"context"
	"database/sql"
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

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

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
		Long: `Attach to the source as a replica, keep its binlog in a relay log and apply it to the target.

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
0-1-51253 or 0-1-51253,1-1-10. --skip-gtid takes one GTID (0-1-51254).`,
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
	fl := cmd.Flags()
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
	readsOptionFiles(cmd, files)
	return cmd
}

func runReplicate(ctx context.Context, f replicateFlags) (err error) {
	in, err := f.check()
	if err != nil {
		return err
	}
	sourceURL, targetURL, rules, until, start, skip := in.sourceURL, in.targetURL, in.rules, in.until, in.start, in.skip

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

	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	logger := newLogger(os.Stderr, f.logFormat, level, f.stream)
	// The driver's own complaints about dropped connections precede a retry;
	// shown with -v only. Pools take the driver's logger when they are opened.
	mysqldriver.SetLogger(slog.NewLogLogger(logger.Handler(), slog.LevelInfo))

	srcDB, srcCfg, err := dburl.Open(sourceURL, nil)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer srcDB.Close()
	if err := checkSourceNodes(ctx, srcDB, srcCfg); err != nil {
		return err
	}
	sourceFormat, err := checkSource(ctx, srcDB, srcCfg, logger)
	if err != nil {
		return err
	}
	srcTLS, err := srcCfg.TLS()
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	srcTimeout, err := srcCfg.Timeout(0)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	tgtDB, tgtCfg, err := dburl.Open(targetURL, targetParams)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer tgtDB.Close()
	followTargetNodes(ctx, tgtDB, tgtCfg, logger)
	source, targetID, err := checkServers(ctx, srcDB, tgtDB, f.serverID)
	if err != nil {
		return err
	}
	if err := checkTargetReplica(ctx, tgtDB, source, srcCfg.Host, srcCfg.Port); err != nil {
		return err
	}
	if err := checkTargetPrivileges(ctx, tgtDB, tgtCfg); err != nil {
		return err
	}
	warnWithoutProcess(ctx, tgtDB, logger)
	writeBinlog, err := targetWritesBinlog(ctx, tgtDB, !f.noTargetBinlog)
	if err != nil {
		return err
	}
	cluster, err := checkGaleraTarget(ctx, tgtDB, writeBinlog, logger)
	if err != nil {
		return err
	}
	// A Galera node logs every change of a client session as rows, whatever
	// the session's format.
	rowFormat := writeBinlog && !cluster.On && targetLogsRows(ctx, sourceFormat, tgtDB, logger)
	if err := checkStartPosition(ctx, tgtDB, f.stream, start); err != nil {
		return err
	}
	startOrigin := "--start-position"
	if start == nil {
		start, err = targetSlavePos(ctx, tgtDB)
		if err != nil {
			return err
		}
		startOrigin = slavePosOrigin
	}
	written, err := sourceWritten(ctx, srcDB)
	if err != nil {
		return err
	}
	if startOrigin == slavePosOrigin {
		start = sourceDomainsOf(start, written, logger)
	}
	position, origin := appliedOrStart(ctx, tgtDB, f.stream, start, startOrigin)
	if err := checkSourceContinues(written, position, origin, logger); err != nil {
		return err
	}
	warnUntilUnseen(until, written, position, logger)
	// Causal order commits a domain's transactions out of sequence, which a
	// binlog in GTID strict mode refuses: the target writes them under GTIDs of its own.
	// A Galera node gives a DDL the GTID its cluster chooses (galera.go).
	keepGTID := writeBinlog && f.commitOrder == string(apply.Strict) && !cluster.On
	if writeBinlog && !keepGTID {
		if err := refuseRing(ctx, srcDB, targetID.serverID); err != nil {
			return err
		}
		if !cluster.On {
			fmt.Fprintln(os.Stderr, "note: with --commit-order causal the target's binlog gets GTIDs of its own, not the source's")
		}
	}
	serverID := f.serverID
	if serverID == 0 {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s:%d/%s", tgtCfg.Host, tgtCfg.Port, f.stream)
		serverID = 1<<30 | h.Sum32()>>2
	}

	// Relay segments hold every row of the source: the files the relay log
	// creates (in internal/binlog) are kept to their owner by the umask.
	syscall.Umask(0o077)
	relayLock, err := lockRelayDir(f.relayDir, f.stream)
	if err != nil {
		return err
	}
	defer relayLock.release()
	if err := checkRelayDir(f.relayDir); err != nil {
		return err
	}

	batchBytes, batch := clusterBatch(cluster, f.batch)
	cfg := apply.Config{
		Stream: f.stream,
		Receiver: binlog.ReceiverConfig{
			Host: srcCfg.Host, Port: uint16(srcCfg.Port), User: srcCfg.User, Password: srcCfg.Password,
			ServerID: serverID, TLS: srcTLS, DialTimeout: srcTimeout, Logger: logger, Nodes: sourceNodes(srcCfg),
		},
		Relay:          binlog.RelayOptions{Dir: f.relayDir, SegmentSize: f.segmentSize, Logger: logger, Source: source.String()},
		Target:         tgtDB,
		TargetServerID: targetID.serverID,
		Session:        target.Options{KeepGTID: keepGTID, WriteBinlog: writeBinlog, RowFormat: rowFormat, Server: tgtCfg},
		Workers:        f.workers,
		BatchMax:       batch,
		BatchBytes:     batchBytes,
		Filter:         rules,
		MaxQueued:      f.maxQueued,
		Policy:         f.policy,
		CommitOrder:    apply.CommitOrder(f.commitOrder),
		Start:          start,
		Until:          until,
		Skip:           skip,
		Logger:         logger,
	}
	if f.progress > 0 {
		cfg.ProgressEvery = f.progress
		cfg.Progress = progressPrinter(until)
	}
	fmt.Printf("replicating %s -> %s (stream %q, relay log %s)\n", srcCfg.Redacted(), tgtCfg.Redacted(), f.stream, f.relayDir)
	if f.cpuProfile != "" {
		out, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer out.Close()
		pprof.StartCPUProfile(out)
		defer pprof.StopCPUProfile()
	}
	if f.memProfile != "" {
		defer func() {
			if out, err := os.Create(f.memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(out, 0)
				out.Close()
			}
		}()
	}
	tuneGC(f.maxQueued)
	began := time.Now()
	ctx, finishHTTP, err := startHTTP(ctx, f.http, &cfg, tgtCfg.Redacted(), srcCfg.Password, tgtCfg.Password)
	if err != nil {
		return err
	}
	running = true
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
	printResult(res, time.Since(began), f.verbose)
	return nil
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
		fmt.Printf("%d target transactions, %.1f source transactions each; %d ran ahead of what their batch waited for\n", res.Batches, float64(res.Applied)/float64(res.Batches), res.RanAhead)
		fmt.Printf("worker time: %s\n", stateShares(res.StateTime))
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

// checkStartPosition refuses an explicit --start-position while the target
// holds a position for the stream (the run would continue from that one),
// unless the two are the same.
func checkStartPosition(ctx context.Context, db *sql.DB, stream string, start *gtid.MariaDBPosition) error {
	if start == nil {
		return nil
	}
	applied, found, err := checkpoint.Existing(ctx, db, stream)
	if err != nil || !found {
		return err
	}
	if len(applied.Extra) == 0 && applied.Position.String() == start.String() {
		return nil
	}
	return fmt.Errorf("--start-position %s: the target already holds position %s for stream %q, and replication continues from there; "+
		"if the target was re-seeded from a backup, clear that position first with `gapless reset --target URL --stream %s`, then run again with --start-position; "+
		"otherwise leave --start-position out",
		start.String(), emptyAsNone(applied.Position.String()), stream, stream)
}

// checkSource refuses a source gapless cannot replicate from, with the
// reason, and returns its binlog_format. It warns of one in STATEMENT
// format: it is replicated as
// MariaDB's replica replicates it, but a statement that MIXED would have
// logged as rows (UUID(), a LIMIT without ORDER BY) can leave the target
// different, on gapless's target as on MariaDB's replica.
func checkSource(ctx context.Context, db *sql.DB, cfg dburl.Config, logger *slog.Logger) (format string, err error) {
	flavor, version, err := binlog.ServerFlavor(ctx, db)
	if err != nil {
		return "", fmt.Errorf("source %s: %w", cfg.Addr(), err)
	}
	if flavor != binlog.FlavorMariaDB {
		return "", fmt.Errorf("source %s runs %s: only MariaDB sources are replicated so far", cfg.Addr(), version)
	}
	var logBin int
	err = db.QueryRowContext(ctx, "SELECT @@log_bin, @@global.binlog_format").Scan(&logBin, &format)
	if err != nil {
		return "", fmt.Errorf("source %s: read binlog settings: %w", cfg.Addr(), err)
	}
	if logBin == 0 {
		return "", fmt.Errorf("source %s has no binlog (log_bin=OFF); start it with log_bin and binlog_format=ROW", cfg.Addr())
	}
	if strings.EqualFold(format, "STATEMENT") {
		logger.Warn("the source writes binlog_format=STATEMENT: a statement unsafe for statement-based replication (UUID(), a LIMIT without ORDER BY, ...) can leave the target different from the source, as it can MariaDB's own replica; gapless warns at the first of each kind; SET GLOBAL binlog_format=MIXED on the source logs such statements as rows",
			"source", cfg.Addr())
	}
	return format, nil
}

// checkRelayDir refuses a relay directory that cannot be created or written,
// before anything is written to the target.
func checkRelayDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("relay directory %s cannot be created: %v; choose another --relay-dir", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".gapless-write-test-")
	if err != nil {
		return fmt.Errorf("relay directory %s is not writable: %v; choose another --relay-dir", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// checkTargetPrivileges refuses a target user that cannot run the apply
// session, naming every privilege it lacks, before anything is written to
// the target. Each probe checks a privilege without changing the session.
func checkTargetPrivileges(ctx context.Context, db *sql.DB, cfg dburl.Config) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("target %s: %w", cfg.Addr(), err)
	}
	defer conn.Close()
	probes := []struct{ stmt, privilege, why string }{
		{"SET @@session.sql_log_bin=@@session.sql_log_bin", "BINLOG ADMIN", "to keep applied transactions in or out of the target's binlog"},
		{"BINLOG ''", "BINLOG REPLAY", "to replay row events under the source's GTIDs"},
	}
	var missing, grants []string
	for _, p := range probes {
		_, err := conn.ExecContext(ctx, p.stmt)
		var me *mysqldriver.MySQLError
		if errors.As(err, &me) && me.Number == 1227 {
			missing = append(missing, fmt.Sprintf("%s (or SUPER) %s", p.privilege, p.why))
			grants = append(grants, p.privilege)
		}
	}
	account := fmt.Sprintf("'%s'", cfg.User)
	var current string
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&current); err == nil {
		if user, host, ok := strings.Cut(current, "@"); ok {
			account = fmt.Sprintf("'%s'@'%s'", user, host)
		}
	}
	if len(missing) == 0 {
		return checkReadOnly(ctx, conn, cfg, account)
	}
	return fmt.Errorf("target %s: user %s lacks %s; on the target, GRANT %s ON *.* TO %s (it also needs the data privileges on the replicated schemas and on %s.*, e.g. GRANT ALL ON *.*); nothing was applied",
		cfg.Addr(), account, strings.Join(missing, ", and "), strings.Join(grants, ", "), account, checkpoint.Schema)
}

// readOnlyProbe is refused by a read-only target before anything else is
// checked (1290), and otherwise fails without changing anything: a table
// cannot have two columns of one name.
const readOnlyProbe = "CREATE TABLE " + checkpoint.Schema + ".read_only_probe (a INT, a INT)"

// checkReadOnly refuses a target that is read-only (read_only=ON, as
// replicas are often set) to a user without READ_ONLY ADMIN: every
// transaction would fail. MariaDB's own replica writes despite read_only.
func checkReadOnly(ctx context.Context, conn *sql.Conn, cfg dburl.Config, account string) error {
	_, err := conn.ExecContext(ctx, readOnlyProbe)
	var me *mysqldriver.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 || !strings.Contains(me.Message, "read-only") {
		return nil
	}
	return fmt.Errorf("target %s is read-only (read_only=ON) and user %s may not write to it; on the target, GRANT READ_ONLY ADMIN ON *.* TO %s "+
		"(on MariaDB 10.11, SUPER does not include it), or SET GLOBAL read_only=OFF; nothing was applied", cfg.Addr(), account, account)
}

// warnWithoutProcess warns when the target user cannot read InnoDB's lock
// waits and dictionary, which takes the PROCESS privilege. The run works
// without, but the watchdog is blind and foreign keys are read the slow way.
func warnWithoutProcess(ctx context.Context, db *sql.DB, logger *slog.Logger) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS").Scan(&n)
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && me.Number == 1227 {
		logger.Warn("the target user lacks the PROCESS privilege: a lock wait the policy could not foresee " +
			"(a trigger on the target, for one) then lasts until innodb_lock_wait_timeout, and foreign keys are read " +
			"from information_schema, which opens every table; GRANT PROCESS ON *.* TO the apply user")
	}
}

// targetWritesBinlog reports whether applied transactions go to the target's binlog.
func targetWritesBinlog(ctx context.Context, db *sql.DB, want bool) (bool, error) {
	if !want {
		return false, nil
	}
	var logBin int
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin").Scan(&logBin); err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	return logBin == 1, nil
}

// targetLogsRows reports whether the target's global binlog_format is
// ROW: the apply sessions then log rows too (target.Options.RowFormat), so
// that a reader of the target's binlog that takes only row events (a CDC
// tool) sees the changes the source logged as statements. A target that
// cannot say is taken for MIXED.
func targetLogsRows(ctx context.Context, sourceFormat string, tgt *sql.DB, logger *slog.Logger) bool {
	var targetFormat string
	if tgt.QueryRowContext(ctx, "SELECT @@global.binlog_format").Scan(&targetFormat) != nil || !strings.EqualFold(targetFormat, "ROW") {
		return false
	}
	if !strings.EqualFold(sourceFormat, "ROW") {
		logger.Info("the target's binlog_format is ROW: the changes the source logs as statements go to the target's binlog as rows; "+
			"a group that must stay one transaction and writes a table that is not transactional is applied in MIXED, with a warning naming it",
			"source format", sourceFormat, "target format", targetFormat)
	}
	return true
}

// refuseRing refuses causal commit order with the target's binlog written
// when the source has replicated from the target (its @@gtid_slave_pos
// names the target's server id: a replication ring): the target would log
// the source's transactions under its own server id, and the source's
// replica would apply them a second time. The apply pipeline stops the same
// way at the first of the target's groups that comes back (ownGroup).
func refuseRing(ctx context.Context, src *sql.DB, targetServer uint32) error {
	var s string
	if err := src.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil || s == "" {
		return nil // a source that cannot say: the pipeline's check remains
	}
	pos, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return nil
	}
	for _, g := range pos.GTIDs() {
		if g.Server == targetServer {
			return fmt.Errorf("the source's @@gtid_slave_pos holds %s, written by the target (server id %d): the source replicates from the target (a replication ring), and under --commit-order causal the target would log the source's transactions under its own server id and GTIDs, which the source's replica takes for the target's writes and applies a second time; "+
				"run with --commit-order strict (the default; the target then logs them under the source's GTIDs, which the source passes) or --no-target-binlog", g, targetServer)
		}
	}
	return nil
}

// targetSlavePos is the target's @@gtid_slave_pos, the position a target
// restored from a backup or replicated by the server itself carries.
func targetSlavePos(ctx context.Context, db *sql.DB) (*gtid.MariaDBPosition, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil {
		return nil, fmt.Errorf("target: read @@gtid_slave_pos: %w", err)
	}
	if s == "" {
		return nil, nil
	}
	p, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return nil, fmt.Errorf("target: @@gtid_slave_pos: %w", err)
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
