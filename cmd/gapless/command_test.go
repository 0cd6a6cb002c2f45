package main

import (
	"bytes"

	"github.com/spf13/cobra"
)

// runCommand runs one gapless subcommand with args and returns what it
// printed, standard output and error together.
func runCommand(cmd *cobra.Command, args ...string) (string, error) {
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
