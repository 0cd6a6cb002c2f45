// Command state measures whether gapless slows down as it runs (seed 003:
// MySQL bug #101717, where GTID sets grew with every transaction and every
// operation slowed from 100 us to 12 ms). It writes N small transactions on a
// sandbox primary, every other one in a database the run filters out (the
// bug's shape: a sparse applied set), replicates them through the real
// receiver, relay log, decoder, scheduler, workers and checkpoint to a
// sandbox target, and prints the throughput of every chunk of the stream.
// Flat numbers mean nothing on the per-transaction path grows.
//
//	go run ./bench/state -n 1000000 -chunk 100000
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gapless/internal/apply"
	"gapless/internal/binlog"
	"gapless/internal/dburl"
	"gapless/internal/filter"
	"gapless/internal/gtid"
	"gapless/internal/sandbox"
	"gapless/internal/target"
)

func main() {
	n := flag.Int("n", 1000000, "source transactions to write")
	chunk := flag.Int("chunk", 100000, "source transactions per reported chunk")
	workers := flag.Int("workers", 8, "gapless workers")
	flag.Parse()
	if err := run(*n, *chunk, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "state:", err)
		os.Exit(1)
	}
}

func run(n, chunk, workers int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "gapless-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sb, err := sandbox.Up(ctx, sandbox.Options{Dir: dir, Fast: true})
	if err != nil {
		return err
	}
	defer sandbox.Down(dir)

	root, until, err := writeSource(ctx, sb.Primary, n)
	if err != nil {
		return err
	}
	defer root.Close()
	tgt, tgtCfg, err := dburl.Open(sb.TargetURL, map[string]string{"multiStatements": "true", "maxAllowedPacket": "0"})
	if err != nil {
		return err
	}
	defer tgt.Close()
	cfg, err := streamConfig(sb.SourceURL, until, dir, workers, tgt, tgtCfg)
	if err != nil {
		return err
	}
	stream, err := replicate(ctx, cfg)
	if err != nil {
		return err
	}
	printTarget(tgt, stream)
	printChunks(stream, chunk)
	return nil
}

// writeSource writes n transactions on the primary, every other one in
// database f, and returns the connection it read the primary's
// @@gtid_binlog_pos on, and that position. The connection is the caller's
// to close; it is nil when err is not.
func writeSource(ctx context.Context, primary *sandbox.Server, n int) (*sql.DB, string, error) {
	fmt.Printf("writing %d transactions on the primary, every other one in database f (filtered out)\n", n)
	began := time.Now()
	err := primary.Exec(ctx,
		"CREATE DATABASE s", "CREATE DATABASE f",
		"CREATE TABLE s.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT) ENGINE=InnoDB",
		"CREATE TABLE f.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT) ENGINE=InnoDB",
		`CREATE PROCEDURE s.gen(n INT) BEGIN
			DECLARE i INT DEFAULT 0;
			WHILE i < n DO
				INSERT INTO s.t (k) VALUES (i);
				INSERT INTO f.t (k) VALUES (i);
				SET i = i + 2;
			END WHILE;
		END`,
		fmt.Sprintf("CALL s.gen(%d)", n))
	if err != nil {
		return nil, "", err
	}
	var until string
	root, err := primary.Open("")
	if err != nil {
		return nil, "", err
	}
	if err := root.QueryRow("SELECT @@gtid_binlog_pos").Scan(&until); err != nil {
		root.Close()
		return nil, "", err
	}
	fmt.Printf("written in %s; replicating to %s\n", time.Since(began).Round(time.Second), until)
	return root, until, nil
}

// streamConfig is the stream under test: the real receiver, relay log,
// decoder, scheduler, workers and checkpoint, from the source at sourceURL
// to tgt up to until, with database f filtered out.
func streamConfig(sourceURL, until, dir string, workers int, tgt *sql.DB, tgtCfg dburl.Config) (apply.Config, error) {
	src, err := dburl.Parse(sourceURL)
	if err != nil {
		return apply.Config{}, err
	}
	pos, err := gtid.ParseMariaDBPosition(until)
	if err != nil {
		return apply.Config{}, err
	}
	rules := &filter.Rules{IgnoreDB: []string{"f"}}
	return apply.Config{
		Stream:   "state",
		Receiver: binlog.ReceiverConfig{Host: src.Host, Port: uint16(src.Port), User: src.User, Password: src.Password, ServerID: 777},
		Relay:    binlog.RelayOptions{Dir: filepath.Join(dir, "relay")},
		Target:   tgt,
		Session:  target.Options{KeepGTID: true, WriteBinlog: true, Server: tgtCfg},
		Workers:  workers, Policy: "writeset", CommitOrder: apply.Strict, BatchMax: 32,
		Until: &pos, Filter: rules,
	}, nil
}

// sample is the stream's progress at one moment.
type sample struct {
	at      time.Time
	applied int64 // applied plus filtered
}

// stateStream is one run of the stream: its result, when it started, how
// long it took, and its progress every 200 ms.
type stateStream struct {
	res     apply.Result
	start   time.Time
	total   time.Duration
	samples []sample
}

// replicate runs the stream to its end, sampling its progress.
func replicate(ctx context.Context, cfg apply.Config) (stateStream, error) {
	var mu sync.Mutex
	var samples []sample
	cfg.ProgressEvery = 200 * time.Millisecond
	cfg.Progress = func(p apply.Progress) {
		mu.Lock()
		samples = append(samples, sample{time.Now(), p.Applied + p.Filtered})
		mu.Unlock()
	}
	start := time.Now()
	res, err := apply.Run(ctx, cfg)
	if err != nil {
		return stateStream{}, err
	}
	return stateStream{res: res, start: start, total: time.Since(start), samples: samples}, nil
}

// printTarget reports what the stream applied and filtered out, and what
// the target holds after it.
func printTarget(tgt *sql.DB, stream stateStream) {
	res := stream.res
	fmt.Printf("\n%d applied, %d filtered out, in %s\n", res.Applied, res.Filtered, stream.total.Round(time.Millisecond))
	var rows, fdb int
	tgt.QueryRow("SELECT COUNT(*) FROM s.t").Scan(&rows)
	tgt.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'f'").Scan(&fdb)
	fmt.Printf("target: %d rows in s.t, database f present: %v\n\n", rows, fdb > 0)
}

// printChunks prints the stream's throughput over every chunk of source
// transactions, from its samples and its end, as a Markdown table.
func printChunks(stream stateStream, chunk int) {
	fmt.Println("| source transactions | seconds | transactions/s |")
	fmt.Println("|---|---:|---:|")
	last := sample{at: stream.start}
	next := int64(chunk)
	for _, s := range append(stream.samples, sample{time.Now(), stream.res.Applied + stream.res.Filtered}) {
		if s.applied < next {
			continue
		}
		secs := s.at.Sub(last.at).Seconds()
		fmt.Printf("| %d–%d | %.1f | %.0f |\n", last.applied, s.applied, secs, float64(s.applied-last.applied)/secs)
		last = s
		next = s.applied + int64(chunk)
	}
}
