package binlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

// TestReceiverStopsOnAStreamItCannotCut: a source binlog that ends amid a
// group and goes on in a binlog the source did not start with (here, a
// group cut off by hand in a binlog the source had rotated away from)
// stops the receiver with an error that says so, instead of reconnecting
// for ever to read the same events again.
func TestReceiverStopsOnAStreamItCannotCut(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary", Binlog: true})
	ctx := context.Background()
	if err := srv.Exec(ctx, "CREATE DATABASE cut", "CREATE TABLE cut.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"BEGIN", "INSERT INTO cut.t VALUES (1)", "INSERT INTO cut.t VALUES (2)", "COMMIT"); err != nil {
		t.Fatal(err)
	}
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var file, base string
	if err := db.QueryRow("SELECT @@log_bin_basename").Scan(&base); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SHOW BINLOG EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	var cut int64
	for rows.Next() {
		var log, kind, info string
		var pos, server, end int64
		if err := rows.Scan(&log, &pos, &kind, &server, &end, &info); err != nil {
			t.Fatal(err)
		}
		file = log
		if strings.HasPrefix(kind, "Write_rows") && cut == 0 {
			cut = end // after the first row event of the transaction (the CREATEs are queries)
		}
	}
	rows.Close()
	if cut == 0 {
		t.Fatal("no row event")
	}
	if err := srv.Exec(ctx, "FLUSH BINARY LOGS", "INSERT INTO cut.t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(filepath.Dir(base), file), cut); err != nil {
		t.Fatal(err)
	}
	r := NewReceiver(ReceiverConfig{Host: "127.0.0.1", Port: uint16(srv.Port), User: sandbox.ReplUser, Password: sandbox.ReplPassword, ServerID: 99, Heartbeat: time.Second},
		openTestRelay(t, t.TempDir(), 0))
	run, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = r.Run(run)
	var st *streamError
	if !errors.As(err, &st) || !strings.Contains(err.Error(), "format description event inside group") {
		t.Fatalf("Run returned %v, want the stream error", err)
	}
}
