// This file owns the analyze subcommand: it reads binlog files or a live
// source, and prints how parallel the stream is per policy and worker
// count, why, and what to change. Only flag handling lives here; the
// analysis is internal/analyze.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gapless/internal/analyze"
	"gapless/internal/dburl"
)

type analyzeFlags struct {
	sourceServer        *serverFlags // --source and its password flags; --schema-from takes the same password
	calibrateServer     *serverFlags // --calibrate and the target's password flags
	source, from, until string
	last                time.Duration
	serverID            uint32
	schemaFrom          string
	workers             []int
	policies            []string
	batch               int
	cost                analyze.CostModel
	calibrate           string
	calibrateConns      int
	json                bool
	html                string
}

func newAnalyzeCmd() *cobra.Command {
	f := analyzeFlags{cost: analyze.DefaultCostModel}
	cmd := &cobra.Command{
		Use:   "analyze (FILE... | --source URL (--from POSITION | --last DURATION)) [flags]",
		Short: "How parallel a binlog is, per policy and worker count, and why a replica lags",
		Long: `Read binlog or relay log files (or a live source's binlog, with a binlog
dump) and predict, for each dependency policy and worker count, the speedup
of gapless over serial apply (gapless replicate --workers 1): gapless's own
scheduling (the real policies, group-index order, strict commit order, and
--batch: up to that many consecutive row transactions in one target
transaction, as a replica catching up applies them) is replayed on a model
clock where a batch costs

    --cost-txn + rows x --cost-row + KiB x --cost-kib   (in parallel, at most
                                                         --capacity at once)
  + --cost-commit                                      (serial: the COMMITs
                                                         happen one after another)

--capacity is how many batches the target executes at once at full speed:
its cores, less what gapless and others use on that host (on a 2-core host
shared with gapless, little more than 1). The defaults were measured on a
non-durable sandbox target and leave the capacity unlimited; --calibrate URL
measures every constant on your target instead, by applying a few hundred
sample transactions in a scratch database (created, then dropped; the user
needs CREATE and DROP), serially and from --calibrate-connections at once,
and reads the target's own largest tables (point lookups by an integer
primary key, at random keys; SELECT only), so that a target whose data does
not fit its buffer pool is modelled with each row change's page read, and
with the reads that connections overlap.
Causal commit order is not modelled.

Then it says why parallelism is lost (source commit groups, barriers,
tables without a primary key, hot rows, large transactions) and what to
change (policy, workers, the source's group commit settings, primary keys).

The writeset policy needs each table's keys: --schema-from URL reads them
from a server holding the tables (primary, unique and foreign keys, as the
applier does); without it, primary keys come from the table maps when the
source writes binlog_row_metadata=FULL, and tables without that metadata are
taken whole (one transaction at a time), which the report says.`,
		Example: `  gapless analyze /var/lib/mysql/mariadb-bin.0000*
  gapless analyze --json mariadb-bin.000042 > parallelism.json
  gapless analyze --source mysql://repl:repl@db1:3306 --last 15m --html report.html
  gapless analyze --source mysql://repl:repl@db1:3306 --from 0-1-51253 --schema-from mysql://repl:repl@db1:3306
  gapless analyze --from 0-1-100 --until 0-1-6100 --calibrate mysql://gapless:secret@replica1:3306 mariadb-bin.0000*`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runAnalyze(ctx, cmd, args, f)
		},
	}
	fl := cmd.Flags()
	f.sourceServer = addServerFlags(fl, "source", "source", "", "analyze a live source's binlog, read with a binlog dump (user needs REPLICATION SLAVE and BINLOG MONITOR)", nil)
	fl.StringVar(&f.from, "from", "", "analyze the transactions after this GTID position (with --source: where the dump starts)")
	fl.StringVar(&f.until, "until", "", "analyze the transactions up to this GTID position, not those after it")
	fl.DurationVar(&f.last, "last", 0, "with --source: analyze the transactions of the last DURATION (e.g. 15m)")
	fl.Uint32Var(&f.serverID, "server-id", 0, "with --source: replica server id of the dump (default: random, above 2^31)")
	fl.StringVar(&f.schemaFrom, "schema-from", "", "read tables' unique and foreign keys from this server (mysql://user:password@host:port)")
	fl.IntSliceVar(&f.workers, "workers", analyze.DefaultWorkers, "worker counts to simulate")
	fl.StringSliceVar(&f.policies, "policies", analyze.DefaultPolicies, "policies to simulate")
	fl.DurationVar(&f.cost.Commit, "cost-commit", f.cost.Commit, "modelled COMMIT round trip; serial under strict commit order")
	fl.DurationVar(&f.cost.Txn, "cost-txn", f.cost.Txn, "modelled cost of each transaction besides its rows and commit")
	fl.DurationVar(&f.cost.Row, "cost-row", f.cost.Row, "modelled cost of each row change (0: row images are not decoded unless writeset needs them)")
	fl.DurationVar(&f.cost.KiB, "cost-kib", f.cost.KiB, "modelled cost of each KiB of binlog events")
	fl.Float64Var(&f.cost.Capacity, "capacity", f.cost.Capacity, "modelled target capacity: batches it executes at once at full speed (0: unlimited, a core per worker)")
	fl.IntVar(&f.batch, "batch", analyze.DefaultBatch, "most consecutive transactions a worker applies in one target transaction, as replicate's --batch (1: no batching)")
	f.calibrateServer = addServerFlags(fl, "target", "calibrate", "", "measure the cost model on this target (mysql://user@host:port) with a sample in a scratch database, instead of the --cost-* and --capacity flags", nil)
	fl.IntVar(&f.calibrateConns, "calibrate-connections", 8, "with --calibrate: connections applying at once to measure the capacity")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON instead of text")
	fl.StringVar(&f.html, "html", "", "also write the report, with charts, to this HTML file")
	return cmd
}

func runAnalyze(ctx context.Context, cmd *cobra.Command, args []string, f analyzeFlags) error {
	if err := f.resolveServers(); err != nil {
		return err
	}
	opts := analyze.Options{Workers: f.workers, Policies: f.policies, Cost: f.cost, Batch: f.batch, From: f.from, Until: f.until}
	// The input first: a mistake there is said before a calibration runs.
	paths, err := f.input(args, &opts)
	if err != nil {
		return usageError(err)
	}
	var calibration *analyze.Calibration
	if f.calibrate != "" {
		for _, name := range []string{"cost-commit", "cost-txn", "cost-row", "cost-kib", "capacity"} {
			if cmd.Flags().Changed(name) {
				return usageError(fmt.Errorf("--%s and --calibrate: give one or the other", name))
			}
		}
		if calibration, err = analyze.Calibrate(ctx, f.calibrate, analyze.CalibrateConfig{Connections: f.calibrateConns}); err != nil {
			return err
		}
		opts.Cost = calibration.Cost
	}
	if f.schemaFrom != "" {
		db, _, err := dburl.Open(f.schemaFrom, nil)
		if err != nil {
			return fmt.Errorf("--schema-from: %w", err)
		}
		defer db.Close()
		opts.SchemaFrom = db
	}
	// The analysis allocates much and keeps little: collect less often.
	debug.SetGCPercent(200)

	var report *analyze.Report
	if f.source != "" {
		report, err = analyze.Source(ctx, analyze.SourceConfig{URL: f.source, From: f.from, Last: f.last, ServerID: f.serverID}, opts)
	} else {
		report, err = analyze.Files(ctx, paths, opts)
	}
	if err != nil {
		return err
	}
	report.Calibration = calibration
	return f.write(cmd.OutOrStdout(), report)
}

// resolveServers turns the server flags (with their password flags and
// option files) into URLs.
func (f *analyzeFlags) resolveServers() error {
	if f.sourceServer.given() {
		_, url, err := f.sourceServer.resolve()
		if err != nil {
			return err
		}
		f.source = url
	}
	if f.calibrateServer.url != "" {
		_, url, err := f.calibrateServer.resolve()
		if err != nil {
			return err
		}
		f.calibrate = url
	}
	if f.schemaFrom != "" {
		// The schema's server is most often the source: its password flags apply.
		schema := *f.sourceServer
		schema.url, schema.urlFlag = f.schemaFrom, "schema-from"
		_, url, err := schema.resolve()
		if err != nil {
			return err
		}
		f.schemaFrom = url
	}
	return nil
}

// input checks what to analyze, files or a live source, and returns the
// files.
func (f analyzeFlags) input(args []string, opts *analyze.Options) ([]string, error) {
	if f.batch < 1 || f.batch > 10000 {
		return nil, fmt.Errorf("--batch %d: want 1 to 10000", f.batch)
	}
	var paths []string
	switch {
	case f.source != "" && len(args) > 0:
		return nil, errors.New("give either binlog files or --source, not both")
	case f.source != "":
		opts.From = "" // the dump starts there
	case f.last != 0:
		return nil, errors.New("--last needs --source (with files, use --from and --until)")
	case len(args) == 0:
		return nil, errors.New("give binlog files to analyze (e.g. /var/lib/mysql/mariadb-bin.0000*), or --source URL")
	default:
		var err error
		if paths, err = expandPaths(args); err != nil {
			return nil, err
		}
	}
	return paths, opts.Check()
}

// write prints the report as text or JSON, and writes its HTML form.
func (f analyzeFlags) write(out io.Writer, report *analyze.Report) error {
	if f.html != "" {
		if err := writeHTMLReport(f.html, report); err != nil {
			return err
		}
	}
	if f.json {
		return report.WriteJSON(out)
	}
	if err := report.WriteText(out); err != nil {
		return err
	}
	if f.html != "" {
		fmt.Fprintf(out, "\nHTML report: %s\n", f.html)
	}
	return nil
}

// expandPaths expands the glob patterns the shell left alone (quoted, or
// matching nothing) and checks that every file exists.
func expandPaths(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		if strings.ContainsAny(arg, "*?[") {
			matches, err := filepath.Glob(arg)
			if err != nil {
				return nil, fmt.Errorf("bad file pattern %q: %w", arg, err)
			}
			if len(matches) == 0 {
				return nil, fmt.Errorf("no file matches %q", arg)
			}
			paths = append(paths, matches...)
			continue
		}
		if _, err := os.Stat(arg); err != nil {
			return nil, fmt.Errorf("binlog file: %w", err)
		}
		paths = append(paths, arg)
	}
	return paths, nil
}

func writeHTMLReport(path string, report *analyze.Report) error {
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := report.WriteHTML(file); err != nil {
		file.Close()
		return fmt.Errorf("--html %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}
