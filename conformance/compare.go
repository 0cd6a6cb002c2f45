// This file owns comparing a target with the primary once an applier is
// done: the schemas (databases, tables, views, routines, triggers, events,
// sequences), the accounts and grants, and every table's contents (CHECKSUM
// TABLE EXTENDED). A server is read into a snapshot, a map from what an
// object is ("table test.t1") to how it reads; two snapshots differ where
// the maps do. What a replica legitimately holds differently is never read:
// see notCompared, which the report prints.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gapless/internal/sandbox"
)

// skippedSchemas are never compared: the server's own, mtr's (written with
// the binlog off by mtr.add_suppression), gapless's checkpoint schema.
var skippedSchemas = []string{"information_schema", "performance_schema", "sys", "mysql", "mtr", "gapless"}

// skippedMysqlTables are the mysql.* tables whose contents are not
// compared by checksum: replica state, logs, statistics a server keeps for
// itself, and the tables compared row by row without their timestamps
// (grants, routines, events).
var skippedMysqlTables = []string{
	"gtid_slave_pos", "general_log", "slow_log", "transaction_registry",
	"innodb_index_stats", "innodb_table_stats", "table_stats", "column_stats", "index_stats",
	"global_priv", "db", "tables_priv", "columns_priv", "procs_priv", "proxies_priv", "roles_mapping",
	"proc", "event",
}

// harnessAccounts are the sandbox's own accounts, made on every server
// with the binlog off.
var harnessAccounts = []string{sandbox.ReplUser, sandbox.ApplierUser}

// notCompared says, for the report, what a comparison leaves out.
func notCompared() []string {
	return []string{
		"schemas " + strings.Join(skippedSchemas, ", ") + " (mysql's tables are compared as below)",
		"mysql." + strings.Join(skippedMysqlTables[:9], ", mysql.") + ": replica state, logs and statistics",
		"grant tables, mysql.proc and mysql.event: compared row by row without their timestamps (password_last_changed, Timestamp, created, modified) and without an event's originator; an event the primary has ENABLED or DISABLED is to be SLAVESIDE_DISABLED on a target, as a replica makes it",
		"the accounts " + strings.Join(harnessAccounts, " and ") + " (the harness's own)",
		"the AUTO_INCREMENT counter in SHOW CREATE TABLE (rolled-back inserts move the primary's)",
		"server_id, gtid_slave_pos, replica status, the binlog itself, and all server variables",
	}
}

type snapshot map[string]string

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// takeSnapshot reads everything compared from srv. The primary's events
// are read as a replica must hold them: SLAVESIDE_DISABLED where the
// primary has them ENABLED or DISABLED.
func takeSnapshot(ctx context.Context, srv *sandbox.Server, primary bool) (snapshot, error) {
	db, err := srv.Open("")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	s := snapshot{}
	if _, err := db.ExecContext(ctx, "SET SESSION sql_mode='', SESSION group_concat_max_len=1048576"); err != nil {
		return nil, fmt.Errorf("%s: %w", srv.Config.Name, err)
	}
	skip := "('" + strings.Join(skippedSchemas, "','") + "')"
	if err := s.readRows(ctx, db, "database",
		"SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME, SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN "+skip, 1); err != nil {
		return nil, err
	}
	tables, err := queryRows(ctx, db, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN "+skip+
		" OR (TABLE_SCHEMA='mysql' AND TABLE_NAME NOT IN ('"+strings.Join(skippedMysqlTables, "','")+"')) ORDER BY 1, 2")
	if err != nil {
		return nil, fmt.Errorf("%s: listing tables: %w", srv.Config.Name, err)
	}
	for _, t := range tables {
		name := quoteName(t[0]) + "." + quoteName(t[1])
		key := t[0] + "." + t[1]
		if t[0] != "mysql" {
			show := "SHOW CREATE TABLE " + name
			if t[2] == "VIEW" {
				show = "SHOW CREATE VIEW " + name
			}
			def, err := queryRows(ctx, db, show)
			if err != nil {
				s[strings.ToLower(t[2])+" "+key] = "error: " + err.Error()
			} else if len(def) > 0 {
				s[strings.ToLower(t[2])+" "+key] = autoIncrement.ReplaceAllString(strings.Join(def[0][1:], " | "), "")
			}
		}
		if t[2] == "VIEW" {
			continue
		}
		sum, err := queryRows(ctx, db, "CHECKSUM TABLE "+name+" EXTENDED")
		switch {
		case err != nil:
			s["checksum "+key] = "error: " + err.Error()
		case len(sum) > 0:
			s["checksum "+key] = sum[0][1]
		}
	}
	eventStatus := "status"
	if primary {
		eventStatus = "IF(status IN ('ENABLED', 'DISABLED'), 'SLAVESIDE_DISABLED', status)"
	}
	type rowQuery struct{ kind, query string }
	accounts := "('" + strings.Join(harnessAccounts, "','") + "')"
	for _, q := range []rowQuery{
		{"routine", "SELECT db, name, type, param_list, returns, body, definer, sql_mode, security_type, is_deterministic, sql_data_access, comment, character_set_client, collation_connection, db_collation, aggregate FROM mysql.proc WHERE db NOT IN " + skip},
		{"trigger", "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_MANIPULATION, EVENT_OBJECT_TABLE, ACTION_ORDER, ACTION_STATEMENT, ACTION_TIMING, SQL_MODE, DEFINER, CHARACTER_SET_CLIENT, COLLATION_CONNECTION, DATABASE_COLLATION FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA NOT IN " + skip},
		{"event", "SELECT db, name, body, definer, execute_at, interval_value, interval_field, starts, ends, on_completion, sql_mode, comment, time_zone, character_set_client, collation_connection, db_collation, " + eventStatus + " FROM mysql.event"},
		{"account", "SELECT User, Host, JSON_REMOVE(Priv, '$.password_last_changed') FROM mysql.global_priv WHERE User NOT IN " + accounts},
		{"grant-db", "SELECT * FROM mysql.db WHERE User NOT IN " + accounts},
		{"grant-table", "SELECT Host, Db, User, Table_name, Grantor, Table_priv, Column_priv FROM mysql.tables_priv"},
		{"grant-column", "SELECT Host, Db, User, Table_name, Column_name, Column_priv FROM mysql.columns_priv"},
		{"grant-routine", "SELECT Host, Db, User, Routine_name, Routine_type, Grantor, Proc_priv FROM mysql.procs_priv"},
		{"grant-proxy", "SELECT Host, User, Proxied_host, Proxied_user, With_grant, Grantor FROM mysql.proxies_priv"},
		{"role-grant", "SELECT * FROM mysql.roles_mapping WHERE User NOT IN " + accounts},
	} {
		keyCols := 2
		if strings.HasPrefix(q.kind, "grant") || q.kind == "role-grant" {
			keyCols = 0 // a whole row is its own key: a grant is there or not
		}
		if err := s.readRows(ctx, db, q.kind, q.query, keyCols); err != nil {
			return nil, fmt.Errorf("%s: %w", srv.Config.Name, err)
		}
	}
	return s, nil
}

// readRows adds one entry per row: the first keyCols columns name it, the
// rest are its value (keyCols 0: the whole row is the name).
func (s snapshot) readRows(ctx context.Context, db *sql.DB, kind, query string, keyCols int) error {
	rows, err := queryRows(ctx, db, query)
	if err != nil {
		return fmt.Errorf("reading %ss: %w", kind, err)
	}
	for _, r := range rows {
		if keyCols == 0 || keyCols > len(r) {
			s[kind+" "+strings.Join(r, " | ")] = "present"
			continue
		}
		s[kind+" "+strings.Join(r[:keyCols], ".")] = strings.Join(r[keyCols:], " | ")
	}
	return nil
}

// queryRows reads every row of a query as strings (NULL as "NULL").
func queryRows(ctx context.Context, db *sql.DB, query string) ([][]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		values := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range values {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// diffSnapshots lists how target differs from primary, one line per object,
// sorted; empty when they are equal.
func diffSnapshots(primary, target snapshot) []string {
	var out []string
	for k, v := range primary {
		tv, ok := target[k]
		switch {
		case !ok:
			out = append(out, k+": missing on the target")
		case tv != v:
			out = append(out, fmt.Sprintf("%s: primary %q, target %q", k, abbreviate(v, 60), abbreviate(tv, 60)))
		}
	}
	for k := range target {
		if _, ok := primary[k]; !ok {
			out = append(out, k+": only on the target")
		}
	}
	sort.Strings(out)
	return out
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// summarizeDiff is the first few differences and how many more there are.
func summarizeDiff(diff []string, n int) string {
	if len(diff) <= n {
		return strings.Join(diff, "; ")
	}
	return strings.Join(diff[:n], "; ") + fmt.Sprintf("; and %d more", len(diff)-n)
}
