// position.go keeps the run's gap-less position: the highest point at and
// below which every group is committed, moved only by advance, in
// group-index order; and what the run knows of groups past it (applied by
// a run before without their positions, or past a gap under causal order).
package apply

import (
	"fmt"
	"slices"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/target"
)

// advance moves the gap-less position over the transactions committed in
// group-index order.
func (r *Replica) advance(committed map[int64]*binlog.Transaction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		txn, ok := committed[r.positionGI+1]
		if !ok {
			return
		}
		delete(committed, r.positionGI+1)
		r.positionGI++
		r.position.Advance(txn.MariaDB)
		r.lastSource = txn.SourceTime
		if len(r.ahead) > 0 && slices.ContainsFunc(r.ahead, r.position.Contains) {
			r.ahead = slices.DeleteFunc(slices.Clone(r.ahead), r.position.Contains)
		}
	}
}

// appliedIn notes that this run committed a transaction of domain d.
func (r *Replica) appliedIn(d uint32) {
	if !r.hasApplied(d) {
		r.domainsApplied.Store(d, true)
	}
}

// appliedBefore reports whether j is a group the run before applied
// without writing its position: the target's binlog holds its domain up
// to a GTID past it (through), and every group of the domain up to there
// must be one that applies alone, the last one that GTID. Anything else
// there is not gapless's: the run stops rather than skip or apply it.
func (r *Replica) appliedBefore(j *job) (bool, error) {
	v, ok := r.through.Load(j.txns[0].MariaDB.Domain)
	if !ok {
		return false, nil
	}
	through := v.(gtid.MariaDBGTID)
	for _, txn := range j.txns {
		g := txn.MariaDB
		switch {
		case g.Seq > through.Seq:
			continue
		case len(j.txns) > 1 || !target.AppliesAlone(txn) || g.Seq == through.Seq && g != through:
			return false, fmt.Errorf("the target's binlog holds %s, past %s, which gapless has not applied: the run before left groups applied without their positions, but %s is not one of them; something besides this stream writes GTID domain %d on the target, and applying or skipping could both be wrong, so gapless stops (check the target's binlog)", through, g, g, g.Domain)
		}
		return true, nil
	}
	return false, nil
}

// passThrough forgets the groups of txn's domain the run before applied
// without their positions once txn, committed, is past them.
func (r *Replica) passThrough(txn *binlog.Transaction) {
	if v, ok := r.through.Load(txn.MariaDB.Domain); ok && txn.MariaDB.Seq >= v.(gtid.MariaDBGTID).Seq {
		r.through.Delete(txn.MariaDB.Domain)
	}
}

// hasApplied reports whether this run committed a transaction of domain d.
// guardedGroup is a group whose position was written only because the
// target's binlog held no GTID of its domain past it.
type guardedGroup struct {
	gi     int64
	domain uint32
}

// followsGuarded reports whether the group at gi, of domain d, comes right
// after a group whose guarded position proved that the target's binlog
// held nothing of d past it: nothing of this stream has binlogged in d
// since, so the group at gi is not there.
func (r *Replica) followsGuarded(gi int64, d uint32) bool {
	g := r.guarded.Load()
	return g != nil && g.gi == gi-1 && g.domain == d
}

func (r *Replica) hasApplied(d uint32) bool {
	_, ok := r.domainsApplied.Load(d)
	return ok
}

// gapless returns the gap-less position, the group index it stands at, and
// the groups past it that a run before applied (Replica.ahead).
func (r *Replica) gapless() (int64, gtid.MariaDBPosition, []gtid.MariaDBGTID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.positionGI, r.position.Clone(), r.ahead
}

// listsAbove reports whether position rows list the groups their slot
// committed above the gap-less position: under causal commit order, and
// while groups that a run before applied past a gap are ahead of it.
func (r *Replica) listsAbove() bool {
	if r.cfg.CommitOrder == Causal {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ahead) > 0
}

func (r *Replica) currentPosition() gtid.MariaDBPosition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.position.Clone()
}

func (r *Replica) untilReached() bool {
	if r.cfg.Until == nil {
		return false
	}
	return r.currentPosition().Covers(*r.cfg.Until)
}

// untilAfter reports whether txn is the last transaction --until asks for.
func (r *Replica) untilAfter(txn *binlog.Transaction) bool {
	if r.cfg.Until == nil {
		return false
	}
	g, ok := r.cfg.Until.Get(txn.MariaDB.Domain)
	return ok && txn.MariaDB.Seq >= g.Seq && len(r.cfg.Until.Domains()) == 1
}
