// progress.go prints replicate's progress line. It says what the numbers
// alone would hide: a source or target that does not answer (the counters
// then stand still and look like an idle, caught-up run) and an --until
// that waits for a GTID domain the source has never written.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gapless/internal/apply"
	"gapless/internal/checkpoint"
	"gapless/internal/gtid"
)

// progressPrinter returns the Progress callback of a run stopping at until (nil: none).
func progressPrinter(until *gtid.MariaDBPosition) func(apply.Progress) {
	return func(p apply.Progress) { fmt.Println(formatProgress(p, until, time.Now())) }
}

func formatProgress(p apply.Progress, until *gtid.MariaDBPosition, now time.Time) string {
	busy := 0
	for _, w := range p.Workers {
		if w.State != apply.StateIdle {
			busy++
		}
	}
	line := fmt.Sprintf("applied %d (%.0f/s)  ", p.Applied, p.PerSecond)
	if !p.SourceDownSince.IsZero() {
		// What the source wrote meanwhile is unknown: no "behind".
		line += "source unreachable since " + since(p.SourceDownSince, now)
	} else {
		line += fmt.Sprintf("behind %d txns, %.1f s", p.Behind, p.LagSeconds)
	}
	line += "  position " + emptyAsNone(p.Position.String())
	if !p.RelayFullSince.IsZero() {
		line += "  relay folder full since " + since(p.RelayFullSince, now) + ", receiving waits for space"
	}
	if !p.TargetDownSince.IsZero() {
		// The workers are retrying, not applying.
		line += "  target unreachable since " + since(p.TargetDownSince, now)
	} else {
		line += fmt.Sprintf("  workers busy %d/%d", busy, len(p.Workers))
	}
	if p.TargetNode != "" {
		line += "  target node " + p.TargetNode
		if p.TargetSwitches > 0 {
			line += fmt.Sprintf(" (moved %d times)", p.TargetSwitches)
		}
	}
	if p.TargetWait != nil {
		// What the target holds them with says more than the longest job.
		line += "  the target holds them: " + p.TargetWait.Text
	} else if w, ok := longJob(p.Workers, now); ok {
		line += fmt.Sprintf("  %s %s (%s) for %s", w.State, w.GTID, byteSize(w.Bytes), now.Sub(w.Since).Round(time.Second))
	}
	if unseen := unseenDomains(until, p.Received, p.Position); len(unseen) > 0 {
		line += "  --until waits for " + domainList(unseen) + ", which the source has not written"
	}
	return line
}

// longAfter is how long one worker may stay in one state on one job before
// the progress line names it: a large transaction, a long lock wait or DDL,
// whose counters stand still meanwhile.
const longAfter = 5 * time.Second

// longJob returns the busy worker that has been longest in its state, when
// that is longAfter or more.
func longJob(workers []apply.WorkerStatus, now time.Time) (apply.WorkerStatus, bool) {
	var long apply.WorkerStatus
	for _, w := range workers {
		if w.State != apply.StateIdle && w.GTID != "" && now.Sub(w.Since) >= longAfter && (long.GTID == "" || w.Since.Before(long.Since)) {
			long = w
		}
	}
	return long, long.GTID != ""
}

// byteSize prints n bytes in the largest unit that keeps a whole number.
func byteSize(n int) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// since prints a moment of today and how long ago it was.
func since(t, now time.Time) string {
	return fmt.Sprintf("%s (%s)", t.Format(time.TimeOnly), now.Sub(t).Round(time.Second))
}

// unseenDomains lists the GTID domains of until that none of the positions holds.
func unseenDomains(until *gtid.MariaDBPosition, seen ...gtid.MariaDBPosition) []uint32 {
	if until == nil {
		return nil
	}
	var out []uint32
	for _, d := range until.Domains() {
		held := false
		for _, p := range seen {
			if _, ok := p.Get(d); ok {
				held = true
			}
		}
		if !held {
			out = append(out, d)
		}
	}
	return out
}

func domainList(domains []uint32) string {
	names := make([]string, len(domains))
	for i, d := range domains {
		names[i] = fmt.Sprint(d)
	}
	if len(names) == 1 {
		return "domain " + names[0]
	}
	return "domains " + strings.Join(names, ", ")
}

// sourceWritten reads the source's @@gtid_binlog_pos, which keeps every
// domain its binlog has held.
func sourceWritten(ctx context.Context, src *sql.DB) (gtid.MariaDBPosition, error) {
	var s string
	if err := src.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		return gtid.MariaDBPosition{}, fmt.Errorf("source: read @@gtid_binlog_pos: %w", err)
	}
	written, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return gtid.MariaDBPosition{}, fmt.Errorf("source: @@gtid_binlog_pos: %w", err)
	}
	return written, nil
}

// warnUntilUnseen warns when --until names a GTID domain that the source's
// binlog has never held (@@gtid_binlog_pos keeps every domain it has
// written, purged binlogs included) and the target has not applied. The run
// goes on and waits: the domain may be written later (a new application, a
// planned gtid_domain_id), so refusing would be wrong, but waiting with no
// word looked like a hang. The progress line repeats the warning.
func warnUntilUnseen(until *gtid.MariaDBPosition, written, applied gtid.MariaDBPosition, logger *slog.Logger) {
	if unseen := unseenDomains(until, written, applied); len(unseen) > 0 {
		logger.Warn(fmt.Sprintf("--until %s names %s, which the source has never written (its @@gtid_binlog_pos is %s): the run waits until the source writes up to it; check --until for a typo",
			until, domainList(unseen), emptyAsNone(written.String())))
	}
}

// checkSourceContinues refuses a source whose binlog has held no GTID of
// any domain of the position the run goes on from. MariaDB sends such a
// replica whatever else its binlog holds, without an error: gapless would
// write another server's history on top of the target's (a --source that
// names the wrong server), or the source's history after a RESET MASTER.
// A source that lacks some of the domains only (one retired with FLUSH
// BINARY LOGS DELETE_DOMAIN_ID) gets a warning.
func checkSourceContinues(written, position gtid.MariaDBPosition, origin string, logger *slog.Logger) error {
	if position.IsEmpty() {
		return nil
	}
	missing := unseenDomains(&position, written)
	switch {
	case len(missing) == 0:
		return nil
	case len(missing) == len(position.Domains()):
		hint := "check --source, or re-seed the target from the source"
		if origin == slavePosOrigin {
			hint += "; if the target's @@gtid_slave_pos is left from replicating another server, clear it there (SET GLOBAL gtid_slave_pos='') or give --start-position"
		}
		return fmt.Errorf("source has never written %s of the position the target goes on from, %s (%s; the source's @@gtid_binlog_pos is %s): --source names another server than the one the target replicates, or the source's binlog history was reset (RESET MASTER); %s",
			domainList(missing), position, origin, emptyAsNone(written.String()), hint)
	}
	logger.Warn(fmt.Sprintf("the source's binlog holds no GTID of %s of the target's position %s (its @@gtid_binlog_pos is %s; retired with FLUSH BINARY LOGS DELETE_DOMAIN_ID?): the target keeps its position there, and nothing of it is applied",
		domainList(missing), position, emptyAsNone(written.String())))
	return nil
}

// appliedOrStart is the stream's position on the target, else where the
// run starts (start, which came from startOrigin); origin says which.
func appliedOrStart(ctx context.Context, db *sql.DB, stream string, start *gtid.MariaDBPosition, startOrigin string) (position gtid.MariaDBPosition, origin string) {
	if applied, found, err := checkpoint.Existing(ctx, db, stream); err == nil && found {
		return applied.Position, "the stream's position on the target"
	}
	if start != nil {
		return *start, startOrigin
	}
	return gtid.MariaDBPosition{}, ""
}

// sourceDomainsOf keeps of start, the target's @@gtid_slave_pos, the
// domains the source has written: the others are the target's replication
// from other servers (multi-source), which are not this stream's to carry
// in its position. Nil when none is left: the run starts from the source's
// first binlog, as on a target with no position.
func sourceDomainsOf(start *gtid.MariaDBPosition, written gtid.MariaDBPosition, logger *slog.Logger) *gtid.MariaDBPosition {
	if start == nil {
		return nil
	}
	var kept gtid.MariaDBPosition
	var dropped []uint32
	for _, d := range start.Domains() {
		g, _ := start.Get(d)
		if _, ok := written.Get(d); ok {
			kept.Advance(g)
		} else {
			dropped = append(dropped, d)
		}
	}
	if len(dropped) == 0 {
		return start
	}
	logger.Info(fmt.Sprintf("the target's @@gtid_slave_pos %s holds %s, which the source has never written (the target's replication from other servers): the run starts without them", start, domainList(dropped)))
	if kept.IsEmpty() {
		return nil
	}
	return &kept
}

// slavePosOrigin names the target's @@gtid_slave_pos as where a run starts.
const slavePosOrigin = "the target's @@gtid_slave_pos"
