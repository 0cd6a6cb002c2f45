package main

import "github.com/spf13/cobra"

func newReplicateCmd() *cobra.Command {
	return &cobra.Command{Use: "replicate", Short: "not built yet"}
}
