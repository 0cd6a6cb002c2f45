package main

import "github.com/spf13/cobra"

func newSandboxCmd() *cobra.Command {
	return &cobra.Command{Use: "sandbox", Short: "not built yet"}
}
