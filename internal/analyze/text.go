// text.go prints a report for the terminal and as JSON.
//
// Invariant: the text names every number's unit, and the JSON is the Report
// value itself, so both say the same.
package analyze

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a terminal: what was read, then, when
// it held transactions, the predicted speedups, the source's commit groups,
// why parallelism is lost, and the advice.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	r.writeInput(p)
	if r.Transactions == 0 {
		return p.err
	}
	if err := r.writeSpeedup(p); err != nil {
		return err
	}
	r.writeCommitGroups(p)
	r.writeLostParallelism(p)
	r.writeAdvice(p)
	return p.err
}

// writeInput writes the heading: what was read, how much, how fast, what
// of it was left out, and where the keys came from.
func (r *Report) writeInput(p *printer) {
	p.line("gapless analyze: %s", r.Input)
	flavor := r.Flavor
	if r.ServerVersion != "" {
		flavor += " " + r.ServerVersion
	}
	span := ""
	if !r.First.IsZero() {
		span = fmt.Sprintf(", committed %s .. %s (%s)", r.First.Format(time.DateTime), r.Last.Format(time.TimeOnly), r.Last.Sub(r.First))
	}
	p.line("  %d transactions, %s, %d row changes (%s)%s", r.Transactions, bytesText(r.Bytes), r.RowChanges, flavor, span)
	p.line("  analyzed in %.1f s (%.0f MB/s)", r.Elapsed, r.MBPerSecond)
	for _, f := range r.SkippedFiles {
		p.line("  skipped %s: not a binlog file", f)
	}
	if r.Torn != "" {
		p.line("  the input ends inside an event (%s): the rest was ignored", r.Torn)
	}
	if r.IncompleteGroups > 0 {
		p.line("  the input ends inside a transaction, which was left out")
	}
	p.line("  keys: %s", r.KeysNote)
}

// writeSpeedup writes the predicted speedups: the cost model they rest on,
// the table of policies by worker count, and the policies' warnings. The
// table's error is returned; the printer keeps the others.
func (r *Report) writeSpeedup(p *printer) error {
	p.blank()
	p.line("Predicted speedup over serial apply (strict commit order)")
	capacity := "unlimited (a core per worker)"
	if r.CostModel.Capacity > 0 {
		capacity = fmt.Sprintf("%.2f transactions at once", r.CostModel.Capacity)
	}
	p.line("  cost model: COMMIT %.0fµs (serial) + per target transaction %.0fµs + per row %.0fµs + per KiB %.0fµs; batches of up to %d; target capacity %s; serial apply %s",
		r.CostModel.CommitUS, r.CostModel.TxnUS, r.CostModel.RowUS, r.CostModel.KiBUS, r.Batch, capacity, time.Duration(r.TotalCostMS*float64(time.Millisecond)).Round(time.Millisecond))
	if c := r.Calibration; c != nil {
		p.line("  calibrated on %s: %s", c.Target, c.Summary())
	}
	if err := r.writeSpeedupTable(p.w); err != nil {
		return err
	}
	for _, pol := range r.Policies {
		if pol.Warning != "" {
			p.line("  %s: %s", pol.Name, pol.Warning)
		}
	}
	return nil
}

// writeSpeedupTable writes a row per policy: its speedup at each worker
// count and its longest dependency chain, in aligned columns. It writes to
// w whatever the printer's error.
func (r *Report) writeSpeedupTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "  policy\t"
	for _, n := range r.Workers {
		header += fmt.Sprintf("%d\t", n)
	}
	fmt.Fprintln(tw, header+"longest chain\t")
	for _, pol := range r.Policies {
		row := "  " + pol.Name + "\t"
		for _, n := range r.Workers {
			row += fmt.Sprintf("%.2f\t", pol.Speedup[workersKey(n)])
		}
		fmt.Fprintln(tw, row+fmt.Sprintf("%d\t", pol.Longest.Length))
	}
	return tw.Flush()
}

// writeCommitGroups writes how the source committed: its commit groups by
// size, and its commit rate.
func (r *Report) writeCommitGroups(p *printer) {
	p.blank()
	g := r.GroupCommit
	p.line("Source commit groups (by %s): %d groups, %.2f transactions each on average", g.By, g.Groups, g.MeanSize)
	for _, b := range g.Histogram {
		if b.Groups == 0 {
			continue
		}
		p.line("  %-8s %9d groups %10d transactions  %s", bucketLabel(b), b.Groups, b.Transactions, bar(float64(b.Transactions)/float64(r.Transactions), 30))
	}
	c := r.CommitRate
	writers := "connections committing per second: unknown (the binlog does not name them)"
	if c.Writers > 0 {
		writers = fmt.Sprintf("about %.0f committing connections per second", c.Writers)
	}
	p.line("  commit rate: median %.0f/s, p95 %.0f/s over %d busy seconds; %s", c.MedianPerSecond, c.PeakPerSecond, c.BusySeconds, writers)
}

// writeLostParallelism writes the section "Why parallelism is lost", from
// what forbids running beside others to what only delays it.
func (r *Report) writeLostParallelism(p *printer) {
	p.blank()
	p.line("Why parallelism is lost")
	r.writeBarriers(p)
	r.writeTableObstacles(p)
	r.writeWritesetWaits(p)
	for _, pol := range r.Policies {
		p.line("  %s: longest dependency chain %d transactions (%s .. %s), at %d workers %.0f%% of worker time waiting for dependencies, %.0f%% for the commit turn",
			pol.Name, pol.Longest.Length, pol.Longest.From, pol.Longest.To, r.ReferenceWorkers, 100*pol.DepWaitShare, 100*pol.TurnWaitShare)
	}
	r.writeLargeTransactions(p)
	if len(r.Domains) > 1 || len(r.Schemas) > 1 {
		p.line("  domains: %s; schemas: %s", countsText(r.Domains, 5), countsText(r.Schemas, 5))
	}
}

// writeBarriers writes the kinds of transactions that run alone, each with
// its examples.
func (r *Report) writeBarriers(p *printer) {
	if len(r.Barriers) == 0 {
		p.line("  barriers: none")
	}
	for _, b := range r.Barriers {
		p.line("  barrier, runs alone: %s, %s", plural(b.Transactions, "transaction"), b.Name)
		for _, e := range r.BarrierExamples {
			if e.Kind == b.Note {
				p.line("    e.g. %s %s", e.GTID, e.Statement)
			}
		}
	}
}

// writeTableObstacles writes what in the tables and row images keeps
// writeset from telling transactions apart: no primary key, unknown keys,
// foreign keys, partial row images.
func (r *Report) writeTableObstacles(p *printer) {
	for _, t := range r.TablesWithoutPK {
		p.line("  no primary key: %s (%s)", t.Name, plural(t.Transactions, "transaction"))
	}
	if n := len(r.TablesKeysUnknown); n > 0 {
		p.line("  keys unknown for %d tables (taken whole by writeset), e.g. %s", n, r.TablesKeysUnknown[0].Name)
	}
	for _, t := range r.ForeignKeyTables {
		p.line("  foreign keys: %s (%s)", t.Name, plural(t.Transactions, "transaction"))
	}
	if r.PartialRowImages > 0 {
		p.line("  partial row images (binlog_row_image not FULL): %s", plural(r.PartialRowImages, "transaction"))
	}
}

// writeWritesetWaits writes what writeset's transactions waited for, when
// writeset was simulated: barriers, the foreign-key lock, tables and rows.
func (r *Report) writeWritesetWaits(p *printer) {
	ws := r.Waits
	if ws == nil {
		return
	}
	p.line("  writeset: %s (%.1f%%) waited for one of the %d before them", plural(ws.Transactions, "transaction"), pct(ws.Transactions, r.Transactions), r.Workers[len(r.Workers)-1])
	if ws.AfterBarrier > 0 {
		p.line("    %s for a barrier", plural(ws.AfterBarrier, "wait"))
	}
	if ws.ForeignKeys > 0 {
		p.line("    %s on the shared foreign-key lock", plural(ws.ForeignKeys, "wait"))
	}
	for _, t := range ws.ByTable {
		note := ""
		if t.Note != "" {
			note = " (" + t.Note + ")"
		}
		p.line("    table %s: %s%s", t.Name, plural(t.Transactions, "transaction"), note)
	}
	for _, k := range ws.ByKey {
		p.line("    row %s: %s", k.Name, plural(k.Transactions, "transaction"))
	}
}

// writeLargeTransactions writes the costliest transactions, and those that
// kept others waiting for their commit turn under the best policy.
func (r *Report) writeLargeTransactions(p *printer) {
	if len(r.LargeTransactions) > 0 {
		p.line("  largest transactions (modelled cost):")
		for _, l := range r.LargeTransactions {
			p.line("    %s  %s, %s, %.1f ms (%s at byte %d)", l.GTID, bytesText(int64(l.Bytes)), plural(l.Rows, "row"), l.CostMS, l.File, l.Position)
		}
	}
	if best := bestPolicy(r); best != nil && len(best.HeldBack) > 0 {
		p.line("  large transactions that kept others waiting for their commit turn (%s, %d workers):", best.Name, r.ReferenceWorkers)
		for _, h := range best.HeldBack {
			p.line("    %s  %s, %s: %s waited %.1f ms of worker time", h.GTID, bytesText(int64(h.Bytes)), plural(h.Rows, "row"), plural(h.Transactions, "transaction"), h.WaitMS)
		}
	}
}

// writeAdvice writes the advice, one item a line.
func (r *Report) writeAdvice(p *printer) {
	p.blank()
	p.line("Advice")
	for _, a := range r.Advice {
		p.line("  - %s", a)
	}
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) blank() { p.line("") }

func bucketLabel(b GroupBucket) string {
	switch {
	case b.Min == b.Max:
		return fmt.Sprint(b.Min)
	case b.Max > 1<<40:
		return fmt.Sprintf("%d+", b.Min)
	}
	return fmt.Sprintf("%d-%d", b.Min, b.Max)
}

func bar(share float64, width int) string {
	n := int(share*float64(width) + 0.5)
	return strings.Repeat("#", n)
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func countsText(cs []Count, n int) string {
	var parts []string
	for i, c := range cs {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", c.Name, c.Transactions))
	}
	return strings.Join(parts, ", ")
}
