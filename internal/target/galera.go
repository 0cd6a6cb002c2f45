// galera.go undoes what a Galera node changes in a client session, so that
// an apply session on a node of a cluster writes what it would write on a
// lone server (the rules are internal/galera's):
//
//   - auto_increment: with wsrep_auto_increment_control=ON the node sets the
//     session's auto_increment_increment and _offset to the cluster's before
//     every statement, so the SET the source's state asks for is undone
//     before the statement it is for. A multi-row INSERT the source logged
//     as a statement, ids 1,2,3 there, got 1,4,7 on a 3-node cluster. A
//     statement's own SET STATEMENT ... FOR prefix is applied after that
//     reset: every statement of the source but a DDL (which the node runs
//     in total order isolation with 1 and 1) carries the source's values so.
//   - server_id: with wsrep_gtid_mode=ON the node refuses any SET of the
//     session's server_id (1231), even to its own value; the cluster writes
//     its own GTIDs, and gapless does not keep the source's (cmd/gapless).
//     The wire leaves out the server_id assignments of gapless's own SET
//     statements (withoutServerID); temporary tables of the source's
//     sessions are then told apart by pseudo_thread_id alone.
package target

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/galera"
	"gapless/internal/statement"
)

// readCluster reads the wsrep state of the session's node.
func (s *Session) readCluster() error {
	node, err := galera.Read(s.conn.queryRows)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if err := node.Usable(); err != nil {
		// The node cannot take writes: as a lost connection, the worker
		// opens another, on the next node where the target names several.
		if s.opts.Server.Nodes != nil {
			s.opts.Server.Nodes.Failed(s.conn.addr, err.Error())
		}
		return fmt.Errorf("target: %w: %w", errNodeUnusable, err)
	}
	s.cluster = node
	s.conn.fixedServerID = node.On && node.GTIDMode
	return nil
}

// OnCluster reports whether the session's node is a node of a Galera
// cluster, where a transaction certified by a node that then died may
// reach this one only after a read of the position said it had not.
func (s *Session) OnCluster() bool { return s.cluster.On }

// withSourceAutoIncrement gives a statement of the source the
// auto-increment settings the source ran it with, on a node that resets
// the session's before each statement.
func (s *Session) withSourceAutoIncrement(text string, state *binlog.SessionState, ddl bool) string {
	if !s.cluster.On || !s.cluster.AutoIncrementControl || ddl {
		return text
	}
	increment, offset := uint16(1), uint16(1)
	if state.HasAutoIncrement {
		increment, offset = state.AutoIncrementIncrement, state.AutoIncrementOffset
	}
	return fmt.Sprintf("SET STATEMENT auto_increment_increment=%d, auto_increment_offset=%d FOR %s", increment, offset, text)
}

// withoutServerID takes the server_id assignments out of one of gapless's
// own SET @@session statements; a SET left with none becomes DO 0, so the
// script keeps its number of statements (and answers). Any other statement
// is returned as it is.
func withoutServerID(stmt string) string {
	const set, name = "SET @@session.", "@@session.server_id="
	if !strings.HasPrefix(stmt, set) || !strings.Contains(stmt, name) {
		return stmt
	}
	parts := strings.Split(stmt[len("SET "):], ", ")
	kept := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, name) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "DO 0"
	}
	return "SET " + strings.Join(kept, ", ")
}

// errNodeUnusable: the connection's node is a Galera node that may not be
// written to now (not synced, not in the primary component). Lost counts
// it, so the session is opened again, on another node where the target
// names several (dburl.Nodes).
var errNodeUnusable = errors.New("target node unusable")

// clusterCopies stops a group that writes a table the target's cluster
// keeps on one node (a MyISAM or Aria table where wsrep_mode does not say
// to copy it, a MEMORY table): applied, it would leave the other nodes
// different from the source, with no error anywhere. A group of
// statements that names no tables stops when any table of the replicated
// schemas is such a table.
func (e *Engines) clusterCopies(txn *binlog.Transaction) error {
	if txn.Filtered || txn.Has(binlog.FlagTransactional) || txn.Has(binlog.FlagDDL) {
		// Every table it writes is transactional on the target (mark), or
		// it is a DDL, which the cluster runs on every node.
		return nil
	}
	if e.cluster == nil {
		node, err := galera.ReadDB(context.Background(), e.db)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		e.cluster = &node
	}
	if !e.cluster.On {
		return nil
	}
	for _, t := range txn.Tables {
		if err := e.refuseUncopied(txn, t.Schema, t.Table); err != nil {
			return err
		}
	}
	tables, known := e.statementTables(txn)
	for _, t := range tables {
		if err := e.refuseUncopied(txn, t.Schema, t.Table); err != nil {
			return err
		}
	}
	if !known {
		engine, table, err := e.firstUncopied()
		if err != nil || table == "" {
			return err
		}
		return fmt.Errorf("apply %s, a group of statements gapless cannot read the tables of: %s", txn.GTID(), galera.NotReplicated(table, engine))
	}
	return nil
}

// refuseUncopied stops txn when it writes schema.table and the cluster
// does not copy that table's engine.
func (e *Engines) refuseUncopied(txn *binlog.Transaction, schema, table string) error {
	if _, err := e.transactional(schema, table); err != nil {
		return err
	}
	name := tableName{schema, table}
	if engine, ok := e.engine[name]; ok && !e.known[name] && !e.cluster.ReplicatesEngine(engine) {
		return fmt.Errorf("apply %s: %s", txn.GTID(), galera.NotReplicated(quoteName(schema)+"."+quoteName(table), engine))
	}
	return nil
}

// statementTables are the tables the statements of txn may write, and whether
// every statement was read: plain DML is, a CREATE or DROP of a temporary
// table (which stays on the node) needs no reading, anything else (CALL, a
// statement calling a function, LOAD DATA) is not.
func (e *Engines) statementTables(txn *binlog.Transaction) (tables []statement.Name, known bool) {
	known = true
	for _, ev := range txn.Events {
		q, ok := ev.Data.(*replication.QueryEvent)
		if !ok {
			if _, load := ev.Data.(*replication.ExecuteLoadQueryEvent); load {
				known = false
			}
			continue
		}
		switch binlog.ControlStatement(q.Query) {
		case "BEGIN", "COMMIT", "ROLLBACK":
			continue
		}
		text := string(q.Query)
		if !statement.IsDML(text) {
			if !temporaryDDL(text) {
				known = false
			}
			continue
		}
		state, err := binlog.QuerySessionState(ev.Header, q)
		if err != nil {
			known = false
			continue
		}
		if e.analyzer == nil {
			e.analyzer = statement.NewAnalyzer()
		}
		dml, ok := e.analyzer.DML(text, state.SQLMode, true)
		if !ok {
			known = false
			continue
		}
		written := dml.Tables
		if f := strings.Fields(strings.ToUpper(statement.PastComments(text))); len(f) > 0 && (f[0] == "INSERT" || f[0] == "REPLACE") {
			// The table it writes comes first; the rest it reads.
			written = written[:1]
		}
		for _, n := range written {
			if n.Schema == "" {
				n.Schema = string(q.Schema)
			}
			tables = append(tables, n)
		}
	}
	return tables, known
}

// temporaryDDL reports whether text creates or drops a temporary table.
func temporaryDDL(text string) bool {
	f := strings.Fields(strings.ToUpper(statement.PastComments(text)))
	return len(f) > 2 && (f[0] == "CREATE" || f[0] == "DROP") && (f[1] == "TEMPORARY" || (f[1] == "OR" && len(f) > 3 && f[3] == "TEMPORARY"))
}

// firstUncopied names a table of the replicated schemas whose engine the
// cluster does not copy, or "" when there is none.
func (e *Engines) firstUncopied() (engine, table string, err error) {
	rows, err := queryPairs(e.db, "SELECT ENGINE, CONCAT('`', TABLE_SCHEMA, '`.`', TABLE_NAME, '`') FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'"+
		" AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys', 'gapless') AND ENGINE <> 'InnoDB'")
	if err != nil {
		return "", "", fmt.Errorf("read the target's table engines: %w", err)
	}
	for _, r := range rows {
		if !e.cluster.ReplicatesEngine(r[0]) {
			return r[0], r[1], nil
		}
	}
	return "", "", nil
}

// queryPairs runs a query of two text columns on db.
func queryPairs(db *sql.DB, query string) ([][]string, error) {
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var a, b sql.NullString
		if err := rows.Scan(&a, &b); err != nil {
			return nil, err
		}
		out = append(out, []string{a.String, b.String})
	}
	return out, rows.Err()
}

// clusterHint says what to do when a Galera node refuses a group for a
// limit of its cluster: a writeset over wsrep_max_ws_rows or
// wsrep_max_ws_size (the group alone: a batch of several stays under them,
// BatchLimits), or an XA transaction, which Galera does not replicate.
func clusterHint(err error) error {
	code, msg, _ := serverErr(err)
	switch {
	case strings.Contains(msg, "wsrep_max_ws_rows exceeded"):
		return &hinted{err, "this transaction changes more rows than the target cluster's wsrep_max_ws_rows lets one transaction: SET GLOBAL wsrep_max_ws_rows=0 (no bound, the default) on every node and run again; skipping it would lose it"}
	case strings.Contains(msg, "Maximum writeset size exceeded"):
		return &hinted{err, "this transaction is larger than the target cluster's wsrep_max_ws_size: raise it on every node (SET GLOBAL wsrep_max_ws_size=2147483647, the default) and run again; skipping it would lose it"}
	case code == 1235 && strings.Contains(msg, "XA"):
		return &hinted{err, "a Galera cluster does not replicate XA transactions: the source's XA transaction cannot be applied to it as one; apply this stream to a server outside the cluster, or skip the transaction knowing the target then lacks its changes"}
	}
	return err
}

// BatchLimits are the bytes and transactions of one batch a Galera node
// takes in one writeset: under wsrep_max_ws_size, and one transaction per
// batch when wsrep_max_ws_rows bounds the rows (their number is not known
// before the rows are applied). ok is false on a lone server.
func BatchLimits(node galera.Node) (bytes int, transactions int, ok bool) {
	if !node.On {
		return 0, 0, false
	}
	bytes = 4 << 20
	if node.MaxWSSize > 0 && node.MaxWSSize/4 < int64(bytes) {
		bytes = int(node.MaxWSSize / 4)
	}
	if node.MaxWSRows > 0 {
		transactions = 1
	}
	return bytes, transactions, true
}
