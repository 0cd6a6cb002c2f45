// This file owns `gapless sandbox up|down|env`: a local primary and target
// for demos. Every subcommand works from the state file in --dir, so a
// sandbox started by one shell can be inspected and stopped from another.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"gapless/internal/sandbox"

	"github.com/spf13/cobra"
)

func newSandboxCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local MariaDB primary and target for demos and tests",
		Long: "Run two local MariaDB servers on loopback ports: a primary (source) and a target,\n" +
			"both with GTID binlogs. Data, logs and my.cnf files live under --dir.",
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "./gapless-sandbox", "directory holding the sandbox's datadirs and state")
	cmd.AddCommand(newSandboxUpCmd(&dir), newSandboxDownCmd(&dir), newSandboxEnvCmd(&dir))
	return cmd
}

func newSandboxUpCmd(dir *string) *cobra.Command {
	var opts sandbox.Options
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the sandbox (or return the one already running in --dir)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Dir = *dir
			sb, err := sandbox.Up(ctx, opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "sandbox running in %s\n", sb.Dir)
			fmt.Fprintf(out, "source: %s\n", sb.SourceURL)
			fmt.Fprintf(out, "target: %s\n", sb.TargetURL)
			fmt.Fprintf(out, "root shells: mariadb --defaults-file=%s/primary/my.cnf  (or target/my.cnf)\n", sb.Dir)
			fmt.Fprintf(out, "export the URLs: eval \"$(gapless sandbox env --dir %s)\"\n", sb.Dir)
			fmt.Fprintf(out, "stop with: gapless sandbox down --dir %s  (add --remove to delete the data too)\n", sb.Dir)
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.PrimaryPort, "primary-port", 0, "loopback port for the primary (0 = the previous one if free, else any free port)")
	cmd.Flags().IntVar(&opts.TargetPort, "target-port", 0, "loopback port for the target (0 = the previous one if free, else any free port)")
	cmd.Flags().BoolVar(&opts.Fast, "fast", false, "trade durability for speed: innodb_flush_log_at_trx_commit=2, sync_binlog=0")
	return cmd
}

func newSandboxDownCmd(dir *string) *cobra.Command {
	var remove bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Shut the sandbox's servers down cleanly, keeping their data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A folder without a sandbox is a mistake (a wrong --dir), not a stop.
			if _, err := sandbox.Load(*dir); errors.Is(err, sandbox.ErrNoSandbox) {
				return err
			}
			if remove {
				if err := sandbox.Remove(*dir); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sandbox in %s stopped and deleted\n", *dir)
				return nil
			}
			if err := sandbox.Down(*dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sandbox in %s stopped; `gapless sandbox up --dir %s` starts it again\n", *dir, *dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "also delete the sandbox directory")
	return cmd
}

func newSandboxEnvCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print shell exports of GAPLESS_SOURCE and GAPLESS_TARGET for the sandbox",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sb, err := sandbox.Load(*dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export GAPLESS_SOURCE='%s'\n", sb.SourceURL)
			fmt.Fprintf(cmd.OutOrStdout(), "export GAPLESS_TARGET='%s'\n", sb.TargetURL)
			if !sb.Running() {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: the sandbox in %s is not running; start it with `gapless sandbox up --dir %s`\n", sb.Dir, *dir)
			}
			return nil
		},
	}
}
