package main

import "github.com/spf13/cobra"

func newVerifyCmd() *cobra.Command {
	return &cobra.Command{Use: "verify", Short: "not built yet"}
}
