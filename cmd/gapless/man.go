// man.go owns gapless man, a hidden command that writes the manual pages,
// one per command (gapless.1, gapless-replicate.1, ...), from the commands'
// own help with cobra's doc generator, so a page never says other than
// --help. make release runs it and packs the pages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newManCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "man --dir DIR",
		Short:  "Write the manual pages of every command into DIR (section 1)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--dir is required: the folder to write the pages into")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "GAPLESS", Section: "1", Source: "gapless " + versionNumber(), Manual: "gapless manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "folder to write the pages into")
	return cmd
}
