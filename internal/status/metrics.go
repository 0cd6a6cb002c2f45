// metrics.go is /metrics: the run's last sample in the Prometheus text
// format, named as mysqld_exporter and the Prometheus naming guide would
// (gapless_<what>_<unit>[_total]), plus the Go runtime's and the process's
// own collectors. Every gapless_ metric carries the labels stream and
// policy; the per-worker ones add worker (at most --workers values), and
// state, reason and keys take values from closed sets. No label takes a GTID, a
// table or a value: nothing grows without bound.
package status

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gapless/internal/apply"
)

// workerStates are the values of the state label of gapless_worker_state,
// with the apply states each stands for.
var workerStates = []struct {
	label string
	of    []apply.WorkerState
}{
	{"idle", []apply.WorkerState{apply.StateIdle}},
	{"connecting", []apply.WorkerState{apply.StateConnecting}},
	{"executing", []apply.WorkerState{apply.StateApplying}},
	{"waiting_dependencies", []apply.WorkerState{apply.StateWaitingDeps, apply.StateAhead}},
	{"waiting_commit_turn", []apply.WorkerState{apply.StateWaitingCommit}},
	{"retrying", []apply.WorkerState{apply.StateRetrying, apply.StateReconnecting}},
}

var (
	retryReasons    = []string{apply.RetryDeadlock, apply.RetryLockWaitTimeout, apply.RetryLostConnection, apply.RetryYield, apply.RetryInterrupted, apply.RetryOutOfOrder}
	conflictReasons = []string{apply.ConflictDependency, apply.ConflictBarrier, apply.ConflictLockWait}
)

type collector struct {
	s *Server

	up, applied, appliedBytes, filtered, targetTxns, received, receivedBytes *prometheus.Desc
	lag, behind, relayBytes, queueTxns, queueBytes, sourceConnected          *prometheus.Desc
	targetWait, targetNode, targetNodeSwitches                               *prometheus.Desc
	workerState, retries, conflicts, watchdogKills, batchSize, commitSeconds *prometheus.Desc
	statementTables                                                          *prometheus.Desc
}

func newMetrics(s *Server) http.Handler {
	labels := prometheus.Labels{"stream": s.opts.Stream, "policy": s.opts.Policy}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc("gapless_"+name, help, variable, labels)
	}
	c := &collector{
		s:                  s,
		up:                 desc("up", "1 while the run applies, 0 while it starts, stops, or after it ended"),
		applied:            desc("applied_transactions_total", "Source transactions committed on the target by this run."),
		appliedBytes:       desc("applied_bytes_total", "Bytes of the source transactions committed on the target by this run, as the source wrote them."),
		filtered:           desc("filtered_transactions_total", "Source transactions passed without applying (replication filters)."),
		targetTxns:         desc("target_transactions_total", "Target transactions committed (a batch applies several source transactions in one)."),
		received:           desc("received_transactions_total", "Source transactions received into the relay log by this run."),
		receivedBytes:      desc("received_bytes_total", "Bytes of the source transactions read from the relay log by this run."),
		lag:                desc("lag_seconds", "Seconds since the source wrote the oldest transaction a worker holds (else the last applied), while any received one is not applied; 0 when caught up."),
		behind:             desc("behind_transactions", "Transactions received but not yet applied."),
		relayBytes:         desc("relay_log_bytes", "Bytes of the relay log's segment files."),
		queueTxns:          desc("queue_transactions", "Decoded transactions waiting for a worker."),
		queueBytes:         desc("queue_bytes", "Bytes of decoded transactions not yet committed (bounded by --max-queued)."),
		sourceConnected:    desc("source_connected", "1 while the binlog dump from the source runs."),
		targetNode:         desc("target_node", "1 for the node the workers write to, where the target URL names several (a Galera cluster).", "node"),
		targetNodeSwitches: desc("target_node_switches_total", "Moves of the workers to another node of the target's list, where it names several."),
		targetWait:         desc("target_wait_seconds", "How long a worker held back by the target (a client's row lock, a backup's read lock) has been applying its job; 0 when none is."),
		workerState:        desc("worker_state", "1 for the state each worker is in, 0 for the others.", "worker", "state"),
		retries:            desc("retries_total", "Transactions (or batches) run again, by reason.", "reason"),
		conflicts:          desc("conflicts_total", "Transactions that could not run beside the ones before them, by reason.", "reason"),
		statementTables:    desc("statement_tables_total", "Tables named by groups of statements, by how the policy took them: by the row keys the statements' text says, or whole.", "keys"),
		watchdogKills:      desc("watchdog_kills_total", "Statements of later transactions the watchdog interrupted to free a lock an earlier one waited for."),
		batchSize:          desc("batch_size_transactions", "Source transactions per target transaction."),
		commitSeconds:      desc("commit_duration_seconds", "Seconds from a worker taking a job (one transaction or a batch) to its commit, waits for dependencies and for the commit turn included."),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	snap, state := c.s.last, c.s.state
	c.s.mu.Unlock()
	up := 0.0
	if state == "running" {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	if snap == nil {
		return
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.applied, snap.Applied)
	counter(c.appliedBytes, snap.AppliedBytes)
	counter(c.filtered, snap.Filtered)
	counter(c.targetTxns, snap.Batches)
	counter(c.received, snap.ReceivedTransactions)
	counter(c.receivedBytes, snap.ReceivedBytes)
	gauge(c.lag, snap.LagSeconds)
	gauge(c.behind, float64(snap.Behind))
	gauge(c.relayBytes, float64(snap.RelayBytes))
	gauge(c.queueTxns, float64(snap.QueuedTransactions))
	gauge(c.queueBytes, float64(snap.QueuedBytes))
	connected := 0.0
	if snap.SourceConnected {
		connected = 1
	}
	gauge(c.sourceConnected, connected)
	if snap.TargetNode != "" {
		gauge(c.targetNode, 1, snap.TargetNode)
		counter(c.targetNodeSwitches, int64(snap.TargetSwitches))
	}
	waited := 0.0
	if w := snap.TargetWait; w != nil {
		waited = snap.At.Sub(w.Since).Seconds()
	}
	gauge(c.targetWait, waited)
	for _, w := range snap.Workers {
		slot := strconv.Itoa(w.Slot)
		for _, st := range workerStates {
			v := 0.0
			for _, of := range st.of {
				if w.State == of {
					v = 1
				}
			}
			gauge(c.workerState, v, slot, st.label)
		}
	}
	for _, reason := range retryReasons {
		counter(c.retries, snap.Retries[reason], reason)
	}
	for _, reason := range conflictReasons {
		counter(c.conflicts, snap.Conflicts[reason], reason)
	}
	counter(c.watchdogKills, snap.WatchdogKills)
	for _, keys := range []string{apply.StatementRowKeys, apply.StatementWholeTable} {
		counter(c.statementTables, snap.StatementTables[keys], keys)
	}
	ch <- histogram(c.batchSize, snap.BatchSize)
	ch <- histogram(c.commitSeconds, snap.CommitSeconds)
}

func histogram(d *prometheus.Desc, h apply.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b] = h.Counts[i]
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets)
}
