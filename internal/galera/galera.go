// Package galera reads what a MariaDB Galera node says of itself and of its
// cluster, and holds the rules gapless follows on such a node: which of the
// cluster's settings change what a client session writes, which make
// equality with the source impossible, and whether a node may be written to
// or read from at all.
//
// A node of a Galera cluster certifies every transaction with the other
// nodes and applies theirs; a client session on it differs from one on a
// lone server in ways a replica must undo or refuse:
//
//   - wsrep_auto_increment_control=ON (the default) sets the session's
//     auto_increment_increment and _offset to the cluster's size and the
//     node's index before every statement, whatever the session set: a
//     statement the source logged as a statement would get other ids.
//   - wsrep_gtid_mode=ON refuses any SET of server_id, and the cluster
//     writes every transaction under its own GTID (wsrep_gtid_domain_id).
//     With it OFF, a DDL (run in total order isolation) still takes the next
//     number of the executing node's domain, whatever the session set, and
//     the other nodes log it under GTIDs of their own.
//   - A table in a non-transactional engine (MyISAM, Aria) is written on the
//     node alone unless wsrep_mode names REPLICATE_MYISAM or REPLICATE_ARIA.
//   - XA transactions are refused (1235).
//   - A transaction larger than wsrep_max_ws_rows or wsrep_max_ws_size fails
//     its certification.
//
// This package only reads; internal/target and cmd/gapless act on it.
package galera

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Node is what one server says of its Galera state. A server without wsrep
// (a lone MariaDB, MySQL) reads as Node{} (On false).
type Node struct {
	On                   bool   // wsrep_on
	Ready                bool   // wsrep_ready: the node accepts queries
	State                string // wsrep_local_state_comment: Synced, Donor/Desynced, Joining, ...
	ClusterStatus        string // wsrep_cluster_status: Primary, non-Primary, Disconnected
	ClusterSize          int    // wsrep_cluster_size
	NodeName             string // wsrep_node_name
	AutoIncrementControl bool   // wsrep_auto_increment_control
	GTIDMode             bool   // wsrep_gtid_mode
	GTIDDomain           uint32 // wsrep_gtid_domain_id
	Mode                 string // wsrep_mode, upper case, comma separated
	MaxWSRows            int64  // wsrep_max_ws_rows; 0: no bound
	MaxWSSize            int64  // wsrep_max_ws_size in bytes
}

// Query runs a statement that answers (name, value) rows: SHOW GLOBAL
// VARIABLES and SHOW GLOBAL STATUS. Both database/sql and gapless's own
// apply connection can answer it.
type Query func(query string) ([][]string, error)

// Variables are the global variables Read asks for.
var Variables = []string{
	"wsrep_on", "wsrep_node_name", "wsrep_auto_increment_control", "wsrep_gtid_mode",
	"wsrep_gtid_domain_id", "wsrep_mode", "wsrep_max_ws_rows", "wsrep_max_ws_size",
}

// Status are the global status variables Read asks for when wsrep is on.
var Status = []string{"wsrep_ready", "wsrep_local_state_comment", "wsrep_cluster_status", "wsrep_cluster_size"}

// Read asks the server for its wsrep settings and state. SHOW ... WHERE
// works on MariaDB and MySQL alike; a server without the variables answers
// no rows and reads as Node{}.
func Read(q Query) (Node, error) {
	vars, err := q("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + quoted(Variables) + ")")
	if err != nil {
		return Node{}, fmt.Errorf("read the wsrep variables: %w", err)
	}
	var n Node
	for _, row := range vars {
		if len(row) < 2 {
			continue
		}
		n.setVariable(strings.ToLower(row[0]), row[1])
	}
	if !n.On {
		return n, nil
	}
	status, err := q("SHOW GLOBAL STATUS WHERE Variable_name IN (" + quoted(Status) + ")")
	if err != nil {
		return Node{}, fmt.Errorf("read the wsrep status: %w", err)
	}
	for _, row := range status {
		if len(row) < 2 {
			continue
		}
		n.setStatus(strings.ToLower(row[0]), row[1])
	}
	return n, nil
}

// ReadDB is Read over a database/sql pool.
func ReadDB(ctx context.Context, db *sql.DB) (Node, error) {
	return Read(func(query string) ([][]string, error) {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out [][]string
		for rows.Next() {
			var name, value sql.NullString
			if err := rows.Scan(&name, &value); err != nil {
				return nil, err
			}
			out = append(out, []string{name.String, value.String})
		}
		return out, rows.Err()
	})
}

func (n *Node) setVariable(name, value string) {
	switch name {
	case "wsrep_on":
		n.On = on(value)
	case "wsrep_node_name":
		n.NodeName = value
	case "wsrep_auto_increment_control":
		n.AutoIncrementControl = on(value)
	case "wsrep_gtid_mode":
		n.GTIDMode = on(value)
	case "wsrep_gtid_domain_id":
		d, _ := strconv.ParseUint(value, 10, 32)
		n.GTIDDomain = uint32(d)
	case "wsrep_mode":
		n.Mode = strings.ToUpper(value)
	case "wsrep_max_ws_rows":
		n.MaxWSRows, _ = strconv.ParseInt(value, 10, 64)
	case "wsrep_max_ws_size":
		n.MaxWSSize, _ = strconv.ParseInt(value, 10, 64)
	}
}

func (n *Node) setStatus(name, value string) {
	switch name {
	case "wsrep_ready":
		n.Ready = on(value)
	case "wsrep_local_state_comment":
		n.State = value
	case "wsrep_cluster_status":
		n.ClusterStatus = value
	case "wsrep_cluster_size":
		n.ClusterSize, _ = strconv.Atoi(value)
	}
}

func on(v string) bool {
	switch strings.ToUpper(v) {
	case "ON", "1", "TRUE", "YES":
		return true
	}
	return false
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// Usable says why the node may not take gapless's writes or reads now, or
// nil: it must be ready, synced and in the primary component. A node that
// left the primary component answers every statement with 1047 ("WSREP has
// not yet prepared node for application use"), one that is joining or a
// donor is behind the cluster.
func (n Node) Usable() error {
	if !n.On {
		return nil
	}
	switch {
	case n.ClusterStatus != "" && n.ClusterStatus != "Primary":
		return fmt.Errorf("the Galera node %s is not in the cluster's primary component (wsrep_cluster_status=%s)", n.name(), n.ClusterStatus)
	case !n.Ready:
		return fmt.Errorf("the Galera node %s is not ready (wsrep_ready=OFF)", n.name())
	case n.State != "" && n.State != "Synced":
		return fmt.Errorf("the Galera node %s is not synced with its cluster (wsrep_local_state_comment=%s)", n.name(), n.State)
	}
	return nil
}

func (n Node) name() string {
	if n.NodeName == "" {
		return "(unnamed)"
	}
	return n.NodeName
}

// ReplicatesEngine reports whether the cluster copies the writes of a
// table in engine to its other nodes: InnoDB always; MyISAM and Aria only
// where wsrep_mode says so; never MEMORY, CSV, ARCHIVE or MERGE. Engines
// that keep no rows of their own (SEQUENCE's virtual tables, BLACKHOLE,
// CONNECT, FEDERATED) are left alone.
func (n Node) ReplicatesEngine(engine string) bool {
	switch strings.ToUpper(engine) {
	case "MYISAM":
		return n.modeHas("REPLICATE_MYISAM")
	case "ARIA":
		return n.modeHas("REPLICATE_ARIA")
	case "MEMORY", "HEAP", "CSV", "ARCHIVE", "MRG_MYISAM", "MERGE":
		return false
	}
	return true
}

func (n Node) modeHas(flag string) bool {
	for _, m := range strings.Split(n.Mode, ",") {
		if strings.TrimSpace(m) == flag {
			return true
		}
	}
	return false
}

// Describe is a one-line account of the node for the start of a run.
func (n Node) Describe() string {
	gtids := "GTIDs of each node's own (wsrep_gtid_mode=OFF)"
	if n.GTIDMode {
		gtids = fmt.Sprintf("the cluster's GTIDs in domain %d (wsrep_gtid_mode=ON)", n.GTIDDomain)
	}
	return fmt.Sprintf("Galera node %s (%s, cluster of %d); its binlog gets %s", n.name(), n.State, n.ClusterSize, gtids)
}

// NotReplicated is the message of a write to a table the cluster keeps on
// one node: the other nodes would differ from the source.
func NotReplicated(table, engine string) string {
	flag := "REPLICATE_" + strings.ToUpper(engine)
	fix := fmt.Sprintf("SET GLOBAL wsrep_mode='%s' on every node of the cluster (and in their option files)", flag)
	if flag != "REPLICATE_MYISAM" && flag != "REPLICATE_ARIA" {
		fix = "Galera has no setting that copies it"
	}
	return fmt.Sprintf("%s is a %s table on the target, a Galera node: the cluster does not copy its rows to the other nodes, which would then differ from the source; "+
		"make it InnoDB on the target (ALTER TABLE %s ENGINE=InnoDB), or %s, then run again", table, engine, table, fix)
}
