package verify

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gapless/internal/dburl"
	"gapless/internal/sandbox"
)

// Two servers shared by every test of the package; each test works in
// databases of its own.
var (
	serversOnce        sync.Once
	serversErr         error
	serversDir         string
	sourceServer       *sandbox.Server
	targetServer       *sandbox.Server
	sourceDB, targetDB *sql.DB
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, db := range []*sql.DB{sourceDB, targetDB} {
		if db != nil {
			db.Close()
		}
	}
	for _, s := range []*sandbox.Server{sourceServer, targetServer} {
		if s != nil {
			if err := s.Kill(); err != nil {
				fmt.Fprintf(os.Stderr, "killing %s: %v\n", s.Config.Name, err)
			}
		}
	}
	if serversDir != "" {
		os.RemoveAll(serversDir)
	}
	os.Exit(code)
}

func servers(t *testing.T) (source, target *sql.DB) {
	t.Helper()
	sandbox.RequireMariaDB(t)
	serversOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if serversDir, serversErr = os.MkdirTemp("", "gapless-verify-test-"); serversErr != nil {
			return
		}
		if sourceServer, serversErr = sandbox.StartServer(ctx, sandbox.ServerConfig{Name: "source", Dir: serversDir}); serversErr != nil {
			return
		}
		if targetServer, serversErr = sandbox.StartServer(ctx, sandbox.ServerConfig{Name: "target", Dir: serversDir}); serversErr != nil {
			return
		}
		if sourceDB, _, serversErr = dburl.Open(sourceServer.URL("gapless", "gapless"), nil); serversErr != nil {
			return
		}
		targetDB, _, serversErr = dburl.Open(targetServer.URL("gapless", "gapless"), nil)
	})
	if serversErr != nil {
		t.Fatalf("starting test servers: %v", serversErr)
	}
	return sourceDB, targetDB
}

// onBoth recreates database db on both servers and runs stmts in it.
func onBoth(t *testing.T, db string, stmts ...string) {
	t.Helper()
	for _, s := range []*sandbox.Server{sourceServer, targetServer} {
		if err := s.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Fatal(err)
		}
		onOne(t, s, db, stmts...)
	}
}

func onOne(t *testing.T, s *sandbox.Server, db string, stmts ...string) {
	t.Helper()
	if err := s.Exec(context.Background(), append([]string{"CREATE DATABASE IF NOT EXISTS " + db, "USE " + db}, stmts...)...); err != nil {
		t.Fatal(err)
	}
}

func compare(t *testing.T, opts Options) Report {
	t.Helper()
	source, target := servers(t)
	report, err := Compare(context.Background(), source, target, opts)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return report
}

func byName(r Report) map[string]TableResult {
	m := map[string]TableResult{}
	for _, t := range r.Tables {
		m[t.Name()] = t
	}
	return m
}

func TestEqualTables(t *testing.T) {
	servers(t)
	onBoth(t, "same",
		"CREATE TABLE plain (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40), price DECIMAL(10,2), at DATETIME(3), photo BLOB, note TEXT)",
		"INSERT INTO plain (name, price, at, photo, note) VALUES ('Ada', 1.50, '2024-01-02 03:04:05.678', 0x00ff10, 'x'), ('Ünïcødé 🐬', NULL, NULL, NULL, ''), (NULL, -3.00, '1999-12-31 23:59:59', '', NULL)",
		"CREATE TABLE composite (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
		"INSERT INTO composite VALUES (1, 'a', 1), (1, 'B', 2), (2, 'c', 3)",
		"CREATE TABLE nokey (a INT, b VARCHAR(10))",
		"INSERT INTO nokey VALUES (1, 'x'), (1, 'x'), (NULL, NULL)",
		"CREATE TABLE empty (id INT PRIMARY KEY)",
		"CREATE VIEW plain_names AS SELECT name FROM plain",
	)
	// The target's counter runs ahead of the source's; that is not a difference.
	onOne(t, targetServer, "same", "INSERT INTO plain (id) VALUES (100)", "DELETE FROM plain WHERE id = 100")

	report := compare(t, Options{Databases: []string{"same"}})
	if !report.Equal() {
		t.Errorf("report not equal: %+v", report.Tables)
	}
	var names []string
	for _, r := range report.Tables {
		names = append(names, r.Name())
	}
	if got, want := strings.Join(names, " "), "same.composite same.empty same.nokey same.plain"; got != want {
		t.Errorf("tables compared: %s, want %s", got, want)
	}
}

func TestDifferences(t *testing.T) {
	servers(t)
	var ids []string
	for i := 1; i <= 9; i++ {
		ids = append(ids, fmt.Sprintf("(%d, 'name %d')", i, i))
	}
	rows := strings.Join(ids, ", ")
	onBoth(t, "diff",
		"CREATE TABLE changed (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20), email VARCHAR(40))",
		"INSERT INTO changed (id, name) VALUES "+rows,
		"CREATE TABLE deleted (id INT PRIMARY KEY, name VARCHAR(20))",
		"INSERT INTO deleted VALUES "+rows,
		"CREATE TABLE added (id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(20))",
		"INSERT INTO added VALUES "+rows,
		"CREATE TABLE swapped (id INT PRIMARY KEY, name VARCHAR(20))",
		"INSERT INTO swapped VALUES "+rows,
		"CREATE TABLE composite (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
		"INSERT INTO composite VALUES (1, 'a', 1), (1, 'B', 2), (1, 'c', 3), (2, 'a', 4), (2, 'Bob', 5), (2, 'c', 6), (3, 'x', 7)",
		"CREATE TABLE dated (at DATETIME PRIMARY KEY, v INT)",
		"INSERT INTO dated VALUES ('2024-01-01 00:00:00', 1), ('2024-01-02 00:00:00', 2), ('2024-01-03 00:00:00', 3)",
		"CREATE TABLE floaty (k DOUBLE PRIMARY KEY, v INT)",
		"INSERT INTO floaty VALUES (0.5, 1), (1.5, 2), (2.5, 3)",
		"CREATE TABLE nokey (a INT, b VARCHAR(10))",
		"INSERT INTO nokey VALUES (1, 'x'), (2, 'y')",
		"CREATE TABLE nokey_changed (a INT, b VARCHAR(10))",
		"INSERT INTO nokey_changed VALUES (1, 'x'), (2, 'y'), (3, 'z')",
		"CREATE TABLE untouched (id INT PRIMARY KEY)",
		"INSERT INTO untouched VALUES (1), (2)",
	)
	onOne(t, sourceServer, "diff",
		"CREATE TABLE only_source (id INT PRIMARY KEY)",
		"CREATE TABLE reordered (id INT PRIMARY KEY, a INT, b VARCHAR(10))",
		"INSERT INTO reordered VALUES (1, 10, 'p'), (2, 20, 'q')",
		"DELETE FROM swapped WHERE id = 5",
		"CREATE TABLE retyped (id INT PRIMARY KEY, a INT)",
		"INSERT INTO retyped VALUES (1, 1)",
		"CREATE VIEW only_source_view AS SELECT 1 AS one",
	)
	onOne(t, targetServer, "diff",
		"CREATE TABLE only_target (id INT PRIMARY KEY)",
		"CREATE TABLE reordered (id INT PRIMARY KEY, b VARCHAR(10), a INT)",
		"INSERT INTO reordered VALUES (1, 'p', 10), (2, 'q', 20)",
		"CREATE TABLE retyped (id INT PRIMARY KEY, c INT)",
		"INSERT INTO retyped VALUES (1, 1), (2, 2)",
		"INSERT INTO changed (id) VALUES (1000)", "DELETE FROM changed WHERE id = 1000",
		"UPDATE changed SET name = 'renamed', email = 'x@example.com' WHERE id = 7",
		"DELETE FROM deleted WHERE id = 5",
		"INSERT INTO added VALUES (18446744073709551615, 'max')",
		"DELETE FROM swapped WHERE id = 4",
		"DELETE FROM composite WHERE a = 2 AND b = 'bob'",
		"DELETE FROM dated WHERE at = '2024-01-02'",
		"UPDATE floaty SET v = 20 WHERE k = 1.5",
		"INSERT INTO nokey VALUES (1, 'x')",
		"UPDATE nokey_changed SET b = 'Y' WHERE a = 2",
	)

	want := map[string]TableResult{
		"diff.added":         {Status: StatusDifferent, SourceRows: 9, TargetRows: 10, Detail: "id=18446744073709551615 only on target"},
		"diff.changed":       {Status: StatusDifferent, SourceRows: 9, TargetRows: 9, Detail: "id=7 differs in columns name, email"},
		"diff.composite":     {Status: StatusDifferent, SourceRows: 7, TargetRows: 6, Detail: "(a,b)=(2,'Bob') missing on target"},
		"diff.dated":         {Status: StatusDifferent, SourceRows: 3, TargetRows: 2, Detail: "at='2024-01-02 00:00:00' missing on target"},
		"diff.deleted":       {Status: StatusDifferent, SourceRows: 9, TargetRows: 8, Detail: "id=5 missing on target"},
		"diff.floaty":        {Status: StatusDifferent, SourceRows: 3, TargetRows: 3, Detail: "k=1.5 differs in column v"},
		"diff.nokey":         {Status: StatusDifferent, SourceRows: 2, TargetRows: 3, Detail: "row (1,'x') extra on target"},
		"diff.nokey_changed": {Status: StatusDifferent, SourceRows: 3, TargetRows: 3, Detail: "row (2,'y') missing on target"},
		"diff.only_source":   {Status: StatusMissing},
		"diff.only_target":   {Status: StatusExtra},
		"diff.reordered":     {Status: StatusDifferent, SourceRows: 2, TargetRows: 2, Detail: "definition differs; rows match"},
		"diff.retyped":       {Status: StatusDifferent, SourceRows: 1, TargetRows: 2, Detail: "definition differs (column a only on source; column c only on target)"},
		"diff.swapped":       {Status: StatusDifferent, SourceRows: 8, TargetRows: 8, Detail: "id=4 missing on target, id=5 only on target"},
		"diff.untouched":     {Status: StatusEqual},
	}
	for _, chunkRows := range []int{2, 0} {
		t.Run(fmt.Sprintf("chunk_rows=%d", chunkRows), func(t *testing.T) {
			var progress []string
			report := compare(t, Options{Databases: []string{"diff"}, ChunkRows: chunkRows, Progress: func(line string) { progress = append(progress, line) }})
			if report.Equal() {
				t.Error("report says equal")
			}
			got := byName(report)
			for name, w := range want {
				g, ok := got[name]
				if !ok {
					t.Errorf("%s not reported", name)
					continue
				}
				if g.Status != w.Status || g.SourceRows != w.SourceRows || g.TargetRows != w.TargetRows || g.Detail != w.Detail {
					t.Errorf("%s:\n got  %s (rows %d/%d) %q\n want %s (rows %d/%d) %q", name, g.Status, g.SourceRows, g.TargetRows, g.Detail, w.Status, w.SourceRows, w.TargetRows, w.Detail)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("unexpected table %s in report", name)
				}
			}
			if len(progress) == 0 {
				t.Error("no progress reported")
			}
		})
	}
}

func TestSkipsSystemSchemas(t *testing.T) {
	servers(t)
	onOne(t, sourceServer, "gapless", "CREATE TABLE IF NOT EXISTS applier_state (id INT PRIMARY KEY)")
	onBoth(t, "everything", "CREATE TABLE t (id INT PRIMARY KEY)")
	report := compare(t, Options{})
	got := byName(report)
	if got["everything.t"].Status != StatusEqual {
		t.Errorf("everything.t = %+v, want equal", got["everything.t"])
	}
	for _, r := range report.Tables {
		for _, skipped := range SkippedSchemas {
			if r.Schema == skipped {
				t.Errorf("system schema table %s compared", r.Name())
			}
		}
	}
}

func TestUnknownDatabase(t *testing.T) {
	source, target := servers(t)
	_, err := Compare(context.Background(), source, target, Options{Databases: []string{"no_such_db"}})
	if err == nil || err.Error() != "database no_such_db exists on neither source nor target" {
		t.Fatalf("Compare with an unknown database: %v", err)
	}
}

func TestSnapshotKeepsTransactionAndRestoresSession(t *testing.T) {
	source, _ := servers(t)
	onBoth(t, "snap", "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	ctx := context.Background()
	snap, err := openSnapshot(ctx, source, "source")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.checksum(ctx, tableName{"snap", "t"}); err != nil {
		t.Fatal(err)
	}
	onOne(t, sourceServer, "snap", "INSERT INTO t VALUES (2)")
	var inTransaction int
	var rows int64
	if err := snap.conn.QueryRowContext(ctx, "SELECT @@in_transaction, (SELECT COUNT(*) FROM snap.t)").Scan(&inTransaction, &rows); err != nil {
		t.Fatal(err)
	}
	if inTransaction != 1 || rows != 1 {
		t.Errorf("after CHECKSUM TABLE: in_transaction=%d, rows seen=%d; want 1 and 1 (the snapshot)", inTransaction, rows)
	}
	snap.release()

	pool, _, err := dburl.Open(sourceServer.URL("gapless", "gapless"), map[string]string{"time_zone": "'+05:00'"})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pool.SetMaxOpenConns(2)
	if _, err := Compare(ctx, pool, pool, Options{Databases: []string{"snap"}}); err != nil {
		t.Fatal(err)
	}
	var tz string
	if err := pool.QueryRowContext(ctx, "SELECT @@session.time_zone, @@in_transaction").Scan(&tz, &inTransaction); err != nil {
		t.Fatal(err)
	}
	if tz != "+05:00" || inTransaction != 0 {
		t.Errorf("session after Compare: time_zone=%s in_transaction=%d", tz, inTransaction)
	}
}

// Identical tables whose keys are awkward to page through must compare equal
// row by row, however small the chunks.
func TestRowComparisonOfIdenticalTables(t *testing.T) {
	source, target := servers(t)
	long := strings.Repeat("A", 2000)
	onBoth(t, "awkward",
		"CREATE TABLE ci (k VARCHAR(10) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
		"INSERT INTO ci VALUES ('a', 1), ('B', 2), ('c', 3), ('D', 4), ('e', 5), ('🐬', 6), ('it''s', 7)",
		"CREATE TABLE latin (k VARCHAR(10) CHARACTER SET latin1 PRIMARY KEY)",
		"INSERT INTO latin VALUES ('é'), ('z'), ('a'), ('Ä'), ('b')",
		"CREATE TABLE bin (k VARBINARY(10) PRIMARY KEY)",
		"INSERT INTO bin VALUES (0x00), (0xff), ('a'), (''), (0x0000)",
		"CREATE TABLE times (k TIME(6) PRIMARY KEY)",
		"INSERT INTO times VALUES ('-01:00:00'), ('00:00:00'), ('10:00:00.5'), ('-838:59:59'), ('838:59:59')",
		"CREATE TABLE money (k DECIMAL(10,3) PRIMARY KEY)",
		"INSERT INTO money VALUES (-1.5), (0), (2.25), (-0.001), (9999999.999)",
		"CREATE TABLE pair (a INT, at DATETIME(6), v TEXT, PRIMARY KEY (a, at))",
		"INSERT INTO pair VALUES (1, '2024-01-01 00:00:00.000001', 'x'), (1, '2024-01-01 00:00:00', NULL), (0, '0000-00-00 00:00:00', ''), (2, '2024-01-01', 'z')",
		"CREATE TABLE big (id BIGINT PRIMARY KEY)",
		"INSERT INTO big VALUES (-9223372036854775808), (9223372036854775807), (0), (1), (-1)",
		"CREATE TABLE stamp (k TIMESTAMP(3) PRIMARY KEY)",
		"INSERT INTO stamp VALUES ('2024-03-31 01:30:00'), ('2024-03-31 02:30:00'), ('2038-01-19 03:14:07')",
		"CREATE TABLE heap (v TEXT, n INT)",
	)
	// Rows sharing their first 1024 bytes go in in different orders.
	onOne(t, sourceServer, "awkward", fmt.Sprintf("INSERT INTO heap VALUES ('%sx', 1), ('%sy', 1), (NULL, NULL), ('%sx', 1)", long, long, long))
	onOne(t, targetServer, "awkward", fmt.Sprintf("INSERT INTO heap VALUES ('%sx', 1), (NULL, NULL), ('%sy', 1), ('%sx', 1)", long, long, long))

	ctx := context.Background()
	report := compare(t, Options{Databases: []string{"awkward"}})
	if !report.Equal() {
		t.Errorf("Compare: %+v", report.Tables)
	}
	c := &comparer{source: source, target: target, chunkRows: 2, progress: func(string) {}}
	for _, r := range report.Tables {
		name := tableName{r.Schema, r.Table}
		src, err := openSnapshot(ctx, source, "source")
		if err != nil {
			t.Fatal(err)
		}
		tgt, err := openSnapshot(ctx, target, "target")
		if err != nil {
			t.Fatal(err)
		}
		shape, err := src.shape(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := src.countRows(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		diff, err := c.compareRows(ctx, name, name, src, tgt, shape, shape)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if diff.first != "" || diff.sourceRows != want || diff.targetRows != want {
			t.Errorf("%s: rows %d/%d, want %d; first difference %q", name, diff.sourceRows, diff.targetRows, want, diff.first)
		}
		src.release()
		tgt.release()
	}
}

func TestLowerIdentifiers(t *testing.T) {
	def := "CREATE TABLE `Orders` (\n  `Id` int(11) NOT NULL,\n  `Note` varchar(10) DEFAULT 'Ab`c',\n  CONSTRAINT `Items_ibfk_1` FOREIGN KEY (`OrderId`) REFERENCES `Orders` (`Id`)\n)"
	want := "CREATE TABLE `orders` (\n  `id` int(11) NOT NULL,\n  `note` varchar(10) DEFAULT 'Ab`c',\n  CONSTRAINT `items_ibfk_1` FOREIGN KEY (`orderid`) REFERENCES `orders` (`id`)\n)"
	if got := lowerIdentifiers(def); got != want {
		t.Errorf("lowerIdentifiers:\n%s\nwant\n%s", got, want)
	}
}

// TestTargetSharedWithAnotherStream: the target holds, besides this
// source's databases, another stream's. Without Databases those are
// reported apart (Elsewhere), not as differences; a table the target has
// in one of this source's databases still is one; naming the other
// database compares it.
func TestTargetSharedWithAnotherStream(t *testing.T) {
	servers(t)
	onBoth(t, "mine", "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	if err := targetServer.Exec(context.Background(), "DROP DATABASE IF EXISTS theirs"); err != nil {
		t.Fatal(err)
	}
	onOne(t, targetServer, "theirs", "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY)")

	report := compare(t, Options{})
	got := byName(report)
	if got["mine.t"].Status != StatusEqual {
		t.Errorf("mine.t = %+v, want equal", got["mine.t"])
	}
	for name := range got {
		if strings.HasPrefix(name, "theirs.") {
			t.Errorf("%s compared as %s, want it reported apart", name, got[name].Status)
		}
	}
	found := false
	for _, d := range report.Elsewhere {
		if d.Schema == "theirs" {
			found = true
			if d.Tables != 2 {
				t.Errorf("theirs holds %d tables, want 2", d.Tables)
			}
		}
	}
	if !found {
		t.Errorf("theirs not among the target's other databases: %+v", report.Elsewhere)
	}

	onOne(t, targetServer, "mine", "CREATE TABLE stray (id INT PRIMARY KEY)")
	defer onOne(t, targetServer, "mine", "DROP TABLE stray")
	if g := byName(compare(t, Options{})); g["mine.stray"].Status != StatusExtra {
		t.Errorf("mine.stray = %+v, want extra", g["mine.stray"])
	}

	// A database of the source the target lacks: missing, and named apart.
	onOne(t, sourceServer, "filtered", "CREATE TABLE f (id INT PRIMARY KEY)")
	defer sourceServer.Exec(context.Background(), "DROP DATABASE filtered")
	report = compare(t, Options{})
	if g := byName(report); g["filtered.f"].Status != StatusMissing || !slices.Contains(report.Absent, OtherDatabase{Schema: "filtered", Tables: 1}) {
		t.Errorf("filtered.f = %+v, absent %+v; want missing, filtered among the absent", g["filtered.f"], report.Absent)
	}

	report = compare(t, Options{Databases: []string{"mine", "theirs"}})
	if g := byName(report); g["theirs.a"].Status != StatusExtra || len(report.Elsewhere) != 0 {
		t.Errorf("with theirs named: theirs.a = %+v, elsewhere %+v; want extra, none", g["theirs.a"], report.Elsewhere)
	}
}
