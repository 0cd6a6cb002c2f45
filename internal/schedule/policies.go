// policies.go holds the policies that need no row keys: serial, commit-id,
// schema and domain.
package schedule

import (
	"hash/fnv"
	"slices"
	"strconv"

	"gapless/internal/binlog"
)

func nameHash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Serial runs one transaction at a time.
type Serial struct{ last int64 }

func NewSerial() *Serial             { return &Serial{} }
func (p *Serial) Name() string       { return "serial" }
func (p *Serial) Barrier() bool      { return false }
func (p *Serial) Committed(gi int64) {}
func (p *Serial) Admit(gi int64, _ *binlog.Transaction) (Deps, error) {
	var deps Deps
	if p.last != 0 {
		deps = Deps{p.last}
	}
	p.last = gi
	return deps, nil
}

// CommitID runs in parallel what the source committed in one group: MariaDB
// transactions with the same commit_id, or MySQL transactions whose
// last_committed is already committed. A transaction of the next group waits
// for the whole previous group.
type CommitID struct {
	ledger       *ledger
	groupID      uint64
	group, prior []int64 // the current group and the one before it
	barrier      bool
	// MySQL logical clock: group index of each sequence number of the current source binlog file.
	// pending are the uncommitted ones, in sequence order; sequence numbers
	// continue across binlog files (base is where the current file starts).
	pending       []seqGI
	lastSeq, base int64
}

type seqGI struct{ seq, gi int64 }

func NewCommitID() *CommitID      { return &CommitID{ledger: newLedger()} }
func (p *CommitID) Name() string  { return "commit-id" }
func (p *CommitID) Barrier() bool { return p.barrier }
func (p *CommitID) Committed(gi int64) {
	p.ledger.release(gi)
	switch i := slices.IndexFunc(p.pending, func(e seqGI) bool { return e.gi == gi }); {
	case i == 0:
		p.pending = p.pending[1:] // in order: see forget
	case i > 0:
		p.pending = slices.Delete(p.pending, i, i+1)
	}
}

func (p *CommitID) Admit(gi int64, txn *binlog.Transaction) (Deps, error) {
	p.barrier = isBarrier(txn)
	deps := p.ledger.admit(gi, p.barrier, nil)
	if txn.Flavor == binlog.FlavorMySQL {
		if txn.SequenceNumber <= p.lastSeq {
			p.base += p.lastSeq // a new binlog file: its last_committed 0 is everything before it
		}
		p.lastSeq = txn.SequenceNumber
		last := p.base + txn.LastCommitted
		for _, e := range p.pending {
			if e.seq > last {
				break
			}
			deps = append(deps, e.gi)
		}
		p.pending = append(p.pending, seqGI{p.base + txn.SequenceNumber, gi})
		return tidy(deps), nil
	}
	if txn.CommitID == 0 || txn.CommitID != p.groupID || p.barrier {
		p.prior, p.group = p.group, nil
		p.groupID = txn.CommitID
	}
	p.group = append(p.group, gi)
	deps = append(deps, p.prior...)
	return tidy(deps), nil
}

// Schema runs transactions on different databases in parallel.
type Schema struct {
	ledger  *ledger
	barrier bool
}

func NewSchema() *Schema             { return &Schema{ledger: newLedger()} }
func (p *Schema) Name() string       { return "schema" }
func (p *Schema) Barrier() bool      { return p.barrier }
func (p *Schema) Committed(gi int64) { p.ledger.release(gi) }
func (p *Schema) Admit(gi int64, txn *binlog.Transaction) (Deps, error) {
	p.barrier = isBarrier(txn) || len(txn.Schemas) == 0
	deps := p.ledger.admit(gi, p.barrier, nil)
	for _, s := range txn.Schemas {
		deps = p.ledger.take(gi, nameHash("schema", s), true, deps)
	}
	return tidy(deps), nil
}

// Domain runs each GTID domain as its own in-order stream, the domains
// independent of each other.
type Domain struct{ ledger *ledger }

func NewDomain() *Domain             { return &Domain{ledger: newLedger()} }
func (p *Domain) Name() string       { return "domain" }
func (p *Domain) Barrier() bool      { return false }
func (p *Domain) Committed(gi int64) { p.ledger.release(gi) }
func (p *Domain) Admit(gi int64, txn *binlog.Transaction) (Deps, error) {
	key := nameHash("domain", string(txn.MySQL.SID[:]), txn.MySQL.Tag)
	if txn.Flavor == binlog.FlavorMariaDB {
		key = nameHash("domain", strconv.FormatUint(uint64(txn.MariaDB.Domain), 10))
	}
	deps := p.ledger.take(gi, key, true, nil)
	p.ledger.uncommitted = append(p.ledger.uncommitted, gi)
	return tidy(deps), nil
}
