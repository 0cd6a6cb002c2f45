// hotpath_record_test.go records the binlogs BenchmarkHotPath reads
// (testdata/hotpath-*.bin), from a sandbox primary in ROW format with full
// images. It runs only when GAPLESS_RECORD_HOTPATH=1 asks for new files:
//
//	GAPLESS_RECORD_HOTPATH=1 go test -run TestRecordHotPathBinlogs ./internal/target
//
// Each file holds the workload's transactions alone: the tables are made
// and filled in a binlog before it (FLUSH BINARY LOGS), so the decoder
// meets no DDL. hotPathTables (hotpath_bench_test.go) states the keys of
// the tables made here; change both together.
package target

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"gapless/internal/sandbox"
)

// hotPathWorkload is one recorded workload: its tables, their rows, and
// one transaction of a client (r is the client's own).
type hotPathWorkload struct {
	file    string
	clients int
	txns    int
	schema  []string
	fill    func(ctx context.Context, db *sql.DB) error
	txn     func(ctx context.Context, tx *sql.Tx, r *rand.Rand) error
}

func TestRecordHotPathBinlogs(t *testing.T) {
	if os.Getenv("GAPLESS_RECORD_HOTPATH") != "1" {
		t.Skip("set GAPLESS_RECORD_HOTPATH=1 to record testdata/hotpath-*.bin again")
	}
	for _, w := range []hotPathWorkload{orderEntryWorkload(), w1Workload()} {
		t.Run(w.file, func(t *testing.T) { recordHotPath(t, w) })
	}
}

func recordHotPath(t *testing.T, w hotPathWorkload) {
	ctx := context.Background()
	primary := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "primary", Binlog: true})
	db, err := primary.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(w.clients + 1)
	for _, stmt := range append([]string{"CREATE DATABASE bench", "USE bench"}, w.schema...) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	if db, err = primary.Open("bench"); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(w.clients + 1)
	if err := w.fill(ctx, db); err != nil {
		t.Fatal(err)
	}
	var file string
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	var base string
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin_basename").Scan(&base); err != nil {
		t.Fatal(err)
	}
	var pos int64
	var ignored1, ignored2, ignored3 any
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &ignored1, &ignored2); err != nil {
		if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &ignored1, &ignored2, &ignored3); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, w.clients)
	for c := range w.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 47))
			for range w.txns / w.clients {
				if err := runRetrying(ctx, db, func(tx *sql.Tx) error { return w.txn(ctx, tx, r) }); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(base), file))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("testdata", w.file)
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", out, len(data))
}

// runRetrying runs one transaction, again after a deadlock or lock wait
// timeout (hot rows).
func runRetrying(ctx context.Context, db *sql.DB, body func(*sql.Tx) error) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err = body(tx); err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) {
			continue
		}
		return err
	}
}

func execAll(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func randomText(r *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// Order entry, after TPC-C: 2 warehouses of 10 districts, 100 customers
// each, 2 000 items in stock. A transaction is a new order (60%: the
// district's next order id, the order, its new-order row, 4 to 13 lines,
// each a stock update and an order line: 11 to 29 row changes), a payment
// (30%: warehouse, district, customer, history) or a delivery (10%: the
// oldest new order of two districts, deleted, its order and lines updated,
// its customer credited). The districts and warehouses are the hot rows.
const (
	oeWarehouses = 2
	oeDistricts  = 10
	oeCustomers  = 100
	oeItems      = 2000
)

func orderEntryWorkload() hotPathWorkload {
	return hotPathWorkload{
		file: "hotpath-orderentry.bin", clients: 8, txns: 400,
		schema: []string{
			`CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_ytd DECIMAL(12,2), w_tax DECIMAL(4,4))`,
			`CREATE TABLE district (d_w_id INT, d_id INT, d_name VARCHAR(10), d_ytd DECIMAL(12,2), d_tax DECIMAL(4,4), d_next_o_id INT,
				PRIMARY KEY (d_w_id, d_id))`,
			`CREATE TABLE customer (c_w_id INT, c_d_id INT, c_id INT, c_first VARCHAR(16), c_last VARCHAR(16), c_email VARCHAR(64) NOT NULL,
				c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(200),
				PRIMARY KEY (c_w_id, c_d_id, c_id), UNIQUE KEY c_email (c_email), KEY c_name (c_w_id, c_d_id, c_last, c_first))`,
			`CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_c_id INT, o_entry_d DATETIME, o_carrier_id INT NULL, o_ol_cnt INT,
				PRIMARY KEY (o_w_id, o_d_id, o_id), KEY o_customer (o_w_id, o_d_id, o_c_id, o_id))`,
			`CREATE TABLE new_orders (no_w_id INT, no_d_id INT, no_o_id INT, PRIMARY KEY (no_w_id, no_d_id, no_o_id))`,
			`CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_i_id INT, ol_supply_w_id INT,
				ol_delivery_d DATETIME NULL, ol_quantity INT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
				PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number), KEY ol_stock (ol_supply_w_id, ol_i_id))`,
			`CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT, s_ytd INT, s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50),
				s_dist CHAR(24), PRIMARY KEY (s_w_id, s_i_id), KEY s_item (s_i_id))`,
			`CREATE TABLE history (h_id BIGINT AUTO_INCREMENT PRIMARY KEY, h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT,
				h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24), KEY h_customer (h_c_w_id, h_c_d_id, h_c_id))`,
		},
		fill: func(ctx context.Context, db *sql.DB) error {
			r := rand.New(rand.NewPCG(0, 0))
			var stmts []string
			for w := 1; w <= oeWarehouses; w++ {
				stmts = append(stmts, fmt.Sprintf("INSERT INTO warehouse VALUES (%d, 'w%d', 0, 0.1)", w, w))
				for d := 1; d <= oeDistricts; d++ {
					stmts = append(stmts, fmt.Sprintf("INSERT INTO district VALUES (%d, %d, 'd%d', 0, 0.05, 1)", w, d, d))
					var rows []string
					for c := 1; c <= oeCustomers; c++ {
						rows = append(rows, fmt.Sprintf("(%d, %d, %d, '%s', '%s', 'Customer.%d.%d.%d@Example.com', 0, 0, 0, 0, '%s')",
							w, d, c, randomText(r, 8), randomText(r, 10), w, d, c, randomText(r, 150)))
					}
					stmts = append(stmts, "INSERT INTO customer VALUES "+strings.Join(rows, ", "))
				}
				var rows []string
				for i := 1; i <= oeItems; i++ {
					rows = append(rows, fmt.Sprintf("(%d, %d, 100, 0, 0, 0, '%s', '%s')", w, i, randomText(r, 40), randomText(r, 24)))
				}
				stmts = append(stmts, "INSERT INTO stock VALUES "+strings.Join(rows, ", "))
			}
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		},
		txn: orderEntryTransaction,
	}
}

func orderEntryTransaction(ctx context.Context, tx *sql.Tx, r *rand.Rand) error {
	w, d := 1+r.IntN(oeWarehouses), 1+r.IntN(oeDistricts)
	c := 1 + r.IntN(oeCustomers)
	switch k := r.IntN(10); {
	case k < 6: // new order
		var next int
		if err := tx.QueryRowContext(ctx, "SELECT d_next_o_id FROM district WHERE d_w_id=? AND d_id=? FOR UPDATE", w, d).Scan(&next); err != nil {
			return err
		}
		lines := 4 + r.IntN(10)
		stmts := []string{
			fmt.Sprintf("UPDATE district SET d_next_o_id=d_next_o_id+1 WHERE d_w_id=%d AND d_id=%d", w, d),
			fmt.Sprintf("INSERT INTO orders VALUES (%d, %d, %d, %d, NOW(), NULL, %d)", w, d, next, c, lines),
			fmt.Sprintf("INSERT INTO new_orders VALUES (%d, %d, %d)", w, d, next),
		}
		for l := 1; l <= lines; l++ {
			item, qty := 1+r.IntN(oeItems), 1+r.IntN(10)
			stmts = append(stmts,
				fmt.Sprintf("UPDATE stock SET s_quantity=IF(s_quantity>%d+10, s_quantity-%d, s_quantity-%d+91), s_ytd=s_ytd+%d, s_order_cnt=s_order_cnt+1 WHERE s_w_id=%d AND s_i_id=%d",
					qty, qty, qty, qty, w, item),
				fmt.Sprintf("INSERT INTO order_line VALUES (%d, %d, %d, %d, %d, %d, NULL, %d, %d.%02d, '%s')",
					w, d, next, l, item, w, qty, r.IntN(100), r.IntN(100), randomText(r, 24)))
		}
		return execAll(ctx, tx, stmts...)
	case k < 9: // payment
		amount := fmt.Sprintf("%d.%02d", 1+r.IntN(5000), r.IntN(100))
		return execAll(ctx, tx,
			fmt.Sprintf("UPDATE warehouse SET w_ytd=w_ytd+%s WHERE w_id=%d", amount, w),
			fmt.Sprintf("UPDATE district SET d_ytd=d_ytd+%s WHERE d_w_id=%d AND d_id=%d", amount, w, d),
			fmt.Sprintf("UPDATE customer SET c_balance=c_balance-%s, c_ytd_payment=c_ytd_payment+%s, c_payment_cnt=c_payment_cnt+1 WHERE c_w_id=%d AND c_d_id=%d AND c_id=%d", amount, amount, w, d, c),
			fmt.Sprintf("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (%d, %d, %d, %d, %d, NOW(), %s, '%s')", c, d, w, d, w, amount, randomText(r, 20)))
	default: // delivery, two districts
		for range 2 {
			d = 1 + r.IntN(oeDistricts)
			var o, cust int
			err := tx.QueryRowContext(ctx, "SELECT no_o_id FROM new_orders WHERE no_w_id=? AND no_d_id=? ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d).Scan(&o)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, "SELECT o_c_id FROM orders WHERE o_w_id=? AND o_d_id=? AND o_id=?", w, d, o).Scan(&cust); err != nil {
				return err
			}
			if err := execAll(ctx, tx,
				fmt.Sprintf("DELETE FROM new_orders WHERE no_w_id=%d AND no_d_id=%d AND no_o_id=%d", w, d, o),
				fmt.Sprintf("UPDATE orders SET o_carrier_id=%d WHERE o_w_id=%d AND o_d_id=%d AND o_id=%d", 1+r.IntN(10), w, d, o),
				fmt.Sprintf("UPDATE order_line SET ol_delivery_d=NOW() WHERE ol_w_id=%d AND ol_d_id=%d AND ol_o_id=%d", w, d, o),
				fmt.Sprintf("UPDATE customer SET c_balance=c_balance+10, c_delivery_cnt=c_delivery_cnt+1 WHERE c_w_id=%d AND c_d_id=%d AND c_id=%d", w, d, cust),
			); err != nil {
				return err
			}
		}
		return nil
	}
}

// W1, as bench/workload.go runs it: sysbench's oltp_write_only on 4
// tables of 10 000 rows, 16 clients: per transaction an index update, a
// non-index update, a delete and the insert of the deleted id.
const w1Rows = 10000

func w1Workload() hotPathWorkload {
	var schema []string
	for i := 1; i <= 4; i++ {
		schema = append(schema, fmt.Sprintf(`CREATE TABLE sbtest%d (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0,
			c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_%d (k))`, i, i))
	}
	return hotPathWorkload{
		file: "hotpath-w1.bin", clients: 16, txns: 1008, schema: schema,
		fill: func(ctx context.Context, db *sql.DB) error {
			r := rand.New(rand.NewPCG(0, 0))
			for i := 1; i <= 4; i++ {
				for from := 1; from <= w1Rows; from += 1000 {
					var rows []string
					for id := from; id < from+1000; id++ {
						rows = append(rows, fmt.Sprintf("(%d, %d, '%s', '%s')", id, r.IntN(w1Rows), sysbenchC(r), sysbenchPad(r)))
					}
					if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO sbtest%d VALUES %s", i, strings.Join(rows, ", "))); err != nil {
						return err
					}
				}
			}
			return nil
		},
		txn: func(ctx context.Context, tx *sql.Tx, r *rand.Rand) error {
			table := 1 + r.IntN(4)
			id := func() int { return 1 + r.IntN(w1Rows) }
			del := id()
			return execAll(ctx, tx,
				fmt.Sprintf("UPDATE sbtest%d SET k=k+1 WHERE id=%d", table, id()),
				fmt.Sprintf("UPDATE sbtest%d SET c='%s' WHERE id=%d", table, sysbenchC(r), id()),
				fmt.Sprintf("DELETE FROM sbtest%d WHERE id=%d", table, del),
				fmt.Sprintf("INSERT INTO sbtest%d (id, k, c, pad) VALUES (%d, %d, '%s', '%s')", table, del, r.IntN(w1Rows), sysbenchC(r), sysbenchPad(r)))
		},
	}
}

// sysbenchC and sysbenchPad are sysbench's c and pad values: groups of 11
// digits joined by dashes, 119 and 59 characters.
func sysbenchC(r *rand.Rand) string   { return sysbenchDigits(r, 10) }
func sysbenchPad(r *rand.Rand) string { return sysbenchDigits(r, 5) }

func sysbenchDigits(r *rand.Rand, groups int) string {
	var b strings.Builder
	for g := range groups {
		if g > 0 {
			b.WriteByte('-')
		}
		for range 11 {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	return b.String()
}
