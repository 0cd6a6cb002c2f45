// This file owns the workloads: how each one's primary is configured, how its
// tables are prepared and how sysbench (and, for some, a side job of bulk
// changes or DDL) writes the binlog every contender then replays. A workload
// is recorded once per benchmark; its primary keeps the binlog and serves it.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gapless/internal/analyze"
	"gapless/internal/gtid"
	"gapless/internal/sandbox"
)

// groupCommitWait makes the primary gather large commit groups.
var groupCommitWait = []string{"binlog_commit_wait_count=16", "binlog_commit_wait_usec=5000"}

// workload is one way of writing the primary's binlog.
type workload struct {
	ID          string
	Title       string
	Short       string   // for the chart
	SideKind    string   // what the side job's statements are, if it has one
	Durable     bool     // the primary's durability
	PrimaryConf []string // extra my.cnf lines for the primary
	TargetConf  []string // extra my.cnf lines for every contender's target
	// Prepared names the tables Prepare makes: workloads of the same name
	// share one snapshot of them (prepared.go).
	Prepared string
	Prepare  func(ctx context.Context, p *primary) error
	Run      func(ctx context.Context, p *primary, scale float64) error
	// Contenders are the full run's contenders; nil: defaultContenders'.
	Contenders []string
	// Cluster is the number of nodes of the Galera cluster every contender
	// replicates into (cluster.go); 0: one target server.
	Cluster int
}

// sbtest4 is W1's tables: 4 of 10 000 rows, 10 MB in all, well inside the
// buffer pool.
var sbtest4 = sysbenchTables{DB: "sbtest", Tables: 4, TableSize: 10000}

// sbtest8Large is W7's tables: 8 of 250 000 rows, about 500 MB on disk.
var sbtest8Large = sysbenchTables{DB: "sbtest", Tables: 8, TableSize: 250000}

// ioBoundTarget keeps W7's target from caching its data: a pool far smaller
// than the tables and reads that bypass the OS page cache.
func ioBoundTarget(pool string) []string {
	return []string{"innodb_buffer_pool_size=" + pool, "innodb_flush_method=O_DIRECT"}
}

// mariadbContenders are MariaDB's serial replica and its three parallel
// modes; "MariaDB's best" in a report is the best of those that ran.
var mariadbContenders = []string{"mariadb-serial", "mariadb-conservative", "mariadb-optimistic", "mariadb-aggressive"}

// focusedContenders are MariaDB's replica in every mode against gapless N and
// gapless 1 with the default policy: the full run's contenders on W7, W1M and
// W2M, and with variants on W1 and W2.
var focusedContenders = append(slices.Clone(mariadbContenders), "gapless-writeset-N", "gapless-writeset-1")

// parallelContenders leave out MariaDB's serial replica where its 20 s
// workload would last minutes, three times over (W7B, W8): MariaDB's best
// mode, the reference, is a parallel one there.
var parallelContenders = focusedContenders[1:]

var workloads = []*workload{
	{
		ID: "W1", Short: "group commit, 16 threads", Title: "oltp_write_only, 16 threads, durable primary with group commit",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(6000, scale)))
		},
	},
	{
		ID: "W2", Short: "no group commit, 1 thread", Title: "oltp_write_only, 1 thread, non-durable primary, no commit wait",
		Durable:  false,
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 1, scaled(6000, scale)))
		},
	},
	{
		ID: "W1M", Short: "W1, binlog MIXED", Title: "W1 on a primary at MariaDB's default binlog_format=MIXED (statements)",
		Durable: true, PrimaryConf: append([]string{"binlog_format=MIXED"}, groupCommitWait...),
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(6000, scale)))
		},
		Contenders: focusedContenders,
	},
	{
		ID: "W2M", Short: "W2, binlog MIXED", Title: "W2 on a primary at MariaDB's default binlog_format=MIXED (statements)",
		Durable: false, PrimaryConf: []string{"binlog_format=MIXED"},
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 1, scaled(6000, scale)))
		},
		Contenders: focusedContenders,
	},
	{
		ID: "W3", Short: "hot rows, 16 threads", Title: "hot rows: oltp_update_index + oltp_update_non_index, 4 tables of 100 rows, 16 threads",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: hotRows.name(), Prepare: hotRows.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return parallel(
				func() error { return p.sysbench(ctx, hotRows.run("oltp_update_index", 8, scaled(4000, scale))) },
				func() error { return p.sysbench(ctx, hotRows.run("oltp_update_non_index", 8, scaled(4000, scale))) },
			)
		},
	},
	{
		ID: "W4", Short: "4 databases, 4 clients", Title: "four databases, one sysbench client of 4 threads each, at once",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: "db1-db4-2x10000",
		Prepare: func(ctx context.Context, p *primary) error {
			for _, t := range fourDatabases {
				if err := t.prepare(ctx, p); err != nil {
					return err
				}
			}
			return nil
		},
		Run: func(ctx context.Context, p *primary, scale float64) error {
			var clients []func() error
			for _, t := range fourDatabases {
				clients = append(clients, func() error {
					return p.sysbench(ctx, t.run("oltp_write_only", 4, scaled(1500, scale)))
				})
			}
			return parallel(clients...)
		},
	},
	{
		ID: "W5", Short: "large transactions among small", Title: "large transactions: INSERT ... SELECT / DELETE of 10 000 rows every 600 among W1's",
		Durable: true, PrimaryConf: groupCommitWait, SideKind: "bulk changes",
		Prepared: sbtest4.name() + "-bulk",
		Prepare: func(ctx context.Context, p *primary) error {
			if err := sbtest4.prepare(ctx, p); err != nil {
				return err
			}
			return p.srv.Exec(ctx, "CREATE TABLE sbtest.bulk LIKE sbtest.sbtest1")
		},
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.withSideJob(ctx, uint64(scaled(600, scale)), bulkChange, func() error {
				return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(5000, scale)))
			})
		},
	},
	{
		ID: "W6", Short: "W1 with DDL", Title: "W1 with a DDL (ADD COLUMN or CREATE INDEX) every 2000 transactions",
		Durable: true, PrimaryConf: groupCommitWait, SideKind: "DDL statements",
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.withSideJob(ctx, uint64(scaled(2000, scale)), schemaChange, func() error {
				return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(6000, scale)))
			})
		},
	},
	{
		ID: "W7", Short: "IO-bound, 16 MB buffer pool", Title: "IO-bound: oltp_write_only, uniform keys, 8 tables of 250 000 rows, target buffer pool 16 MB, O_DIRECT",
		Durable: true, PrimaryConf: append([]string{"innodb_buffer_pool_size=1G"}, groupCommitWait...),
		TargetConf: ioBoundTarget("16M"),
		Prepared:   sbtest8Large.name(), Prepare: sbtest8Large.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest8Large.run("oltp_write_only", 16, scaled(12000, scale)).uniform())
		},
		Contenders: focusedContenders,
	},
	{
		ID: "W7B", Short: "IO-bound, 128 MB buffer pool", Title: "W7 with a 128 MB target buffer pool (a quarter of the data)",
		Durable: true, PrimaryConf: append([]string{"innodb_buffer_pool_size=1G"}, groupCommitWait...),
		TargetConf: ioBoundTarget("128M"),
		Prepared:   sbtest8Large.name(), Prepare: sbtest8Large.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest8Large.run("oltp_write_only", 16, scaled(14000, scale)).uniform())
		},
		Contenders: parallelContenders,
	},
	{
		ID: "W8", Short: "uniform keys, CPU-bound", Title: "W1 with uniform keys (--rand-type=uniform): no hot rows, the data in the buffer pool",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(120000, scale)).uniform())
		},
		Contenders: parallelContenders,
	},
	{
		ID: "W9", Short: "remote target, 1 ms round trip", Title: "W8 with gapless reaching its target over a link of 1 ms round trip (MariaDB's replica stays local)",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(120000, scale)).uniform())
		},
		// MariaDB's three parallel modes (local: its replica runs in the target)
		// and gapless 8 local are the references for gapless over the link.
		Contenders: append(slices.Clone(mariadbContenders[1:]), "gapless-writeset-N", "gapless-writeset-N/remote", "gapless-writeset-1/remote"),
	},
	{
		// Each statement on a MyISAM table is a group of its own in the
		// binlog, which the target binlogs as it executes: every group runs
		// alone, one after the other, on every replica.
		ID: "W10", Short: "MyISAM tables, binlog MIXED", Title: "W1 on MyISAM tables at binlog_format=MIXED, as a legacy application writes: every statement a group of its own",
		Durable: true, PrimaryConf: append([]string{"binlog_format=MIXED"}, groupCommitWait...),
		Prepared: sbtest4MyISAM.name(), Prepare: sbtest4MyISAM.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4MyISAM.run("oltp_write_only", 16, scaled(6000, scale)))
		},
		Contenders: focusedContenders,
	},
	{
		// Wide transactions, as an order-entry application writes them: each
		// changes 20 rows over up to three tables, where W1's change 4.
		ID: "W11", Short: "wide transactions, 20 rows", Title: "wide transactions: " + wideTitle + "; durable targets, binlog written",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest8.name(), Prepare: sbtest8.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, wideRun(scaled(w11Transactions, scale)))
		},
		Contenders: focusedContenders,
	},
	{
		ID: "W11F", Short: "W11, non-durable, binlog off", Title: "W11 on non-durable targets with the binlog off, where a commit costs no fsync and the applier's own CPU counts most",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest8.name(), Prepare: sbtest8.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, wideRun(scaled(w11fTransactions, scale)))
		},
		Contenders: withVariant(focusedContenders, "fast-nobinlog"),
	},
	{
		// Every commit on a node waits for the cluster to certify it; each
		// run gets a fresh cluster (cluster.go), verified on every node.
		ID: "W1G", Short: "W1 into a 3-node Galera cluster", Title: "W1 replicated into a 3-node Galera cluster (wsrep_gtid_mode=ON, durable nodes), every commit certified by the cluster",
		Durable: true, PrimaryConf: groupCommitWait,
		Prepared: sbtest4.name(), Prepare: sbtest4.prepare,
		Run: func(ctx context.Context, p *primary, scale float64) error {
			return p.sysbench(ctx, sbtest4.run("oltp_write_only", 16, scaled(w1gTransactions, scale)))
		},
		Cluster:    3,
		Contenders: clusterContenders,
	},
}

// w1gTransactions sizes W1G so that one run of its slowest contender, with
// the cluster's start and the verify of every node, fits in a couple of
// minutes here: at 30 000, MariaDB's replica needed 97-159 s per mode and
// gapless 8 15 s on a loaded machine (bench/results/2026-11-29-w1g-sizing.md),
// and three runs of each would add over half an hour to make bench.
const w1gTransactions = 12000

// clusterContenders are, on a cluster workload, MariaDB's replica on node 1
// in its three parallel modes, gapless N writing to the nodes in turn, and
// gapless N again with the node it writes to killed amid the run.
var clusterContenders = append(slices.Clone(mariadbContenders[1:]), "gapless-writeset-N", "gapless-writeset-N/failover")

// sbtest8 is W11's tables: 8 of 50 000 rows, about 100 MB, inside the
// sandbox's 256 MB buffer pool.
var sbtest8 = sysbenchTables{DB: "sbtest", Tables: 8, TableSize: 50000}

// wideTransaction is the shape of W11's transactions, in sysbench's own
// oltp_write_only options: 4 index updates, 6 non-index updates and 5
// delete-inserts, each group of statements on one table picked at random,
// and a fifth of the keys drawn from 1% of each table's rows (hot rows).
var wideTransaction = transactionShape{IndexUpdates: 4, NonIndexUpdates: 6, DeleteInserts: 5, HotRowsPct: 1, HotShare: 20}

// W11 and W11F are sized so that their fastest contender needs about 20 s
// on a quiet machine, like W7-W9's: measured on a loaded one, the CPU floor
// of both cores (target and applier CPU over 2) was 20-24 s for W11's
// 40 000 transactions and 29-30 s for 80 000 of W11F's, where no fsync is
// waited for (one run each of MariaDB's best mode and gapless 8).
const (
	w11Transactions  = 40000
	w11fTransactions = 60000
)

var wideTitle = fmt.Sprintf("oltp_write_only, %d row changes a transaction (%s), 16 threads, %d tables of %d rows",
	wideTransaction.rowChanges(), strings.Join(wideTransaction.args(), " "), sbtest8.Tables, sbtest8.TableSize)

// wideRun is W11's and W11F's sysbench client: events wide transactions
// from 16 threads.
func wideRun(events int) sysbenchRun {
	r := sbtest8.run("oltp_write_only", 16, events)
	r.Shape = wideTransaction
	return r
}

// transactionShape sets how many statements of each kind an
// oltp_write_only transaction runs, and how many of its keys are hot.
type transactionShape struct {
	IndexUpdates, NonIndexUpdates, DeleteInserts int
	// HotShare percent of the keys are drawn from HotRowsPct percent of a
	// table's rows (sysbench's special distribution).
	HotRowsPct, HotShare int
}

// args are the shape's sysbench options.
func (s transactionShape) args() []string {
	return []string{
		"--index_updates=" + strconv.Itoa(s.IndexUpdates),
		"--non_index_updates=" + strconv.Itoa(s.NonIndexUpdates),
		"--delete_inserts=" + strconv.Itoa(s.DeleteInserts),
		"--rand-type=special", "--rand-spec-pct=" + strconv.Itoa(s.HotRowsPct), "--rand-spec-res=" + strconv.Itoa(s.HotShare),
	}
}

// rowChanges is how many rows one transaction of the shape changes: every
// update one, every delete-insert two.
func (s transactionShape) rowChanges() int {
	return s.IndexUpdates + s.NonIndexUpdates + 2*s.DeleteInserts
}

// sbtest4MyISAM is W10's tables: W1's, in MyISAM.
var sbtest4MyISAM = sysbenchTables{DB: "sbtest", Tables: 4, TableSize: 10000, Engine: "MyISAM"}

// hotRows is W3's tables: 4 of 100 rows.
var hotRows = sysbenchTables{DB: "sbtest", Tables: 4, TableSize: 100}

// fourDatabases is W4's tables: 2 of 10 000 rows in each of 4 databases.
var fourDatabases = []sysbenchTables{
	{DB: "db1", Tables: 2, TableSize: 10000}, {DB: "db2", Tables: 2, TableSize: 10000},
	{DB: "db3", Tables: 2, TableSize: 10000}, {DB: "db4", Tables: 2, TableSize: 10000},
}

func scaled(n int, scale float64) int { return max(1, int(float64(n)*scale)) }

// bulkChange is the i-th large transaction of W5: 10 000 rows in, then out.
func bulkChange(i int) string {
	if i%2 == 0 {
		return "INSERT INTO sbtest.bulk (k, c, pad) SELECT k, c, pad FROM sbtest.sbtest1 ORDER BY id LIMIT 10000"
	}
	return "DELETE FROM sbtest.bulk ORDER BY id LIMIT 10000"
}

// schemaChange is the i-th DDL of W6, on each sysbench table in turn.
func schemaChange(i int) string {
	table := fmt.Sprintf("sbtest.sbtest%d", i%4+1)
	if i%2 == 0 {
		return fmt.Sprintf("ALTER TABLE %s ADD COLUMN bench_col%d INT NOT NULL DEFAULT %d", table, i, i)
	}
	return fmt.Sprintf("CREATE INDEX bench_idx%d ON %s (k, id)", i, table)
}

// primary is a workload's source server while it is being recorded.
type primary struct {
	srv       *sandbox.Server
	db        *sql.DB
	log       *os.File // sysbench output
	sideStmts int      // statements the side job ran
}

// recording is a workload written to a primary's binlog, ready to replay.
type recording struct {
	Workload        *workload
	Primary         *sandbox.Server
	TemplateDatadir string // a stopped server's datadir holding the prepared tables (prepared.go)
	ClusterTemplate string // a cluster workload's stopped cluster holding them (cluster.go)
	Start, End      string // @@gtid_binlog_pos before and after the workload
	Transactions    int64
	PrimarySeconds  float64
	SideStatements  int     // bulk changes or DDL run beside sysbench
	Scale           float64 // the workload's transaction counts were multiplied by
	BinlogFiles     []string
	BinlogBytes     int64 // written by the workload
	// RowChanges are those in the row events between Start and End (an
	// update counts once); 0 where the primary logs statements.
	RowChanges int64
}

// record starts the workload's primary on a copy of its prepared tables'
// snapshot, runs the workload and notes the positions.
func record(ctx context.Context, fl *fleet, pt *preparedTables, w *workload, dir string, scale float64) (*recording, error) {
	snap, err := pt.get(ctx, fl, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID, err)
	}
	if err := snap.copyPrimary(ctx, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID, err)
	}
	srv, err := fl.start(ctx, sandbox.ServerConfig{Name: "primary", Dir: dir, Binlog: true, Durable: w.Durable, Extra: w.PrimaryConf})
	if err != nil {
		return nil, err
	}
	db, err := srv.Open("")
	if err != nil {
		return nil, fmt.Errorf("%s primary: %w", w.ID, err)
	}
	defer db.Close()
	logFile, err := os.Create(filepath.Join(dir, "sysbench.log"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID, err)
	}
	defer logFile.Close()
	p := &primary{srv: srv, db: db, log: logFile}

	rec := &recording{Workload: w, Primary: srv, TemplateDatadir: snap.TemplateDatadir(), Scale: scale}
	if rec.Start, err = queryString(ctx, db, "SELECT @@gtid_binlog_pos"); err != nil {
		return nil, fmt.Errorf("%s primary: %w", w.ID, err)
	}
	_, bytesBefore, err := binlogFiles(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("%s primary: %w", w.ID, err)
	}
	began := time.Now()
	if err := w.Run(ctx, p, scale); err != nil {
		return nil, fmt.Errorf("%s: workload: %w (sysbench output in %s)", w.ID, err, logFile.Name())
	}
	rec.PrimarySeconds = time.Since(began).Seconds()
	rec.SideStatements = p.sideStmts
	if err := srv.Exec(ctx, "FLUSH BINARY LOGS"); err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID, err)
	}
	if rec.End, err = queryString(ctx, db, "SELECT @@gtid_binlog_pos"); err != nil {
		return nil, fmt.Errorf("%s primary: %w", w.ID, err)
	}
	if rec.Transactions, err = transactionsBetween(rec.Start, rec.End); err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID, err)
	}
	var bytesAfter int64
	if rec.BinlogFiles, bytesAfter, err = binlogFiles(ctx, db); err != nil {
		return nil, fmt.Errorf("%s primary: %w", w.ID, err)
	}
	rec.BinlogBytes = bytesAfter - bytesBefore
	if w.logsRows() {
		if rec.RowChanges, err = countRowChanges(ctx, rec.BinlogFiles, rec.Start, rec.End, rec.Transactions); err != nil {
			return nil, fmt.Errorf("%s: %w", w.ID, err)
		}
	}
	return rec, nil
}

// logsRows is whether the workload's primary logs every change as row
// events (binlog_format=ROW, the sandbox's), so that the row events count
// every row it changed.
func (w *workload) logsRows() bool {
	return !slices.ContainsFunc(w.PrimaryConf, func(line string) bool {
		format, ok := strings.CutPrefix(line, "binlog_format=")
		return ok && !strings.EqualFold(format, "ROW")
	})
}

// countRowChanges counts the row changes in the row events of the binlog
// files after start up to end, read as gapless analyze reads them (an
// update's before and after images count once), and checks that it read as
// many transactions as the positions count.
func countRowChanges(ctx context.Context, files []string, start, end string, transactions int64) (int64, error) {
	r, err := analyze.Files(ctx, files, analyze.Options{From: start, Until: end, Workers: []int{1}, Policies: []string{"serial"}})
	if err != nil {
		return 0, fmt.Errorf("counting the row changes: %w", err)
	}
	if !r.RowsDecoded || int64(r.Transactions) != transactions {
		return 0, fmt.Errorf("counting the row changes: read %d transactions between %s and %s (rows decoded: %v), the positions count %d",
			r.Transactions, start, end, r.RowsDecoded, transactions)
	}
	return r.RowChanges, nil
}

// transactionsBetween counts the GTIDs after start up to end, per domain.
func transactionsBetween(start, end string) (int64, error) {
	from, err := gtid.ParseMariaDBPosition(start)
	if err != nil {
		return 0, fmt.Errorf("start position %q: %w", start, err)
	}
	to, err := gtid.ParseMariaDBPosition(end)
	if err != nil {
		return 0, fmt.Errorf("end position %q: %w", end, err)
	}
	var n int64
	for _, g := range to.GTIDs() {
		before, _ := from.Get(g.Domain)
		n += int64(g.Seq - before.Seq)
	}
	return n, nil
}

func binlogFiles(ctx context.Context, db *sql.DB) ([]string, int64, error) {
	base, err := queryString(ctx, db, "SELECT @@log_bin_basename")
	if err != nil {
		return nil, 0, err
	}
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, 0, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, 0, fmt.Errorf("SHOW BINARY LOGS: %w", err)
	}
	var files []string
	var total int64
	for rows.Next() {
		var name string
		var size int64
		dest := []any{&name, &size}
		for range len(cols) - 2 {
			dest = append(dest, new(sql.RawBytes))
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, fmt.Errorf("SHOW BINARY LOGS: %w", err)
		}
		files = append(files, filepath.Join(filepath.Dir(base), name))
		total += size
	}
	return files, total, rows.Err()
}

// sysbenchTables are the tables of a sysbench database.
type sysbenchTables struct {
	DB                string
	Tables, TableSize int
	Engine            string // the tables' storage engine; "" for the server's default (InnoDB)
}

func (t sysbenchTables) name() string {
	name := fmt.Sprintf("%s-%dx%d", t.DB, t.Tables, t.TableSize)
	if t.Engine != "" {
		name += "-" + strings.ToLower(t.Engine)
	}
	return name
}

// prepare creates the database and fills its tables, two at a time.
func (t sysbenchTables) prepare(ctx context.Context, p *primary) error {
	if err := p.srv.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+t.DB); err != nil {
		return err
	}
	return p.sysbenchCmd(ctx, "prepare", sysbenchRun{sysbenchTables: t, Script: "oltp_write_only", Threads: min(2, t.Tables)})
}

// run is script run on the tables: events transactions by threads clients.
func (t sysbenchTables) run(script string, threads, events int) sysbenchRun {
	return sysbenchRun{sysbenchTables: t, Script: script, Threads: threads, Events: events}
}

// sysbenchRun is one sysbench client's share of a workload.
type sysbenchRun struct {
	sysbenchTables
	Script          string
	Threads, Events int
	Uniform         bool             // --rand-type=uniform: every row as likely, no hot rows
	Shape           transactionShape // the statements of a transaction and the hot rows; zero: the script's defaults
}

func (r sysbenchRun) uniform() sysbenchRun { r.Uniform = true; return r }

// sysbench runs a fixed number of transactions.
func (p *primary) sysbench(ctx context.Context, r sysbenchRun) error {
	return p.sysbenchCmd(ctx, "run", r)
}

func (p *primary) sysbenchCmd(ctx context.Context, command string, r sysbenchRun) error {
	args := r.args(command, p.srv.Port)
	var out strings.Builder
	cmd := exec.CommandContext(ctx, "sysbench", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Fprintf(p.log, "$ sysbench %s\n%s\n", strings.Join(args, " "), out.String())
	if err != nil {
		return fmt.Errorf("sysbench %s %s on %s: %w: %s", r.Script, command, r.DB, err, lastLines(out.String(), 5))
	}
	return nil
}

// args is sysbench's command line for command (prepare or run) against the
// server at 127.0.0.1:port.
func (r sysbenchRun) args(command string, port int) []string {
	args := []string{r.Script,
		"--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(port),
		"--mysql-user=" + sandbox.ApplierUser, "--mysql-password=" + sandbox.ApplierPassword,
		"--mysql-db=" + r.DB, "--tables=" + strconv.Itoa(r.Tables), "--table-size=" + strconv.Itoa(r.TableSize),
		"--threads=" + strconv.Itoa(max(1, r.Threads)),
	}
	if command == "run" {
		args = append(args, "--events="+strconv.Itoa(r.Events), "--time=0")
	}
	if r.Engine != "" {
		args = append(args, "--mysql-storage-engine="+r.Engine)
	}
	if r.Engine != "" && command == "run" {
		// Without transactions, two clients may delete and insert the
		// same row at once: the loser's INSERT fails, changes nothing
		// and is not logged.
		args = append(args, "--mysql-ignore-errors=1062")
	}
	switch {
	case r.Uniform:
		args = append(args, "--rand-type=uniform")
	case r.Shape != transactionShape{} && command == "run":
		args = append(args, r.Shape.args()...)
	}
	return append(args, command)
}

// withSideJob runs main while, every interval transactions of the primary's
// binlog, another connection runs the statement stmt(i) for i = 0, 1, ...
// The side job stops between statements once main returns.
func (p *primary) withSideJob(ctx context.Context, interval uint64, stmt func(i int) string, main func() error) error {
	startSeq, err := p.seq(ctx)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	sideErr := make(chan error, 1)
	go func() {
		next := startSeq + interval
		for i := 0; ; {
			select {
			case <-done:
				sideErr <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			seq, err := p.seq(ctx)
			if err != nil {
				sideErr <- err
				return
			}
			if seq < next {
				continue
			}
			if _, err := p.db.ExecContext(context.WithoutCancel(ctx), stmt(i)); err != nil {
				sideErr <- fmt.Errorf("side job: %s: %w", stmt(i), err)
				return
			}
			fmt.Fprintf(p.log, "side job after transaction %d: %s\n", seq, stmt(i))
			i++
			p.sideStmts = i
			next += interval
		}
	}()
	mainErr := main()
	close(done)
	return errors.Join(mainErr, <-sideErr)
}

// seq is the primary's last sequence number in domain 0.
func (p *primary) seq(ctx context.Context) (uint64, error) {
	s, err := queryString(ctx, p.db, "SELECT @@gtid_binlog_pos")
	if err != nil {
		return 0, err
	}
	pos, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return 0, fmt.Errorf("primary @@gtid_binlog_pos %q: %w", s, err)
	}
	g, _ := pos.Get(0)
	return g.Seq, nil
}

func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
