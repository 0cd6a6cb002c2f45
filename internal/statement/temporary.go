// temporary.go follows the temporary tables of the source's sessions, as
// the binlog shows them: CREATE TEMPORARY TABLE (and SEQUENCE) adds a name,
// DROP TEMPORARY TABLE of the same session removes it (the source logs one
// for each temporary table a session still held when it ended), and an
// ALTER or RENAME of a held name holds the new name too.
//
// Invariant: Holds is true for every name a source session may hold as a
// temporary table at this point of the binlog. It errs the other way only:
// a DROP TABLE without TEMPORARY, or a source restart, leaves names held,
// and a statement about temporary tables it cannot read makes every name
// held from then on.
package statement

import "strings"

// Temporary is the set of names held as temporary tables. Not safe for
// concurrent use.
type Temporary struct {
	held map[Name]map[uint32]bool // lower-case name -> source sessions (pseudo thread ids) holding it
	// unknown: a statement about temporary tables could not be read;
	// every name counts as held.
	unknown bool
}

// NewTemporary returns an empty set.
func NewTemporary() *Temporary { return &Temporary{held: map[Name]map[uint32]bool{}} }

// Holds reports whether some source session may hold schema.table as a
// temporary table.
func (t *Temporary) Holds(schema, table string) bool {
	if t.unknown {
		return true
	}
	_, ok := t.held[lowerName(schema, table)]
	return ok
}

// Mentions reports whether text may be about a held name: it holds the
// table part of one anywhere, or every name counts as held.
func (t *Temporary) Mentions(text string) bool {
	return t.unknown || t.mentionsHeld(text)
}

// Unknown reports whether a statement about temporary tables could not be
// read, so that every name counts as held.
func (t *Temporary) Unknown() bool { return t.unknown }

// Observe reads one statement that is not plain DML, run by source session
// thread with default database db.
func (t *Temporary) Observe(thread uint32, db, text string, sqlMode uint64) {
	if t.unknown {
		return
	}
	lx := Lexing{ANSIQuotes: sqlMode&modeANSIQuotes != 0, NoBackslashEscapes: sqlMode&modeNoBackslashEscapes != 0, UTF8: true}
	toks, ok := tokens(text, lx)
	temporary := ok && hasWord(toks, "TEMPORARY")
	if !ok {
		// Unreadable: it matters only if it may be about temporary tables.
		if strings.Contains(strings.ToUpper(text), "TEMPORARY") || t.mentionsHeld(text) {
			t.unknown = true
		}
		return
	}
	switch {
	case len(toks) == 0:
	case isWord(toks[0], "CREATE") && temporary:
		names, ok := createdName(toks)
		if !ok {
			t.unknown = true
			return
		}
		for _, n := range names {
			t.add(thread, resolve(n, db))
		}
	case isWord(toks[0], "DROP") && temporary:
		names, ok := droppedNames(toks)
		if !ok {
			t.unknown = true
			return
		}
		for _, n := range names {
			t.drop(thread, resolve(n, db))
		}
	case isWord(toks[0], "ALTER") || isWord(toks[0], "RENAME"):
		if !t.namesHeld(toks, db) {
			return
		}
		// A held name renamed: the new names are held from now on.
		for _, n := range newNames(toks) {
			t.add(thread, resolve(n, db))
		}
	case temporary:
		// Another statement about temporary tables (CREATE TEMPORARY
		// written in a way not read above, ...).
		t.unknown = true
	}
}

// TemporaryNames reads a statement that is not plain DML, run under
// sqlMode, for the temporary tables it may leave a session holding and
// those it drops, by the names it writes (Schema "" for a name without
// one, letters as written): a CREATE TEMPORARY TABLE or SEQUENCE names the
// one it makes, an ALTER or RENAME the new names it gives (a temporary
// table's among them, if it renames one; every name it writes when it
// cannot be read), a DROP TEMPORARY the ones it drops. It errs towards
// names held: a caller that must know asks the server.
func TemporaryNames(text string, sqlMode uint64) (held, dropped []Name) {
	lx := Lexing{ANSIQuotes: sqlMode&modeANSIQuotes != 0, NoBackslashEscapes: sqlMode&modeNoBackslashEscapes != 0, UTF8: true}
	toks, ok := tokens(text, lx)
	if !ok || len(toks) == 0 {
		return nil, nil
	}
	switch {
	case isWord(toks[0], "CREATE"):
		names, _ := createdName(toks)
		return names, nil
	case isWord(toks[0], "DROP"):
		names, _ := droppedNames(toks)
		return nil, names
	case isWord(toks[0], "ALTER") || isWord(toks[0], "RENAME"):
		return newNames(toks), nil
	}
	return nil, nil
}

// newNames is the names an ALTER or RENAME statement may give tables:
// those renamedTo reads, or every name it writes when it cannot read them.
func newNames(toks []token) []Name {
	if names, ok := renamedTo(toks); ok {
		return names
	}
	return allNames(toks)
}

// atEnd reports whether toks end at i, or at a semicolon there.
func atEnd(toks []token, i int) bool {
	return i == len(toks) || i == len(toks)-1 && toks[i].text == ";"
}

// renamedTo reads the new names an ALTER TABLE or RENAME TABLE statement
// gives tables: ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name ... with
// any number of RENAME [TO|AS] new (RENAME COLUMN, INDEX and KEY name no
// table), and RENAME TABLE|TABLES [IF EXISTS] old [WAIT n|NOWAIT] TO new
// [, old TO new ...]. An ALTER of anything but a table gives none. ok is
// false for a statement it cannot read so.
func renamedTo(toks []token) (names []Name, ok bool) {
	if isWord(toks[0], "RENAME") {
		return renameTableTo(toks)
	}
	i := 1
	for i < len(toks) && (isWord(toks[i], "ONLINE") || isWord(toks[i], "IGNORE")) {
		i++
	}
	if i >= len(toks) || !isWord(toks[i], "TABLE") {
		return nil, true
	}
	i++
	if i+1 < len(toks) && isWord(toks[i], "IF") && isWord(toks[i+1], "EXISTS") {
		i += 2
	}
	_, next, ok := nameAt(toks, i)
	if !ok {
		return nil, false
	}
	for i = next; i < len(toks); i++ {
		if !isWord(toks[i], "RENAME") {
			continue
		}
		j := i + 1
		if j < len(toks) && (isWord(toks[j], "COLUMN") || isWord(toks[j], "INDEX") || isWord(toks[j], "KEY")) {
			continue
		}
		if j < len(toks) && (isWord(toks[j], "TO") || isWord(toks[j], "AS") || toks[j].text == "=") {
			j++
		}
		n, next, ok := nameAt(toks, j)
		if !ok {
			return nil, false
		}
		names = append(names, n)
		i = next - 1
	}
	return names, true
}

// renameTableTo reads the new names of RENAME TABLE|TABLES [IF EXISTS]
// old [WAIT n|NOWAIT] TO new [, old [WAIT n|NOWAIT] TO new ...].
func renameTableTo(toks []token) (names []Name, ok bool) {
	i := 1
	if i >= len(toks) || !isWord(toks[i], "TABLE") && !isWord(toks[i], "TABLES") {
		return nil, false
	}
	i++
	if i+1 < len(toks) && isWord(toks[i], "IF") && isWord(toks[i+1], "EXISTS") {
		i += 2
	}
	for {
		_, next, ok := nameAt(toks, i)
		if !ok {
			return nil, false
		}
		i = next
		switch {
		case i+1 < len(toks) && isWord(toks[i], "WAIT"):
			i += 2
		case i < len(toks) && isWord(toks[i], "NOWAIT"):
			i++
		}
		if i >= len(toks) || !isWord(toks[i], "TO") {
			return nil, false
		}
		n, next, ok := nameAt(toks, i+1)
		if !ok {
			return nil, false
		}
		names = append(names, n)
		i = next
		switch {
		case i < len(toks) && toks[i].text == ",":
			i++
		case atEnd(toks, i):
			return names, true
		default:
			return nil, false
		}
	}
}

// Each calls f with every name held and a session holding it, in lower
// case; false when every name counts as held (Unknown), and then not at all.
func (t *Temporary) Each(f func(thread uint32, n Name)) bool {
	if t.unknown {
		return false
	}
	for n, threads := range t.held {
		for thread := range threads {
			f(thread, n)
		}
	}
	return true
}

// Hold makes thread hold schema.table as a temporary table: one the target
// kept for it from before the binlog read here.
func (t *Temporary) Hold(thread uint32, schema, table string) { t.add(thread, Name{schema, table}) }

// DroppedTemporary returns the names a DROP TEMPORARY TABLE IF EXISTS
// statement drops, as it writes them (Schema "" for a name without one),
// run under sqlMode; ok is false for any other statement (IF EXISTS left
// out too), or one it cannot read.
func DroppedTemporary(text string, sqlMode uint64) (names []Name, ok bool) {
	lx := Lexing{ANSIQuotes: sqlMode&modeANSIQuotes != 0, NoBackslashEscapes: sqlMode&modeNoBackslashEscapes != 0, UTF8: true}
	toks, ok := tokens(text, lx)
	if !ok || len(toks) < 5 || !isWord(toks[0], "DROP") || !isWord(toks[3], "IF") || !isWord(toks[4], "EXISTS") {
		return nil, false
	}
	return droppedNames(toks)
}

// CreatedSequence returns the name a CREATE [OR REPLACE] SEQUENCE [IF NOT
// EXISTS] statement creates (Schema "" for a name without one), run under
// sqlMode; ok is false for any other statement (a temporary sequence too),
// or one it cannot read.
func CreatedSequence(text string, sqlMode uint64) (name Name, ok bool) {
	lx := Lexing{ANSIQuotes: sqlMode&modeANSIQuotes != 0, NoBackslashEscapes: sqlMode&modeNoBackslashEscapes != 0, UTF8: true}
	toks, ok := tokens(text, lx)
	if !ok || len(toks) < 3 || !isWord(toks[0], "CREATE") {
		return Name{}, false
	}
	i := 1
	if i+1 < len(toks) && isWord(toks[i], "OR") && isWord(toks[i+1], "REPLACE") {
		i += 2
	}
	if i >= len(toks) || !isWord(toks[i], "SEQUENCE") {
		return Name{}, false
	}
	i++
	if i+2 < len(toks) && isWord(toks[i], "IF") && isWord(toks[i+1], "NOT") && isWord(toks[i+2], "EXISTS") {
		i += 3
	}
	name, _, ok = nameAt(toks, i)
	return name, ok
}

func (t *Temporary) add(thread uint32, n Name) {
	n = lowerName(n.Schema, n.Table)
	if t.held[n] == nil {
		t.held[n] = map[uint32]bool{}
	}
	t.held[n][thread] = true
}

func (t *Temporary) drop(thread uint32, n Name) {
	n = lowerName(n.Schema, n.Table)
	if s := t.held[n]; s != nil {
		delete(s, thread)
		if len(s) == 0 {
			delete(t.held, n)
		}
	}
}

// namesHeld reports whether any name in toks is held (schema or not).
func (t *Temporary) namesHeld(toks []token, db string) bool {
	for _, n := range allNames(toks) {
		if t.Holds(resolve(n, db).Schema, n.Table) {
			return true
		}
	}
	return false
}

// mentionsHeld reports whether text holds, anywhere, the table part of a
// held name.
func (t *Temporary) mentionsHeld(text string) bool {
	lower := strings.ToLower(text)
	for n := range t.held {
		if strings.Contains(lower, n.Table) {
			return true
		}
	}
	return false
}

func lowerName(schema, table string) Name {
	return Name{Schema: strings.ToLower(schema), Table: strings.ToLower(table)}
}

func resolve(n Name, db string) Name {
	if n.Schema == "" {
		n.Schema = db
	}
	return n
}

// createdName reads CREATE [OR REPLACE] TEMPORARY TABLE|SEQUENCE [IF NOT
// EXISTS] name.
func createdName(toks []token) ([]Name, bool) {
	i := 1
	if i+1 < len(toks) && isWord(toks[i], "OR") && isWord(toks[i+1], "REPLACE") {
		i += 2
	}
	if i >= len(toks) || !isWord(toks[i], "TEMPORARY") {
		return nil, false
	}
	i++
	if i >= len(toks) || !isWord(toks[i], "TABLE") && !isWord(toks[i], "SEQUENCE") {
		return nil, false
	}
	i++
	if i+2 < len(toks) && isWord(toks[i], "IF") && isWord(toks[i+1], "NOT") && isWord(toks[i+2], "EXISTS") {
		i += 3
	}
	n, _, ok := nameAt(toks, i)
	if !ok {
		return nil, false
	}
	return []Name{n}, true
}

// droppedNames reads DROP TEMPORARY TABLE|TABLES|SEQUENCE [IF EXISTS] name
// [, name ...] [RESTRICT|CASCADE].
func droppedNames(toks []token) ([]Name, bool) {
	i := 1
	if i >= len(toks) || !isWord(toks[i], "TEMPORARY") {
		return nil, false
	}
	i++
	if i >= len(toks) || !isWord(toks[i], "TABLE") && !isWord(toks[i], "TABLES") && !isWord(toks[i], "SEQUENCE") {
		return nil, false
	}
	i++
	if i+1 < len(toks) && isWord(toks[i], "IF") && isWord(toks[i+1], "EXISTS") {
		i += 2
	}
	var names []Name
	for {
		n, next, ok := nameAt(toks, i)
		if !ok {
			return nil, false
		}
		names = append(names, n)
		i = next
		if i < len(toks) && toks[i].text == "," {
			i++
			continue
		}
		if i < len(toks) && (isWord(toks[i], "RESTRICT") || isWord(toks[i], "CASCADE")) {
			i++
		}
		return names, atEnd(toks, i)
	}
}

// allNames returns every name or dotted pair of names in toks, keywords
// included (taking a keyword for a name only holds more names).
func allNames(toks []token) []Name {
	var names []Name
	for i := 0; i < len(toks); i++ {
		if n, next, ok := nameAt(toks, i); ok {
			names = append(names, n)
			if next > i+1 {
				names = append(names, Name{Table: toks[i].text}, Name{Table: toks[next-1].text})
				i = next - 1
			}
		}
	}
	return names
}

// nameAt reads name or schema.name at toks[i].
func nameAt(toks []token, i int) (Name, int, bool) {
	if i >= len(toks) || toks[i].kind != tokName {
		return Name{}, i, false
	}
	if i+2 < len(toks) && toks[i+1].text == "." && toks[i+2].kind == tokName {
		return Name{Schema: toks[i].text, Table: toks[i+2].text}, i + 3, true
	}
	return Name{Table: toks[i].text}, i + 1, true
}

func hasWord(toks []token, w string) bool {
	for _, t := range toks {
		if isWord(t, w) {
			return true
		}
	}
	return false
}

func isWord(t token, w string) bool {
	return t.kind == tokName && !t.quoted && strings.EqualFold(t.text, w)
}

type tokenKind uint8

const (
	tokName  tokenKind = iota // a word or a quoted name
	tokOther                  // a literal or punctuation
)

type token struct {
	kind   tokenKind
	text   string // a name unquoted
	quoted bool
}

// tokens splits text into names, literals and punctuation as MariaDB reads
// it, the content of executable comments (/*!, /*M!) read as code: the
// binlog writes DROP /*!40005 TEMPORARY */ TABLE.
func tokens(text string, lx Lexing) ([]token, bool) {
	var out []token
	n := len(text)
	inExecutable := false
	for i := 0; i < n; {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '\'' || c == '"' && !lx.ANSIQuotes:
			end, ok := quoted(text, i, c, !lx.NoBackslashEscapes)
			if !ok {
				return nil, false
			}
			out = append(out, token{kind: tokOther, text: "''"})
			i = end
		case c == '`' || c == '"' && lx.ANSIQuotes:
			end, ok := quoted(text, i, c, false)
			if !ok {
				return nil, false
			}
			q := string(c)
			out = append(out, token{kind: tokName, quoted: true, text: strings.ReplaceAll(text[i+1:end-1], q+q, q)})
			i = end
		case inExecutable && c == '*' && i+1 < n && text[i+1] == '/':
			inExecutable = false
			i += 2
		case c == '/' && i+1 < n && text[i+1] == '*':
			j := i + 2
			if j < n && text[j] == 'M' && j+1 < n && text[j+1] == '!' {
				j++
			}
			if j < n && text[j] == '!' {
				if inExecutable {
					return nil, false
				}
				j++
				for j < n && text[j] >= '0' && text[j] <= '9' {
					j++
				}
				inExecutable = true
				i = j
				continue
			}
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return nil, false
			}
			i += end + 4
		case c == '#':
			i = lineEnd(text, i)
		case c == '-' && i+1 < n && text[i+1] == '-' && (i+2 >= n || text[i+2] <= ' '):
			i = lineEnd(text, i)
		case isWordByte(c):
			j := i
			for j < n && isWordByte(text[j]) {
				j++
			}
			if allDigits(text[i:j]) {
				out = append(out, token{kind: tokOther, text: "0"})
			} else {
				out = append(out, token{kind: tokName, text: text[i:j]})
			}
			i = j
		default:
			out = append(out, token{kind: tokOther, text: string(c)})
			i++
		}
	}
	return out, !inExecutable
}
