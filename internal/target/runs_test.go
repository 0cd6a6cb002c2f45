package target

import (
	"slices"
	"testing"
)

// TestPositionBeforeCommit: on a target without the binlog, the position of
// a group that ends in COMMIT goes before that COMMIT; anything else keeps
// its position transaction after the group.
func TestPositionBeforeCommit(t *testing.T) {
	own := []string{beginStatement, "INSERT INTO gapless.checkpoint VALUES (1)", "COMMIT"}
	for _, c := range []struct {
		name       string
		tail, want []string
	}{
		{"ends in COMMIT", append([]string{"COMMIT"}, own...), []string{own[1], "COMMIT"}},
		{"ends in ROLLBACK", append([]string{"ROLLBACK"}, own...), append([]string{"ROLLBACK"}, own...)},
		{"ends without either", own, own},
		{"more after the position", append(append([]string{"COMMIT"}, own...), restStatement), append(append([]string{"COMMIT"}, own...), restStatement)},
	} {
		if got := positionBeforeCommit(slices.Clone(c.tail), own); !slices.Equal(got, c.want) {
			t.Errorf("%s: tail %q, want %q", c.name, got, c.want)
		}
	}
}
