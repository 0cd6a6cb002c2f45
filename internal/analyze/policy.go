// policy.go runs one dependency policy (the real schedule.Policy) over the
// transactions and feeds its answers to one simulator per worker count; for
// the writeset policy it also finds which tables and keys made transactions
// wait.
//
// Invariant: the policy is told a transaction committed only once it has
// committed in every simulation, which under strict commit order is true of
// gi-window when gi is admitted (window = the most workers simulated), so the
// policy's answers are the coordinator's for every worker count.
package analyze

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
	"gapless/internal/schedule"
)

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
	window  int64
	sims    []*simulator
	links   [ringSize]chainLink
	longest int32
	longIDs [2]txnID

	// recent holds the last window transactions, for the writeset waits.
	recent  []*txnInfo
	waits   *waitCounter
	warning string
	err     error
}

func newPolicyRun(name string, lookup *keyLookup, workers []int, reference int) (*policyRun, error) {
	p, err := schedule.New(name, lookup)
	if err != nil {
		return nil, err
	}
	r := &policyRun{name: name, policy: p, lookup: lookup}
	for _, w := range workers {
		s := newSimulator(w)
		if w == reference {
			s.blame = &blameTracker{keep: 5, minWait: 1000, window: int64(w)}
		}
		r.sims = append(r.sims, s)
		r.window = max(r.window, int64(w))
	}
	if ws, ok := p.(*schedule.Writeset); ok {
		ws.Warn = func(msg string) { r.warning = msg }
		r.recent = make([]*txnInfo, r.window)
		r.waits = newWaitCounter()
	}
	return r, nil
}

func (r *policyRun) admit(t *txnInfo) error {
	if t.gi > r.window {
		r.policy.Committed(t.gi - r.window)
	}
	r.lookup.current = t
	deps, err := r.policy.Admit(t.gi, t.txn)
	if err != nil {
		return fmt.Errorf("%s policy: transaction %s (%s at byte %d): %w", r.name, t.txn.GTID(), t.file, t.pos, err)
	}
	barrier := r.policy.Barrier()
	for _, s := range r.sims {
		s.step(t.gi, deps, t.execCost, t.commit, barrier, t)
	}
	r.chain(t, deps)
	if r.waits != nil {
		r.attribute(t, deps, barrier)
		r.recent[t.gi%r.window] = t
	}
	return nil
}

func (r *policyRun) chain(t *txnInfo, deps schedule.Deps) {
	var longest *chainLink
	for _, d := range deps {
		if d >= t.gi || t.gi-d >= ringSize {
			continue
		}
		if l := &r.links[d%ringSize]; longest == nil || l.depth > longest.depth {
			longest = l
		}
	}
	link := chainLink{depth: 1, from: idOf(t.txn)}
	if longest != nil {
		link = chainLink{depth: longest.depth + 1, from: longest.from}
	}
	r.links[t.gi%ringSize] = link
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
