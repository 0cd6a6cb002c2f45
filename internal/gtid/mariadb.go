// This file owns MariaDB GTIDs ("domain-server-seq") and MariaDB positions,
// the per-domain last GTID that @@gtid_slave_pos and @@gtid_binlog_pos hold.
//
// Invariant: a MariaDBPosition holds at most one GTID per domain, sorted by
// domain, in its inline array while there are at most inlineDomains of them
// and in spill otherwise; spill is never written after it is made, so copies
// of a position never see each other's changes.

package gtid

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MariaDBGTID is one MariaDB global transaction id.
type MariaDBGTID struct {
	Domain uint32
	Server uint32
	Seq    uint64
}

// ParseMariaDBGTID reads "domain-server-seq", e.g. "0-1-51253".
func ParseMariaDBGTID(s string) (MariaDBGTID, error) {
	g, problem := parseMariaDBGTID(strings.TrimSpace(s))
	if problem != "" {
		return MariaDBGTID{}, fmt.Errorf("gtid: bad MariaDB GTID %s: %s", quoteInput(s), problem)
	}
	return g, nil
}

// parseMariaDBGTID returns the GTID in s, or what is wrong with s.
func parseMariaDBGTID(s string) (MariaDBGTID, string) {
	domainText, rest, hasServer := strings.Cut(s, "-")
	domain, problem := parseDecimal(domainText, 32, "domain")
	if problem != "" {
		return MariaDBGTID{}, problem
	}
	if !hasServer {
		return MariaDBGTID{}, "missing server id"
	}
	serverText, seqText, hasSeq := strings.Cut(rest, "-")
	server, problem := parseDecimal(serverText, 32, "server id")
	if problem != "" {
		return MariaDBGTID{}, problem
	}
	if !hasSeq {
		return MariaDBGTID{}, "missing sequence number"
	}
	seq, problem := parseDecimal(seqText, 64, "sequence number")
	if problem != "" {
		return MariaDBGTID{}, problem
	}
	return MariaDBGTID{Domain: uint32(domain), Server: uint32(server), Seq: seq}, ""
}

// parseDecimal reads an unsigned decimal of at most bitSize bits, returning
// what is wrong with it, naming it as what.
func parseDecimal(s string, bitSize int, what string) (uint64, string) {
	if s == "" {
		return 0, what + " is missing"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, what + " is not a number"
		}
	}
	n, err := strconv.ParseUint(s, 10, bitSize)
	if err != nil {
		return 0, fmt.Sprintf("%s %s is out of range (max %d)", what, s, uint64(1)<<bitSize-1)
	}
	return n, ""
}

// String prints "domain-server-seq".
func (g MariaDBGTID) String() string {
	return string(g.appendText(make([]byte, 0, 32)))
}

func (g MariaDBGTID) appendText(b []byte) []byte {
	b = strconv.AppendUint(b, uint64(g.Domain), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(g.Server), 10)
	b = append(b, '-')
	return strconv.AppendUint(b, g.Seq, 10)
}

// inlineDomains is how many domains a MariaDBPosition holds without
// allocating; most replication topologies use one or two.
const inlineDomains = 4

// MariaDBPosition is, per replication domain, the last GTID applied: what
// @@gtid_slave_pos and @@gtid_binlog_pos hold. The zero value is the empty
// position. It is a value: assigning or passing it copies it, and changing
// one copy never changes another. Changing a position with more than
// inlineDomains domains allocates.
type MariaDBPosition struct {
	n      int
	inline [inlineDomains]MariaDBGTID
	spill  []MariaDBGTID
}

// list is the position's GTIDs sorted by domain; callers must not write to it.
func (p *MariaDBPosition) list() []MariaDBGTID {
	if p.n <= inlineDomains {
		return p.inline[:p.n]
	}
	return p.spill
}

func (p *MariaDBPosition) find(domain uint32) (int, bool) {
	return slices.BinarySearchFunc(p.list(), domain, func(g MariaDBGTID, d uint32) int {
		switch {
		case g.Domain < d:
			return -1
		case g.Domain > d:
			return 1
		}
		return 0
	})
}

// ParseMariaDBPosition reads a comma-separated list of GTIDs with at most one
// per domain, e.g. "0-1-51253,1-1-10"; spaces around commas are allowed and
// "" is the empty position.
func ParseMariaDBPosition(s string) (MariaDBPosition, error) {
	var p MariaDBPosition
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	element := 0
	for text := range strings.SplitSeq(s, ",") {
		element++
		text = strings.TrimSpace(text)
		if text == "" {
			return MariaDBPosition{}, fmt.Errorf("gtid: bad MariaDB position %s: GTID %d is empty", quoteInput(s), element)
		}
		g, problem := parseMariaDBGTID(text)
		if problem != "" {
			return MariaDBPosition{}, fmt.Errorf("gtid: bad MariaDB position %s: GTID %q: %s", quoteInput(s), text, problem)
		}
		if _, dup := p.find(g.Domain); dup {
			return MariaDBPosition{}, fmt.Errorf("gtid: bad MariaDB position %s: domain %d appears twice", quoteInput(s), g.Domain)
		}
		p.Advance(g)
	}
	return p, nil
}

// String prints the GTIDs sorted by domain and joined by ",", "" when empty.
func (p MariaDBPosition) String() string {
	b := make([]byte, 0, 24*p.n)
	for i, g := range p.list() {
		if i > 0 {
			b = append(b, ',')
		}
		b = g.appendText(b)
	}
	return string(b)
}

// Advance makes g the last GTID of its domain.
func (p *MariaDBPosition) Advance(g MariaDBGTID) {
	i, found := p.find(g.Domain)
	switch {
	case found && p.n <= inlineDomains:
		p.inline[i] = g
	case found:
		spill := slices.Clone(p.spill)
		spill[i] = g
		p.spill = spill
	case p.n < inlineDomains:
		copy(p.inline[i+1:p.n+1], p.inline[i:p.n])
		p.inline[i] = g
		p.n++
	default:
		spill := make([]MariaDBGTID, 0, p.n+1)
		spill = append(spill, p.list()[:i]...)
		spill = append(spill, g)
		spill = append(spill, p.list()[i:]...)
		p.spill = spill
		p.inline = [inlineDomains]MariaDBGTID{}
		p.n++
	}
}

// Get returns the last GTID of domain.
func (p MariaDBPosition) Get(domain uint32) (MariaDBGTID, bool) {
	if i, found := p.find(domain); found {
		return p.list()[i], true
	}
	return MariaDBGTID{}, false
}

// Contains reports whether g is at or before its domain's last GTID. As in
// MariaDB, the server id takes no part, and a domain p lacks contains nothing.
func (p MariaDBPosition) Contains(g MariaDBGTID) bool {
	last, ok := p.Get(g.Domain)
	return ok && g.Seq <= last.Seq
}

// Covers reports whether p contains the last GTID of every domain of q.
func (p MariaDBPosition) Covers(q MariaDBPosition) bool {
	for _, g := range q.list() {
		if !p.Contains(g) {
			return false
		}
	}
	return true
}

// Domains returns the domains, sorted.
func (p MariaDBPosition) Domains() []uint32 {
	out := make([]uint32, 0, p.n)
	for _, g := range p.list() {
		out = append(out, g.Domain)
	}
	return out
}

// GTIDs returns the last GTID of every domain, sorted by domain.
func (p MariaDBPosition) GTIDs() []MariaDBGTID {
	return slices.Clone(p.list())
}

// Len is the number of domains.
func (p MariaDBPosition) Len() int { return p.n }

// IsEmpty reports whether p has no domain.
func (p MariaDBPosition) IsEmpty() bool { return p.n == 0 }

// Clone returns a copy of p; a plain assignment is just as independent.
func (p MariaDBPosition) Clone() MariaDBPosition { return p }

// Equal reports whether p and q hold the same GTID for every domain.
func (p MariaDBPosition) Equal(q MariaDBPosition) bool {
	return slices.Equal(p.list(), q.list())
}
