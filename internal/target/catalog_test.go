package target

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"gapless/internal/sandbox"
)

func TestDecodeFileName(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"plain_name1", "plain_name1", true},
		{"my@002ddb", "my-db", true},
		{"a@0020b@0024", "a b$", true},
		{"@0442@0435@0441@0442", "тест", true},
		{"caf@0G", "", false}, // a short code: not decoded
		{"cut@00", "", false},
	} {
		got, ok := decodeFileName(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("decodeFileName(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestCatalogFindsForeignKeyTables checks, on a real server, that both
// children and parents of foreign keys are marked, names that need the
// file-name encoding included, and that an account that cannot read
// InnoDB's dictionary gets the same answer from information_schema.
func TestCatalogFindsForeignKeyTables(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target"})
	ctx := context.Background()
	if err := srv.Exec(ctx,
		"CREATE DATABASE shop",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, customer INT, FOREIGN KEY (customer) REFERENCES shop.customers (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"CREATE TABLE shop.notes (id INT PRIMARY KEY, body TEXT) ENGINE=InnoDB",
		"CREATE DATABASE `my-db`",
		"CREATE TABLE `my-db`.`p$1` (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE `my-db`.`a b` (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES `my-db`.`p$1` (id)) ENGINE=InnoDB",
		"CREATE USER reader@'127.0.0.1' IDENTIFIED BY 'reader'",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO reader@'127.0.0.1'", // an applier without PROCESS
	); err != nil {
		t.Fatal(err)
	}
	want := map[tableName]bool{
		{"shop", "customers"}: true, {"shop", "orders"}: true, {"shop", "notes"}: false,
		{"my-db", "p$1"}: true, {"my-db", "a b"}: true,
	}
	root, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, ok := dictionaryForeignKeyTables(ctx, root); !ok {
		t.Fatal("root cannot read InnoDB's dictionary of foreign keys")
	}
	reader, err := sql.Open("mysql", fmt.Sprintf("reader:reader@tcp(127.0.0.1:%d)/", srv.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, ok := dictionaryForeignKeyTables(ctx, reader); ok {
		t.Fatal("an account without PROCESS read InnoDB's dictionary; the fallback goes untested")
	}
	for who, db := range map[string]*sql.DB{"root (dictionary)": root, "reader (information_schema)": reader} {
		c := NewCatalog(db)
		for name, fk := range want {
			info, err := c.Table(name.schema, name.table)
			if err != nil {
				t.Fatalf("%s: %s.%s: %v", who, name.schema, name.table, err)
			}
			if info == nil || info.ForeignKeys != fk {
				t.Errorf("%s: %s.%s: info %+v, want ForeignKeys %v", who, name.schema, name.table, info, fk)
			}
		}
	}
}

// The catalog tells the integer columns a statement's numbers may key,
// and the columns the server fills by itself, as SHOW COLUMNS shows them.
func TestCatalogReadsColumns(t *testing.T) {
	srv := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target"})
	ctx := context.Background()
	if err := srv.Exec(ctx,
		"CREATE DATABASE c",
		"CREATE TABLE c.t (ID INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, tiny TINYINT(1), small SMALLINT ZEROFILL, "+
			"med MEDIUMINT, big BIGINT UNSIGNED, dec1 DECIMAL(10,0), s VARCHAR(10), y YEAR, b BIT(8), "+
			"g INT AS (tiny + 1) VIRTUAL, p INT AS (tiny + 2) PERSISTENT, hidden INT INVISIBLE, "+
			"ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, UNIQUE KEY (big)) ENGINE=InnoDB",
		"CREATE TABLE c.versioned (id INT PRIMARY KEY, v INT) ENGINE=InnoDB WITH SYSTEM VERSIONING",
	); err != nil {
		t.Fatal(err)
	}
	db, err := srv.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	info, err := NewCatalog(db).Table("c", "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, col := range info.Columns {
		got = append(got, fmt.Sprintf("%s:%d:%v", col.Name, col.IntegerBits, col.Plain))
	}
	want := "[id:32:true tiny:8:true small:16:true med:24:true big:64:true dec1:0:true s:0:true y:0:true b:0:true " +
		"g:32:false p:32:false hidden:32:true ts:0:false]"
	if fmt.Sprint(got) != want {
		t.Errorf("columns\n%v\nwant\n%s", got, want)
	}
	if len(info.Keys) != 2 || info.Keys[0].Name != "PRIMARY" || fmt.Sprint(info.Keys[1].Columns) != "[4]" {
		t.Errorf("keys %+v", info.Keys)
	}
	info, err = NewCatalog(db).Table("c", "versioned")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("system-versioned: keys %+v, columns %+v", info.Keys, info.Columns)
	for _, key := range info.Keys {
		for _, col := range key.Columns {
			if len(info.Columns) > 0 && col < len(info.Columns) && info.Columns[col].Name != "id" && info.Columns[col].Plain {
				t.Errorf("system-versioned: key column %+v counts as plain", info.Columns[col])
			}
		}
	}
}
