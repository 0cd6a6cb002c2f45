// optionfile.go reads MariaDB option files (my.cnf) the way the mariadb
// client does: for the client groups gapless shares with it, and for the
// [gapless] and [gapless-STREAM] groups that hold any flag of gapless's
// commands (cmd/gapless/options.go).
//
// The rules kept: a line is "[group]", "name", "name=value", a comment
// (starting with # or ;), "!include FILE" or "!includedir DIR" (the *.cnf
// files of DIR, in name order); names treat - and _ alike and may carry the
// loose- prefix; a value may be quoted with ' or ", a # outside quotes ends
// it, and the escapes \n \t \r \b \s \\ \' \" are decoded. Options are taken
// in the order the files hold them, from every group read, and a later one
// wins over an earlier one.
package dburl

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ClientGroups are the option-file groups read for a connection, as the
// mariadb client's own tools read them, and gapless's own.
var ClientGroups = []string{"client", "client-server", "client-mariadb", "mariadb-client", "gapless"}

// Option is one option read from an option file.
type Option struct {
	Name     string // lower case, - for _, without loose-
	Value    string
	HasValue bool   // false for a bare "name" line
	Loose    bool   // written with the loose- prefix: unknown, it is ignored
	Group    string // the group it was read from, lower case
	Where    string // file:line, for messages
}

// DefaultOptionFiles are the files the mariadb client reads when it is
// given no --defaults-file, in its order (a later one wins): the system's,
// $MYSQL_HOME's, the user's. Only those that exist are returned.
func DefaultOptionFiles() []string {
	places := []string{"/etc/my.cnf", "/etc/mysql/my.cnf"}
	if home := os.Getenv("MYSQL_HOME"); home != "" {
		places = append(places, filepath.Join(home, "my.cnf"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		places = append(places, filepath.Join(home, ".my.cnf"))
	}
	var out []string
	for _, p := range places {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ReadOptionFile returns the options of the given groups in path (and the
// files it includes), in order.
func ReadOptionFile(path string, groups []string) ([]Option, error) {
	var out []Option
	err := readOptionFile(path, groups, &out, 0)
	return out, err
}

func readOptionFile(path string, groups []string, out *[]Option, depth int) error {
	if depth > 10 {
		return fmt.Errorf("option file %s: includes nested more than 10 deep", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("option file: %w", err)
	}
	defer f.Close()
	scan := bufio.NewScanner(f)
	scan.Buffer(make([]byte, 64<<10), 1<<20)
	inGroup, group := false, ""
	for n := 1; scan.Scan(); n++ {
		where := fmt.Sprintf("%s:%d", path, n)
		line := strings.TrimSpace(scan.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasPrefix(line, "!includedir"):
			dir := includePath(path, strings.TrimSpace(strings.TrimPrefix(line, "!includedir")))
			entries, err := os.ReadDir(dir)
			if err != nil {
				return fmt.Errorf("%s: !includedir: %w", where, err)
			}
			var names []string
			for _, e := range entries {
				if !e.IsDir() && strings.HasSuffix(e.Name(), ".cnf") {
					names = append(names, e.Name())
				}
			}
			slices.Sort(names)
			for _, name := range names {
				if err := readOptionFile(filepath.Join(dir, name), groups, out, depth+1); err != nil {
					return err
				}
			}
			continue
		case strings.HasPrefix(line, "!include"):
			file := includePath(path, strings.TrimSpace(strings.TrimPrefix(line, "!include")))
			if err := readOptionFile(file, groups, out, depth+1); err != nil {
				return err
			}
			continue
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fmt.Errorf("%s: group name without ']'", where)
			}
			group = strings.ToLower(strings.TrimSpace(line[1:end]))
			inGroup = slices.Contains(groups, group)
			continue
		case !inGroup:
			continue
		}
		name, value, hasValue := strings.Cut(line, "=")
		name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
		loose := strings.HasPrefix(name, "loose-")
		name = strings.TrimPrefix(name, "loose-")
		if hasValue {
			if value, err = optionValue(value); err != nil {
				return fmt.Errorf("%s: %s: %v", where, name, err)
			}
		} else if i := strings.IndexByte(name, '#'); i >= 0 {
			name = strings.TrimSpace(name[:i])
		}
		*out = append(*out, Option{Name: name, Value: value, HasValue: hasValue, Loose: loose, Group: group, Where: where})
	}
	if err := scan.Err(); err != nil {
		return fmt.Errorf("option file %s: %w", path, err)
	}
	return nil
}

// includePath resolves an include relative to the including file's folder.
func includePath(from, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(from), name)
}

// optionValue decodes the text after '=': quotes, a trailing comment, escapes.
func optionValue(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw != "" && (raw[0] == '\'' || raw[0] == '"') {
		quote := raw[0]
		for i := 1; i < len(raw); i++ {
			switch raw[i] {
			case '\\':
				i++
			case quote:
				rest := strings.TrimSpace(raw[i+1:])
				if rest != "" && rest[0] != '#' {
					return "", fmt.Errorf("text after the closing quote")
				}
				return unescape(raw[1:i]), nil
			}
		}
		return "", fmt.Errorf("no closing quote")
	}
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		raw = strings.TrimSpace(raw[:i])
	}
	return unescape(raw), nil
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i == len(s)-1 {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		default: // as the server's reader: an unknown escape keeps both
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
