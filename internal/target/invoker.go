// This file gives account statements the user the source ran them as. The
// source logs some of them with words that name the session's own account
// (CREATE ROLE without WITH ADMIN grants the new role to its creator;
// CURRENT_USER), and logs that account beside them (the invoker status
// variable); MariaDB's replica runs them as that account. gapless runs them
// as its own apply user, so it names the invoker in the text instead: else
// the roles went to the apply user, and later statements about them failed
// (1959) or the target held grants the primary did not.
//
// A role made so is administered by the source's user, as on the primary;
// but only a role's admins may grant it, and MariaDB's replica, which skips
// privilege checks, is the only applier that needs none. gapless gives its
// apply user the admin option on each role it creates, outside the binlog
// (a row in mysql.roles_mapping and FLUSH PRIVILEGES): that one row is the
// target's difference, the apply user's own, like the gapless schema.
package target

import (
	"fmt"
	"strings"

	"gapless/internal/binlog"
	"gapless/internal/sqltext"
)

// accountStatements are the leading words of the statements rewritten.
var accountStatements = [][]string{
	{"CREATE", "ROLE"}, {"CREATE", "OR", "REPLACE", "ROLE"},
	{"CREATE", "USER"}, {"CREATE", "OR", "REPLACE", "USER"},
	{"GRANT"}, {"REVOKE"}, {"RENAME", "USER"}, {"DROP", "USER"}, {"DROP", "ROLE"},
	{"ALTER", "USER"}, {"SET", "PASSWORD"}, {"SET", "DEFAULT", "ROLE"},
}

// asInvoker returns text with the invoker the source logged put where the
// statement names the session's own account (CURRENT_USER) or role
// (CURRENT_ROLE: the source then logs the role as the invoker, with no
// host), and for a CREATE ROLE the roles it makes (the apply user is to
// administer them too).
func asInvoker(text string, st *binlog.SessionState) (string, []string) {
	if st == nil || !st.HasInvoker || st.InvokerUser == "" {
		return text, nil
	}
	tokens := sqlTokens(text)
	if !startsWith(tokens, accountStatements) {
		return text, nil
	}
	isRole := st.InvokerHost == ""
	var roles []string
	if startsWith(tokens, createRole) {
		roles = roleNames(text, tokens)
	}
	account := quoteString(st.InvokerUser) + "@" + quoteString(st.InvokerHost)
	if isRole {
		account = quoteString(st.InvokerUser)
	}
	var b strings.Builder
	last := 0
	admin := false
	for i, t := range tokens {
		word := strings.ToUpper(t.text)
		if word == "ADMIN" && i > 0 && strings.EqualFold(tokens[i-1].text, "WITH") {
			admin = true
		}
		if word != "CURRENT_USER" && word != "CURRENT_ROLE" || (word == "CURRENT_ROLE") != isRole {
			continue
		}
		end := t.end
		if i+2 < len(tokens) && tokens[i+1].text == "(" && tokens[i+2].text == ")" {
			end = tokens[i+2].end
		}
		b.WriteString(text[last:t.start])
		b.WriteString(account)
		last = end
	}
	b.WriteString(text[last:])
	out := b.String()
	if !admin && len(roles) > 0 && !isRole {
		out = strings.TrimRight(out, " \t\r\n;") + " WITH ADMIN " + account
	}
	return out, roles
}

var createRole = [][]string{{"CREATE", "ROLE"}, {"CREATE", "OR", "REPLACE", "ROLE"}}

// roleNames reads the roles a CREATE ROLE statement names.
func roleNames(text string, tokens []sqlToken) []string {
	i := 2
	if strings.EqualFold(tokens[1].text, "OR") {
		i = 4
	}
	if i+2 < len(tokens) && strings.EqualFold(tokens[i].text, "IF") && strings.EqualFold(tokens[i+1].text, "NOT") {
		i += 3
	}
	var roles []string
	for ; i < len(tokens); i += 2 {
		roles = append(roles, tokenName(text, tokens[i]))
		if i+1 >= len(tokens) || tokens[i+1].text != "," {
			break
		}
	}
	return roles
}

// tokenName is the name a word or a quoted token stands for.
func tokenName(text string, t sqlToken) string {
	raw := text[t.start:t.end]
	if t.text != "''" {
		return raw
	}
	if len(raw) < 2 {
		return ""
	}
	q := raw[0]
	inner := raw[1 : len(raw)-1]
	inner = strings.ReplaceAll(inner, string([]byte{q, q}), string(q))
	if q != '`' {
		inner = strings.NewReplacer(`\\`, `\`, `\'`, `'`, `\"`, `"`).Replace(inner)
	}
	return inner
}

// adminOf gives the apply user (CURRENT_USER(), read when the session was
// prepared) the admin option on roles, outside the binlog.
func (s *Session) adminOf(roles []string) ([]string, error) {
	at := strings.LastIndexByte(s.applier, '@')
	if at < 0 {
		return nil, fmt.Errorf("cannot tell the apply user's account from CURRENT_USER() %q", s.applier)
	}
	var stmts []string
	for _, role := range roles {
		stmts = append(stmts, fmt.Sprintf("INSERT IGNORE INTO mysql.roles_mapping (Host, User, Role, Admin_option) VALUES (%s, %s, %s, %s)",
			sqltext.Literal(s.applier[at+1:]), sqltext.Literal(s.applier[:at]), sqltext.Literal(role), sqltext.Literal("Y")))
	}
	return s.outsideBinlog(append(stmts, "FLUSH PRIVILEGES")...), nil
}

// grantStatements write the account that runs them into the Grantor
// column of mysql.tables_priv, procs_priv and proxies_priv.
var grantStatements = [][]string{{"GRANT"}, {"REVOKE"}}

// grantorSelf is the grantor the target writes for the apply session: the
// account's user name and the host the session came from (USER()'s host, not
// CURRENT_USER()'s).
const grantorSelf = "CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '@', SUBSTRING_INDEX(USER(), '@', -1))"

// grantorOf puts the invoker the source logged for a GRANT or REVOKE where
// the target wrote the apply session as the grantor, outside the binlog: on
// the primary, and on MariaDB's replica, the grantor is the invoker. Every
// row the apply session stands as grantor of, gapless wrote so.
func (s *Session) grantorOf(text string, st *binlog.SessionState) []string {
	if st == nil || !st.HasInvoker || st.InvokerUser == "" || st.InvokerHost == "" || !startsWith(sqlTokens(text), grantStatements) {
		return nil
	}
	invoker := sqltext.Literal(st.InvokerUser + "@" + st.InvokerHost)
	var stmts []string
	for _, table := range []string{"tables_priv", "procs_priv", "proxies_priv"} {
		stmts = append(stmts, tolerating(anyServerError, fmt.Sprintf("UPDATE mysql.%s SET Grantor=%s WHERE Grantor=%s", table, invoker, grantorSelf)))
	}
	return s.outsideBinlog(stmts...)
}

// routineGrant gives the creator of a stored procedure or function the
// EXECUTE and ALTER ROUTINE on it that the source gave on its own, outside the
// binlog, when automatic_sp_privileges is on and the creator lacked them
// (an account with CREATE ROUTINE only). The target decides as the source
// did, but for the session that runs the statement: the apply user, who
// holds every privilege, so it gave none, and the creator later lacked what
// the source's own REVOKE of them (1403) or the creator itself expected.
// The creator is the invoker the source logged; db the statement's default
// database. The test is the one the server makes, on the account's global
// and database privileges (an active role's are not known here); the
// target's own automatic_sp_privileges decides, as it does for MariaDB's
// replica. All of it is best effort, as on the source: where the privilege
// tables are damaged, the source's own grant failed with a warning.
func (s *Session) routineGrant(text, db string, st *binlog.SessionState) []string {
	if st == nil || !st.HasInvoker || st.InvokerUser == "" || st.InvokerHost == "" {
		return nil
	}
	kind, routineDB, name, ok := createdRoutine(text, db)
	if !ok {
		return nil
	}
	grantee := sqltext.Literal("'" + st.InvokerUser + "'@'" + st.InvokerHost + "'")
	const privileges = "('EXECUTE', 'ALTER ROUTINE')"
	held := fmt.Sprintf("(SELECT COUNT(DISTINCT PRIVILEGE_TYPE) FROM ("+
		"SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %[1]s AND PRIVILEGE_TYPE IN %[2]s "+
		"UNION ALL SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %[1]s AND %[3]s LIKE TABLE_SCHEMA AND PRIVILEGE_TYPE IN %[2]s"+
		") AS held)", grantee, privileges, sqltext.Literal(routineDB))
	exists := fmt.Sprintf("EXISTS (SELECT 1 FROM mysql.global_priv WHERE User = %s AND Host = %s)",
		sqltext.Literal(st.InvokerUser), sqltext.Literal(st.InvokerHost))
	grant := fmt.Sprintf("GRANT EXECUTE, ALTER ROUTINE ON %s %s.%s TO %s@%s",
		kind, quoteName(routineDB), quoteName(name), quoteString(st.InvokerUser), quoteString(st.InvokerHost))
	return s.outsideBinlog(
		"SET @gapless_routine_grant = 'DO 0'",
		tolerating(anyServerError, fmt.Sprintf("SET @gapless_routine_grant = IF(@@global.automatic_sp_privileges AND %s AND %s < 2, %s, 'DO 0')", exists, held, sqltext.Literal(grant))),
		tolerating(anyServerError, "EXECUTE IMMEDIATE @gapless_routine_grant"),
		"SET @gapless_routine_grant = NULL",
		tolerating(anyServerError, fmt.Sprintf("UPDATE mysql.procs_priv SET Grantor=%s WHERE Grantor=%s", sqltext.Literal(st.InvokerUser+"@"+st.InvokerHost), grantorSelf)),
	)
}

// createdRoutine reads what a CREATE PROCEDURE or CREATE FUNCTION statement
// creates: PROCEDURE or FUNCTION, its database (db when the name has none)
// and its name. A loadable function (SONAME) is no stored routine.
func createdRoutine(text, db string) (kind, routineDB, name string, ok bool) {
	tokens := sqlTokens(text)
	if len(tokens) < 3 || !strings.EqualFold(tokens[0].text, "CREATE") {
		return "", "", "", false
	}
	i := 1
	for ; i < len(tokens) && i < 16; i++ {
		word := strings.ToUpper(tokens[i].text)
		if word == "PROCEDURE" || word == "FUNCTION" {
			kind = word
			break
		}
		if word == "TABLE" || word == "VIEW" || word == "TRIGGER" || word == "EVENT" || word == "PACKAGE" || word == "(" {
			return "", "", "", false
		}
	}
	if kind == "" {
		return "", "", "", false
	}
	i++
	if i+2 < len(tokens) && strings.EqualFold(tokens[i].text, "IF") && strings.EqualFold(tokens[i+1].text, "NOT") {
		i += 3
	}
	if i >= len(tokens) {
		return "", "", "", false
	}
	routineDB, name = db, tokenName(text, tokens[i])
	if i+2 < len(tokens) && tokens[i+1].text == "." {
		routineDB, name = name, tokenName(text, tokens[i+2])
	}
	for _, t := range tokens {
		if strings.EqualFold(t.text, "SONAME") {
			return "", "", "", false
		}
	}
	if routineDB == "" || name == "" {
		return "", "", "", false
	}
	return kind, routineDB, name, true
}

// sqlToken is a word or a punctuation mark of a statement, outside quotes
// and comments, with its place in the text.
type sqlToken struct {
	text       string
	start, end int
}

// sqlTokens splits text into words and single punctuation marks, leaving
// out quoted strings, quoted names and comments.
func sqlTokens(text string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(text) {
				if text[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			out = append(out, sqlToken{text: "''", start: i, end: min(j+1, len(text))})
			i = j + 1
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '#' || (c == '-' && strings.HasPrefix(text[i:], "-- ")):
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(text) {
				d := text[j]
				if d == '_' || d == '$' || d >= '0' && d <= '9' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= 0x80 {
					j++
					continue
				}
				break
			}
			out = append(out, sqlToken{text: text[i:j], start: i, end: j})
			i = j
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		default:
			out = append(out, sqlToken{text: text[i : i+1], start: i, end: i + 1})
			i++
		}
	}
	return out
}

// startsWith reports whether the tokens begin with one of the word lists.
func startsWith(tokens []sqlToken, lists [][]string) bool {
	for _, words := range lists {
		if len(tokens) < len(words) {
			continue
		}
		match := true
		for i, w := range words {
			if !strings.EqualFold(tokens[i].text, w) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// quoteString quotes s as a SQL string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
