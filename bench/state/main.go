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

	fmt.Printf("writing %d transactions on the primary, every other one in database f (filtered out)\n", n)
	began := time.Now()
	err = sb.Primary.Exec(ctx,
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
		return err
	}
	var until string
	root, err := sb.Primary.Open("")
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.QueryRow("SELECT @@gtid_binlog_pos").Scan(&until); err != nil {
		return err
	}
	fmt.Printf("written in %s; replicating to %s\n", time.Since(began).Round(time.Second), until)

	tgt, tgtCfg, err := dburl.Open(sb.TargetURL, map[string]string{"multiStatements": "true", "maxAllowedPacket": "0"})
	if err != nil {
		return err
	}
	defer tgt.Close()
	src, err := dburl.Parse(sb.SourceURL)
	if err != nil {
		return err
	}
	pos, err := gtid.ParseMariaDBPosition(until)
	if err != nil {
		return err
	}
	rules := &filter.Rules{IgnoreDB: []string{"f"}}

	type sample struct {
		at      time.Time
		applied int64 // applied plus filtered
	}
	var mu sync.Mutex
	var samples []sample
	start := time.Now()
	res, err := apply.Run(ctx, apply.Config{
		Stream:   "state",
		Receiver: binlog.ReceiverConfig{Host: src.Host, Port: uint16(src.Port), User: src.User, Password: src.Password, ServerID: 777},
		Relay:    binlog.RelayOptions{Dir: filepath.Join(dir, "relay")},
		Target:   tgt,
		Session:  target.Options{KeepGTID: true, WriteBinlog: true, Server: tgtCfg},
		Workers:  workers, Policy: "writeset", CommitOrder: apply.Strict, BatchMax: 32,
		Until: &pos, Filter: rules,
		ProgressEvery: 200 * time.Millisecond,
		Progress: func(p apply.Progress) {
			mu.Lock()
			samples = append(samples, sample{time.Now(), p.Applied + p.Filtered})
			mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	total := time.Since(start)
	fmt.Printf("\n%d applied, %d filtered out, in %s\n", res.Applied, res.Filtered, total.Round(time.Millisecond))
	var rows, fdb int
	tgt.QueryRow("SELECT COUNT(*) FROM s.t").Scan(&rows)
	tgt.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'f'").Scan(&fdb)
	fmt.Printf("target: %d rows in s.t, database f present: %v\n\n", rows, fdb > 0)
	fmt.Println("| source transactions | seconds | transactions/s |")
	fmt.Println("|---|---:|---:|")
	last := sample{at: start}
	next := int64(chunk)
	for _, s := range append(samples, sample{time.Now(), res.Applied + res.Filtered}) {
		if s.applied < next {
			continue
		}
		secs := s.at.Sub(last.at).Seconds()
		fmt.Printf("| %d–%d | %.1f | %.0f |\n", last.applied, s.applied, secs, float64(s.applied-last.applied)/secs)
		last = s
		next = s.applied + int64(chunk)
	}
	return nil
}
