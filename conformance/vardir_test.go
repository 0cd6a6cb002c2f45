package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestMirrorVardirCopiesDirectoriesNotFiles(t *testing.T) {
	vardir := t.TempDir()
	for _, d := range []string{"tmp/alt_dir/test", "mysql-test-data-dir", "targets/t-mariadb/data"} {
		if err := os.MkdirAll(filepath.Join(vardir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"tmp/alt_dir/test/t1.ibd", "targets/t-mariadb/data/ibdata1"} {
		if err := os.WriteFile(filepath.Join(vardir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr/share/mysql/mysql-test/std_data", filepath.Join(vardir, "std_data")); err != nil {
		t.Fatal(err)
	}
	view := targetView(vardir, "t-mariadb")
	for range 2 { // again after the test: what is there already stays
		if err := mirrorVardir(vardir, view); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"tmp/alt_dir/test", "mysql-test-data-dir", "targets"} {
		if fi, err := os.Stat(filepath.Join(view, d)); err != nil || !fi.IsDir() {
			t.Errorf("view has no directory %s: %v", d, err)
		}
	}
	if dest, err := os.Readlink(filepath.Join(view, "std_data")); err != nil || dest != "/usr/share/mysql/mysql-test/std_data" {
		t.Errorf("std_data in the view: %q, %v", dest, err)
	}
	if _, err := os.Stat(filepath.Join(view, "tmp/alt_dir/test/t1.ibd")); err == nil {
		t.Error("the view has the primary's file t1.ibd")
	}
	if entries, _ := os.ReadDir(filepath.Join(view, "targets")); len(entries) != 0 {
		t.Errorf("the view copied targets/: %v", entries)
	}
}

// A file a target writes under the vardir lands in its view, and the
// servers' homes under targets/ stay where they are.
func TestVardirLauncherGivesAPrivateView(t *testing.T) {
	if err := checkPrivateVardir(context.Background(), t.TempDir()); err != nil {
		t.Skipf("no private vardir here: %v", err)
	}
	vardir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(vardir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	view := targetView(vardir, "t-a")
	if err := mirrorVardir(vardir, view); err != nil {
		t.Fatal(err)
	}
	script := `touch "$1/tmp/t1.ibd" && touch "$1/targets/t-a/home-file"`
	launcher := append(vardirLauncher(vardir, view), "sh", "-c", script, "sh", vardir)
	if out, err := exec.Command(launcher[0], launcher[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(view, "tmp/t1.ibd")); err != nil {
		t.Errorf("the file is not in the view: %v", err)
	}
	if _, err := os.Stat(filepath.Join(vardir, "tmp/t1.ibd")); err == nil {
		t.Error("the file is in the shared vardir")
	}
	if _, err := os.Stat(filepath.Join(vardir, "targets/t-a/home-file")); err != nil {
		t.Errorf("the target's home is not the real one: %v", err)
	}
}
