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
	at, definer := -1, false
	for i := 1; i < len(tokens) && i < 16; i++ {
		word := strings.ToUpper(tokens[i].text)
		if word == "EVENT" {
			at = i
			break
		}
		switch {
		case word == "DEFINER":
			definer = true
		case create && (i == 1 && word == "OR" || i == 2 && word == "REPLACE"):
		case !definer:
			return text // CREATE TABLE, ALTER TABLE, ...
		}
	}
	if at < 0 {
		return text
	}
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

// afterName returns where the tokens after a name that starts at i begin:
// a word or a quoted name, or two of them joined by a dot.
func afterName(tokens []sqlToken, i int) int {
	if i+2 < len(tokens) && tokens[i+1].text == "." {
		return i + 3
	}
	return i + 1
}
