package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
)

func newStatusCmd() *cobra.Command {
	var stream string
	var target *serverFlags
	var verbose bool
	cmd := &cobra.Command{
		Use:   "status --target URL",
		Short: "Show each stream's applied position on the target, its lag and whether an applier runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), target, stream, verbose)
		},
	}
	target = addServerFlags(cmd.Flags(), "target", "target", "GAPLESS_TARGET", "target URL", addDefaultsFileFlag(cmd.Flags()))
	cmd.Flags().StringVar(&stream, "stream", "", "only this stream")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the position row of every domain and worker slot")
	return cmd
}

func runStatus(ctx context.Context, target *serverFlags, only string, verbose bool) error {
	if !target.given() {
		return fmt.Errorf("--target is required (or $GAPLESS_TARGET)")
	}
	_, targetURL, err := target.resolve()
	if err != nil {
		return err
	}
	db, cfg, err := dburl.Open(targetURL, nil)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer db.Close()
	streams, err := checkpoint.Streams(ctx, db)
	if err != nil {
		return err
	}
	if only != "" {
		if !slices.Contains(streams, only) {
			return notFoundStream(ctx, db, cfg, only)
		}
		streams = []string{only}
	}
	if len(streams) == 0 {
		fmt.Printf("%s: no gapless position on this target (nothing replicated yet)\n", cfg.Redacted())
		return nil
	}
	for _, name := range streams {
		store := checkpoint.ForStream(db, name)
		pos, err := store.Position(ctx)
		if err != nil {
			return err
		}
		rows, err := store.Rows(ctx)
		if err != nil {
			return err
		}
		running := "not running"
		if holder := checkpoint.Holder(ctx, db, name); holder != "" {
			running = "running (" + holder + ")"
		}
		fmt.Printf("stream %s: %s\n  position  %s\n", name, running, emptyAsNone(pos.String()))
		var newest checkpoint.Row
		for _, r := range rows {
			if r.AppliedAt.After(newest.AppliedAt) {
				newest = r
			}
		}
		if !newest.AppliedAt.IsZero() {
			fmt.Printf("  last commit  %s at %s UTC, %s after the source wrote it\n",
				newest.GTID, newest.AppliedAt.Format(time.DateTime), newest.AppliedAt.Sub(newest.SourceTime).Round(time.Second))
		}
		workers, err := store.Workers(ctx)
		if err != nil {
			return err
		}
		if holder := checkpoint.Holder(ctx, db, name); holder != "" && len(workers) > 0 {
			fmt.Printf("  workers (reported %s ago):\n", time.Since(workers[0].UpdatedAt).Round(100*time.Millisecond))
			for _, w := range workers {
				line := fmt.Sprintf("    %2d  %-26s", w.Slot, w.State)
				if w.GTID != "" {
					line += fmt.Sprintf(" %s, for %s", w.GTID, time.Since(w.Since).Round(time.Millisecond))
				}
				fmt.Println(line)
			}
		}
		if verbose {
			for _, r := range rows {
				fmt.Printf("  domain %d slot %d  %s\n", r.Domain, r.Slot, r.GTID)
			}
		}
	}
	return nil
}
