// Tests that --calibrate measures a real sandbox target, leaves nothing
// behind, even when interrupted, and says clearly when it cannot connect.
package analyze

import (
	"context"
	"strings"
	"testing"
	"time"

	"gapless/internal/sandbox"
)

func TestCalibrate(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target", Binlog: true})
	url := srv.URL(sandbox.ApplierUser, sandbox.ApplierPassword)
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	scratchLeft := func(t *testing.T) {
		t.Helper()
		var name string
		err := db.QueryRow("SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'gapless\\_calibrate%'").Scan(&name)
		if err == nil {
			t.Errorf("calibration left database %s behind", name)
		}
	}

	// The target's own data, which the probe reads and must leave as it
	// was: two tables it can read by key, and two it cannot (a string key,
	// a key of two columns).
	for _, q := range []string{
		"CREATE DATABASE app",
		"CREATE TABLE app.orders (id BIGINT PRIMARY KEY, note VARCHAR(200)) ENGINE=InnoDB",
		"INSERT INTO app.orders SELECT seq, REPEAT('o', 200) FROM test.seq_1_to_3000",
		"CREATE TABLE app.items (id INT PRIMARY KEY, n INT) ENGINE=InnoDB",
		"INSERT INTO app.items SELECT seq, seq FROM test.seq_1_to_100",
		"CREATE TABLE app.names (name VARCHAR(20) PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO app.names VALUES ('a'), ('b')",
		"CREATE TABLE app.pairs (a INT, b INT, PRIMARY KEY (a, b)) ENGINE=InnoDB",
		"INSERT INTO app.pairs VALUES (1, 1), (2, 2)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	checksums := func() string {
		rows, err := db.Query("CHECKSUM TABLE app.orders, app.items, app.names, app.pairs")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var all []string
		for rows.Next() {
			var name, sum string
			if err := rows.Scan(&name, &sum); err != nil {
				t.Fatal(err)
			}
			all = append(all, name+"="+sum)
		}
		return strings.Join(all, " ")
	}
	before := checksums()

	c, err := Calibrate(context.Background(), url, CalibrateConfig{Connections: 2, Transactions: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Summary())
	if c.ProbeTables != 2 || c.ProbeUS <= 0 || c.CachedProbeUS <= 0 || c.ProbeRatio <= 0 {
		t.Errorf("probe %d tables, %.0fµs (cached %.0fµs), ratio %.2f: want app.orders and app.items read, and timed",
			c.ProbeTables, c.ProbeUS, c.CachedProbeUS, c.ProbeRatio)
	}
	if after := checksums(); after != before {
		t.Errorf("the probe changed the target's data: %s, then %s", before, after)
	}
	m := c.Cost
	if m.Commit <= 0 || m.Txn+m.Row <= 0 || m.Row <= 0 {
		t.Errorf("cost model %s: want a COMMIT, a per-transaction and a per-row cost", m)
	}
	if m.Capacity < 1 || m.Capacity > 2 {
		t.Errorf("capacity %.2f from 2 connections: want 1 to 2", m.Capacity)
	}
	if c.Transactions < 4*40 || !strings.Contains(c.Target, "***") {
		t.Errorf("calibration %+v: want the sample counted and the password hidden", c)
	}
	scratchLeft(t)

	// The cost model is usable as it is.
	if _, err := newAnalyzer(Options{Cost: m}); err != nil {
		t.Errorf("calibrated model refused: %v", err)
	}

	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := Calibrate(ctx, url, CalibrateConfig{Connections: 2, Transactions: 4000}); err == nil {
			t.Fatal("a calibration cut short succeeded")
		}
		scratchLeft(t)
	})

	t.Run("bad target", func(t *testing.T) {
		for _, c := range []struct{ url, want string }{
			{strings.Replace(url, sandbox.ApplierPassword, "wrong", 1), "access denied"},
			{"mysql://gapless@127.0.0.1:1", "connection refused"},
			{"not a url", "no scheme"},
		} {
			_, err := Calibrate(context.Background(), c.url, CalibrateConfig{})
			if err == nil || !strings.Contains(err.Error(), "--calibrate") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want --calibrate and %q", c.url, err, c.want)
			}
		}
	})
}
