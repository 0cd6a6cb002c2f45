package sqltext

import "testing"

func TestLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"default": "_utf8mb4'default'",
		"+03:00":  "_utf8mb4'+03:00'",
		"it's":    "_utf8mb4 X'69742773'",
		`a\b`:     "_utf8mb4 X'615c62'",
		"é":       "_utf8mb4 X'c3a9'",
		"\xff":    "_binary X'ff'",
		"":        "_utf8mb4''",
	} {
		if got := Literal(in); got != want {
			t.Errorf("Literal(%q) = %s, want %s", in, got, want)
		}
	}
}
