package main

import (
	"strings"
	"testing"
	"time"

	"gapless/internal/apply"
)

// TestDependencyHint: a run whose workers mostly waited for earlier
// transactions (W11F at 256 a batch: 51% waiting, 33% run ahead and
// waiting, 13% applying) says why; one that mostly applied says nothing.
func TestDependencyHint(t *testing.T) {
	chained := map[apply.WorkerState]time.Duration{
		apply.StateWaitingDeps: 51 * time.Second,
		apply.StateAhead:       33 * time.Second,
		apply.StateApplying:    13 * time.Second,
		apply.StateIdle:        3 * time.Second,
	}
	hint := dependencyHint(chained, 253.2)
	for _, want := range []string{"84% of their time waiting for earlier transactions (33% with the statements that waited for nothing run ahead already)", "each batch (253.2 transactions on average)", "gapless analyze"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint %q lacks %q", hint, want)
		}
	}
	busy := map[apply.WorkerState]time.Duration{
		apply.StateWaitingDeps:   10 * time.Second,
		apply.StateApplying:      60 * time.Second,
		apply.StateWaitingCommit: 30 * time.Second,
	}
	if hint := dependencyHint(busy, 16); hint != "" {
		t.Errorf("a run whose workers mostly applied got a hint: %q", hint)
	}
	if hint := dependencyHint(nil, 0); hint != "" {
		t.Errorf("a run without worker time got a hint: %q", hint)
	}
}
