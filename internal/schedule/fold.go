// fold.go reduces strings of case- and accent-insensitive collations to a
// form in which every two strings such a collation calls equal are equal.
package schedule

import (
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

var stripMarks = transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)

// foldString lower-cases v, drops accents, and writes ß, ss and s alike
// (collations disagree on which of them are equal), so that 'Ä', 'a', 'á'
// and 'A' meet, and 'Straße' meets 'STRASSE'.
func foldString(v string) string {
	ascii := true
	for i := 0; i < len(v); i++ {
		if v[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii {
		if out, _, err := transform.String(stripMarks, v); err == nil {
			v = out
		}
		v = strings.ReplaceAll(v, "ß", "s")
	}
	v = strings.ToLower(v)
	if !ascii {
		v = strings.NewReplacer("æ", "ae", "œ", "oe").Replace(v)
	}
	if !strings.Contains(v, "ss") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == 's' && i > 0 && v[i-1] == 's' {
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
