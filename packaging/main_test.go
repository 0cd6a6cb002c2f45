// main_test.go checks the Debian versions made from git describe's.
package main

import "testing"

func TestDebianVersion(t *testing.T) {
	for _, c := range []struct{ describe, want string }{
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"v1.2.3-4-gabcdef1", "1.2.3+4.gabcdef1"},
		{"v1.2.3-4-gabcdef1-dirty", "1.2.3+4.gabcdef1.dirty"},
		{"dea7075", "0~git20261129.dea7075"},
		{"dea7075-dirty", "0~git20261129.dea7075.dirty"},
	} {
		got, err := DebianVersion(c.describe, "2026-11-29T01:02:03Z")
		if err != nil || got != c.want {
			t.Errorf("DebianVersion(%q) = %q, %v; want %q", c.describe, got, err, c.want)
		}
	}
	if _, err := DebianVersion("", "2026-11-29T01:02:03Z"); err == nil {
		t.Error("an empty version is accepted")
	}
}
