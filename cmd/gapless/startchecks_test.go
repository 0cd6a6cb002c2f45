package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestOpenServersRefusedSource: a source that refuses the connection ends
// openServers with the source's error, and what it opened is closed on the
// way out (a close on the nil result once crashed every refused run).
func TestOpenServersRefusedSource(t *testing.T) {
	closed := closedAddr(t)
	in := checkedFlags{sourceURL: "mysql://repl@" + closed + "?timeout=2s", targetURL: "mysql://gapless@" + closed}
	servers, err := openServers(context.Background(), replicateFlags{}, in, slog.New(slog.DiscardHandler))
	if err == nil || servers != nil {
		t.Fatalf("openServers = %v, %v; want no servers and the source's error", servers, err)
	}
	if !strings.HasPrefix(err.Error(), "source") || !strings.Contains(err.Error(), closed) {
		t.Errorf("error %q does not name the source %s", err, closed)
	}
}
