package apply

import (
	"slices"
	"testing"
)

func TestAheadOf(t *testing.T) {
	for _, c := range []struct {
		waits, want []bool
	}{
		{[]bool{false, false}, nil},
		{[]bool{true, true}, nil},
		{[]bool{true, false, true, false}, []bool{false, true, false, true}},
		{[]bool{false, true}, []bool{true, false}},
	} {
		if got := aheadOf(c.waits); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("aheadOf(%v) = %v, want %v", c.waits, got, c.want)
		}
	}
}
