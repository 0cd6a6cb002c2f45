package analyze

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"gapless/internal/dburl"
)

func TestScratchCommit(t *testing.T) {
	u := os.Getenv("SCRATCH_TARGET")
	if u == "" {
		t.Skip()
	}
	db, _, err := dburl.Open(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, _ := db.Conn(ctx)
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS analyze_scratch", "CREATE TABLE IF NOT EXISTS analyze_scratch.t (id int primary key auto_increment, v varchar(200))"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var begins, inserts, commits []time.Duration
	for i := 0; i < 2000; i++ {
		t0 := time.Now()
		conn.ExecContext(ctx, "BEGIN")
		t1 := time.Now()
		conn.ExecContext(ctx, "INSERT INTO analyze_scratch.t (v) VALUES (REPEAT('x', 180))")
		t2 := time.Now()
		conn.ExecContext(ctx, "COMMIT")
		t3 := time.Now()
		begins = append(begins, t1.Sub(t0))
		inserts = append(inserts, t2.Sub(t1))
		commits = append(commits, t3.Sub(t2))
	}
	med := func(d []time.Duration) time.Duration { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }); return d[len(d)/2] }
	t.Logf("begin %v insert %v commit %v", med(begins), med(inserts), med(commits))
	conn.ExecContext(ctx, "DROP DATABASE analyze_scratch")
}
