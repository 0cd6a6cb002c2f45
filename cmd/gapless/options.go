// options.go owns the option files of gapless's commands: any flag of
// replicate, status, stop, verify and reset may be written, without its
// dashes, in a [gapless] group, and in a [gapless-STREAM] group for one
// stream, of a MariaDB option file, read with the mariadb client's syntax
// (dburl.ReadOptionFile: !include, !includedir, loose-, - and _ alike).
//
// Which files: --defaults-file FILE alone, else the files the mariadb
// client reads by default (/etc/my.cnf, /etc/mysql/my.cnf,
// $MYSQL_HOME/my.cnf, ~/.my.cnf), else none with --no-defaults.
//
// Precedence, as MariaDB's tools: a flag on the command line wins over
// every file (for a repeatable flag, it replaces the file's values); among
// the files' lines, a later one wins over an earlier one, whatever its group
// (a repeatable flag's lines add up). The stream is the command line's
// --stream, else the [gapless] groups' stream=.
//
// Invariants: a key no gapless command takes is an error naming the key, its
// file and line, unless written loose-; a key of another command (workers=
// read by status) is left to that command; connection settings (user,
// password, host, port, ssl) are dburl.Resolve's; --print-defaults never
// shows a password.
package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gapless/internal/dburl"
)

// optionFiles are a command's option-file flags and what they read.
type optionFiles struct {
	defaultsFile  string // --defaults-file: this file alone
	noDefaults    bool   // --no-defaults: no file
	printDefaults bool   // --print-defaults: print what would be used and exit
	// stream is the stream whose group is read ("" when none), files the
	// files read when no --defaults-file names one; both set by load.
	stream string
	files  []string
	// taken says where each flag's value came from, for --print-defaults;
	// connection the connection settings of the gapless groups.
	taken      map[string][]string
	connection []dburl.Option
}

// notFromFiles are the flags an option file cannot set.
var notFromFiles = []string{"defaults-file", "no-defaults", "print-defaults", "help", "version"}

// addOptionFileFlags registers --defaults-file, --no-defaults and --print-defaults.
func addOptionFileFlags(fl *pflag.FlagSet) *optionFiles {
	o := &optionFiles{}
	fl.StringVar(&o.defaultsFile, "defaults-file", "", "read options from this file alone (its [gapless] and [gapless-STREAM] groups: any flag, without dashes; "+
		"its [client], [client-server], [client-mariadb], [mariadb-client] groups: user, password, host, port, ssl for each server without --<side>-defaults-file); "+
		"default: /etc/my.cnf, /etc/mysql/my.cnf, $MYSQL_HOME/my.cnf, ~/.my.cnf ([gapless] groups only)")
	fl.BoolVar(&o.noDefaults, "no-defaults", false, "read no option file but those named by --source-defaults-file / --target-defaults-file")
	fl.BoolVar(&o.printDefaults, "print-defaults", false, "print the flags a run would use, from the command line and the option files, passwords masked, and exit")
	return o
}

// readsOptionFiles makes cmd read its flags from option files before it
// runs, and answer --print-defaults.
func readsOptionFiles(cmd *cobra.Command, o *optionFiles) {
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.load(cmd.Flags(), cmd.ErrOrStderr()); err != nil {
			return usageError(err)
		}
		if o.printDefaults {
			o.print(cmd.OutOrStdout(), cmd.Flags(), cmd.CommandPath())
			return nil
		}
		return run(cmd, args)
	}
}

// load sets each flag of fl the command line left unset from the option
// files; warnings go to stderr.
func (o *optionFiles) load(fl *pflag.FlagSet, stderr io.Writer) error {
	files, err := o.filesToRead()
	if err != nil {
		return err
	}
	o.taken, o.connection = map[string][]string{}, nil
	fromCommandLine := map[string]bool{}
	fl.Visit(func(f *pflag.Flag) {
		fromCommandLine[f.Name] = true
		o.taken[f.Name] = []string{"command line"}
	})
	if err := o.readStream(fl, files, fromCommandLine["stream"]); err != nil {
		return err
	}
	groups := []string{"gapless"}
	if o.stream != "" {
		groups = append(groups, "gapless-"+strings.ToLower(o.stream))
	}
	opts, err := readGroups(files, groups)
	if err != nil {
		return err
	}
	known := gaplessFlagNames()
	for _, opt := range opts {
		if err := o.take(fl, opt, known, fromCommandLine[opt.Name], stderr); err != nil {
			return err
		}
	}
	return nil
}

// filesToRead is the option files load reads: --defaults-file alone, or
// the default ones unless --no-defaults.
func (o *optionFiles) filesToRead() ([]string, error) {
	switch {
	case o.defaultsFile != "" && o.noDefaults:
		return nil, fmt.Errorf("--defaults-file and --no-defaults: give one")
	case o.defaultsFile != "":
		return []string{o.defaultsFile}, nil
	case !o.noDefaults:
		o.files = dburl.DefaultOptionFiles()
		return o.files, nil
	}
	return nil, nil
}

// readStream sets o.stream for a command with --stream: the command
// line's, or else the last stream= of the files' [gapless] groups, which
// chooses the stream's own group.
func (o *optionFiles) readStream(fl *pflag.FlagSet, files []string, fromCommandLine bool) error {
	stream := fl.Lookup("stream")
	if stream == nil {
		return nil
	}
	o.stream = stream.Value.String()
	if fromCommandLine {
		return nil
	}
	general, err := readGroups(files, []string{"gapless"})
	if err != nil {
		return err
	}
	for _, opt := range general {
		if opt.Name == "stream" {
			o.stream = opt.Value
		}
	}
	return nil
}

// take sets the flag an option of the files names, unless the command
// line set it (fromCommandLine) or it is another command's, a connection
// option or a loose one no flag has; known are every command's flags.
func (o *optionFiles) take(fl *pflag.FlagSet, opt dburl.Option, known map[string]bool, fromCommandLine bool, stderr io.Writer) error {
	where := fmt.Sprintf("%s [%s]", opt.Where, opt.Group)
	f := fl.Lookup(opt.Name)
	switch {
	case slices.Contains(notFromFiles, opt.Name):
		return fmt.Errorf("%s: %s is not read from an option file: give it on the command line", where, opt.Name)
	case opt.Name == "stream" && opt.Group != "gapless":
		return fmt.Errorf("%s: stream= in a stream's own group: the group is chosen by the stream, so write stream= in [gapless] or give --stream", where)
	case dburl.ConnectionOption(opt.Name):
		// dburl.Resolve reads it, from the same files.
		o.connection = append(o.connection, opt)
		return nil
	case f == nil && opt.Loose && !known[opt.Name]:
		fmt.Fprintf(stderr, "gapless: warning: %s: loose-%s: no gapless command has a flag --%s; ignored\n", where, opt.Name, opt.Name)
		return nil
	case f == nil && (opt.Loose || known[opt.Name]):
		return nil // loose, or another command's
	case f == nil:
		return fmt.Errorf("%s: unknown option %q: no gapless command has a flag --%s (write loose-%s to have it ignored)", where, opt.Name, opt.Name, opt.Name)
	case fromCommandLine:
		return nil
	}
	value := opt.Value
	if !opt.HasValue {
		if f.Value.Type() != "bool" {
			return fmt.Errorf("%s: %s needs a value (%s=...)", where, opt.Name, opt.Name)
		}
		value = "true"
	}
	if err := fl.Set(opt.Name, value); err != nil {
		return fmt.Errorf("%s: %s=%s: %v", where, opt.Name, maskSecret(opt.Name, value), err)
	}
	if f.Value.Type() == "stringSlice" || f.Value.Type() == "stringArray" {
		o.taken[opt.Name] = append(o.taken[opt.Name], where)
	} else {
		o.taken[opt.Name] = []string{where}
	}
	return nil
}

// readGroups reads groups from files, in order.
func readGroups(files, groups []string) ([]dburl.Option, error) {
	var out []dburl.Option
	for _, path := range files {
		opts, err := dburl.ReadOptionFile(path, groups)
		if err != nil {
			return nil, err
		}
		out = append(out, opts...)
	}
	return out, nil
}

// gaplessFlagNames are the long names of the flags of every command that
// reads option files: a key one of them takes is no error in another's run.
func gaplessFlagNames() map[string]bool {
	names := map[string]bool{}
	for _, c := range []*cobra.Command{newReplicateCmd(), newStatusCmd(), newStopCmd(), newVerifyCmd(), newResetCmd()} {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	}
	return names
}

// print writes, one per line, every flag the run would take from the
// command line or the option files, with where it came from.
func (o *optionFiles) print(w io.Writer, fl *pflag.FlagSet, command string) {
	read := "no option file (--no-defaults)"
	switch {
	case o.defaultsFile != "":
		read = o.defaultsFile
	case !o.noDefaults && len(o.files) == 0:
		read = "no option file (none of the default places exists)"
	case !o.noDefaults:
		read = strings.Join(o.files, ", ")
	}
	fmt.Fprintf(w, "# %s would run with these flags (read: %s; passwords masked)\n", command, read)
	fl.VisitAll(func(f *pflag.Flag) {
		if !f.Changed || f.Name == "print-defaults" {
			return
		}
		values := []string{f.Value.String()}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			values = s.GetSlice()
			if f.Value.Type() == "stringSlice" {
				values = []string{strings.Join(values, ",")}
			}
		}
		for _, v := range values {
			fmt.Fprintf(w, "--%s=%s\t# %s\n", f.Name, maskSecret(f.Name, v), strings.Join(o.taken[f.Name], ", "))
		}
	})
	for _, opt := range o.connection {
		fmt.Fprintf(w, "# connection setting %s=%s\t# %s [%s]\n", opt.Name, maskSecret(opt.Name, opt.Value), opt.Where, opt.Group)
	}
}

// maskSecret hides a password: the whole value of a key that names one, or
// the password part of a URL (scheme://user:***@host...).
func maskSecret(name, value string) string {
	if strings.Contains(name, "password") && !strings.HasSuffix(name, "password-file") {
		return "***"
	}
	scheme, rest, ok := strings.Cut(value, "://")
	if !ok {
		return value
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return value
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return value
	}
	return scheme + "://" + user + ":***@" + rest[at+1:]
}

// optionFilesUsage is what a command's --help says of option files.
const optionFilesUsage = `Option files: every flag may come from the [gapless] group of an option
file, and from its [gapless-STREAM] group for the stream STREAM, written
without dashes (workers = 8, do-db = shop); the command line wins, and a
later line over an earlier one. --defaults-file FILE reads FILE alone, else
/etc/my.cnf, /etc/mysql/my.cnf, $MYSQL_HOME/my.cnf and ~/.my.cnf are read;
--print-defaults shows the result. A key no gapless command takes is an
error, unless written loose-NAME.`
