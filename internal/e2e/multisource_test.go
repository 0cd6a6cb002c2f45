package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gapless/internal/dburl"
	"gapless/internal/sandbox"
	"gapless/internal/verify"
)

// TestTwoPrimariesIntoOneTarget replicates two primaries, in GTID domains 1
// and 2, into one target through two streams (--stream a and b, relay
// folders apart, each with --do-db of its database), both loads at once.
// Each applier is killed with SIGKILL three times under load and run again;
// then each database equals its primary's, and verify against either
// primary, without --databases, exits 0 and names the other stream's
// database apart (docs/operations-and-recovery.md, "Several primaries into
// one target").
func TestTwoPrimariesIntoOneTarget(t *testing.T) {
	sb := sandbox.UpForTest(t, sandbox.Options{Fast: true, PrimaryExtra: []string{"gtid_domain_id=1"}})
	second := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary2", Binlog: true, Extra: []string{"gtid_domain_id=2"}})
	type stream struct {
		name, url, relay string
		primary          *sandbox.Server
	}
	streams := []stream{
		{"a", sb.SourceURL, filepath.Join(t.TempDir(), "relay-a"), sb.Primary},
		{"b", second.URL(sandbox.ReplUser, sandbox.ReplPassword), filepath.Join(t.TempDir(), "relay-b"), second},
	}
	args := func(s stream, extra ...string) []string {
		return append([]string{"replicate", "--source", s.url, "--target", sb.TargetURL, "--stream", s.name,
			"--relay-dir", s.relay, "--do-db", s.name, "--workers", "4", "--progress", "0"}, extra...)
	}
	for _, s := range streams {
		mustExec(t, s.primary,
			// --do-db keeps statements by their default database (as
			// MariaDB's replicate-do-db does): DDL and the load's
			// statements run in theirs.
			"CREATE DATABASE "+s.name,
			"USE "+s.name,
			"CREATE TABLE "+s.name+".accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(40)) ENGINE=InnoDB",
			"CREATE TABLE "+s.name+".orders (id INT AUTO_INCREMENT PRIMARY KEY, account INT NOT NULL, amount INT NOT NULL, ref VARCHAR(20) NOT NULL, UNIQUE KEY (ref)) ENGINE=InnoDB",
		)
	}

	loading := make(chan struct{})
	var loads, appliers sync.WaitGroup
	for i, s := range streams {
		loads.Add(1)
		go func() {
			defer loads.Done()
			began := time.Now()
			multiSourceLoad(t, s.primary, s.name, 4, 600*randomScale(), int64(i+1))
			t.Logf("load of %s written in %s", s.name, time.Since(began).Round(time.Millisecond))
		}()
		appliers.Add(1)
		go func() {
			defer appliers.Done()
			rng := rand.New(rand.NewSource(int64(11 + i)))
			for kill := 0; kill < 3; kill++ {
				cmd, _, wait := background(t, args(s)...)
				select {
				case <-time.After(time.Duration(200+rng.Intn(600)) * time.Millisecond):
				case <-loading:
					// The load ended early: kill amid catching up.
					time.Sleep(time.Duration(50+rng.Intn(200)) * time.Millisecond)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				t.Logf("stream %s killed at %s", s.name, binlogPos(t, sb.Target))
				if r := wait(); !r.signaled && r.code != 0 {
					t.Errorf("stream %s exited %d before it was killed:\n%s", s.name, r.code, r.stderr)
					return
				}
			}
		}()
	}
	loads.Wait()
	close(loading)
	appliers.Wait()
	if t.Failed() {
		return
	}

	var runs sync.WaitGroup
	for _, s := range streams {
		runs.Add(1)
		go func() {
			defer runs.Done()
			r := gapless(t, nil, args(s, "--until", binlogPos(t, s.primary))...)
			if r.code != 0 {
				t.Errorf("stream %s: gapless replicate exited %d:\n%s", s.name, r.code, r.stderr)
			}
		}()
	}
	runs.Wait()
	if t.Failed() {
		return
	}
	for _, s := range streams {
		requireEqualDatabase(t, s.url, sb.TargetURL, s.name)
		other := streams[0].name
		if other == s.name {
			other = streams[1].name
		}
		v := gapless(t, nil, "verify", "--source", s.url, "--target", sb.TargetURL)
		if v.code != 0 || !strings.Contains(v.stdout, "extra on target, not on this source: "+other+".* (2 tables)") {
			t.Errorf("verify against stream %s's primary exited %d:\n%s%s", s.name, v.code, v.stdout, v.stderr)
		}
	}
	st := gapless(t, nil, "status", "--target", sb.TargetURL)
	for _, want := range []string{"stream a: not running\n  position  1-", "stream b: not running\n  position  2-"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s%s", want, st.stdout, st.stderr)
		}
	}
}

// multiSourceLoad runs clients that each write perClient transactions to
// database db of srv: transfers between accounts, orders with a unique
// reference, deletes; half the clients log in ROW format, half in MIXED.
func multiSourceLoad(t *testing.T, srv *sandbox.Server, db string, clients, perClient int, seed int64) {
	pool := rootDB(t, srv)
	pool.SetMaxOpenConns(clients + 1)
	var accounts []string
	for id := range 50 {
		accounts = append(accounts, fmt.Sprintf("(%d, 1000, 'account %d')", id, id))
	}
	mustExec(t, srv, "USE "+db, "INSERT INTO "+db+".accounts VALUES "+strings.Join(accounts, ", "))
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			conn, err := pool.Conn(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			format := "MIXED"
			if c%2 == 1 {
				format = "ROW"
			}
			for _, s := range []string{"SET SESSION binlog_format=" + format + ", innodb_lock_wait_timeout=2", "USE " + db} {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Error(err)
					return
				}
			}
			rng := rand.New(rand.NewSource(seed*100 + int64(c)))
			for i := range perClient {
				from, to, amount := rng.Intn(50), rng.Intn(50), 1+rng.Intn(20)
				stmts := []string{
					"BEGIN",
					fmt.Sprintf("UPDATE %s.accounts SET balance = balance - %d WHERE id = %d", db, amount, from),
					fmt.Sprintf("UPDATE %s.accounts SET balance = balance + %d, note = 'from %d' WHERE id = %d", db, amount, from, to),
					fmt.Sprintf("INSERT INTO %s.orders (account, amount, ref) VALUES (%d, %d, 'r%d-%d')", db, from, amount, c, i),
				}
				if i%7 == 6 {
					stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.orders WHERE account = %d ORDER BY id LIMIT 1", db, to))
				}
				stmts = append(stmts, "COMMIT")
				for _, s := range stmts {
					if _, err := conn.ExecContext(ctx, s); err != nil {
						if !expectedOnPrimary(err) {
							t.Errorf("%s: %v", s, err)
							return
						}
						_, _ = conn.ExecContext(ctx, "ROLLBACK")
						break
					}
				}
			}
		}()
	}
	wg.Wait()
}

// requireEqualDatabase compares the tables of database db between the
// server at sourceURL and the target.
func requireEqualDatabase(t *testing.T, sourceURL, targetURL, db string) {
	t.Helper()
	src, _, err := dburl.Open(sourceURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tgt, _, err := dburl.Open(targetURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report, err := verify.Compare(ctx, src, tgt, verify.Options{Databases: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Tables) == 0 {
		t.Fatalf("verify compared no tables of %s", db)
	}
	for _, tr := range report.Tables {
		if tr.Status != verify.StatusEqual {
			t.Errorf("%s.%s: %s %s", tr.Schema, tr.Table, tr.Status, tr.Detail)
		}
	}
}
