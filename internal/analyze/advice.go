// advice.go turns a report into things the user can change: the policy and
// worker count to run with, the source's group commit settings, the tables
// that need a primary key, and the binlog settings that cost parallelism.
//
// Invariant: every piece of advice names a setting, a table or a command,
// and the evidence in the report it rests on.
package analyze

import (
	"fmt"
	"strings"
	"time"
)

// policyPreference breaks ties between policies: the coarser, the safer.
var policyPreference = []string{"commit-id", "schema", "domain", "writeset"}

func advise(r *Report) []string {
	if r.Transactions == 0 {
		return []string{"the input holds no transactions: nothing to advise"}
	}
	var out []string
	best := bestPolicy(r)
	if best != nil {
		line := fmt.Sprintf("run gapless replicate --policy %s --workers %d: predicted %.1fx serial apply", best.Name, best.BestWorkers, best.BestSpeedup)
		var others []string
		for _, p := range r.Policies {
			if p.Name != best.Name {
				others = append(others, fmt.Sprintf("%s %.1fx", p.Name, p.Speedup[workersKey(best.BestWorkers)]))
			}
		}
		if len(others) > 0 {
			line += " (at the same workers: " + strings.Join(others, ", ") + ")"
		}
		out = append(out, line)
		capacity := r.CostModel.Capacity
		switch {
		case capacity > 0 && best.BestSpeedup >= 0.8*capacity:
			out = append(out, fmt.Sprintf("the target's capacity (%.2f transactions at once, from the cost model) bounds the speedup: more workers will not help, more cores on the target (or gapless on another host) will", capacity))
		case best.BestSpeedup < 1.5 && r.Batch > 1:
			out = append(out, fmt.Sprintf("the stream is close to serial under every policy: more workers will not help; see the reasons above. With batches of up to %d transactions (replicate's --batch), a batch's members that wait for an earlier batch run after it, and the others ahead of them; batching is then what gains: one worker commits up to %d times less often", r.Batch, r.Batch))
		case best.BestSpeedup < 1.5:
			out = append(out, "the stream is close to serial under every policy: more workers will not help; see the reasons above")
		}
		if best.TurnWaitShare > 0.3 {
			out = append(out, fmt.Sprintf("under %s, workers spend %.0f%% of their time waiting for their commit turn (strict commit order): the serial COMMIT (%.0fµs modelled) or long transactions ahead bound the speedup", best.Name, 100*best.TurnWaitShare, r.CostModel.CommitUS))
		}
		if best.Name == "writeset" && r.Keys == KeysNone {
			out = append(out, "writeset saw no row keys: start the source with binlog_row_metadata=FULL, or pass --schema-from URL, and analyze again")
		}
	}
	out = append(out, groupCommitAdvice(r, best)...)
	if len(r.TablesWithoutPK) > 0 {
		var names []string
		for i, t := range r.TablesWithoutPK {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(r.TablesWithoutPK)-5))
				break
			}
			names = append(names, fmt.Sprintf("%s (%d transactions)", t.Name, t.Transactions))
		}
		out = append(out, "add a primary key to "+strings.Join(names, ", ")+": without one, writeset applies a table's transactions one at a time")
	}
	for _, b := range r.Barriers {
		switch b.Note {
		case "statement":
			out = append(out, fmt.Sprintf("%d transactions were logged as statements: set binlog_format=ROW on the source so they can run in parallel", b.Transactions))
		case "skip-parallel":
			out = append(out, fmt.Sprintf("%d transactions were written with skip_parallel_replication=ON: unset it where it is not needed", b.Transactions))
		case "ddl":
			if float64(b.Transactions) > 0.01*float64(r.Transactions) {
				out = append(out, fmt.Sprintf("%s (%.1f%% of transactions) each empty the pipeline: batch schema changes", plural(b.Transactions, "DDL statement"), 100*float64(b.Transactions)/float64(r.Transactions)))
			}
		}
	}
	if r.PartialRowImages > 0 {
		out = append(out, fmt.Sprintf("%d transactions have row images without every column: set binlog_row_image=FULL, or writeset falls back to whole tables", r.PartialRowImages))
	}
	if len(r.ForeignKeyTables) > 0 {
		out = append(out, fmt.Sprintf("%d tables with foreign keys share one lock under writeset: their transactions run one at a time", len(r.ForeignKeyTables)))
	}
	if best != nil && len(best.HeldBack) > 0 {
		h := best.HeldBack[0]
		out = append(out, fmt.Sprintf("transaction %s (%s, %s) kept %s waiting for their commit turn at %d workers: split large transactions on the source", h.GTID, bytesText(int64(h.Bytes)), plural(h.Rows, "row"), plural(h.Transactions, "transaction"), r.ReferenceWorkers))
	}
	if len(r.Domains) == 1 {
		if p := r.policy("domain"); p != nil {
			out = append(out, "the stream has one GTID domain, so the domain policy is serial: give independent applications their own gtid_domain_id to use it")
		}
	}
	return out
}

// bestPolicy is the one with the highest speedup; ties go to the safer one.
func bestPolicy(r *Report) *PolicyResult {
	var best *PolicyResult
	for _, name := range policyPreference {
		p := r.policy(name)
		if p == nil {
			continue
		}
		if best == nil || p.BestSpeedup > best.BestSpeedup*1.05 {
			best = p
		}
	}
	return best
}

// maxCommitWait is the longest commit delay advised on a primary.
const maxCommitWait = 10 * time.Millisecond

// groupCommitAdvice sizes the source's group commit so that commit-id (and
// MariaDB's or MySQL's own parallel replicas) find groups worth running in
// parallel.
func groupCommitAdvice(r *Report, best *PolicyResult) []string {
	want := 8
	if best != nil && best.BestWorkers > 1 {
		want = min(best.BestWorkers, 16)
	}
	rate := r.CommitRate.MedianPerSecond
	mean := r.GroupCommit.MeanSize
	if mean >= float64(want)*0.8 {
		return []string{fmt.Sprintf("the source's commit groups already hold %.1f transactions on average: its group commit needs no change", mean)}
	}
	writers := r.CommitRate.Writers
	if writers > 0 && writers < 1.5 {
		return []string{"the source commits from one connection at a time: group commit cannot form groups (waiting would only slow the primary); use writeset, which does not need them"}
	}
	if rate <= 0 {
		return nil
	}
	count := want
	if writers > 1 && float64(count) > writers {
		count = int(writers)
	}
	// Wait long enough for count commits to arrive at the observed rate, within reason.
	wait := time.Duration(float64(count) / rate * float64(time.Second))
	wait = min(max(wait, 100*time.Microsecond), maxCommitWait).Round(100 * time.Microsecond)
	expected := max(1, min(float64(count), rate*wait.Seconds()))
	condition := ""
	if writers == 0 {
		condition = fmt.Sprintf(" (groups form only if %d connections commit at once; the binlog does not say how many write)", count)
	}
	usec := wait.Microseconds()
	if r.Flavor == "mysql" {
		return []string{fmt.Sprintf("source commit groups average %.1f transactions at %.0f commits/s: for commit-id (and MySQL's own parallel replica), set binlog_group_commit_sync_delay=%d and binlog_group_commit_sync_no_delay_count=%d on the primary, which adds up to %s to each commit, for groups of about %.0f%s; or set binlog_transaction_dependency_tracking=WRITESET (MySQL 8.0; the default from 8.4), which needs no delay",
			mean, rate, usec, count, wait, expected, condition)}
	}
	return []string{fmt.Sprintf("source commit groups average %.1f transactions at %.0f commits/s: for commit-id (and MariaDB's own parallel replica), set binlog_commit_wait_count=%d and binlog_commit_wait_usec=%d on the primary, which adds up to %s to each commit, for groups of about %.0f%s",
		mean, rate, count, usec, wait, expected, condition)}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
