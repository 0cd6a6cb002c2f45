package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"gapless/internal/status"
)

func newStopCmd() *cobra.Command {
	var addr string
	var wait time.Duration
	var stream string
	cmd := &cobra.Command{
		Use:   "stop --http ADDR",
		Short: "Stop a running gapless replicate at the nearest gap-less point, as SIGTERM does",
		Long: `Ask the gapless replicate serving --http ADDR for its gap-less stop (every
transaction up to the highest one a worker has started commits, the rest is
dropped and fetched again by the next run), then wait until it has stopped and
print where. SIGINT or SIGTERM to the replicate process do the same.`,
		Example: `  gapless replicate ... --http 9104 &
  gapless stop --http 9104`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr == "" {
				return fmt.Errorf("--http is required: the address the replicate serves (its --http)")
			}
			return runStop(cmd.Context(), addr, wait)
		},
	}
	files := addOptionFileFlags(cmd.Flags())
	cmd.Flags().StringVar(&addr, "http", "", "the --http address of the running replicate (PORT or HOST:PORT; http= of the stream's option file)")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to wait for the stop before giving up (the replicate goes on stopping)")
	cmd.Flags().StringVar(&stream, "stream", "", "read the option group of this stream too ([gapless-STREAM]), for its http=")
	readsOptionFiles(cmd, files)
	return cmd
}

func runStop(ctx context.Context, addr string, wait time.Duration) error {
	st, err := status.RequestStop(ctx, addr, wait)
	if err != nil {
		return err
	}
	fmt.Printf("stream %s %s at position %s\n", st.Name, st.State, emptyAsNone(st.Position))
	if st.LastError != nil {
		return fmt.Errorf("the run had failed before the stop: %s", st.LastError.Error)
	}
	return nil
}
