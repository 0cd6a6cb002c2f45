package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gapless/internal/sandbox"
)

func runVerifyCmd(args ...string) (string, error) { return runCommand(newVerifyCmd(), args...) }

func TestVerifyCommandExitCodes(t *testing.T) {
	source := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "source"})
	target := sandbox.StartForTest(t, sandbox.ServerConfig{Name: "target"})
	ctx := context.Background()
	for _, s := range []*sandbox.Server{source, target} {
		if err := s.Exec(ctx, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(8,2))",
			"INSERT INTO shop.orders VALUES (1, 9.99), (2, 20.00), (3, 5.00)", "CREATE TABLE shop.customers (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
	}
	sourceURL, targetURL := source.URL("gapless", "gapless"), target.URL("gapless", "gapless")
	var exit *exitError

	out, err := runVerifyCmd("--source", sourceURL, "--target", targetURL)
	if err != nil {
		t.Fatalf("verify of equal servers: %v\n%s", err, out)
	}
	for _, want := range []string{"shop.customers  equal\n", "shop.orders     equal\n", "2 tables: 2 equal, 0 different, 0 missing on target, 0 extra on target", "mysql://gapless:***@"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Another stream's database on the target: reported apart, no difference.
	if err := target.Exec(ctx, "CREATE DATABASE other", "CREATE TABLE other.a (id INT PRIMARY KEY)", "CREATE TABLE other.b (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	out, err = runVerifyCmd("--source", sourceURL, "--target", targetURL)
	if err != nil {
		t.Fatalf("verify of a target that holds another stream's database too: %v\n%s", err, out)
	}
	for _, want := range []string{"2 tables: 2 equal, 0 different, 0 missing on target, 0 extra on target",
		"extra on target, not on this source: other.* (2 tables)\n  another stream's? Not counted as differences"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A database of the source the target lacks (filtered out of the
	// stream): its tables are missing, and the output says how to narrow.
	if err := source.Exec(ctx, "CREATE DATABASE unreplicated", "CREATE TABLE unreplicated.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	out, err = runVerifyCmd("--source", sourceURL, "--target", targetURL)
	if !errors.As(err, &exit) || exit.code != 1 || !strings.Contains(out, "missing on target, database and all: unreplicated.* (1 table)\n  filtered out of the stream") {
		t.Errorf("verify of a source with a database the target lacks: %v\n%s", err, out)
	}
	if out, err = runVerifyCmd("--source", sourceURL, "--target", targetURL, "--databases", "shop"); err != nil {
		t.Errorf("verify narrowed to shop: %v\n%s", err, out)
	}
	if err := source.Exec(ctx, "DROP DATABASE unreplicated"); err != nil {
		t.Fatal(err)
	}

	if err := target.Exec(ctx, "DELETE FROM shop.orders WHERE id = 2", "CREATE TABLE shop.scratch (id INT)"); err != nil {
		t.Fatal(err)
	}
	out, err = runVerifyCmd("--source", sourceURL, "--target", targetURL, "--chunk-rows", "1")
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("verify of differing servers returned %v, want exit code 1\n%s", err, out)
	}
	if want := "2 of 3 tables differ: shop.orders, shop.scratch"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	for _, want := range []string{"shop.orders     DIFFERENT (rows: source 3, target 2): id=2 missing on target\n", "shop.scratch    extra on target\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("output:\n%s", out)

	_, err = runVerifyCmd("--source", sourceURL, "--target", target.URL("gapless", "wrong"))
	if err == nil || errors.As(err, &exit) || !strings.HasPrefix(err.Error(), "target: access denied for user 'gapless' on 127.0.0.1:") {
		t.Errorf("verify with a wrong password: %v", err)
	}
}

func TestVerifyCommandConnectionErrors(t *testing.T) {
	closed := closedAddr(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--source", "mysql://u:p@" + closed, "--target", "mysql://u:p@" + closed}, "source: cannot reach " + closed + ": connection refused"},
		{[]string{"--source", "http://u:p@h:1", "--target", "mysql://u:p@h:1"}, `source: unknown URL scheme "http"`},
		{[]string{"--source", "mysql://u:p@h:1"}, `both --source and --target are required`},
		{[]string{"--source", "mysql://u:p@h:1", "--target", "mysql://u:p@h:1", "--chunk-rows", "0"}, "--chunk-rows must be at least 1"},
	}
	for _, c := range cases {
		_, err := runVerifyCmd(c.args...)
		var exit *exitError
		if err == nil || errors.As(err, &exit) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("verify %s: %v, want a plain error starting %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
