package target

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gapless/internal/dburl"
	"gapless/internal/sandbox"
)

// TestWireCountsAnswersPastBinlogStatements sends a script with BINLOG
// statements of row events in the middle (whose answers lack the "more
// results" flag) and checks that every statement after them ran, that the
// connection stays in step, and that an error ends a script and is reported.
func TestWireCountsAnswersPastBinlogStatements(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target", Binlog: true})
	ctx := context.Background()
	if err := srv.Exec(ctx, "CREATE DATABASE w", "CREATE TABLE w.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO w.t VALUES (1, 10), (2, 20)"); err != nil {
		t.Fatal(err)
	}
	format, rows := rowEventsOfLastInsert(t, filepath.Join(srv.Config.Dir, srv.Config.Name, "binlog", "mariadb-bin.000001"))
	if err := srv.Exec(ctx, "DELETE FROM w.t"); err != nil {
		t.Fatal(err)
	}

	cfg, err := dburl.Parse(srv.URL(sandbox.ApplierUser, sandbox.ApplierPassword))
	if err != nil {
		t.Fatal(err)
	}
	w, err := dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()

	script := []string{
		"SET @before = 1", binlogStatement([][]byte{format}), "BEGIN",
		binlogStatement(rows), "SET @after = 2", "COMMIT",
	}
	if err := w.exec(script); err != nil {
		t.Fatalf("script with BINLOG statements: %v", err)
	}
	got, err := w.queryString("SELECT CONCAT(@before, @after, (SELECT SUM(v) FROM w.t))")
	if err != nil {
		t.Fatalf("the connection is out of step after the script: %v", err)
	}
	if got != "1230" {
		t.Fatalf("after the script: @before, @after and the rows' sum are %q, want 1230", got)
	}

	err = w.exec([]string{"SET @x = 1", "DO no_such_function()", "SET @y = 1"})
	if code, _ := errorCode(err); code != 1305 {
		t.Fatalf("a failing statement mid-script gave %v, want error 1305", err)
	}
	got, err = w.queryString("SELECT CONCAT(@x, '/', IFNULL(@y, 'unset'))")
	if err != nil || got != "1/unset" {
		t.Fatalf("after the failed script: %q, %v; want 1/unset (the server stops at the error)", got, err)
	}

	// An error early in a long script: far fewer bytes come than the
	// answers still expected (lowat.go), and the read must not wait for
	// them. Without its time limit, this exec would never return.
	long := []string{"SET @z = 1", "DO no_such_function()"}
	for range 500 {
		long = append(long, "SET @z = @z + 1")
	}
	if w.lowat == nil {
		t.Fatal("a plain TCP apply connection has no low-water mark")
	}
	err = w.exec(long)
	if code, _ := errorCode(err); code != 1305 {
		t.Fatalf("a failing statement early in a long script gave %v, want error 1305", err)
	}
	if got, err = w.queryString("SELECT @z"); err != nil || got != "1" {
		t.Fatalf("after the long failed script: @z is %q, %v; want 1", got, err)
	}
	if err := w.exec(long[2:]); err != nil {
		t.Fatalf("a long script: %v", err)
	}
	if got, err = w.queryString("SELECT @z"); err != nil || got != "501" {
		t.Fatalf("after the long script: @z is %q, %v; want 501", got, err)
	}

	// A LOAD DATA statement's file request holds the answers after it
	// back until the file is sent: its script is read as it comes, not
	// awaited by the low-water mark (which would wait out its time limit).
	if err := srv.Exec(ctx, "CREATE TABLE w.l (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	w.lowat.since = time.Time{}
	w.files = map[string][]byte{"rows.tsv": []byte("3\t30\n4\t40\n")}
	err = w.exec([]string{"SET @l = 1", "LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE w.l (id, v)", "SET @l = @l + 1"})
	w.files = nil
	if err != nil {
		t.Fatalf("a script with LOAD DATA: %v", err)
	}
	if !w.lowat.since.IsZero() {
		t.Error("a script with LOAD DATA had its answers awaited by the low-water mark")
	}
	if got, err = w.queryString("SELECT CONCAT(@l, '/', (SELECT SUM(v) FROM w.l))"); err != nil || got != "2/70" {
		t.Fatalf("after the script with LOAD DATA: %q, %v; want 2/70", got, err)
	}

	// On a node that refuses SET server_id, the assignments are taken out
	// as the script is sent: the packet's length is that of what is sent.
	w.fixedServerID = true
	err = w.exec([]string{"SET @@session.server_id=7, @@session.time_zone='+01:00'", "SET @@session.server_id=8", "SET @w = 2"})
	w.fixedServerID = false
	if err != nil {
		t.Fatalf("a script without its server_id assignments: %v", err)
	}
	if got, err = w.queryString("SELECT CONCAT(@@session.server_id <> 7, @@session.server_id <> 8, @@session.time_zone, @w)"); err != nil || got != "11+01:002" {
		t.Fatalf("after the script without server_id: %q, %v; want 11+01:002", got, err)
	}
}

// rowEventsOfLastInsert reads a binlog file and returns its format
// description event and the last table map with the row events after it.
func rowEventsOfLastInsert(t *testing.T, path string) (format []byte, rows [][]byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const (
		formatDescription = 15
		tableMap          = 19
		writeRowsV1       = 23
		writeRowsV2       = 30
	)
	for off := 4; off+19 <= len(data); {
		size := int(binary.LittleEndian.Uint32(data[off+9:]))
		if size < 19 || off+size > len(data) {
			t.Fatalf("%s: bad event size %d at %d", path, size, off)
		}
		ev := data[off : off+size]
		switch ev[4] {
		case formatDescription:
			format = ev
		case tableMap:
			rows = [][]byte{ev}
		case writeRowsV1, writeRowsV2:
			rows = append(rows, ev)
		}
		off += size
	}
	if format == nil || len(rows) < 2 {
		t.Fatalf("%s: no format description or no row events", path)
	}
	return format, rows
}

// A value queryString returns is the caller's: the result's buffers go
// back to a pool the next query takes from, on this connection or another
// (a later answer overwrote a session's CURRENT_USER() so).
func TestQueryStringOwnsItsValue(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target"})
	cfg, err := dburl.Parse(srv.URL(sandbox.ApplierUser, sandbox.ApplierPassword))
	if err != nil {
		t.Fatal(err)
	}
	var wires []*wire
	for range 2 {
		w, err := dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer w.close()
		wires = append(wires, w)
	}
	first, err := wires[0].queryString("SELECT CURRENT_USER()")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Clone(first)
	for i := range 50 {
		if _, err := wires[i%2].queryString(fmt.Sprintf("SELECT REPEAT('z', %d)", 1+i%12)); err != nil {
			t.Fatal(err)
		}
	}
	if first != want {
		t.Fatalf("CURRENT_USER() read first is now %q, was %q", first, want)
	}
}
