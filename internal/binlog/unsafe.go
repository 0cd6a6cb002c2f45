// unsafe.go finds, in the text of a statement-format event, what MariaDB
// calls unsafe for statement-based replication: a function whose value the
// binlog does not carry (SYSDATE(), UUID(), USER(), ...; unlike NOW() or
// RAND(), whose timestamp and seeds travel with the event) and an UPDATE or
// DELETE with LIMIT but no ORDER BY. Run again on the target, such a
// statement may write other values or other rows than it did on the source.
//
// The source records no flag for it (its warning goes to its client and its
// error log), so the query text is all there is: string literals, quoted
// names and comments are blanked first, so only the statement's own words
// count. A source in MIXED format logs these statements as rows; they reach
// the relay log as statements only from sessions in STATEMENT format.
package binlog

import (
	"regexp"
	"strings"
)

// UnsafeKinds names the unsafe constructs in a statement, each once, in a
// fixed order: "SYSDATE()", "UUID()", ..., "UPDATE/DELETE with LIMIT".
func UnsafeKinds(query string) []string {
	text := strings.ToUpper(blankQuoted(query))
	var kinds []string
	// The expressions backtrack over the whole text (their leading
	// alternation has no literal prefix): 86% of gapless's CPU on sysbench
	// in MIXED. Most statements hold none of the names, which a plain
	// search tells at once.
	for _, f := range unsafeFunctions {
		if strings.Contains(text, f.word) && f.re.MatchString(text) {
			kinds = append(kinds, f.name)
		}
	}
	if strings.Contains(text, "LIMIT") && limitWithoutOrder.MatchString(text) && !strings.Contains(text, "ORDER BY") {
		kinds = append(kinds, "UPDATE/DELETE with LIMIT and no ORDER BY")
	}
	return kinds
}

type unsafeFunction struct {
	name string
	word string // the name alone, which a text must hold for re to match
	re   *regexp.Regexp
}

// unsafeFunctions are the system functions whose value the binlog does not carry.
var unsafeFunctions = func() []unsafeFunction {
	var out []unsafeFunction
	for _, name := range []string{"SYSDATE", "UUID", "UUID_SHORT", "SYS_GUID", "USER", "SESSION_USER", "SYSTEM_USER",
		"FOUND_ROWS", "ROW_COUNT", "LOAD_FILE", "VERSION", "SLEEP", "GET_LOCK", "RELEASE_LOCK", "IS_FREE_LOCK", "IS_USED_LOCK"} {
		// A name preceded by a letter, digit, _, $, . or @ is another name
		// (CURRENT_USER(), a column t.user, @user).
		out = append(out, unsafeFunction{name + "()", name, regexp.MustCompile(`(^|[^A-Z0-9_$.@])` + name + `\s*\(`)})
	}
	return out
}()

var limitWithoutOrder = regexp.MustCompile(`^\s*(UPDATE|DELETE)\b[\s\S]*\bLIMIT\b`)

// blankQuoted replaces the contents of string literals, quoted names and
// comments with spaces (executable comments /*! ... */ and /*M! ... */ are kept).
func blankQuoted(q string) string {
	b := []byte(q)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(b) && b[i] != c; i++ {
				if b[i] == '\\' && c != '`' && i+1 < len(b) {
					b[i] = ' '
					i++
				}
				b[i] = ' '
			}
		case c == '#' || (c == '-' && i+2 < len(b) && b[i+1] == '-' && (b[i+2] == ' ' || b[i+2] == '\t')):
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			if i+2 < len(b) && (b[i+2] == '!' || b[i+2] == 'M') {
				i++
				continue
			}
			end := strings.Index(string(b[i+2:]), "*/")
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}
