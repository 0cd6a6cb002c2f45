package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpNeverPrintsAPassword: with the URLs (and passwords) in the
// environment, no subcommand's --help shows them.
func TestHelpNeverPrintsAPassword(t *testing.T) {
	t.Setenv("GAPLESS_SOURCE", "mysql://repl:Env-Source-Secret@db1:3306")
	t.Setenv("GAPLESS_TARGET", "mysql://gapless:Env-Target-Secret@db2:3306")
	t.Setenv("GAPLESS_SOURCE_PASSWORD", "Env-Source-Password")
	t.Setenv("GAPLESS_TARGET_PASSWORD", "Env-Target-Password")
	for name, cmd := range map[string]*cobra.Command{
		"replicate": newReplicateCmd(), "status": newStatusCmd(), "verify": newVerifyCmd(), "analyze": newAnalyzeCmd(),
	} {
		out, err := runCommand(cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		if strings.Contains(out, "Secret") || strings.Contains(out, "Env-") {
			t.Errorf("%s --help shows a password:\n%s", name, out)
		}
		if !strings.Contains(out, "-password-file") {
			t.Errorf("%s --help lists no password file flag", name)
		}
	}
}
