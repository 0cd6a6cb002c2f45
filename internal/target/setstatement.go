package target

import (
	"strings"

	"gapless/internal/statement"
)

// gtidVariables are the session variables that say under which GTID the
// target binlogs a statement. gapless sets them itself, from the group's
// GTID event, before the group's transaction begins.
var gtidVariables = map[string]bool{"gtid_domain_id": true, "gtid_seq_no": true, "server_id": true}

// withoutGTIDAssignments takes the GTID variables out of a statement's
// SET STATEMENT ... FOR prefix (main.set_statement_notembedded_binlog:
// "set statement gtid_domain_id = 20 for insert ..."). The source's GTID
// event carries their effect already, and inside the group's transaction
// the target refuses to change them (1953). A prefix left with no
// assignment goes too. Text it cannot read is returned as it is.
func withoutGTIDAssignments(text string) string {
	rest := statement.PastComments(text)
	if !startsWithWord(rest, "SET") {
		return text
	}
	rest = strings.TrimLeft(rest[len("SET"):], " \t\r\n")
	if !startsWithWord(rest, "STATEMENT") {
		return text
	}
	rest = rest[len("STATEMENT"):]
	var kept []string
	removed := false
	for {
		assignment, after, last, ok := nextAssignment(rest)
		if !ok {
			return text
		}
		name, _, _ := strings.Cut(assignment, "=")
		name = strings.ToLower(strings.Trim(strings.TrimSpace(name), "`"))
		name = strings.TrimPrefix(strings.TrimPrefix(name, "@@session."), "@@")
		if gtidVariables[name] {
			removed = true
		} else {
			kept = append(kept, strings.TrimSpace(assignment))
		}
		rest = after
		if last {
			break
		}
	}
	if !removed {
		return text
	}
	if len(kept) == 0 {
		return strings.TrimSpace(rest)
	}
	return "SET STATEMENT " + strings.Join(kept, ", ") + " FOR " + strings.TrimSpace(rest)
}

// nextAssignment reads one "name = value" of a SET STATEMENT list from s,
// up to a comma or the word FOR outside quotes and parentheses. last says
// FOR ended it; after is what follows the comma or FOR.
func nextAssignment(s string) (assignment, after string, last, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"', '`':
			end := closingQuote(s, i)
			if end < 0 {
				return "", "", false, false
			}
			i = end
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				return s[:i], s[i+1:], false, true
			}
		default:
			if depth == 0 && (c == 'f' || c == 'F') && (i == 0 || !isWordByte(s[i-1])) && startsWithWord(s[i:], "FOR") {
				return s[:i], s[i+len("FOR"):], true, true
			}
		}
	}
	return "", "", false, false
}

// closingQuote returns the index of the quote that closes the one at
// s[open] (a doubled quote or a backslash escape inside does not), or -1.
func closingQuote(s string, open int) int {
	q := s[open]
	for i := open + 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q && i+1 < len(s) && s[i+1] == q:
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}
