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
	"bytes"
	"regexp"
)

// UnsafeKinds names the unsafe constructs in a statement, each once, in a
// fixed order: "SYSDATE()", "UUID()", ..., "UPDATE/DELETE with LIMIT".
//
// It runs on every statement of a MIXED or STATEMENT binlog, twice, so it
// reads the text once: a function call is a name before "(", and only the
// names before a "(" are looked up.
func UnsafeKinds(query string) []string {
	text := upperBlanked(query)
	var found uint32 // bit i: unsafeFunctions[i]
	for i := 0; i < len(text); i++ {
		if text[i] != '(' {
			continue
		}
		end := i
		for end > 0 && isSpace(text[end-1]) {
			end--
		}
		start := end
		for start > 0 && isNameByte(text[start-1]) {
			start--
		}
		if start == end || start > 0 && (text[start-1] == '.' || text[start-1] == '@') {
			continue // not a name, or another one's: a column t.user, a variable @user
		}
		if f, ok := unsafeFunctionIndex[string(text[start:end])]; ok {
			found |= 1 << f
		}
	}
	var kinds []string
	for i, name := range unsafeFunctions {
		if found&(1<<i) != 0 {
			kinds = append(kinds, name+"()")
		}
	}
	if bytes.Contains(text, []byte("LIMIT")) && limitWithoutOrder.Match(text) && !bytes.Contains(text, []byte("ORDER BY")) {
		kinds = append(kinds, "UPDATE/DELETE with LIMIT and no ORDER BY")
	}
	return kinds
}

// unsafeFunctions are the system functions whose value the binlog does not carry.
var unsafeFunctions = []string{"SYSDATE", "UUID", "UUID_SHORT", "SYS_GUID", "USER", "SESSION_USER", "SYSTEM_USER",
	"FOUND_ROWS", "ROW_COUNT", "LOAD_FILE", "VERSION", "SLEEP", "GET_LOCK", "RELEASE_LOCK", "IS_FREE_LOCK", "IS_USED_LOCK"}

var unsafeFunctionIndex = func() map[string]int {
	m := make(map[string]int, len(unsafeFunctions))
	for i, name := range unsafeFunctions {
		m[name] = i
	}
	return m
}()

var limitWithoutOrder = regexp.MustCompile(`^\s*(UPDATE|DELETE)\b[\s\S]*\bLIMIT\b`)

// isNameByte reports whether c may be part of an unquoted name (in upper case).
func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// upperBlanked is the query with its ASCII letters in upper case and what
// blankQuoted blanks blanked.
func upperBlanked(q string) []byte {
	b := blankQuoted([]byte(q))
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return b
}

// blankQuoted replaces the contents of string literals, quoted names and
// comments with spaces (executable comments /*! ... */ and /*M! ... */ are kept).
func blankQuoted(b []byte) []byte {
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
			end := bytes.Index(b[i+2:], []byte("*/"))
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				b[i] = ' '
			}
		}
	}
	return b
}
