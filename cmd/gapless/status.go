package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/gtid"
)

func newStatusCmd() *cobra.Command {
	var stream string
	var target *serverFlags
	var verbose, asJSON bool
	cmd := &cobra.Command{
		Use:   "status --target URL",
		Short: "Show each stream's applied position on the target, its lag, whether an applier runs, and why the last run stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), target, stream, verbose, asJSON)
		},
	}
	files := addOptionFileFlags(cmd.Flags())
	target = addServerFlags(cmd.Flags(), "target", "target", "GAPLESS_TARGET", "target URL", files)
	cmd.Flags().StringVar(&stream, "stream", "", "only this stream (and its option group, [gapless-STREAM])")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the position row of every domain and worker slot")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the same as JSON")
	readsOptionFiles(cmd, files)
	return cmd
}

// streamStatus is what status says of one stream, in text or as JSON.
type streamStatus struct {
	Stream     string         `json:"stream"`
	Running    bool           `json:"running"`
	Holder     string         `json:"holder,omitempty"` // the running applier's connection
	Position   string         `json:"position"`
	LastCommit *lastCommit    `json:"last_commit,omitempty"`
	Workers    []workerStatus `json:"workers,omitempty"` // while running
	LastError  *stopStatus    `json:"last_error,omitempty"`
	Rows       []positionRow  `json:"rows,omitempty"` // with --verbose
	// HandOver is the gtid_slave_pos from which MariaDB's own replica
	// would go on where gapless stopped (docs/operations-and-recovery.md, "Back to MariaDB's
	// replica"); absent while gapless runs or when no such position is
	// exact, and then HandOverNot says why.
	HandOver    string `json:"mariadb_replica_from,omitempty"`
	HandOverNot string `json:"mariadb_replica_not,omitempty"`
	// Temporary are the temporary tables of the source's sessions the
	// last run kept for the next (checkpoint.KeptTemporary), as
	// `db`.`name` (session N).
	Temporary  []string      `json:"temporary_tables_kept,omitempty"`
	workersAge time.Duration // since the workers were reported
}

type lastCommit struct {
	GTID      string    `json:"gtid"`
	AppliedAt time.Time `json:"applied_at"`
	// LagSeconds is absent when the position names no applied transaction
	// (one given with --start-position, which has no source time).
	LagSeconds *float64 `json:"lag_seconds,omitempty"`
}

type workerStatus struct {
	Slot  int       `json:"slot"`
	State string    `json:"state"`
	GTID  string    `json:"gtid,omitempty"`
	Since time.Time `json:"since"`
}

type stopStatus struct {
	GTID      string    `json:"gtid,omitempty"`
	Position  string    `json:"position"`
	Error     string    `json:"error"`
	StoppedAt time.Time `json:"stopped_at"`
}

type positionRow struct {
	Domain uint32 `json:"domain"`
	Slot   int    `json:"slot"`
	GTID   string `json:"gtid"`
}

func runStatus(ctx context.Context, target *serverFlags, only string, verbose, asJSON bool) error {
	if !target.given() {
		return fmt.Errorf("--target is required (or $GAPLESS_TARGET)")
	}
	_, targetURL, err := target.resolve()
	if err != nil {
		return err
	}
	db, cfg, err := dburl.Open(targetURL, nil)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	defer db.Close()
	streams, err := checkpoint.Streams(ctx, db)
	if err != nil {
		return err
	}
	if only != "" {
		if !slices.Contains(streams, only) {
			return notFoundStream(ctx, db, cfg, only)
		}
		streams = []string{only}
	}
	var out []streamStatus
	for _, name := range streams {
		st, err := readStreamStatus(ctx, checkpoint.ForStream(db, name), checkpoint.Holder(ctx, db, name), verbose)
		if err != nil {
			return err
		}
		if !st.Running {
			st.HandOver, st.HandOverNot = handOver(ctx, db, checkpoint.ForStream(db, name))
		}
		out = append(out, st)
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Target  string         `json:"target"`
			Streams []streamStatus `json:"streams"`
		}{cfg.Redacted(), append([]streamStatus{}, out...)}) // [] rather than null
	}
	if len(out) == 0 {
		fmt.Printf("%s: no gapless position on this target (nothing replicated yet)\n", cfg.Redacted())
		return nil
	}
	for _, st := range out {
		printStreamStatus(os.Stdout, st)
	}
	return nil
}

func readStreamStatus(ctx context.Context, store *checkpoint.Store, holder string, verbose bool) (streamStatus, error) {
	st := streamStatus{Stream: store.Stream(), Running: holder != "", Holder: holder}
	pos, err := store.Position(ctx)
	if err != nil {
		return st, err
	}
	st.Position = pos.String()
	rows, err := store.Rows(ctx)
	if err != nil {
		return st, err
	}
	if verbose {
		for _, r := range rows {
			st.Rows = append(st.Rows, positionRow{Domain: r.Domain, Slot: r.Slot, GTID: r.GTID.String()})
		}
	}
	st.LastCommit = positionCommit(pos, rows)
	if st.Running {
		workers, err := store.Workers(ctx)
		if err != nil {
			return st, err
		}
		for _, w := range workers {
			st.Workers = append(st.Workers, workerStatus{Slot: w.Slot, State: w.State, GTID: w.GTID, Since: w.Since})
			st.workersAge = time.Since(w.UpdatedAt)
		}
		return st, nil
	}
	kept, err := store.KeptTemporaries(ctx)
	if err != nil {
		return st, err
	}
	for _, k := range kept {
		st.Temporary = append(st.Temporary, fmt.Sprintf("`%s`.`%s` (session %d)", k.DB, k.Name, k.Thread))
	}
	stop, ok, err := store.LastStop(ctx)
	if err != nil {
		return st, err
	}
	if ok {
		st.LastError = &stopStatus{GTID: stop.GTID, Position: stop.Position, Error: stop.Error, StoppedAt: stop.StoppedAt}
	}
	return st, nil
}

// positionCommit is the commit status shows beside the position: of the
// rows that hold the position's GTIDs, the one written last. Not simply the
// row with the newest time: a worker stamps its row as it makes the script,
// which may be ahead of its turn, so an earlier group's row can carry a
// later time, and the row of another worker slot, below the position, would
// read as if the position were ahead of what committed. Under causal commit
// order no row may hold the gap-less position; then it is the newest row,
// above the position. Nil when there are no rows.
func positionCommit(pos gtid.MariaDBPosition, rows []checkpoint.Row) *lastCommit {
	var newest, newestOfPosition checkpoint.Row
	for _, r := range rows {
		if r.AppliedAt.After(newest.AppliedAt) {
			newest = r
		}
		if g, ok := pos.Get(r.Domain); ok && g == r.GTID && (newestOfPosition.AppliedAt.IsZero() || r.AppliedAt.After(newestOfPosition.AppliedAt)) {
			newestOfPosition = r
		}
	}
	if !newestOfPosition.AppliedAt.IsZero() {
		newest = newestOfPosition
	}
	if newest.AppliedAt.IsZero() {
		return nil
	}
	c := &lastCommit{GTID: newest.GTID.String(), AppliedAt: newest.AppliedAt}
	if newest.SourceTime.Unix() > 0 {
		lag := newest.AppliedAt.Sub(newest.SourceTime).Round(time.Second).Seconds()
		c.LagSeconds = &lag
	}
	return c
}

// handOver is the gtid_slave_pos from which MariaDB's replica goes on
// where the stream stopped: its position, and, for the target's binlog's
// other domains (gapless's own tables in 2147483647, writes of the
// target's own), where the binlog is, as gtid_strict_mode requires of a
// gtid_slave_pos (1948). None when groups were applied past the position
// (a causal run that did not stop cleanly): MariaDB's replica would apply
// them again.
func handOver(ctx context.Context, db *sql.DB, store *checkpoint.Store) (pos, not string) {
	applied, err := store.Applied(ctx)
	switch {
	case err != nil:
		return "", err.Error()
	case applied.Position.IsEmpty():
		return "", "no position"
	case len(applied.Extra) > 0:
		return "", "groups past the position are applied too (a causal run that did not stop cleanly): run gapless again to a clean stop first"
	}
	var text string
	if err := db.QueryRowContext(ctx, "SELECT @@global.gtid_binlog_pos").Scan(&text); err != nil {
		return "", "reading the target's @@gtid_binlog_pos: " + err.Error()
	}
	binlogged, err := gtid.ParseMariaDBPosition(text)
	if err != nil {
		return "", "the target's @@gtid_binlog_pos: " + err.Error()
	}
	from := applied.Position.Clone()
	for _, g := range binlogged.GTIDs() {
		if _, ok := from.Get(g.Domain); !ok {
			from.Advance(g)
		}
	}
	return from.String(), ""
}

// positionLines are the position and, when the stream has one, the commit
// of its transaction: one line where the position is that one GTID.
func positionLines(st streamStatus) string {
	c := st.LastCommit
	if c == nil {
		return fmt.Sprintf("  position  %s\n", emptyAsNone(st.Position))
	}
	when := fmt.Sprintf("set at %s UTC as a start position (no transaction applied since)", c.AppliedAt.Format(time.DateTime))
	if c.LagSeconds != nil {
		when = fmt.Sprintf("committed at %s UTC, %s after the source wrote it", c.AppliedAt.Format(time.DateTime), time.Duration(*c.LagSeconds)*time.Second)
	}
	if c.GTID == st.Position {
		return fmt.Sprintf("  position  %s, %s\n", st.Position, when)
	}
	pos, _ := gtid.ParseMariaDBPosition(st.Position)
	g, _ := gtid.ParseMariaDBGTID(c.GTID)
	if pos.Contains(g) {
		return fmt.Sprintf("  position  %s\n  of which %s, the newest, %s\n", emptyAsNone(st.Position), c.GTID, when)
	}
	return fmt.Sprintf("  position  %s (gap-less)\n  above it  %s, %s (causal commit order commits out of order)\n", emptyAsNone(st.Position), c.GTID, when)
}

func printStreamStatus(out io.Writer, st streamStatus) {
	running := "not running"
	switch {
	case st.Running:
		running = "running (" + st.Holder + ")"
	case st.LastError != nil:
		running = fmt.Sprintf("not running: stopped by an error at %s UTC", st.LastError.StoppedAt.Format(time.DateTime))
	}
	fmt.Fprintf(out, "stream %s: %s\n", st.Stream, running)
	fmt.Fprint(out, positionLines(st))
	if e := st.LastError; e != nil {
		if e.GTID != "" {
			fmt.Fprintf(out, "  failed at  %s\n", e.GTID)
		}
		fmt.Fprintf(out, "  error  %s\n", strings.ReplaceAll(e.Error, "\n", "\n         "))
	}
	if len(st.Workers) > 0 {
		fmt.Fprintf(out, "  workers (reported %s ago):\n", st.workersAge.Round(100*time.Millisecond))
		for _, w := range st.Workers {
			line := fmt.Sprintf("    %2d  %-26s", w.Slot, w.State)
			if w.GTID != "" {
				line += fmt.Sprintf(" %s, for %s", w.GTID, time.Since(w.Since).Round(time.Millisecond))
			}
			fmt.Fprintln(out, line)
		}
	}
	for _, r := range st.Rows {
		fmt.Fprintf(out, "  domain %d slot %d  %s\n", r.Domain, r.Slot, r.GTID)
	}
	if len(st.Temporary) > 0 {
		fmt.Fprintf(out, "  temporary tables of the source's sessions, kept for the next run  %s\n", strings.Join(st.Temporary, ", "))
	}
	switch {
	case st.HandOver != "" && len(st.Temporary) > 0:
		fmt.Fprintf(out, "  MariaDB's replica would go on from  %s, but without the temporary tables above: a statement of the source that reads one would stop it (1146); hand over when the source's sessions hold none\n", st.HandOver)
	case st.HandOver != "":
		fmt.Fprintf(out, "  MariaDB's replica would go on from  %s\n    (SET GLOBAL gtid_slave_pos='%s'; CHANGE MASTER TO ..., MASTER_USE_GTID=slave_pos; START SLAVE)\n", st.HandOver, st.HandOver)
	case st.HandOverNot != "" && st.Position != "":
		fmt.Fprintf(out, "  MariaDB's replica: %s\n", st.HandOverNot)
	}
}
