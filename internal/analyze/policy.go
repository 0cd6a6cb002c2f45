// policy.go runs one dependency policy (the real schedule.Policy) over the
// transactions, cuts them into batches as the coordinator does, and feeds
// the batches to one simulator per worker count; for the writeset policy it
// also finds which tables and keys made transactions wait.
//
// Invariant: the policy is told a transaction committed only once it has
// committed in every simulation. Under strict commit order, when batch n is
// dispatched, batch n-workers has committed, and batches hold at most
// --batch transactions, so gi-lag has committed when gi is admitted (lag =
// the most workers simulated × batch): the policy's answers are the
// coordinator's, or name transactions already committed, which costs no
// simulated time.
package analyze

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
	"gapless/internal/target"
)

// targetBatchBytes bounds the source bytes of one batch, as the coordinator's
// (internal/apply) does: a batch closes once it holds this much.
const targetBatchBytes = 4 << 20

// Chain is the longest run of transactions each waiting for the one before.
type Chain struct {
	Length int    `json:"length"`
	From   string `json:"from"`
	To     string `json:"to"`
}

type chainLink struct {
	depth int32
	from  txnID
}

// policyRun is one policy and its simulations.
type policyRun struct {
	name    string
	policy  schedule.Policy
	lookup  *keyLookup
	window  int64 // the most workers simulated: the transactions a wait is attributed within
	lag     int64 // how far behind admission the policy is told of commits
	ring    int64
	sims    []*simulator
	links   []chainLink
	longest int32
	longIDs [2]txnID

	batchMax int
	txnCost  float64  // µs per target transaction: a batch pays it once
	open     simBatch // the batch being gathered; empty when open.heaviest is nil
	members  int

	// recent holds the last window transactions, for the writeset waits.
	recent  []*txnInfo
	waits   *waitCounter
	warning string
	err     error
}

func newPolicyRun(name string, lookup *keyLookup, opts Options) (*policyRun, error) {
	p, err := schedule.New(name, lookup)
	if err != nil {
		return nil, err
	}
	maxWorkers := opts.Workers[len(opts.Workers)-1]
	r := &policyRun{name: name, policy: p, lookup: lookup, batchMax: opts.Batch, txnCost: micros(opts.Cost.Txn),
		window: int64(maxWorkers), lag: int64(maxWorkers) * int64(opts.Batch), ring: ringSize(maxWorkers, opts.Batch)}
	r.links = make([]chainLink, r.ring)
	for _, w := range opts.Workers {
		s := newSimulator(w, r.ring, opts.Cost.capacityAt(w))
		if w == opts.ReferenceWorkers {
			s.blame = &blameTracker{keep: 5, minWait: 1000, window: int64(w)}
		}
		r.sims = append(r.sims, s)
	}
	if ws, ok := p.(*schedule.Writeset); ok {
		ws.Warn = func(msg string) { r.warning = msg }
		r.recent = make([]*txnInfo, r.window)
		r.waits = newWaitCounter()
	}
	return r, nil
}

func (r *policyRun) admit(t *txnInfo) error {
	if !r.joins(t) {
		r.closeBatch()
	}
	if t.gi > r.lag {
		r.policy.Committed(t.gi - r.lag)
	}
	r.lookup.current = t
	deps, err := r.policy.Admit(t.gi, t.txn)
	if err != nil {
		return fmt.Errorf("%s policy: transaction %s (%s at byte %d): %w", r.name, t.txn.GTID(), t.file, t.pos, err)
	}
	barrier := r.policy.Barrier()
	r.gather(t, deps, barrier)
	r.chain(t, deps)
	if r.waits != nil {
		r.attribute(t, deps, barrier)
		r.recent[t.gi%r.window] = t
	}
	return nil
}

// joins reports whether t goes into the open batch: the rule of the
// coordinator's gather, for a queue that is never empty.
func (r *policyRun) joins(t *txnInfo) bool {
	b := &r.open
	if b.heaviest == nil {
		return true // it opens one
	}
	first := b.heaviest.txn // any member will do for the domain, format and kind
	joins := target.Joiner(first)
	return joins != nil && joins(t.txn) && t.txn.MariaDB.Domain == first.MariaDB.Domain &&
		target.NeedsStatementSession(t.txn) == target.NeedsStatementSession(first) &&
		bytes.Equal(t.txn.Format.Raw, first.Format.Raw)
}

// gather adds t to the open batch, and closes the batch when it is full or
// t cannot share it with what follows.
func (r *policyRun) gather(t *txnInfo, deps schedule.Deps, barrier bool) {
	b := &r.open
	if b.heaviest == nil {
		*b = simBatch{first: t.gi, deps: b.deps[:0], exec: t.execCost, commit: t.commit, heaviest: t, members: b.members[:0]}
	} else {
		b.exec += t.execCost - r.txnCost
		if target.FollowsAlone(t.txn) {
			// Each group of a run applied alone commits on its own; the
			// run shares its round trips.
			b.commit += t.commit
		}
		if t.execCost > b.heaviest.execCost {
			b.heaviest = t
		}
	}
	r.members++
	b.last, b.barrier = t.gi, barrier
	b.size += t.txn.Size
	for _, d := range deps {
		if d < b.first && !slices.Contains(b.deps, d) {
			b.deps = append(b.deps, d)
		}
	}
	if b.members != nil || r.members == 1 {
		b.members = r.member(b, t, deps)
	}
	if r.members >= r.batchMax || b.size >= targetBatchBytes || target.Joiner(t.txn) == nil {
		r.closeBatch()
	}
}

// member adds t to the members of the open batch b, or returns nil when
// the batch's members may not run ahead: those of the statement session,
// as the workers' (rowTransactions).
func (r *policyRun) member(b *simBatch, t *txnInfo, deps schedule.Deps) []simMember {
	if target.NeedsStatementSession(t.txn) {
		return nil
	}
	members := b.members
	if len(members) < cap(members) {
		members = members[:len(members)+1]
	} else {
		members = append(members, simMember{})
	}
	m := &members[len(members)-1]
	m.exec = t.execCost - r.txnCost // the batch's own cost goes with the part run ahead
	m.outside, m.inside = split(b.first, deps, m.outside[:0], m.inside[:0])
	m.statements = r.statements(b, t, m.statements[:0])
	return members
}

// split divides deps into those before first, outside the batch, and
// those inside, by member index.
func split(first int64, deps schedule.Deps, outside []int64, inside []int32) ([]int64, []int32) {
	for _, d := range deps {
		if d < first {
			outside = append(outside, d)
		} else {
			inside = append(inside, int32(d-first))
		}
	}
	return outside, inside
}

// statements are the row statements of t, the transaction the policy took
// last, as the coordinator's cut tells them apart (schedule.Steps), each
// with its share of t's bytes; nil when the policy does not tell them
// apart, or t holds statements.
func (r *policyRun) statements(b *simBatch, t *txnInfo, room []simStatement) []simStatement {
	ws, ok := r.policy.(*schedule.Writeset)
	if !ok || target.HasStatements(t.txn) {
		return nil
	}
	steps := ws.Steps()
	if steps == nil {
		return nil
	}
	all := steps.Deps[:steps.All]
	sts := room
	bytes := 0
	for k, st := range steps.Statements {
		if len(sts) < cap(sts) {
			sts = sts[:len(sts)+1]
		} else {
			sts = append(sts, simStatement{})
		}
		s := &sts[len(sts)-1]
		s.outside, s.inside = split(b.first, all, s.outside[:0], s.inside[:0])
		s.outside, s.inside = split(b.first, steps.DepsOf(k), s.outside, s.inside)
		s.taken = append(s.taken[:0], steps.TakenOf(k)...)
		s.share = 0
		for _, ev := range t.txn.Events[st.From:st.To] {
			s.share += float64(len(ev.Raw))
		}
		bytes += int(s.share)
	}
	for i := range sts {
		if bytes > 0 {
			sts[i].share /= float64(bytes)
		} else {
			sts[i].share = 1 / float64(len(sts))
		}
	}
	return sts
}

// closeBatch runs the open batch through every simulation.
func (r *policyRun) closeBatch() {
	if r.open.heaviest == nil {
		return
	}
	for _, s := range r.sims {
		s.step(&r.open)
	}
	r.open.heaviest, r.open.size, r.members = nil, 0, 0
}

func (r *policyRun) chain(t *txnInfo, deps schedule.Deps) {
	var longest *chainLink
	for _, d := range deps {
		// Within the window only, as attribute counts waits: the policy
		// also names older transactions, which have committed by then.
		if d >= t.gi || t.gi-d >= r.window {
			continue
		}
		if l := &r.links[d%r.ring]; longest == nil || l.depth > longest.depth {
			longest = l
		}
	}
	link := chainLink{depth: 1, from: idOf(t.txn)}
	if longest != nil {
		link = chainLink{depth: longest.depth + 1, from: longest.from}
	}
	r.links[t.gi%r.ring] = link
	if link.depth > r.longest {
		r.longest = link.depth
		r.longIDs = [2]txnID{link.from, idOf(t.txn)}
	}
}

// longestChain returns the longest dependency chain seen.
func (r *policyRun) longestChain() Chain {
	return Chain{Length: int(r.longest), From: r.longIDs[0].String(), To: r.longIDs[1].String()}
}

// txnID is a transaction's GTID, kept without formatting it.
type txnID struct {
	flavor  binlog.Flavor
	mariaDB gtid.MariaDBGTID
	mySQL   gtid.MySQLGTID
}

func idOf(txn *binlog.Transaction) txnID {
	return txnID{flavor: txn.Flavor, mariaDB: txn.MariaDB, mySQL: txn.MySQL}
}

func (id txnID) String() string {
	if id.flavor == binlog.FlavorMySQL {
		return id.mySQL.String()
	}
	return id.mariaDB.String()
}

func (r *policyRun) finish() {
	r.closeBatch()
	for _, s := range r.sims {
		if s.blame != nil {
			s.blame.finish()
		}
	}
}

// attribute finds why a writeset transaction waited for the earlier ones it depends on.
func (r *policyRun) attribute(t *txnInfo, deps schedule.Deps, barrier bool) {
	if barrier {
		return
	}
	tables := map[binlog.TableRef]bool{}
	keys := map[string]bool{}
	waited := false
	for _, d := range deps {
		if d >= t.gi || t.gi-d >= r.window {
			continue
		}
		prior := r.recent[d%r.window]
		if prior == nil || prior.gi != d {
			continue
		}
		waited = true
		if prior.barrier != 0 {
			r.waits.afterBarrier++
			continue
		}
		for _, ref := range t.txn.Tables {
			if !touches(prior.txn, ref) {
				continue
			}
			k, _ := r.lookup.keys(ref.Schema, ref.Table)
			if k.info == nil || len(k.info.Keys) == 0 {
				tables[ref] = true
				continue
			}
			shared := sharedKeys(rowKeyLabels(t.txn, ref, k.info), rowKeyLabels(prior.txn, ref, k.info))
			for _, label := range shared {
				keys[ref.String()+" "+label] = true
				tables[ref] = true
			}
			if len(shared) == 0 && k.info.ForeignKeys {
				r.waits.foreignKeys++
			}
		}
	}
	if !waited {
		return
	}
	r.waits.transactions++
	for ref := range tables {
		r.waits.tables[ref]++
	}
	for label := range keys {
		r.waits.addKey(label)
	}
}

func touches(txn *binlog.Transaction, ref binlog.TableRef) bool {
	for _, have := range txn.Tables {
		if have == ref {
			return true
		}
	}
	return false
}

// rowKeyLabels lists the key values a transaction writes in one table, as text.
func rowKeyLabels(txn *binlog.Transaction, ref binlog.TableRef, info *schedule.TableInfo) map[string]bool {
	out := map[string]bool{}
	for _, ev := range txn.RowEvents() {
		if ev.Table == nil || string(ev.Table.Schema) != ref.Schema || string(ev.Table.Table) != ref.Table {
			continue
		}
		for i, row := range ev.Rows {
			var skipped []int
			if i < len(ev.SkippedColumns) {
				skipped = ev.SkippedColumns[i]
			}
			for _, key := range info.Keys {
				if label, ok := keyLabel(ev.Table, key, row, skipped); ok {
					out[label] = true
				}
			}
		}
	}
	return out
}

func keyLabel(tm *replication.TableMapEvent, key schedule.UniqueKey, row []interface{}, skipped []int) (string, bool) {
	var b strings.Builder
	b.WriteString(key.Name)
	b.WriteByte('(')
	names := tm.ColumnNameString()
	for i, col := range key.Columns {
		if col >= len(row) || row[col] == nil || slices.Contains(skipped, col) {
			return "", false
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if col < len(names) {
			b.WriteString(names[col])
			b.WriteByte('=')
		}
		switch v := row[col].(type) {
		case []byte:
			fmt.Fprintf(&b, "%q", schedule.Comparable(string(v), key.Fold[i], key.Pad[i], key.Prefix[i]))
		case string:
			fmt.Fprintf(&b, "%q", schedule.Comparable(v, key.Fold[i], key.Pad[i], key.Prefix[i]))
		default:
			fmt.Fprint(&b, v)
		}
	}
	b.WriteByte(')')
	return b.String(), true
}

func sharedKeys(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if b[k] {
			out = append(out, k)
		}
	}
	return out
}

// waitCounter counts writeset waits by table and by key.
type waitCounter struct {
	transactions int
	afterBarrier int
	foreignKeys  int
	tables       map[binlog.TableRef]int
	keys         map[string]int
}

// maxKeyLabels bounds the key counter; keys seen once are dropped past it.
const maxKeyLabels = 100_000

func newWaitCounter() *waitCounter {
	return &waitCounter{tables: map[binlog.TableRef]int{}, keys: map[string]int{}}
}

func (w *waitCounter) addKey(label string) {
	w.keys[label]++
	if len(w.keys) > maxKeyLabels {
		for k, n := range w.keys {
			if n == 1 {
				delete(w.keys, k)
			}
		}
	}
}

// Count is a name and how many transactions it concerns.
type Count struct {
	Name         string `json:"name"`
	Transactions int    `json:"transactions"`
	Note         string `json:"note,omitempty"`
}

func topCounts(m map[string]int, n int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Name: k, Transactions: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Transactions != out[j].Transactions {
			return out[i].Transactions > out[j].Transactions
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
