// logformat_test.go checks that --log-format json writes one JSON object a
// line with the stream, and refuses a format it does not know.
package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestJSONLogCarriesStreamGTIDAndWorker(t *testing.T) {
	var buf bytes.Buffer
	logger := newLogger(&buf, "json", slog.LevelInfo, "shop")
	logger.With("worker", 3).Warn("target connection lost; reconnecting", "gtid", "0-1-42")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for key, want := range map[string]any{"stream": "shop", "worker": float64(3), "gtid": "0-1-42", "level": "WARN"} {
		if line[key] != want {
			t.Errorf("%s = %v, want %v (%s)", key, line[key], want, buf.String())
		}
	}
}

func TestLogFormatRefusesOthers(t *testing.T) {
	_, err := runCommand(newReplicateCmd(), "--no-defaults", "--source", "mysql://u@h:1", "--target", "mysql://u@h:2", "--log-format", "xml")
	if err == nil || !strings.Contains(err.Error(), `--log-format "xml": want text or json`) {
		t.Errorf("--log-format xml: %v", err)
	}
}
