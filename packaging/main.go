// Command packaging builds gapless's Debian package from the folder
// scripts/release.sh fills (the static binary, man pages, completions) with
// nfpm, the packager GoReleaser uses, as a library: nfpm.yaml says what the
// package holds, this program only turns git describe's version into a
// Debian one and writes the .deb.
//
//	go run . --stage DIR --version v1.2.3-4-gabcdef --date 2026-11-29T01:02:03Z --out ../dist
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
)

func main() {
	stage := flag.String("stage", "", "folder holding gapless, man/, completions/ and README.md")
	version := flag.String("version", "", "the version as git describe --tags --always --dirty prints it")
	date := flag.String("date", "", "build date, YYYY-MM-DDTHH:MM:SSZ (dates an untagged version)")
	arch := flag.String("arch", runtime.GOARCH, "Debian architecture (Go's names: amd64, arm64)")
	out := flag.String("out", ".", "folder to write the .deb into")
	flag.Parse()
	if err := build(*stage, *version, *date, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "packaging:", err)
		os.Exit(1)
	}
}

func build(stage, version, date, arch, out string) error {
	if stage == "" || version == "" {
		return fmt.Errorf("--stage and --version are required")
	}
	stage, err := filepath.Abs(stage)
	if err != nil {
		return err
	}
	debVersion, err := DebianVersion(version, date)
	if err != nil {
		return err
	}
	env := map[string]string{"STAGE": stage, "VERSION": debVersion, "ARCH": arch}
	config, err := nfpm.ParseFileWithEnvMapping("nfpm.yaml", func(k string) string { return env[k] })
	if err != nil {
		return fmt.Errorf("nfpm.yaml: %w", err)
	}
	info, err := config.Get("deb")
	if err != nil {
		return err
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return fmt.Errorf("nfpm.yaml: %w", err)
	}
	packager, err := nfpm.Get("deb")
	if err != nil {
		return err
	}
	path := filepath.Join(out, packager.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

var (
	tagged   = regexp.MustCompile(`^v?([0-9][0-9A-Za-z.+~]*?)(?:-([0-9]+)-g([0-9a-f]+))?(-dirty)?$`)
	untagged = regexp.MustCompile(`^([0-9a-f]{4,40})(-dirty)?$`)
)

// DebianVersion turns git describe's version into one dpkg orders the same
// way: v1.2.3 is 1.2.3, four commits past it 1.2.3+4.gabcdef (after 1.2.3,
// before 1.2.4), and a checkout without tags 0~git20261129.abcdef, ordered
// by its build date.
func DebianVersion(describe, date string) (string, error) {
	dirty := ""
	if m := tagged.FindStringSubmatch(describe); m != nil && !untagged.MatchString(describe) {
		if m[4] != "" {
			dirty = ".dirty"
		}
		if m[2] == "" {
			return m[1] + strings.ReplaceAll(dirty, ".", "+"), nil
		}
		return m[1] + "+" + m[2] + ".g" + m[3] + dirty, nil
	}
	if m := untagged.FindStringSubmatch(describe); m != nil {
		day := strings.ReplaceAll(strings.SplitN(date, "T", 2)[0], "-", "")
		if len(day) != 8 {
			return "", fmt.Errorf("version %q has no tag: --date is needed to order it", describe)
		}
		if m[2] != "" {
			dirty = ".dirty"
		}
		return "0~git" + day + "." + m[1] + dirty, nil
	}
	return "", fmt.Errorf("version %q: want git describe's form (v1.2.3, v1.2.3-4-gabcdef, or a commit hash), optionally -dirty", describe)
}
