// eventstatus.go keeps the source's scheduled events from running on the
// target, as MariaDB's own replica does. An event its SQL thread creates or
// alters is SLAVESIDE_DISABLED whatever the statement says (ENABLE, DISABLE
// or nothing): the source runs it and logs what it changes, and a target
// whose event scheduler is on would run it a second time (rows inserted
// twice, a purge that leaves the source's own DELETE nothing to find). The
// DBA enables the events on the target that becomes the primary.
//
// gapless runs the statement as a client, so it writes the status into the
// text: CREATE ... EVENT and ALTER ... EVENT get DISABLE ON SLAVE in place
// of their status clause, or before their COMMENT or DO. An ALTER EVENT
// without a DEFINER clause makes its runner the event's definer: the source
// logs it with the account that ran it (the invoker), as MariaDB's replica
// takes it, and gapless names that account (DEFINER=) rather than becoming
// the definer itself.
package target

import (
	"strings"

	"gapless/internal/binlog"
)

// disabledOnTarget returns a CREATE EVENT or ALTER EVENT statement made to
// leave the event SLAVESIDE_DISABLED, with the invoker as an ALTER's
// definer; any other text unchanged.
func disabledOnTarget(text string, st *binlog.SessionState) string {
	tokens := sqlTokens(text)
	if len(tokens) < 3 {
		return text
	}
	create := strings.EqualFold(tokens[0].text, "CREATE")
	if !create && !strings.EqualFold(tokens[0].text, "ALTER") {
		return text
	}
	// The leading words up to EVENT: OR REPLACE, DEFINER = account.
	at := eventKeyword(tokens, create)
	if at < 0 {
		return text
	}
	definer := at > 1 && !strings.EqualFold(tokens[at-1].text, "REPLACE")
	// The event's name, after IF NOT EXISTS: a word or a quoted name, with
	// its database before a dot.
	i := at + 1
	if i+2 < len(tokens) && strings.EqualFold(tokens[i].text, "IF") && strings.EqualFold(tokens[i+1].text, "NOT") {
		i += 3
	}
	i = afterName(tokens, i)
	// The clauses up to DO (the body) or the end.
	var b strings.Builder
	last := 0
	put := func(pos int, s string) { // text up to pos, then s
		b.WriteString(text[last:pos])
		b.WriteString(s)
		last = pos
	}
	if !create && !definer && st != nil && st.HasInvoker && st.InvokerUser != "" && st.InvokerHost != "" {
		put(tokens[at].start, "DEFINER="+quoteString(st.InvokerUser)+"@"+quoteString(st.InvokerHost)+" ")
	}
	status := false
	for i < len(tokens) {
		word := strings.ToUpper(tokens[i].text)
		switch {
		case word == "RENAME" && i+1 < len(tokens) && strings.EqualFold(tokens[i+1].text, "TO"):
			i = afterName(tokens, i+2)
			continue
		case word == "ENABLE" || word == "DISABLE":
			end := i + 1
			if end+1 < len(tokens) && strings.EqualFold(tokens[end].text, "ON") &&
				(strings.EqualFold(tokens[end+1].text, "SLAVE") || strings.EqualFold(tokens[end+1].text, "REPLICA")) {
				end += 2
			}
			put(tokens[i].start, "DISABLE ON SLAVE")
			last = tokens[end-1].end
			status = true
			i = end
			continue
		case word == "COMMENT" || word == "DO":
			if !status {
				put(tokens[i].start, "DISABLE ON SLAVE ")
			}
			b.WriteString(text[last:])
			return b.String()
		}
		i++
	}
	if !status {
		if create {
			return text // no body: not a statement the source ran
		}
		end := len(tokens) - 1
		for end > 0 && tokens[end].text == ";" {
			end--
		}
		put(tokens[end].end, " DISABLE ON SLAVE")
	}
	b.WriteString(text[last:])
	return b.String()
}

// eventKeyword returns where the word EVENT is in a CREATE or ALTER
// statement's leading words (OR REPLACE, DEFINER = account), or -1 when
// the statement makes or alters something else (a procedure whose
// parameter is named event, a table).
func eventKeyword(tokens []sqlToken, create bool) int {
	i := 1
	if create && i+1 < len(tokens) && strings.EqualFold(tokens[i].text, "OR") && strings.EqualFold(tokens[i+1].text, "REPLACE") {
		i += 2
	}
	if i+2 < len(tokens) && strings.EqualFold(tokens[i].text, "DEFINER") && tokens[i+1].text == "=" {
		// The account: its user (or CURRENT_USER()), then after an @ its
		// host, which may come in pieces (127.0.0.1), up to the object's
		// keyword.
		i += 3
		if i+1 < len(tokens) && tokens[i].text == "(" && tokens[i+1].text == ")" {
			i += 2
		}
		if i < len(tokens) && tokens[i].text == "@" {
			for i += 2; i < len(tokens) && i < 32 && !objectKeyword(tokens[i].text); i++ {
			}
		}
	}
	if i < len(tokens) && strings.EqualFold(tokens[i].text, "EVENT") {
		return i
	}
	return -1
}

// objectKeyword reports whether word names what a CREATE or ALTER
// statement with a DEFINER makes.
func objectKeyword(word string) bool {
	switch strings.ToUpper(word) {
	case "EVENT", "PROCEDURE", "FUNCTION", "TRIGGER", "VIEW", "PACKAGE", "SQL", "ALGORITHM", "AGGREGATE", "TABLE":
		return true
	}
	return false
}

// afterName returns where the tokens after a name that starts at i begin:
// a word or a quoted name, or two of them joined by a dot.
func afterName(tokens []sqlToken, i int) int {
	if i+2 < len(tokens) && tokens[i+1].text == "." {
		return i + 3
	}
	return i + 1
}
