// servers.go owns the flags that name a server and its password, shared by
// every subcommand that connects: --source/--target (defaults from
// $GAPLESS_SOURCE/$GAPLESS_TARGET), --<side>-password-file,
// --<side>-defaults-file, and the option files of options.go. The
// precedence between them is dburl.Resolve's.
//
// Invariant: no flag's default holds a value read from the environment, so
// --help names the variable and never prints a password.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"gapless/internal/dburl"
)

// serverFlags are one server's flags.
type serverFlags struct {
	side         string // source | target: the password flags' prefix and environment variable
	urlFlag      string // the flag holding the URL ("source", "calibrate", ...)
	urlEnv       string // the variable that stands in for an absent URL flag, or ""
	url          string
	passwordFile string
	defaultsFile string
	shared       *optionFiles // the command's option files, for both sides (nil: none)
}

// addServerFlags registers the URL flag (unless urlFlag is "") and the side's password flags.
func addServerFlags(fl *pflag.FlagSet, side, urlFlag, urlEnv, usage string, shared *optionFiles) *serverFlags {
	s := &serverFlags{side: side, urlFlag: urlFlag, urlEnv: urlEnv, shared: shared}
	if urlFlag != "" {
		if urlEnv != "" {
			usage += " (default $" + urlEnv + ")"
		}
		fl.StringVar(&s.url, urlFlag, "", usage)
	}
	fl.StringVar(&s.passwordFile, side+"-password-file", "", "read the "+side+"'s password from this file (or give ?password-file=PATH in the URL, or $"+dburl.PasswordEnv(side)+")")
	fl.StringVar(&s.defaultsFile, side+"-defaults-file", "", "MariaDB option file for the "+side+" ([client] groups: user, password, host, port, ssl)")
	return s
}

// given reports whether the server is named at all: by URL, variable or option file.
func (s *serverFlags) given() bool {
	return s.rawURL() != "" || s.optionFile() != ""
}

func (s *serverFlags) rawURL() string {
	if s.url == "" && s.urlEnv != "" {
		return os.Getenv(s.urlEnv)
	}
	return s.url
}

func (s *serverFlags) optionFile() string {
	if s.defaultsFile == "" && s.shared != nil {
		return s.shared.defaultsFile
	}
	return s.defaultsFile
}

// resolve returns the server's settings, and them as a URL for the code
// that takes URLs (it carries the password: never print it).
func (s *serverFlags) resolve() (dburl.Config, string, error) {
	c := dburl.Credentials{Side: s.side, PasswordFile: s.passwordFile, DefaultsFile: s.optionFile()}
	if s.shared != nil {
		if s.shared.stream != "" {
			c.StreamGroup = "gapless-" + strings.ToLower(s.shared.stream)
		}
		c.DefaultFiles = s.shared.files
	}
	cfg, err := dburl.Resolve(s.rawURL(), c)
	if err != nil {
		prefix := s.side // "source: ...", as the connection errors say it
		if s.urlFlag != s.side {
			prefix = "--" + s.urlFlag
		}
		return dburl.Config{}, "", fmt.Errorf("%s: %w", prefix, err)
	}
	return cfg, cfg.URL(), nil
}
