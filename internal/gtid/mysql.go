// This file owns MySQL GTIDs ("uuid:gno", and MySQL 8.4's tagged
// "uuid:tag:gno") and MySQL GTID sets, parsed and printed as the server does.
//
// Invariant: a MySQLSet maps each (uuid, lower-case tag) it holds to a
// non-empty Intervals of transaction numbers; the untagged one has tag "".

package gtid

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxMySQLGNO is the highest transaction number MySQL accepts.
const MaxMySQLGNO = math.MaxInt64 - 1

// MaxMySQLTagLength is the longest tag MySQL accepts.
const MaxMySQLTagLength = 32

// MySQLGTID is one MySQL global transaction id. Tag is "" for an untagged
// GTID and lower-case otherwise, as MySQL stores it.
type MySQLGTID struct {
	SID [16]byte
	Tag string
	GNO uint64
}

// ParseMySQLGTID reads "uuid:gno" or "uuid:tag:gno"; the uuid and tag may be
// in any case and the tag comes back lower-case.
func ParseMySQLGTID(s string) (MySQLGTID, error) {
	sc := scanner{text: s}
	g, problem := sc.gtid()
	if problem != "" {
		return MySQLGTID{}, fmt.Errorf("gtid: bad MySQL GTID %s: %s", quoteInput(s), problem)
	}
	return g, nil
}

// String prints the lower-case uuid with dashes, ":tag" if tagged, and ":gno".
func (g MySQLGTID) String() string {
	b := make([]byte, 0, 36+2+len(g.Tag)+20)
	b = appendSID(b, g.SID)
	if g.Tag != "" {
		b = append(b, ':')
		b = append(b, g.Tag...)
	}
	b = append(b, ':')
	return string(strconv.AppendUint(b, g.GNO, 10))
}

// ParseSID reads a server uuid, "3e11fa47-71ca-11e1-9e33-c80aa9429562", in
// either case.
func ParseSID(s string) ([16]byte, error) {
	sc := scanner{text: s}
	sid, problem := sc.sid()
	if problem == "" && !sc.atEnd() {
		problem = "unexpected text after the uuid"
	}
	if problem != "" {
		return [16]byte{}, fmt.Errorf("gtid: bad MySQL server uuid %s: %s", quoteInput(s), problem)
	}
	return sid, nil
}

// FormatSID prints a server uuid in lower case with dashes.
func FormatSID(sid [16]byte) string {
	return string(appendSID(make([]byte, 0, 36), sid))
}

func appendSID(b []byte, sid [16]byte) []byte {
	const hexDigits = "0123456789abcdef"
	for i, c := range sid {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// tsid names one sequence of transaction numbers: a server uuid and a tag.
type tsid struct {
	sid [16]byte
	tag string
}

func compareTSID(a, b tsid) int {
	if c := bytes.Compare(a.sid[:], b.sid[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.tag, b.tag)
}

// MySQLSet is a MySQL GTID set: per server uuid and tag, the transaction
// numbers, each kept as Intervals.
//
// The zero value is an empty set. Like a map, a MySQLSet refers to its
// storage: a copy of a non-empty MySQLSet shares it, so Add through one copy
// is seen by the other. Clone gives an independent set. Methods that only
// read are safe for concurrent use; Add and AddRange are not.
type MySQLSet struct {
	d *mysqlSetData
}

type mysqlSetData struct {
	byTSID map[tsid]*tree
	// hotKey and hot are the sequence Add used last, so that a run of GTIDs
	// from one source skips the map.
	hotKey tsid
	hot    *tree
}

// ParseMySQLSet reads a GTID set as MySQL prints it in @@gtid_executed:
// "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:11-18,uuid2:1-3:tag:1-3". Like
// MySQL it accepts either case, whitespace (newlines included) between
// tokens, empty elements between commas, a uuid repeated, and intervals in
// any order; transaction numbers run from 1 to MaxMySQLGNO.
func ParseMySQLSet(s string) (MySQLSet, error) {
	sc := scanner{text: s}
	set, problem := sc.set()
	if problem != "" {
		return MySQLSet{}, fmt.Errorf("gtid: bad MySQL GTID set %s: at byte %d: %s", quoteInput(s), sc.pos, problem)
	}
	return set, nil
}

// String prints the set as MySQL does, except that uuids are joined by ","
// where @@gtid_executed joins them by ",\n": sorted by uuid, each uuid once,
// followed by its untagged intervals and then ":tag:intervals" per tag in
// tag order; intervals "a-b" or "a" joined by ':'. It is "" when empty.
func (s MySQLSet) String() string {
	keys := s.sortedKeys()
	if len(keys) == 0 {
		return ""
	}
	intervals := 0
	for _, k := range keys {
		intervals += s.d.byTSID[k].n
	}
	b := make([]byte, 0, len(keys)*(38+MaxMySQLTagLength)+intervals*12)
	for i, k := range keys {
		if i == 0 || k.sid != keys[i-1].sid {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSID(b, k.sid)
		}
		if k.tag != "" {
			b = append(b, ':')
			b = append(b, k.tag...)
		}
		b = append(b, ':')
		b = Intervals{t: s.d.byTSID[k]}.appendText(b)
	}
	return string(b)
}

func (s MySQLSet) sortedKeys() []tsid {
	if s.d == nil {
		return nil
	}
	keys := make([]tsid, 0, len(s.d.byTSID))
	for k := range s.d.byTSID {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareTSID)
	return keys
}

// Add puts g into the set.
func (s *MySQLSet) Add(g MySQLGTID) {
	s.AddRange(g.SID, g.Tag, g.GNO, g.GNO)
}

// AddRange puts the transactions start to end of (sid, tag) into the set; it
// does nothing when start > end. The tag is stored lower-case.
func (s *MySQLSet) AddRange(sid [16]byte, tag string, start, end uint64) {
	if start > end {
		return
	}
	key := tsid{sid: sid, tag: lowerTag(tag)}
	if s.d == nil {
		s.d = &mysqlSetData{byTSID: make(map[tsid]*tree)}
	}
	if s.d.hot == nil || s.d.hotKey != key {
		t := s.d.byTSID[key]
		if t == nil {
			t = &tree{}
			s.d.byTSID[key] = t
		}
		s.d.hotKey, s.d.hot = key, t
	}
	s.d.hot.add(start, end)
}

// Contains reports whether g is in the set.
func (s MySQLSet) Contains(g MySQLGTID) bool {
	if s.d == nil {
		return false
	}
	key := tsid{sid: g.SID, tag: lowerTag(g.Tag)}
	if s.d.hot != nil && s.d.hotKey == key {
		return s.d.hot.contains(g.GNO)
	}
	t := s.d.byTSID[key]
	return t != nil && t.contains(g.GNO)
}

// IsEmpty reports whether the set holds no GTID.
func (s MySQLSet) IsEmpty() bool {
	return s.d == nil || len(s.d.byTSID) == 0
}

// Clone returns an independent copy of the set.
func (s MySQLSet) Clone() MySQLSet {
	var out MySQLSet
	if s.d != nil {
		for k, t := range s.d.byTSID {
			out.put(k, Intervals{t: t}.Clone())
		}
	}
	return out
}

// put stores iv as the sequence of k, which must not be in the set yet.
func (s *MySQLSet) put(k tsid, iv Intervals) {
	if iv.IsEmpty() {
		return
	}
	if s.d == nil {
		s.d = &mysqlSetData{byTSID: make(map[tsid]*tree)}
	}
	s.d.byTSID[k] = iv.t
}

func (s MySQLSet) get(k tsid) Intervals {
	if s.d == nil {
		return Intervals{}
	}
	return Intervals{t: s.d.byTSID[k]}
}

func (s MySQLSet) each(f func(tsid, Intervals)) {
	if s.d != nil {
		for k, t := range s.d.byTSID {
			f(k, Intervals{t: t})
		}
	}
}

// Union returns the GTIDs in s or t.
func (s MySQLSet) Union(t MySQLSet) MySQLSet {
	var out MySQLSet
	s.each(func(k tsid, iv Intervals) { out.put(k, iv.Union(t.get(k))) })
	t.each(func(k tsid, iv Intervals) {
		if s.get(k).IsEmpty() {
			out.put(k, iv.Clone())
		}
	})
	return out
}

// Subtract returns the GTIDs in s that are not in t.
func (s MySQLSet) Subtract(t MySQLSet) MySQLSet {
	var out MySQLSet
	s.each(func(k tsid, iv Intervals) {
		if cut := t.get(k); cut.IsEmpty() {
			out.put(k, iv.Clone())
		} else {
			out.put(k, iv.Subtract(cut))
		}
	})
	return out
}

// Intersect returns the GTIDs in both s and t.
func (s MySQLSet) Intersect(t MySQLSet) MySQLSet {
	var out MySQLSet
	s.each(func(k tsid, iv Intervals) {
		if other := t.get(k); !other.IsEmpty() {
			out.put(k, iv.Intersect(other))
		}
	})
	return out
}

// Equal reports whether s and t hold the same GTIDs.
func (s MySQLSet) Equal(t MySQLSet) bool {
	n := 0
	if s.d != nil {
		n = len(s.d.byTSID)
	}
	m := 0
	if t.d != nil {
		m = len(t.d.byTSID)
	}
	if n != m {
		return false
	}
	equal := true
	s.each(func(k tsid, iv Intervals) {
		equal = equal && iv.Equal(t.get(k))
	})
	return equal
}

// lowerTag returns tag in lower case, without allocating when it already is.
func lowerTag(tag string) string {
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(tag)
		}
	}
	return tag
}

// scanner reads MySQL GTID text. Its methods return what is wrong with the
// text, or "", and leave pos at the problem.
type scanner struct {
	text string
	pos  int
}

func (sc *scanner) atEnd() bool { return sc.pos >= len(sc.text) }

func (sc *scanner) peek() byte {
	if sc.atEnd() {
		return 0
	}
	return sc.text[sc.pos]
}

// skipSpace skips what MySQL counts as whitespace between tokens.
func (sc *scanner) skipSpace() {
	for !sc.atEnd() {
		switch sc.text[sc.pos] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *scanner) found() string {
	if sc.atEnd() {
		return "the end"
	}
	rest := sc.text[sc.pos:]
	if len(rest) > 12 {
		rest = rest[:12] + "..."
	}
	return strconv.Quote(rest)
}

func (sc *scanner) sid() ([16]byte, string) {
	var sid [16]byte
	const textLength = 36
	if len(sc.text)-sc.pos < textLength {
		return sid, "expected a uuid, found " + sc.found()
	}
	text := sc.text[sc.pos : sc.pos+textLength]
	n := 0
	for i := 0; i < textLength; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if text[i] != '-' {
				return sid, "expected a uuid, found " + sc.found()
			}
			continue
		}
		v, ok := hexValue(text[i])
		if !ok {
			return sid, "expected a uuid, found " + sc.found()
		}
		sid[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	sc.pos += textLength
	return sid, ""
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isTagStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (sc *scanner) tag() (string, string) {
	start := sc.pos
	for !sc.atEnd() && (isTagStart(sc.peek()) || isDigit(sc.peek())) {
		sc.pos++
	}
	if sc.pos-start > MaxMySQLTagLength {
		sc.pos = start
		return "", fmt.Sprintf("tag is longer than %d characters", MaxMySQLTagLength)
	}
	return lowerTag(sc.text[start:sc.pos]), ""
}

func (sc *scanner) gno() (uint64, string) {
	start := sc.pos
	for !sc.atEnd() && isDigit(sc.peek()) {
		sc.pos++
	}
	if start == sc.pos {
		return 0, "expected a transaction number, found " + sc.found()
	}
	digits := sc.text[start:sc.pos]
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > MaxMySQLGNO {
		sc.pos = start
		return 0, fmt.Sprintf("transaction number %s is out of range (max %d)", digits, uint64(MaxMySQLGNO))
	}
	if n == 0 {
		sc.pos = start
		return 0, "transaction number 0 is not allowed (they start at 1)"
	}
	return n, ""
}

// gtid reads a whole text as one GTID.
func (sc *scanner) gtid() (MySQLGTID, string) {
	var g MySQLGTID
	sc.skipSpace()
	sid, problem := sc.sid()
	if problem != "" {
		return g, problem
	}
	g.SID = sid
	if problem := sc.colon(); problem != "" {
		return g, problem
	}
	if isTagStart(sc.peek()) {
		if g.Tag, problem = sc.tag(); problem != "" {
			return g, problem
		}
		if problem := sc.colon(); problem != "" {
			return g, problem
		}
	}
	if g.GNO, problem = sc.gno(); problem != "" {
		return g, problem
	}
	sc.skipSpace()
	if !sc.atEnd() {
		return g, "unexpected " + sc.found() + " after the transaction number"
	}
	return g, ""
}

// colon reads a ':' and the whitespace around it.
func (sc *scanner) colon() string {
	sc.skipSpace()
	if sc.peek() != ':' {
		return "expected ':', found " + sc.found()
	}
	sc.pos++
	sc.skipSpace()
	return ""
}

// set reads a whole text as a GTID set.
func (sc *scanner) set() (MySQLSet, string) {
	var set MySQLSet
	for {
		sc.skipSpace()
		for sc.peek() == ',' {
			sc.pos++
			sc.skipSpace()
		}
		if sc.atEnd() {
			return set, ""
		}
		sid, problem := sc.sid()
		if problem != "" {
			return MySQLSet{}, problem
		}
		tag := ""
		sc.skipSpace()
		for sc.peek() == ':' {
			sc.pos++
			sc.skipSpace()
			switch c := sc.peek(); {
			case isDigit(c):
				start, problem := sc.gno()
				if problem != "" {
					return MySQLSet{}, problem
				}
				end := start
				sc.skipSpace()
				if sc.peek() == '-' {
					sc.pos++
					sc.skipSpace()
					at := sc.pos
					if end, problem = sc.gno(); problem != "" {
						return MySQLSet{}, problem
					}
					if end < start {
						sc.pos = at
						return MySQLSet{}, fmt.Sprintf("interval %d-%d ends before it starts", start, end)
					}
					sc.skipSpace()
				}
				set.AddRange(sid, tag, start, end)
			case isTagStart(c):
				if tag, problem = sc.tag(); problem != "" {
					return MySQLSet{}, problem
				}
				sc.skipSpace()
			default:
				return MySQLSet{}, "expected a tag or a transaction number, found " + sc.found()
			}
		}
		if !sc.atEnd() && sc.peek() != ',' {
			return MySQLSet{}, "expected ':' or ',', found " + sc.found()
		}
	}
}
