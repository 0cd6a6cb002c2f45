// version.go says which gapless this is: `gapless --version` prints the
// version (set at link time with -ldflags "-X main.version=v1.2.3", else the
// module's version from the build information), the commit it was built
// from (-X main.commit=, else Go's VCS stamp, with "+dirty" for uncommitted
// changes) and the Go version.
package main

import (
	"fmt"
	"runtime/debug"
)

// version and commit are set by the linker for releases (-X main.version=,
// -X main.commit=); empty otherwise. The commit comes from the build
// information when Go stamped it (not under -buildvcs=false).
var version, commit string

// versionLine is what --version prints.
func versionLine() string {
	v, rev, goVersion := version, commit, "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		if v == "" {
			v = info.Main.Version
		}
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value[:min(len(s.Value), 12)]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && rev != "" {
			rev += "+dirty"
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	return fmt.Sprintf("gapless %s (commit %s, %s)", v, rev, goVersion)
}
