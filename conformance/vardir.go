// This file owns the targets' view of a case's vardir. Tests put tables in
// absolute DATA DIRECTORY and INDEX DIRECTORY paths under the vardir
// ($MYSQL_TMP_DIR, $MYSQLTEST_VARDIR/tmp/..., $MYSQLTEST_VARDIR/mysql-test-data-dir)
// and the binlog carries those paths as written, so every target that
// replays it would make its .ibd or .MYD at the primary's path, and the
// second server to get there fails ("Tablespace already exists", errno 17).
//
// So each target's mariadbd runs in a mount namespace of its own, where the
// vardir is the target's folder targets/<name>/vardir, with targets/ bound
// back in so every server's home stays where it is. The binlog stays as the
// primary wrote it (gapless and MariaDB's replica replay the same paths);
// only the files behind the paths are private. Before a target applies, its
// view gets every directory and symbolic link the test left in the vardir,
// none of the files: MyISAM needs the directory a test made, and the files
// are the primary's.
//
// Without root or unshare(1) the targets share the vardir, as they did
// before; the run says so once.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// privateVardirScript runs in the target's new mount namespace, with the
// vardir and the view as $1 and $2, then mariadbd and its arguments.
const privateVardirScript = `mount --bind "$1/targets" "$2/targets" && mount --rbind "$2" "$1" && shift 2 && exec "$@"`

// vardirLauncher is the command a target's mariadbd starts under so that
// it sees view at vardir.
func vardirLauncher(vardir, view string) []string {
	return []string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", privateVardirScript, "private-vardir", vardir, view}
}

// targetView is the folder a target sees as the case's vardir.
func targetView(vardir, name string) string {
	return filepath.Join(vardir, "targets", name, "vardir")
}

// mirrorVardir gives view every directory and symbolic link under vardir,
// but those under targets/, and no files.
func mirrorVardir(vardir, view string) error {
	err := filepath.WalkDir(vardir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a directory the primary removed as we walked
			}
			return err
		}
		rel, err := filepath.Rel(vardir, path)
		if err != nil {
			return err
		}
		switch {
		case rel == "targets":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(view, rel), 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			dest, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(dest, filepath.Join(view, rel)); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = os.MkdirAll(filepath.Join(view, "targets"), 0o755)
	}
	if err != nil {
		return fmt.Errorf("copying the directories of %s to the target's view %s: %w", vardir, view, err)
	}
	return nil
}

// checkPrivateVardir tells whether targets can have a view of their own
// here, by making one for `true` in a scratch folder under workDir.
func checkPrivateVardir(ctx context.Context, workDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	scratch, err := os.MkdirTemp(workDir, "vardir-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	vardir, view := filepath.Join(scratch, "var"), filepath.Join(scratch, "view")
	for _, d := range []string{vardir, view} {
		if err := os.MkdirAll(filepath.Join(d, "targets"), 0o755); err != nil {
			return err
		}
	}
	launcher := vardirLauncher(vardir, view)
	out, err := exec.CommandContext(ctx, launcher[0], append(launcher[1:], "true")...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s: %w", strings.Join(launcher[:4], " "), err)
		if msg := strings.TrimSpace(string(out)); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
	}
	return err
}
