// Package status shows a running replica over HTTP (replicate --http ADDR):
// Prometheus metrics at /metrics, the JSON of `gapless status` at /status,
// a live page at /, and the gap-less stop at POST /stop. It reads what
// internal/apply exposes (Replica.Snapshot) and nothing else of the run.
//
// report.go owns the JSON that /status serves: the shape `gapless status
// --json` prints from the target (streams, each with stream, running,
// holder, position, last_commit, workers with slot, state, gtid and since,
// last_error with gtid, position, error and stopped_at), with what only the
// running process knows added (state, source_position, lag_seconds,
// behind_transactions, each worker's waiting_for and on, and live). A script
// reads either with the same code. Invariant: nothing in it holds a password
// or a row's values; errors pass through Redact.
package status

import (
	"regexp"
	"strings"
	"time"
)

// Report is what /status serves.
type Report struct {
	Target  string   `json:"target,omitempty"` // the target's URL without its password
	Streams []Stream `json:"streams"`
}

// Stream is one replication stream.
type Stream struct {
	Name    string `json:"stream"`
	Running bool   `json:"running"` // applying, or starting or stopping
	// State is "starting", "running", "stopping", "stopped" or "failed".
	State  string `json:"state"`
	Holder string `json:"holder,omitempty"` // the applier's connection, as the target names it
	// Position is the gap-less applied position; SourcePosition the end of
	// the relay log (what has been received), known to the running process only.
	Position       string   `json:"position"`
	SourcePosition string   `json:"source_position,omitempty"`
	LagSeconds     *float64 `json:"lag_seconds,omitempty"`
	// BehindTransactions: received but not applied (running process only).
	BehindTransactions *uint64  `json:"behind_transactions,omitempty"`
	Workers            []Worker `json:"workers"`
	LastError          *Error   `json:"last_error,omitempty"`
	Live               *Live    `json:"live,omitempty"`
}

// Worker is one worker's state.
type Worker struct {
	Slot  int       `json:"slot"`
	State string    `json:"state"`
	GTID  string    `json:"gtid,omitempty"` // the transaction (first..last of a batch) it holds
	Since time.Time `json:"since"`
	// WaitingFor is the earlier transaction it waits for, and On the tables
	// they share (running process only).
	WaitingFor   string   `json:"waiting_for,omitempty"`
	On           []string `json:"on,omitempty"`
	Transactions int      `json:"transactions,omitempty"`
	// Bytes: the binlog bytes of the transactions it holds (running process only).
	Bytes int `json:"bytes,omitempty"`
}

// Error is the error that stopped the run, without row values.
type Error struct {
	GTID      string    `json:"gtid,omitempty"` // the transaction that failed, when one did
	Position  string    `json:"position"`       // where the run stopped
	Error     string    `json:"error"`
	StoppedAt time.Time `json:"stopped_at"`
}

// Live is what only the running process knows.
type Live struct {
	Policy      string    `json:"policy"`
	CommitOrder string    `json:"commit_order"`
	StartedAt   time.Time `json:"started_at"`

	Applied              int64   `json:"applied_transactions"`
	AppliedBytes         int64   `json:"applied_bytes"`
	Filtered             int64   `json:"filtered_transactions"`
	TargetTransactions   int64   `json:"target_transactions"`
	AppliedPerSecond     float64 `json:"applied_per_second"`
	ReceivedTransactions int64   `json:"received_transactions"`
	RelayLogBytes        int64   `json:"relay_log_bytes"`
	QueuedTransactions   int     `json:"queued_transactions"`
	QueuedBytes          int64   `json:"queued_bytes"`
	SourceConnected      bool    `json:"source_connected"`
	// TargetNode: the node written to, where the target URL names several
	// (a Galera cluster); TargetNodeSwitches: the moves to another.
	TargetNode         string `json:"target_node,omitempty"`
	TargetNodeSwitches int    `json:"target_node_switches,omitempty"`
	// TargetWait: what the target makes the workers wait for (a client's
	// row lock, a backup's read lock), absent when it tells of nothing.
	TargetWait *TargetWait `json:"target_wait,omitempty"`

	Retries       map[string]int64 `json:"retries"`
	Conflicts     map[string]int64 `json:"conflicts"`
	WatchdogKills int64            `json:"watchdog_kills"`
	// StatementTables: tables named by groups of statements, by how the
	// policy took them (row_keys, whole_table).
	StatementTables map[string]int64 `json:"statement_tables,omitempty"`
	// Chains: the tables whose transactions waited for each other most in
	// the last ChainWindow.
	Chains []Chain `json:"chains"`
	// History: one sample a second, oldest first, when asked (?history=SECONDS).
	History []Sample `json:"history,omitempty"`
}

// TargetWait is a wait the target imposes on the workers.
type TargetWait struct {
	Text  string    `json:"text"`  // who waits, for what, held by whom
	Since time.Time `json:"since"` // when the longest-waiting worker began its job
	// HolderConnection is the target's connection that holds it, when known.
	HolderConnection int64 `json:"holder_connection,omitempty"`
}

// Chain is a table and how many transactions waited on it for an earlier one.
type Chain struct {
	Table        string `json:"table"`
	Transactions int64  `json:"transactions"`
}

// Sample is one second of the run.
type Sample struct {
	At               time.Time `json:"at"`
	AppliedPerSecond float64   `json:"applied_per_second"`
	LagSeconds       float64   `json:"lag_seconds"`
	Behind           uint64    `json:"behind_transactions"`
}

// quoted matches a quoted literal in a server's message and the word before it.
var quoted = regexp.MustCompile(`(\w*)(\s*:?\s+)'((?:[^'\\]|\\.|'')*)'`)

// namesBefore are the words after which a quoted literal is a name, not a value.
var namesBefore = map[string]bool{"key": true, "table": true, "database": true, "column": true, "index": true,
	"constraint": true, "schema": true, "field": true, "function": true, "procedure": true, "trigger": true,
	"user": true, "variable": true, "in": true, "engine": true, "sequence": true, "view": true}

// Redact takes from an error message the values a server quotes in it
// ("Duplicate entry '42-x' for key 'PRIMARY'" keeps the key, not the entry)
// and every secret given (passwords).
func Redact(msg string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 1 {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return quoted.ReplaceAllStringFunc(msg, func(m string) string {
		parts := quoted.FindStringSubmatch(m)
		if namesBefore[strings.ToLower(parts[1])] {
			return m
		}
		return parts[1] + parts[2] + "'…'"
	})
}
