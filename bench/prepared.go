// This file owns the prepared tables: a workload's tables are loaded once
// (sysbench prepare on a scratch primary, its binlog then purged), the
// server is stopped cleanly and its home folder kept as a snapshot. Each
// workload's primary starts on a copy of the whole home (data and binlog, so
// the GTID history goes on), and each contender's target on a copy of the
// data folder alone (no binlog: a target has no GTID history of its own).
// Workloads that prepare the same tables share one snapshot (W1, W2, W8, W9
// and their like; W7 and W7B), so W7's 2 million rows are loaded once.
//
// The invariant: nothing ever starts a server on the snapshot itself, so
// every copy starts from the same bytes; a snapshot is used only once its
// stamp names this recipe and this server version.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gapless/internal/sandbox"
)

// snapshotRecipe changes whenever the way a snapshot is made changes, so a
// kept snapshot (--workdir) of an older recipe is made again.
const snapshotRecipe = "bench-prepared-2"

// preparedTables makes snapshots under dir, once per key.
type preparedTables struct {
	dir     string
	version string // mariadbd's, part of every stamp
}

// snapshot is a stopped primary's home holding a workload's prepared tables.
type snapshot struct {
	Home string // holds data/ and binlog/
}

// TemplateDatadir is the data folder every target of the workload copies.
func (s snapshot) TemplateDatadir() string { return filepath.Join(s.Home, "data") }

// get returns w's snapshot, preparing its tables first unless a complete
// snapshot of the same key is there already.
func (pt *preparedTables) get(ctx context.Context, fl *fleet, w *workload) (snapshot, error) {
	home := filepath.Join(pt.dir, w.Prepared, "primary")
	stamp := filepath.Join(pt.dir, w.Prepared, "ready")
	want := snapshotRecipe + " " + w.Prepared + " " + pt.version
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == want {
		return snapshot{Home: home}, nil
	}
	base := filepath.Join(pt.dir, w.Prepared)
	if err := os.RemoveAll(base); err != nil {
		return snapshot{}, fmt.Errorf("removing the old snapshot %s: %w", base, err)
	}
	fmt.Printf("%s: preparing tables %s (once; kept in %s)\n", w.ID, w.Prepared, base)
	// A large buffer pool and no fsync per commit: the prepare is not measured.
	srv, err := fl.start(ctx, sandbox.ServerConfig{Name: "primary", Dir: base, Binlog: true, Durable: false,
		Extra: []string{"innodb_buffer_pool_size=1G"}})
	if err != nil {
		return snapshot{}, err
	}
	if err := prepareAndPurge(ctx, srv, w, base); err != nil {
		_ = fl.kill(srv)
		return snapshot{}, fmt.Errorf("preparing %s: %w", w.Prepared, err)
	}
	if err := fl.stop(srv); err != nil {
		return snapshot{}, err
	}
	// The buffer pool's dump would warm every copy's pool at start, in the
	// background, with pages the prepare happened to touch last.
	if err := os.Remove(filepath.Join(srv.DataDir, "ib_buffer_pool")); err != nil && !os.IsNotExist(err) {
		return snapshot{}, err
	}
	if err := os.WriteFile(stamp, []byte(want+"\n"), 0o644); err != nil {
		return snapshot{}, err
	}
	return snapshot{Home: home}, nil
}

// prepareAndPurge runs w's prepare on srv, then purges the binlog.
func prepareAndPurge(ctx context.Context, srv *sandbox.Server, w *workload, dir string) error {
	db, err := srv.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	logFile, err := os.Create(filepath.Join(dir, "prepare.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	if err := w.Prepare(ctx, &primary{srv: srv, db: db, log: logFile}); err != nil {
		return fmt.Errorf("%w (sysbench output in %s)", err, logFile.Name())
	}
	return purgeBinlog(ctx, srv, db)
}

// purgeBinlog removes every binlog file but a new, empty one: the prepare's
// binlog is of no use to a contender (they start after it), and the GTID
// state it ends at is kept in the new file's GTID list. The server keeps a
// file until InnoDB has made its transactions durable (the binlog
// checkpoint, up to a second later here), so the purge is tried again.
func purgeBinlog(ctx context.Context, srv *sandbox.Server, db *sql.DB) error {
	if err := srv.Exec(ctx, "FLUSH BINARY LOGS"); err != nil {
		return err
	}
	status, err := rowAsMap(ctx, db, "SHOW MASTER STATUS")
	if err != nil {
		return err
	}
	for range 50 {
		if err := srv.Exec(ctx, fmt.Sprintf("PURGE BINARY LOGS TO '%s'", status["File"])); err != nil {
			return err
		}
		files, _, err := binlogFiles(ctx, db)
		if err != nil || len(files) == 1 {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil // a binlog kept is only larger, not wrong
}

// copyPrimary copies the snapshot into dir/primary, where a workload's
// primary then starts, and points the binlog index at the copied files (the
// server lists them by absolute path).
func (s snapshot) copyPrimary(ctx context.Context, dir string) error {
	home := filepath.Join(dir, "primary")
	if err := copyDatadir(ctx, s.Home, home); err != nil {
		return err
	}
	for _, stale := range []string{"my.cnf", "mariadbd.pid", "error.log"} {
		if err := os.Remove(filepath.Join(home, stale)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return pointBinlogIndex(home)
}

// pointBinlogIndex points the binlog index of the server home at the binlog
// files beside it: a server lists them by absolute path, so a copied home's
// index names the original's files.
func pointBinlogIndex(home string) error {
	binlogDir := filepath.Join(home, "binlog")
	indexes, err := filepath.Glob(filepath.Join(binlogDir, "*.index"))
	if err != nil {
		return err
	}
	for _, index := range indexes {
		b, err := os.ReadFile(index)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, filepath.Join(binlogDir, filepath.Base(l)))
			}
		}
		if err := os.WriteFile(index, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
