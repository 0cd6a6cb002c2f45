// Command gapless is a parallel replication applier for MariaDB (MySQL
// sources are refused for now).
//
// This file only wires the subcommands together; each subcommand lives in a
// file of its own and every error ends here, printed once.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit code other than 1 (for example verify's "tables differ").
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// exitUsage is the exit code of a command line or an option file that is
// wrong: running again changes nothing, and the service unit does not
// restart it (RestartPreventExitStatus).
const exitUsage = 2

// usageError makes err, about the command line or an option file, end the
// command with exitUsage.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gapless:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gapless",
		Short: "Parallel replication applier for MariaDB",
		Long: "gapless attaches to a MariaDB primary as a replica and applies its binlog to a target\n" +
			"with many connections at once, exactly once, in the primary's commit order.\n" +
			"Sources and targets are MariaDB servers; MySQL sources are refused for now.",
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(
		newReplicateCmd(),
		newStatusCmd(),
		newStopCmd(),
		newResetCmd(),
		newVerifyCmd(),
		newSandboxCmd(),
		newAnalyzeCmd(),
		newManCmd(),
	)
	return root
}
