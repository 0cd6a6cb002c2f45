// Tests that analyze reads real binlogs: the binlog package's MariaDB sample
// file, and a binlog written by a sandbox primary under a single-client
// workload on two databases with a table without a primary key and a DDL,
// read from its files and with a binlog dump.
package analyze

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

func TestSampleBinlogFile(t *testing.T) {
	r, err := Files(context.Background(), []string{"../binlog/testdata/mariadb-10.11.bin"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// mariadb-binlog lists 8 GTIDs: 3 DDL, 2 groups of statements, 3 of row events.
	if r.Transactions != 8 || r.Flavor != "mariadb" {
		t.Fatalf("%d %s transactions, want 8 mariadb", r.Transactions, r.Flavor)
	}
	barriers := map[string]int{}
	for _, b := range r.Barriers {
		barriers[b.Note] = b.Transactions
	}
	// One group of statements is plain DML on an InnoDB table, which the
	// applier runs beside others: no barrier.
	if barriers["ddl"] != 3 || barriers["statement"] != 1 {
		t.Errorf("barriers %v, want 3 DDL and 1 statement-format", barriers)
	}
	if r.Keys != KeysNone || len(r.TablesKeysUnknown) == 0 {
		t.Errorf("keys %s, unknown %v: the sample has no row metadata, want keys unknown", r.Keys, r.TablesKeysUnknown)
	}
	if len(r.Domains) != 2 {
		t.Errorf("domains %v, want 0 and 1", r.Domains)
	}
}

func TestNotABinlogFile(t *testing.T) {
	_, err := Files(context.Background(), []string{"analyze_test.go"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a binlog file") && !strings.Contains(err.Error(), "no binlog magic") {
		t.Fatalf("error %v, want one saying the file is not a binlog", err)
	}
}

// workload is what the integration test runs on the primary, one
// statement (one transaction) at a time from one connection.
type workload struct {
	transactions, ddl, audit int
}

func runWorkload(t *testing.T, conn *sql.Conn) workload {
	t.Helper()
	ctx := context.Background()
	var w workload
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		w.transactions++
	}
	ddl := func(q string) { exec(q); w.ddl++ }
	ddl("CREATE DATABASE app1")
	ddl("CREATE DATABASE app2")
	ddl("CREATE TABLE app1.accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
	ddl("CREATE TABLE app2.events (id INT AUTO_INCREMENT PRIMARY KEY, kind VARCHAR(20))")
	ddl("CREATE TABLE app1.audit (at INT, note VARCHAR(50))")
	exec("INSERT INTO app1.accounts SELECT seq, 0 FROM test.seq_1_to_200")
	for i := range 600 {
		switch {
		case i == 300:
			ddl("ALTER TABLE app1.accounts ADD COLUMN note VARCHAR(10)")
		case i%3 == 0:
			exec("INSERT INTO app2.events (kind) VALUES ('login')")
		case i%30 == 2:
			exec("INSERT INTO app1.audit VALUES (?, 'checked')", i)
			w.audit++
		default:
			exec("UPDATE app1.accounts SET balance = balance + 1 WHERE id = ?", (i*37)%200+1)
		}
	}
	return w
}

func gtidSeq(t *testing.T, pos string) int {
	t.Helper()
	if pos == "" {
		return 0
	}
	parts := strings.Split(pos, "-")
	n, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil || len(parts) != 3 {
		t.Fatalf("GTID position %q: want one domain-server-seq", pos)
	}
	return n
}

func checkWorkloadReport(t *testing.T, r *Report, w workload) {
	t.Helper()
	if r.Transactions != w.transactions {
		t.Errorf("%d transactions, want %d", r.Transactions, w.transactions)
	}
	var ddl int
	for _, b := range r.Barriers {
		if b.Note == "ddl" {
			ddl = b.Transactions
		} else {
			t.Errorf("unexpected barrier %+v", b)
		}
	}
	if ddl != w.ddl {
		t.Errorf("%d DDL barriers, want %d", ddl, w.ddl)
	}
	if len(r.TablesWithoutPK) != 1 || r.TablesWithoutPK[0].Name != "app1.audit" || r.TablesWithoutPK[0].Transactions != w.audit {
		t.Errorf("tables without a primary key %+v, want app1.audit in %d transactions", r.TablesWithoutPK, w.audit)
	}
	if len(r.Schemas) != 2 {
		t.Errorf("schemas %+v, want app1 and app2", r.Schemas)
	}
	// Without batching (the reports are made with Batch 1), the policies' own parallelism shows.
	writeset, commitID := r.PredictedSpeedup["writeset"]["8"], r.PredictedSpeedup["commit-id"]["8"]
	if writeset < 2*commitID || commitID > 1.2 {
		t.Errorf("at 8 workers writeset predicts %.2fx and commit-id %.2fx: a single client leaves commit-id serial, writeset should find the parallelism", writeset, commitID)
	}
	if !slices.ContainsFunc(r.Advice, func(a string) bool { return strings.Contains(a, "primary key to app1.audit") }) {
		t.Errorf("advice %q does not ask for a primary key on app1.audit", r.Advice)
	}
}

func TestSandboxBinlog(t *testing.T) {
	dir := t.TempDir()
	primary := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary", Dir: dir, Binlog: true})
	db, err := primary.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	var basename, start, end string
	// A transaction before the workload, so that the position before it is not empty.
	for _, q := range []string{"CREATE DATABASE before_workload", "FLUSH BINARY LOGS"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var file, position, doDB, ignoreDB string
	if err := conn.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &position, &doDB, &ignoreDB); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT @@log_bin_basename, @@gtid_binlog_pos").Scan(&basename, &start); err != nil {
		t.Fatal(err)
	}
	w := runWorkload(t, conn)
	if err := conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&end); err != nil {
		t.Fatal(err)
	}
	if got := gtidSeq(t, end) - gtidSeq(t, start); got != w.transactions {
		t.Fatalf("the workload wrote %d GTIDs, expected %d", got, w.transactions)
	}

	t.Run("files", func(t *testing.T) {
		all, err := filepath.Glob(basename + ".[0-9]*")
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range all {
			if filepath.Base(f) >= file {
				files = append(files, f)
			}
		}
		r, err := Files(ctx, files, Options{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		r.WriteText(&b)
		t.Log(b.String())
		if r.Keys != KeysFromTableMap {
			t.Errorf("keys from %s, want the table maps (the sandbox writes binlog_row_metadata=FULL)", r.Keys)
		}
		checkWorkloadReport(t, r, w)
	})

	t.Run("source", func(t *testing.T) {
		url := primary.URL(sandbox.ReplUser, sandbox.ReplPassword)
		r, err := Source(ctx, SourceConfig{URL: url, From: start}, Options{SchemaFrom: db, Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Keys != KeysFromServer {
			t.Errorf("keys from %s, want the server", r.Keys)
		}
		checkWorkloadReport(t, r, w)

		recent, err := Source(ctx, SourceConfig{URL: url, Last: time.Hour}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if recent.Transactions < w.transactions {
			t.Errorf("--last 1h: %d transactions, want at least the workload's %d", recent.Transactions, w.transactions)
		}
	})

	t.Run("bad source", func(t *testing.T) {
		url := strings.Replace(primary.URL(sandbox.ReplUser, sandbox.ReplPassword), "repl:repl", "repl:wrong", 1)
		_, err := Source(ctx, SourceConfig{URL: url, From: start}, Options{})
		if err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Errorf("wrong password: error %v, want access denied", err)
		}
		_, err = Source(ctx, SourceConfig{URL: primary.URL(sandbox.ReplUser, sandbox.ReplPassword), From: "banana"}, Options{})
		if err == nil || !strings.Contains(err.Error(), "banana") {
			t.Errorf("bad position: error %v, want one naming it", err)
		}
	})
}
