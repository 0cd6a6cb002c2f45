// This file owns `gapless reset`: it clears a stream's position on the
// target after an operator re-seeded the target from a backup, so that the
// next replicate starts from the backup's position. It refuses while an
// applier runs the stream.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
)

func newResetCmd() *cobra.Command {
	var stream string
	var target *serverFlags
	cmd := &cobra.Command{
		Use:   "reset --target URL [--stream NAME]",
		Short: "Clear a stream's position on the target, after re-seeding the target from a backup",
		Long: `Remove the stream's position (its rows in gapless.checkpoint and
gapless.workers) from the target, so that the next replicate starts from
--start-position, else from the target's @@gtid_slave_pos.

Run it after loading a backup of the source into the target, for instance
when the source has purged the binlogs the target needed:

  mariadb-dump --all-databases --gtid --master-data=2 --single-transaction ... > backup.sql
  (load backup.sql into the target)
  gapless reset --target URL
  gapless replicate --target URL --source URL --start-position <the dump's gtid_slave_pos>

A running applier of the stream is never reset under it: stop it first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !target.given() {
				return fmt.Errorf("--target is required (or $GAPLESS_TARGET)")
			}
			_, url, err := target.resolve()
			if err != nil {
				return err
			}
			db, cfg, err := dburl.Open(url, nil)
			if err != nil {
				return fmt.Errorf("target: %w", err)
			}
			defer db.Close()
			ctx := cmd.Context()
			_, found, err := checkpoint.Existing(ctx, db, stream)
			if err != nil {
				return err
			}
			if !found {
				return notFoundStream(ctx, db, cfg, stream)
			}
			removed, err := checkpoint.Reset(ctx, db, stream)
			if err != nil {
				return fmt.Errorf("reset of stream %q refused: %w", stream, err)
			}
			extra := ""
			if removed.Extra > 0 {
				extra = fmt.Sprintf(" and %d transactions applied past a gap", removed.Extra)
			}
			if removed.Temporary > 0 {
				extra += fmt.Sprintf(", and %d temporary table(s) of the source's sessions kept for the next run", removed.Temporary)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stream %q on %s: removed position %s%s (%d rows of %s.checkpoint, %d of %s.workers)\n",
				stream, cfg.Redacted(), emptyAsNone(removed.Position.String()), extra, removed.Rows, checkpoint.Schema, removed.WorkerRows, checkpoint.Schema)
			fmt.Fprintln(cmd.OutOrStdout(), "the next replicate starts from --start-position, else from the target's @@gtid_slave_pos, else from the source's first binlog")
			return nil
		},
	}
	fl := cmd.Flags()
	files := addOptionFileFlags(fl)
	target = addServerFlags(fl, "target", "target", "GAPLESS_TARGET", "target URL", files)
	fl.StringVar(&stream, "stream", "default", "the stream whose position to clear (and whose option group, [gapless-STREAM], is read)")
	readsOptionFiles(cmd, files)
	return cmd
}

// notFoundStream is the error for a stream the target holds no position of.
func notFoundStream(ctx context.Context, db *sql.DB, cfg dburl.Config, stream string) error {
	streams, err := checkpoint.Streams(ctx, db)
	if err != nil {
		return err
	}
	return fmt.Errorf("stream %q has no position on %s (%s)", stream, cfg.Addr(), streamList(streams))
}

// streamList names the streams the target holds, for a message.
func streamList(streams []string) string {
	if len(streams) == 0 {
		return "this target holds no gapless position"
	}
	return "streams on this target: " + strings.Join(streams, ", ")
}
