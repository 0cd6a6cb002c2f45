// Package sqltext writes the literals of gapless's own statements so that
// they read the same under whatever session state a source statement left
// on the connection before them: any sql_mode (NO_BACKSLASH_ESCAPES,
// ANSI_QUOTES) and any character_set_connection. A literal without an
// introducer is read in the connection's character set, and in utf16, ucs2
// or utf32 the bytes of 'default' are no longer the word (1366), nor
// '+03:00' a time zone (1298).
package sqltext

import (
	"encoding/hex"
	"unicode/utf8"
)

// SQLMode is the sql_mode gapless gives the connections that run its own
// statements alone (MariaDB's default, quoted): the server's global
// sql_mode may be another, and under EMPTY_STRING_IS_NULL or ORACLE, as
// servers migrated from Oracle run, an empty string literal is NULL and a
// NOT NULL column's empty default refused.
const SQLMode = "'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION'"

// Literal quotes s, text in UTF-8, as a string literal that carries its
// character set; text that is not UTF-8 becomes a binary string.
func Literal(s string) string {
	if !utf8.ValidString(s) {
		return "_binary " + Hex([]byte(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '\'' || c == '\\' || c >= 0x7f {
			return "_utf8mb4 " + Hex([]byte(s))
		}
	}
	return "_utf8mb4'" + s + "'"
}

// Hex is b as a hexadecimal literal, X'...'; it reads the same under any
// sql_mode, and takes the character set of an introducer before it.
func Hex(b []byte) string {
	return "X'" + hex.EncodeToString(b) + "'"
}
