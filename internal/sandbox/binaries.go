// Package sandbox starts real, local MariaDB servers on loopback ports for
// demos, tests and benchmarks.
//
// This file owns finding the MariaDB programs; every entry point that needs
// them fails with ErrMariaDBNotFound (and the packages to install) when they
// are missing.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrMariaDBNotFound is wrapped by every error caused by a missing MariaDB
// installation.
var ErrMariaDBNotFound = errors.New("MariaDB is not installed")

// fallbackDirs are searched after PATH: Debian installs mariadbd in /usr/sbin,
// which is not on the PATH of ordinary users.
var fallbackDirs = []string{"/usr/sbin", "/usr/bin", "/usr/local/mysql/bin", "/usr/local/bin"}

type binaries struct {
	mariadbd  string
	installDB string
}

func findBinaries() (binaries, error) {
	var b binaries
	var err error
	if b.mariadbd, err = findProgram("mariadbd"); err != nil {
		return b, err
	}
	if b.installDB, err = findProgram("mariadb-install-db"); err != nil {
		return b, err
	}
	return b, nil
}

func findProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range fallbackDirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found on PATH or in %v; install the Debian packages mariadb-server and mariadb-client (apt-get install mariadb-server mariadb-client)",
		ErrMariaDBNotFound, name, fallbackDirs)
}

// CheckInstalled reports whether the programs the sandbox runs are installed.
func CheckInstalled() error {
	_, err := findBinaries()
	return err
}
