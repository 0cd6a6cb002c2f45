// This file owns the verify subcommand: it compares every replicated table
// between the primary and the target and prints one line per table. It
// returns an exitError with code 1 exactly when some table differs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"gapless/internal/dburl"
	"gapless/internal/verify"
)

// verifyMaxNamedTables bounds how many differing tables the final error names.
const verifyMaxNamedTables = 10

func newVerifyCmd() *cobra.Command {
	var source, target *serverFlags
	var opts verify.Options
	var verbose bool
	cmd := &cobra.Command{
		Use:   "verify --source URL --target URL",
		Short: "Compare every replicated table between the primary and the target",
		Long: `Compare every replicated table between the primary (source) and the target.

Tables whose CHECKSUM TABLE values match are equal; for the others the rows
are compared one by one, in primary key order, to confirm the difference and
find the first differing row. System schemas and the gapless schema are
skipped. A database the target holds and the source does not have at all
(on a target shared by several streams, another source's) is listed apart
and is no difference, unless named in --databases. Each side is read in a consistent snapshot; compare while the
applier is caught up and the primary idle, or differences in flight show up.

Exit status is 0 when every table compared is equal and 1 otherwise.`,
		Example: "  gapless verify --source mysql://repl:repl@127.0.0.1:3306 --target mysql://gapless:gapless@127.0.0.1:3307",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if verbose {
				stderr := cmd.ErrOrStderr()
				opts.Progress = func(line string) { fmt.Fprintln(stderr, line) }
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runVerify(ctx, cmd.OutOrStdout(), source, target, opts)
		},
	}
	flags := cmd.Flags()
	files := addOptionFileFlags(flags)
	source = addServerFlags(flags, "source", "source", "GAPLESS_SOURCE", "primary server, mysql://user@host:port", files)
	target = addServerFlags(flags, "target", "target", "GAPLESS_TARGET", "target server, mysql://user@host:port", files)
	flags.StringSliceVar(&opts.Databases, "databases", nil, "compare only these databases (comma-separated; default all but system schemas and gapless)")
	flags.IntVar(&opts.ChunkRows, "chunk-rows", verify.DefaultChunkRows, "rows read per query when comparing rows")
	flags.BoolVarP(&verbose, "verbose", "v", false, "print progress to stderr")
	readsOptionFiles(cmd, files)
	return cmd
}

func runVerify(ctx context.Context, out io.Writer, sourceFlags, targetFlags *serverFlags, opts verify.Options) error {
	if !sourceFlags.given() || !targetFlags.given() {
		return fmt.Errorf("both --source and --target are required (or $GAPLESS_SOURCE and $GAPLESS_TARGET)")
	}
	_, sourceURL, err := sourceFlags.resolve()
	if err != nil {
		return err
	}
	_, targetURL, err := targetFlags.resolve()
	if err != nil {
		return err
	}
	if opts.ChunkRows < 1 {
		return fmt.Errorf("--chunk-rows must be at least 1, got %d", opts.ChunkRows)
	}
	source, sourceCfg, err := dburl.Open(sourceURL, nil)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer source.Close()
	target, targetCfg, err := dburl.Open(targetURL, nil)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer target.Close()

	fmt.Fprintf(out, "source %s\ntarget %s\n\n", sourceCfg.Redacted(), targetCfg.Redacted())
	report, err := verify.Compare(ctx, source, target, opts)
	if err != nil {
		return err
	}
	printVerifyReport(out, report)

	differing := report.Differing()
	if len(differing) == 0 {
		return nil
	}
	names := make([]string, 0, min(len(differing), verifyMaxNamedTables))
	for _, t := range differing[:min(len(differing), verifyMaxNamedTables)] {
		names = append(names, t.Name())
	}
	list := strings.Join(names, ", ")
	if len(differing) > verifyMaxNamedTables {
		list += fmt.Sprintf(" and %d more", len(differing)-verifyMaxNamedTables)
	}
	return &exitError{code: 1, err: fmt.Errorf("%d of %d %s differ: %s",
		len(differing), len(report.Tables), verifyPlural(len(report.Tables), "table", "tables"), list)}
}

func printVerifyReport(out io.Writer, report verify.Report) {
	width := 0
	for _, t := range report.Tables {
		width = max(width, len(t.Name()))
	}
	counts := map[string]int{}
	for _, t := range report.Tables {
		counts[t.Status]++
		fmt.Fprintf(out, "%-*s  %s\n", width, t.Name(), describeVerifyResult(t))
	}
	if len(report.Tables) == 0 {
		fmt.Fprintln(out, "no tables to compare")
	} else {
		fmt.Fprintf(out, "\n%d %s: %d equal, %d different, %d missing on target, %d extra on target\n",
			len(report.Tables), verifyPlural(len(report.Tables), "table", "tables"),
			counts[verify.StatusEqual], counts[verify.StatusDifferent], counts[verify.StatusMissing], counts[verify.StatusExtra])
	}
	printElsewhere(out, report.Elsewhere)
	printAbsent(out, report.Absent)
}

// printAbsent names the source's databases the target does not have at
// all: their tables differ (missing), and a stream that filters them out
// is the likely reason.
func printAbsent(out io.Writer, absent []verify.OtherDatabase) {
	if len(absent) == 0 {
		return
	}
	names := make([]string, len(absent))
	for i, d := range absent {
		names[i] = fmt.Sprintf("%s.* (%d %s)", d.Schema, d.Tables, verifyPlural(d.Tables, "table", "tables"))
	}
	fmt.Fprintf(out, "\nmissing on target, database and all: %s\n", strings.Join(names, ", "))
	fmt.Fprintln(out, "  filtered out of the stream (--do-db, --ignore-db)? Then narrow the check to the stream's databases with --databases")
}

// printElsewhere names the target's databases this source does not have
// (another stream's, on a target shared by several), which are not
// differences, and how to narrow or widen the check.
func printElsewhere(out io.Writer, others []verify.OtherDatabase) {
	if len(others) == 0 {
		return
	}
	names := make([]string, len(others))
	for i, d := range others {
		names[i] = fmt.Sprintf("%s.* (%d %s)", d.Schema, d.Tables, verifyPlural(d.Tables, "table", "tables"))
	}
	fmt.Fprintf(out, "\nextra on target, not on this source: %s\n", strings.Join(names, ", "))
	fmt.Fprintln(out, "  another stream's? Not counted as differences: narrow the check to this source's databases with --databases,")
	fmt.Fprintln(out, "  or widen it to those with --databases naming them (or verify them against their own --source)")
}

func describeVerifyResult(t verify.TableResult) string {
	var line string
	switch t.Status {
	case verify.StatusEqual:
		line = "equal"
	case verify.StatusDifferent:
		line = fmt.Sprintf("DIFFERENT (rows: source %d, target %d)", t.SourceRows, t.TargetRows)
	case verify.StatusMissing:
		line = "missing on target"
	case verify.StatusExtra:
		line = "extra on target"
	default:
		line = t.Status
	}
	if t.Detail != "" {
		line += ": " + t.Detail
	}
	return line
}

func verifyPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
