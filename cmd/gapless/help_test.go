package main

import (
	"strings"
	"testing"
)

func TestRootHelpSaysMariaDBAndMySQLIsRefused(t *testing.T) {
	out, err := runCommand(newRootCmd(), "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "MariaDB and MySQL") || !strings.Contains(out, "MySQL sources are refused") {
		t.Errorf("root help:\n%s", out)
	}
	if !strings.Contains(out, "reset") {
		t.Errorf("root help lists no reset command:\n%s", out)
	}
}

func TestReplicateHelpHasExamplesURLParametersPrivilegesAndPositions(t *testing.T) {
	out, err := runCommand(newReplicateCmd(), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Examples:", "?password-file=", "?tls=true", "?timeout=", "REPLICATION SLAVE", "BINLOG REPLAY",
		"0-1-51253,1-1-10", "--source-password-file", "gapless reset"} {
		if !strings.Contains(out, want) {
			t.Errorf("replicate --help does not say %q", want)
		}
	}
}

func TestSandboxDownWithoutSandboxFails(t *testing.T) {
	dir := t.TempDir() + "/nonexistent"
	out, err := runCommand(newSandboxCmd(), "down", "--dir", dir)
	if err == nil || !strings.Contains(err.Error(), "no sandbox in "+dir) {
		t.Errorf("sandbox down --dir %s: %v\n%s", dir, err, out)
	}
	if strings.Contains(out, "stopped") {
		t.Errorf("sandbox down says it stopped something:\n%s", out)
	}
}
