// random_test.go replays a primary that many clients write at once with
// transactions of random statements of many shapes, in MIXED and ROW
// sessions side by side: the row keys of statements, the writeset of row
// events, unique keys changed and swapped, primary keys moved, REPLACE and
// INSERT ... ON DUPLICATE KEY UPDATE on a second unique key, reads of other
// tables (INSERT ... SELECT, multi-table UPDATE, user variables), foreign
// keys with cascades, a trigger, AUTO_INCREMENT with LAST_INSERT_ID(),
// unsafe statements logged as rows, temporary tables, statements that fail
// on the primary amid a transaction, and, in one variant, MyISAM writes
// inside InnoDB transactions, in another a second GTID domain on a schema
// of its own, XA transactions (some rolled back after XA PREPARE),
// savepoints rolled back to, a sequence, and DDL amid the load; clients
// connect again now and then, so that their sessions end holding temporary
// tables (the DROP TEMPORARY TABLE the primary logs then). gapless
// applies it with 8 workers, and every table must equal the primary's. GAPLESS_RANDOM_SCALE multiplies the
// transactions of each client, and GAPLESS_RANDOM_FLAGS adds flags to
// replicate (a longer soak by hand, other policies and commit orders);
// GAPLESS_RANDOM_SAVE names a directory where a failed run's binlogs are kept,
// and GAPLESS_RANDOM_PRIMARY and GAPLESS_RANDOM_TARGET add my.cnf lines to
// the primary and the target (for example binlog_row_image=MINIMAL).
package e2e

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

func TestRandomConcurrentLoad(t *testing.T) {
	for _, variant := range []string{"innodb-killed", "mixed-engines", "domains-xa-ddl-killed", "domains-xa-ddl-stopped"} {
		t.Run(variant, func(t *testing.T) {
			myisam := variant == "mixed-engines"
			sb, args := randomLoadToReplicate(t, loadOptions{myisam: myisam, features: strings.HasPrefix(variant, "domains")})
			if strings.HasSuffix(variant, "-stopped") {
				// Stopped (SIGTERM) at random moments, then run again: the
				// temporary tables the source's sessions hold at each stop
				// are kept for the next run.
				rng := rand.New(rand.NewSource(5))
				for range 3 {
					cmd, _, wait := background(t, args...)
					time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
					cmd.Process.Signal(syscall.SIGTERM)
					r := wait()
					switch {
					case r.signaled:
						// Stopped before the process took signals (a loaded
						// machine): nothing was done yet.
						t.Logf("ended by the signal before it took signals")
					case r.code != 0:
						t.Fatalf("gapless exited %d when stopped:\n%s", r.code, r.stderr)
					default:
						t.Logf("stopped: %s", lastLines(r.stdout, 1))
					}
				}
			} else if !myisam {
				// Killed with SIGKILL at random moments, then run again.
				// (A group whose writes stay, killed amid, would stop the
				// next run by design: the MyISAM variant is not killed.)
				rng := rand.New(rand.NewSource(7))
				for range 3 {
					cmd, _, wait := background(t, args...)
					time.Sleep(time.Duration(200+rng.Intn(800)) * time.Millisecond)
					cmd.Process.Signal(syscall.SIGKILL)
					if r := wait(); !r.signaled && r.code != 0 {
						t.Fatalf("gapless exited %d before it was killed:\n%s", r.code, r.stderr)
					}
				}
			}
			r := gapless(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("gapless replicate exited %d:\n%s", r.code, r.stderr)
			}
			// Tables alone: a group of statements on temporary tables only
			// (the drop a client's disconnect logs, or one whose other
			// statements failed or changed nothing) leaves no GTID in the
			// target's binlog, which logs rows, as on MariaDB's replica.
			requireEqualData(t, sb, true)
		})
	}
}

// TestTargetKilledUnderRandomLoad kills the target server with SIGKILL three
// times while gapless applies the random load, and starts it again: gapless
// reconnects, goes on from the position the target recovered with, and the
// tables end equal, nothing lost or applied twice. (Durable or not, a killed
// process loses nothing the kernel was given.) The MyISAM variant is left
// out, as from the kills of gapless: a group that writes MyISAM and InnoDB
// tables, cut off by the kill, keeps its MyISAM rows, and the run stops
// there by design (seen under --commit-order causal).
func TestTargetKilledUnderRandomLoad(t *testing.T) {
	for _, variant := range []string{"innodb", "domains-xa-ddl"} {
		t.Run(variant, func(t *testing.T) {
			sb, args := randomLoadToReplicate(t, loadOptions{features: variant == "domains-xa-ddl"})
			_, stderr, wait := background(t, args...)
			rng := rand.New(rand.NewSource(11))
			for range 3 {
				time.Sleep(time.Duration(300+rng.Intn(1200)) * time.Millisecond)
				if err := sb.Target.Kill(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Duration(rng.Intn(2000)) * time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := sb.Target.Start(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan run, 1)
			go func() { done <- wait() }()
			select {
			case r := <-done:
				if r.code != 0 && strings.Contains(r.stderr, "generated by ddl recovery") && ddlRecoveryLogged(t, sb.Target) {
					// Killed amid a DDL: the target's recovery logged what
					// it did under the target's server id and the source's
					// domain, which gapless cannot tell from a client's
					// write; it stops there, as MariaDB's replica does.
					t.Logf("stopped as it must where the target's DDL recovery wrote the source's domain:\n%s", r.stderr)
					return
				}
				if r.code != 0 && strings.Contains(r.stderr, "which the target lost with gapless's connection that held it") {
					// Killed while a source session held a temporary table
					// across its transactions: the target lost it with the
					// connection, as MariaDB's replica's server loses it in
					// a restart; gapless stops, naming it, by design.
					t.Logf("stopped as it must where a later statement needs a temporary table the kill lost:\n%s", lastLines(r.stderr, 2))
					return
				}
				if r.code != 0 {
					t.Fatalf("gapless exited %d:\n%s", r.code, r.stderr)
				}
				t.Logf("target connections lost and found again: %d", strings.Count(r.stderr, "target connection lost"))
			case <-time.After(5 * time.Minute):
				t.Fatalf("gapless had not reached --until 5 minutes after the target's last start:\n%s", stderr.String())
			}
			requireEqualData(t, sb, true)
		})
	}
}

// saveOnFailure copies both servers' binlogs and the relay log of a failed
// run under $GAPLESS_RANDOM_SAVE, when set, so that a rare failure of a long
// soak can be replayed (a saved primary binlog can be served by a sandbox).
// It runs before the sandbox's servers are killed.
func saveOnFailure(t *testing.T, sb *sandboxT, relay string) {
	dir := os.Getenv("GAPLESS_RANDOM_SAVE")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		to := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-")+"-"+time.Now().Format("150405"))
		for from, name := range map[string]string{
			filepath.Join(sb.Dir, "primary", "binlog"): "primary-binlog",
			filepath.Join(sb.Dir, "target", "binlog"):  "target-binlog",
			relay: "relay",
		} {
			if err := os.CopyFS(filepath.Join(to, name), os.DirFS(from)); err != nil {
				t.Logf("saving %s: %v", from, err)
			}
		}
		t.Logf("binlogs and relay log saved in %s", to)
	})
}

func randomScale() int {
	if n, err := strconv.Atoi(os.Getenv("GAPLESS_RANDOM_SCALE")); err == nil && n > 0 {
		return n
	}
	return 1
}

// loadOptions are what a random load writes besides InnoDB tables of one
// GTID domain.
type loadOptions struct {
	// myisam adds MyISAM writes inside InnoDB transactions.
	myisam bool
	// noHeldTemporary leaves out the temporary tables a session holds
	// across its transactions, which a target that dies loses (and the
	// run stops on the next statement that reads one, by design).
	noHeldTemporary bool
	// features gives every fourth client GTID domain 1 and a schema of its
	// own (rnd1, so that --policy domain holds too), and adds XA
	// transactions, savepoints, a sequence and DDL.
	features bool
}

// randomLoad makes the schema and runs clients that each write perClient
// transactions of random statements; half the clients log in ROW format.
func randomLoad(t *testing.T, sb *sandboxT, clients, perClient int, opts loadOptions) {
	t.Helper()
	setup := randomSchema("rnd", opts)
	if opts.features {
		setup = append(setup, "SET SESSION gtid_domain_id = 1")
		setup = append(setup, randomSchema("rnd1", opts)...)
		setup = append(setup, "SET SESSION gtid_domain_id = 0")
	}
	mustExec(t, sb.Primary, setup...)
	db := rootDB(t, sb.Primary)
	db.SetMaxOpenConns(clients + 2)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			format := "MIXED"
			if c%2 == 1 {
				format = "ROW"
			}
			schema := "rnd"
			setup := []string{
				// Waits end soon (1205, expected): a prepared XA branch or
				// a DDL's metadata lock would otherwise hold clients for
				// 50 s.
				"SET SESSION binlog_format=" + format + ", innodb_lock_wait_timeout=2, lock_wait_timeout=5",
			}
			if opts.features && c%4 == 3 {
				schema = "rnd1"
				setup = append(setup, "SET SESSION gtid_domain_id = 1")
			}
			var conn *sql.Conn
			open := func() error {
				var err error
				if conn, err = db.Conn(ctx); err != nil {
					return err
				}
				for _, s := range setup {
					if _, err := conn.ExecContext(ctx, s); err != nil {
						return fmt.Errorf("%s: %w", s, err)
					}
				}
				return nil
			}
			// end ends the client's session on the primary, which then logs
			// a DROP TEMPORARY TABLE of the temporary tables it held.
			end := func() {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			if err := open(); err != nil {
				errs <- err
				return
			}
			// Ended, not put back in the pool: another client would get
			// it, GTID domain and all.
			defer func() { end() }()
			exec := func(s string) error {
				if _, err := conn.ExecContext(ctx, s); err != nil && !expectedOnPrimary(err) {
					return fmt.Errorf("%s: %w", s, err)
				}
				return nil
			}
			rng := rand.New(rand.NewSource(int64(c) + 1))
			for i := range perClient {
				stmts := randomTransaction(rng, c, i, opts)
				if schema != "rnd" {
					for k := range stmts {
						stmts[k] = strings.ReplaceAll(stmts[k], "rnd.", schema+".")
					}
				}
				for _, s := range wrapTransaction(rng, c, i, stmts, opts) {
					if err := exec(s); err != nil {
						errs <- err
						return
					}
				}
				if i%40 == 39 {
					// A client that connects again, as applications do.
					end()
					if err := open(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// wrapTransaction makes stmts one transaction: BEGIN ... COMMIT, or, with
// features, sometimes an XA transaction (rolled back after XA PREPARE one
// time in four), savepoints rolled back to, or, for client 0, DDL instead.
func wrapTransaction(rng *rand.Rand, client, i int, stmts []string, opts loadOptions) []string {
	if !opts.features {
		return append(append([]string{"BEGIN"}, stmts...), "COMMIT")
	}
	if client == 0 && i%20 == 19 {
		ddl := [][]string{
			{"ALTER TABLE rnd.t2 ADD COLUMN IF NOT EXISTS x INT NOT NULL DEFAULT 7", "CREATE TABLE IF NOT EXISTS rnd.scratch (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
				"INSERT INTO rnd.scratch SELECT id, k FROM rnd.t2 WHERE id < 50"},
			{"ALTER TABLE rnd.t2 DROP COLUMN IF EXISTS x", "DROP TABLE IF EXISTS rnd.scratch"},
			{"ALTER TABLE rnd.nokey ADD INDEX IF NOT EXISTS ia (a)", "CREATE OR REPLACE VIEW rnd.v AS SELECT id, k FROM rnd.t1"},
			{"ALTER TABLE rnd.nokey DROP INDEX IF EXISTS ia", "TRUNCATE TABLE rnd.logged"},
		}
		return ddl[(i/20)%len(ddl)]
	}
	temporary := slices.ContainsFunc(stmts, func(s string) bool { return strings.Contains(s, "TEMPORARY") })
	switch n := rng.Intn(6); {
	case n == 0 && !temporary:
		xid := fmt.Sprintf("'x%d-%d'", client, i)
		end := "XA COMMIT " + xid
		if rng.Intn(4) == 0 {
			end = "XA ROLLBACK " + xid
		}
		return append(append([]string{"XA START " + xid}, stmts...), "XA END "+xid, "XA PREPARE "+xid, end)
	case n == 1 && len(stmts) > 1:
		at := 1 + rng.Intn(len(stmts)-1)
		out := append([]string{"BEGIN"}, stmts[:at]...)
		out = append(out, "SAVEPOINT sp", stmts[at], "ROLLBACK TO SAVEPOINT sp")
		return append(append(out, stmts[at+1:]...), "COMMIT")
	}
	return append(append([]string{"BEGIN"}, stmts...), "COMMIT")
}

// randomSchema is the tables of a random load in schema db.
func randomSchema(db string, opts loadOptions) []string {
	setup := []string{
		"CREATE DATABASE rnd",
		"CREATE TABLE rnd.parent (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO rnd.parent SELECT seq, 0 FROM rnd.seq_1_to_10",
		"CREATE TABLE rnd.child (id BIGINT AUTO_INCREMENT PRIMARY KEY, parent INT, v INT, " +
			"FOREIGN KEY (parent) REFERENCES rnd.parent (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB",
		"CREATE TABLE rnd.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, client INT, v INT) ENGINE=InnoDB",
		"CREATE TABLE rnd.nokey (a INT, b VARCHAR(20)) ENGINE=InnoDB",
		"CREATE TABLE rnd.ci (id INT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, v INT, UNIQUE KEY (name)) ENGINE=InnoDB",
		"INSERT INTO rnd.ci SELECT seq, CONCAT('n', seq), 0 FROM rnd.seq_1_to_20",
		"CREATE TABLE rnd.sum (id INT PRIMARY KEY, total BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT INTO rnd.sum SELECT seq, 0 FROM rnd.seq_1_to_5",
		"CREATE TABLE rnd.logged (id INT AUTO_INCREMENT PRIMARY KEY, t INT, v INT) ENGINE=InnoDB",
		"CREATE TABLE rnd.tr (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TRIGGER rnd.tr_ins AFTER INSERT ON rnd.tr FOR EACH ROW INSERT INTO rnd.logged (t, v) VALUES (NEW.id, NEW.v)",
	}
	for i := 1; i <= 3; i++ {
		setup = append(setup,
			fmt.Sprintf("CREATE TABLE rnd.t%d (id INT PRIMARY KEY, u INT NOT NULL, k INT NOT NULL, c VARCHAR(40) NOT NULL, UNIQUE KEY (u), KEY (k)) ENGINE=InnoDB", i),
			fmt.Sprintf("INSERT INTO rnd.t%d SELECT seq, seq * 10, seq %% 7, CONCAT('c', seq) FROM rnd.seq_1_to_200", i))
	}
	if opts.myisam {
		setup = append(setup,
			"CREATE TABLE rnd.m (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=MyISAM",
			"INSERT INTO rnd.m SELECT seq, 0 FROM rnd.seq_1_to_20",
			"CREATE TABLE rnd.mlog (a INT, b INT) ENGINE=MyISAM")
	}
	if opts.features {
		setup = append(setup, "CREATE SEQUENCE rnd.sq START WITH 1 INCREMENT BY 3 CACHE 10")
	}
	for k := range setup {
		setup[k] = strings.ReplaceAll(setup[k], "rnd.", db+".")
	}
	setup[0] = "CREATE DATABASE " + db
	return setup
}

// expectedOnPrimary: errors a random statement may meet on the primary; the
// statement is not logged (or the transaction rolled back), and the client
// goes on. 1062/1586 duplicate key, 1213 deadlock, 1205 lock wait timeout,
// 1451/1452 foreign key, 1048 NULL, 1264 out of range; after a deadlock
// rolled the transaction back, 1305 no such savepoint, and 1397, 1399,
// 1402, 1614 for the XA statements after it.
func expectedOnPrimary(err error) bool {
	for _, code := range []string{"1062", "1586", "1213", "1205", "1451", "1452", "1048", "1264", "1305", "1399", "1402", "1614", "1397"} {
		if strings.Contains(err.Error(), "Error "+code) {
			return true
		}
	}
	return false
}

// randomTransaction returns one to five random statements.
func randomTransaction(rng *rand.Rand, client, i int, opts loadOptions) []string {
	id := func() int {
		if rng.Intn(3) == 0 {
			return 1 + rng.Intn(5) // hot
		}
		return 1 + rng.Intn(260) // some missing
	}
	tbl := func() string { return fmt.Sprintf("rnd.t%d", 1+rng.Intn(3)) }
	var stmts []string
	for range 1 + rng.Intn(5) {
		var s string
		switch rng.Intn(25) {
		case 0, 1:
			s = fmt.Sprintf("UPDATE %s SET k = (k * 3 + %d) %% 1000003 WHERE id = %d", tbl(), client, id())
		case 2:
			s = fmt.Sprintf("UPDATE %s SET c = CONCAT(LEFT(c, 30), '-%d') WHERE k = %d", tbl(), client, rng.Intn(7))
		case 3:
			x, tb := id(), tbl()
			stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE id = %d", tb, x))
			s = fmt.Sprintf("INSERT INTO %s (id, u, k, c) VALUES (%d, %d, %d, 'ins-%d-%d')", tb, x, x*10+rng.Intn(3), rng.Intn(7), client, i)
		case 4:
			x := id()
			s = fmt.Sprintf("REPLACE INTO %s (id, u, k, c) VALUES (%d, %d, %d, 'rep-%d')", tbl(), x, 10*id(), rng.Intn(7), client)
		case 5:
			s = fmt.Sprintf("INSERT INTO %s (id, u, k, c) VALUES (%d, %d, 1, 'odku') ON DUPLICATE KEY UPDATE k = k + 1, c = CONCAT(LEFT(c, 30), '+')",
				tbl(), id(), 10*id())
		case 6:
			s = fmt.Sprintf("UPDATE %s SET u = u + 5000 WHERE id = %d", tbl(), id())
		case 7:
			// A primary key moved, and back later by another statement.
			x := id()
			if rng.Intn(2) == 0 {
				s = fmt.Sprintf("UPDATE %s SET id = id + 1000 WHERE id = %d", tbl(), x)
			} else {
				s = fmt.Sprintf("UPDATE %s SET id = id - 1000 WHERE id = %d", tbl(), x+1000)
			}
		case 8:
			lo := id()
			s = fmt.Sprintf("INSERT INTO rnd.sum (id, total) SELECT 1 + (%d %% 5), SUM(k) FROM %s WHERE id BETWEEN %d AND %d "+
				"ON DUPLICATE KEY UPDATE total = total + VALUES(total)", lo, tbl(), lo, lo+10)
		case 9:
			s = fmt.Sprintf("UPDATE %s a JOIN rnd.sum s ON s.id = 1 + (a.id %% 5) SET s.total = s.total + a.k WHERE a.id = %d", tbl(), id())
		case 10:
			lo := 10 * id()
			s = fmt.Sprintf("DELETE FROM %s WHERE u BETWEEN %d AND %d", tbl(), lo, lo+15)
		case 11:
			s = fmt.Sprintf("INSERT INTO rnd.child (parent, v) VALUES (%d, %d)", 1+rng.Intn(10), rng.Intn(100))
		case 12:
			p := 1 + rng.Intn(10)
			stmts = append(stmts, fmt.Sprintf("DELETE FROM rnd.parent WHERE id = %d", p))
			s = fmt.Sprintf("INSERT INTO rnd.parent (id, v) VALUES (%d, %d)", p, i)
		case 13:
			s = fmt.Sprintf("UPDATE rnd.parent SET v = v + 1 WHERE id = %d", 1+rng.Intn(10))
		case 14:
			s = fmt.Sprintf("INSERT INTO rnd.nokey VALUES (%d, 'n-%d')", rng.Intn(20), client)
		case 15:
			s = fmt.Sprintf("DELETE FROM rnd.nokey WHERE a = %d LIMIT 1", rng.Intn(20))
		case 16:
			s = fmt.Sprintf("UPDATE %s SET c = CONCAT(LEFT(c, 4), LEFT(UUID(), 0), '%d') WHERE id = %d", tbl(), client, id())
		case 17:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO rnd.ai (client, v) VALUES (%d, %d)", client, i))
			s = fmt.Sprintf("UPDATE %s SET k = LAST_INSERT_ID() %% 1000 WHERE id = %d", tbl(), id())
		case 18:
			stmts = append(stmts, fmt.Sprintf("SET @v%d = (SELECT k FROM %s WHERE id = %d)", client, tbl(), id()))
			s = fmt.Sprintf("UPDATE rnd.sum SET total = total + COALESCE(@v%d, 0) WHERE id = %d", client, 1+rng.Intn(5))
		case 19:
			n := rng.Intn(20) + 1
			stmts = append(stmts, fmt.Sprintf("UPDATE rnd.ci SET name = CONCAT('tmp', %d) WHERE id = %d", client, n))
			s = fmt.Sprintf("UPDATE rnd.ci SET name = CONCAT('N', %d) WHERE id = %d", n, n) // case differs only: the same unique value
		case 20:
			s = fmt.Sprintf("INSERT INTO rnd.tr (id, v) VALUES (%d, %d) ON DUPLICATE KEY UPDATE v = v + 1", rng.Intn(30), i)
		case 21:
			if opts.noHeldTemporary {
				s = fmt.Sprintf("UPDATE %s SET k = k + 2 ORDER BY id DESC LIMIT 2", tbl())
				break
			}
			// Temporary tables of both kinds, with MyISAM: a session that
			// ends holding both logs one DROP TEMPORARY TABLE for them.
			tmp, engine := fmt.Sprintf("rnd.tmp%d", client), "InnoDB"
			if opts.myisam && rng.Intn(2) == 0 {
				tmp, engine = fmt.Sprintf("rnd.mtmp%d", client), "MyISAM"
			}
			stmts = append(stmts,
				fmt.Sprintf("CREATE TEMPORARY TABLE IF NOT EXISTS %s (id INT PRIMARY KEY, k INT) ENGINE=%s", tmp, engine),
				fmt.Sprintf("REPLACE INTO %s SELECT id, k FROM %s WHERE id BETWEEN %d AND %d", tmp, tbl(), id(), id()+5))
			s = fmt.Sprintf("UPDATE rnd.sum SET total = total + (SELECT COALESCE(SUM(k), 0) FROM %s) WHERE id = %d", tmp, 1+rng.Intn(5))
		case 22:
			s = fmt.Sprintf("UPDATE %s SET k = k + 1 ORDER BY id LIMIT 3", tbl())
		case 23:
			if opts.features {
				s = fmt.Sprintf("INSERT INTO rnd.ai (client, v) VALUES (%d, NEXTVAL(rnd.sq))", client)
				break
			}
			fallthrough
		default:
			if !opts.myisam {
				s = fmt.Sprintf("UPDATE rnd.sum SET total = total + %d WHERE id = %d", rng.Intn(10), 1+rng.Intn(5))
				break
			}
			stmts = append(stmts, fmt.Sprintf("UPDATE rnd.m SET v = v * 2 + %d WHERE id = %d", client, 1+rng.Intn(20)))
			s = fmt.Sprintf("INSERT INTO rnd.mlog VALUES (%d, %d)", client, i)
		}
		stmts = append(stmts, s)
	}
	return stmts
}

// randomLoadToReplicate starts a sandbox (with the my.cnf lines of
// $GAPLESS_RANDOM_PRIMARY and $GAPLESS_RANDOM_TARGET), runs the random load
// on its primary, and returns the arguments that replicate all of it with 8
// workers (and $GAPLESS_RANDOM_FLAGS); a failed test's binlogs are saved
// (saveOnFailure).
func randomLoadToReplicate(t *testing.T, opts loadOptions) (*sandboxT, []string) {
	t.Helper()
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true,
		PrimaryExtra: strings.Fields(os.Getenv("GAPLESS_RANDOM_PRIMARY")), TargetExtra: strings.Fields(os.Getenv("GAPLESS_RANDOM_TARGET"))})
	relay := filepath.Join(t.TempDir(), "relay")
	saveOnFailure(t, sb, relay)
	randomLoad(t, sb, 8, 120*randomScale(), opts)
	args := []string{"replicate", "--source", sb.SourceURL, "--target", sb.TargetURL,
		"--until", binlogPos(t, sb.Primary), "--relay-dir", relay, "--progress", "0", "--workers", "8"}
	return sb, append(args, strings.Fields(os.Getenv("GAPLESS_RANDOM_FLAGS"))...)
}

// ddlRecoveryLogged reports whether srv's binlogs hold a statement its DDL
// recovery logged after a crash.
func ddlRecoveryLogged(t *testing.T, srv *sandbox.Server) bool {
	t.Helper()
	db := rootDB(t, srv)
	logs, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for logs.Next() {
		var name string
		var size any
		if err := logs.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	logs.Close()
	for _, name := range names {
		var n int
		rows, err := db.Query("SHOW BINLOG EVENTS IN '" + name + "'")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		values := make([]sql.RawBytes, len(cols))
		scan := make([]any, len(cols))
		for i := range values {
			scan[i] = &values[i]
		}
		for rows.Next() {
			if err := rows.Scan(scan...); err == nil && strings.Contains(string(values[len(values)-1]), "generated by ddl recovery") {
				n++
			}
		}
		rows.Close()
		if n > 0 {
			return true
		}
	}
	return false
}

// TestEngineBehindItsBinlog sets the target as a crash right after a
// statement's answer leaves it (TestTargetKilledUnderRandomLoad): the
// statement in the target's binlog, its change not in the engine, its
// position not written. An XA ROLLBACK whose branch is still prepared is
// run again, outside the binlog, and so is a group that sets a sequence;
// the tables and sequences end equal and no branch stays prepared.
// replicateUntil runs gapless until a position and checks it exits 0.
func replicateUntil(t *testing.T, sb *sandboxT, relay, until string) run {
	t.Helper()
	r := gapless(t, nil, replicateArgs(sb.SourceURL, sb.TargetURL, relay, "--until", until)...)
	if r.code != 0 {
		t.Fatalf("replicate --until %s exited %d:\n%s", until, r.code, r.stderr)
	}
	return r
}

func TestEngineBehindItsBinlog(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	mustExec(t, sb.Primary, "CREATE DATABASE eb", "CREATE SEQUENCE eb.s", "CREATE TABLE eb.t (id INT PRIMARY KEY) ENGINE=InnoDB",
		"XA START 'b1'", "INSERT INTO eb.t VALUES (1)", "XA END 'b1'", "XA PREPARE 'b1'")
	prepared := binlogPos(t, sb.Primary)
	endPreparedXA(t, sb.Primary, "XA ROLLBACK 'b1'")
	rolledBack, err := gtid.ParseMariaDBGTID(binlogPos(t, sb.Primary))
	if err != nil {
		t.Fatal(err)
	}
	replicate := func(until string) run { return replicateUntil(t, sb, relay, until) }
	replicate(prepared)
	// The XA ROLLBACK's GTID in the target's binlog, the branch prepared.
	mustExec(t, sb.Target, fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=%d",
		rolledBack.Domain, rolledBack.Server, rolledBack.Seq), "DROP TABLE IF EXISTS eb.no_such_table")
	r := replicate(rolledBack.String())
	if !strings.Contains(r.stderr, "ended it again outside the binlog") {
		t.Errorf("no warning that the branch was ended again:\n%s", r.stderr)
	}
	if rows, err := rootDB(t, sb.Target).Query("XA RECOVER"); err != nil {
		t.Fatal(err)
	} else {
		prepared := rows.Next()
		rows.Close()
		if prepared {
			t.Fatalf("the XA branch the target's binlog says was rolled back is still prepared:\n%s", r.stderr)
		}
	}

	mustExec(t, sb.Primary, "DO SETVAL(eb.s, 100)")
	set, err := gtid.ParseMariaDBGTID(binlogPos(t, sb.Primary))
	if err != nil {
		t.Fatal(err)
	}
	replicate(set.String())
	// The sequence as before the SETVAL, the position before it.
	mustExec(t, sb.Target, "SET SESSION sql_log_bin=0", "ALTER SEQUENCE eb.s RESTART WITH 1",
		fmt.Sprintf("UPDATE gapless.checkpoint SET seq_no=%d WHERE domain_id=%d AND seq_no>=%d", set.Seq-1, set.Domain, set.Seq))
	replicate(set.String())
	requireEqual(t, sb)
}

// A target killed right after a CREATE SEQUENCE recovers the sequence
// without its row (MariaDB answers the statement before the row is on
// disk), the statement in its binlog and the position not yet written.
// The next run takes the group as applied from the target's binlog, sees
// the sequence without its row, and creates it again outside the binlog:
// the groups after it apply, and the sequence ends equal.
func TestSequenceCreatedJustBeforeTheTargetDied(t *testing.T) {
	sb := upSandbox(t)
	relay := filepath.Join(t.TempDir(), "relay")
	create := "CREATE SEQUENCE sc.s START WITH 10 INCREMENT BY 5"
	mustExec(t, sb.Primary, "CREATE DATABASE sc", "CREATE TABLE sc.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	before := binlogPos(t, sb.Primary)
	mustExec(t, sb.Primary, create)
	created, err := gtid.ParseMariaDBGTID(binlogPos(t, sb.Primary))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, sb.Primary, "INSERT INTO sc.t VALUES (NEXTVAL(sc.s))", "DO SETVAL(sc.s, 100)", "INSERT INTO sc.t SELECT NEXTVAL(sc.s)")
	replicate := func(until string) run { return replicateUntil(t, sb, relay, until) }
	replicate(before)
	mustExec(t, sb.Target, fmt.Sprintf("SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=%d",
		created.Domain, created.Server, created.Seq), create)
	if err := sb.Target.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Target.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := rootDB(t, sb.Target).Exec("SELECT COUNT(*) FROM sc.s"); err == nil || !strings.Contains(err.Error(), "1032") {
		t.Fatalf("after the kill, the target's sequence answers %v, not 1032: the crash this test sets up did not happen", err)
	}
	r := replicate(binlogPos(t, sb.Primary))
	if !strings.Contains(r.stderr, "created it again outside the binlog") {
		t.Errorf("no warning that the sequence was created again:\n%s", r.stderr)
	}
	requireEqual(t, sb)
	row := func(srv *sandbox.Server) string {
		var next, start, inc int64
		if err := rootDB(t, srv).QueryRow("SELECT next_not_cached_value, start_value, increment FROM sc.s").Scan(&next, &start, &inc); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("next not cached %d, start %d, increment %d", next, start, inc)
	}
	if src, tgt := row(sb.Primary), row(sb.Target); src != tgt {
		t.Fatalf("the sequence differs: source %s, target %s", src, tgt)
	}
}
