// version.go says which gapless this is: `gapless --version` prints the
// version (set at link time with -ldflags "-X main.version=v1.2.3", as make
// build and make release do from git describe, else the module's version
// from the build information), the commit it was built from (-X
// main.commit=, else Go's VCS stamp, with "+dirty" for uncommitted
// changes), the build date when the linker was given one (-X main.date=)
// and the Go version.
//
// Go stamps the commit only for a build in a git checkout whose .git is a
// folder and without -buildvcs=false; a git worktree, or GOFLAGS holding
// -buildvcs=false, leaves it out. make build stamps it whatever the checkout.
package main

import (
	"fmt"
	"runtime/debug"
)

// version, commit and date are set by the linker (-X main.version=, -X
// main.commit=, -X main.date=); empty otherwise. The commit then comes from
// the build information when Go stamped it.
var version, commit, date string

// versionLine is what --version prints.
func versionLine() string {
	v, rev, goVersion := versionNumber(), commit, "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		stamped, dirty := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				stamped = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev == "" && stamped != "" {
			rev = stamped
			if dirty {
				rev += "+dirty"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if date != "" {
		return fmt.Sprintf("gapless %s (commit %s, built %s, %s)", v, rev, date, goVersion)
	}
	return fmt.Sprintf("gapless %s (commit %s, %s)", v, rev, goVersion)
}

// versionNumber is the version alone: the linker's, else the module's, else
// "devel".
func versionNumber() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = info.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	return v
}
