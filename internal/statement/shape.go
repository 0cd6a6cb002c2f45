// shape.go reads a statement's text as MariaDB's lexer does, far enough to
// tell its literals from the rest, and writes its shape: the text with every
// string literal replaced by an empty string and every number by 0, comments
// dropped. Statements of one shape differ only in the values of their
// literals, so they name the same tables, call the same functions and read
// the same variables: the analysis of one holds for all (the cache key).
//
// The shape must never join two statements that differ in anything but
// literals, so where the text could be read in more than one way it is
// refused: executable comments (/*! and /*M!, whose content runs or not by
// the server's version), a "--" that does not open a comment, unterminated
// quotes or comments, and character sets in which the second byte of a
// character may be a quote or a backslash (big5, sjis, cp932, gbk, gb18030).
package statement

import (
	"strings"
)

// Lexing holds what of the source session changes how its text reads.
type Lexing struct {
	ANSIQuotes         bool // "x" is an identifier, not a string
	NoBackslashEscapes bool // a backslash in a string is a plain character
	// UTF8: the text is in utf8mb3 or utf8mb4; otherwise a byte above 0x7F
	// outside a literal (in a name) makes the text refused, since names are
	// compared with the target's in UTF-8.
	UTF8 bool
}

// shape returns the shape of text, and false when it cannot be read
// safely; the numbers it wrote as 0 are appended to numbers.
func shape(text string, lx Lexing, numbers []Number) (out string, _ []Number, ok bool) {
	var b strings.Builder
	b.Grow(len(text))
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		switch {
		case c == '\'' || c == '"' && !lx.ANSIQuotes:
			end, ok := quoted(text, i, c, !lx.NoBackslashEscapes)
			if !ok {
				return "", numbers, false
			}
			b.WriteString("''")
			i = end
		case c == '`' || c == '"' && lx.ANSIQuotes:
			end, ok := quoted(text, i, c, false)
			if !ok {
				return "", numbers, false
			}
			if !lx.UTF8 && !isASCII(text[i:end]) {
				return "", numbers, false
			}
			b.WriteString(text[i:end])
			i = end
		case c == '@':
			j, ok := variableName(text, i, lx)
			if !ok {
				return "", numbers, false
			}
			b.WriteString(text[i:j])
			i = j
		case c == '/' && i+1 < n && text[i+1] == '*':
			if i+2 < n && (text[i+2] == '!' || text[i+2] == 'M' && i+3 < n && text[i+3] == '!') {
				return "", numbers, false
			}
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return "", numbers, false
			}
			b.WriteByte(' ')
			i += end + 4
		case c == '#':
			i = lineEnd(text, i)
			b.WriteByte(' ')
		case c == '-' && i+1 < n && text[i+1] == '-':
			if i+2 < n && text[i+2] > ' ' {
				return "", numbers, false // minus minus, which another lexer might take for a comment
			}
			i = lineEnd(text, i)
			b.WriteByte(' ')
		case isWordByte(c):
			j := i
			for j < n && isWordByte(text[j]) {
				j++
			}
			word := text[i:j]
			// A run of digits alone is a number (a name may start with a
			// digit, but never be digits only): "1e5", "0x1F" and "12abc"
			// are kept as they are, and so is a run next to a dot, which
			// a parser may read as a qualified name (00.t).
			nextToDot := i > 0 && text[i-1] == '.' || j < n && text[j] == '.'
			if allDigits(word) && !nextToDot {
				numbers = append(numbers, Number{Start: i, End: j, shapeAt: b.Len()})
				b.WriteByte('0')
			} else {
				if !lx.UTF8 && !isASCII(word) {
					return "", numbers, false
				}
				b.WriteString(word)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), numbers, true
}

// variableName returns the end of the user or system variable whose @
// is at text[i]: @name, @@name, @'quoted name', @1, @a.b. A quoted name
// is a name, not a literal, so it is kept as written; ok is false for one
// not closed, or not ASCII where lx is not UTF-8.
func variableName(text string, i int, lx Lexing) (end int, ok bool) {
	n := len(text)
	i++
	if i < n && text[i] == '@' {
		i++
	}
	j := i
	if j < n && (text[j] == '\'' || text[j] == '"' || text[j] == '`') {
		if j, ok = quoted(text, j, text[j], text[j] != '`' && !lx.NoBackslashEscapes); !ok {
			return 0, false
		}
	} else {
		// Digits and dots stay: @1 and @a.b are names too.
		for j < n && (isWordByte(text[j]) || text[j] == '.') {
			j++
		}
	}
	if !lx.UTF8 && !isASCII(text[i:j]) {
		return 0, false
	}
	return j, true
}

// quoted returns the end (just past the closing quote) of the quoted token
// that opens at text[i] with quote q; a doubled quote stands for one, and
// with backslash a backslash escapes the byte after it.
func quoted(text string, i int, q byte, backslash bool) (int, bool) {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			if backslash {
				j++
			}
		case q:
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

func lineEnd(text string, i int) int {
	if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(text)
}

// isWordByte: a byte of a name or number (MariaDB's identifier characters,
// any byte above 0x7F included).
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
