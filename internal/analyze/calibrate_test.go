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

	c, err := Calibrate(context.Background(), url, CalibrateConfig{Connections: 2, Transactions: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Summary())
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
