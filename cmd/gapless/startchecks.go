// startchecks.go holds the checks a replicate run makes against the source
// and the target before it starts: each refuses, with what to do, a server
// the run cannot replicate from or apply to, or warns of one it can but
// where the user should know something. They only read (the privilege
// probes change nothing): a refused run has written nothing to the target.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"

	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/gtid"
)

// checkStartPosition refuses an explicit --start-position while the target
// holds a position for the stream (the run would continue from that one),
// unless the two are the same.
func checkStartPosition(ctx context.Context, db *sql.DB, stream string, start *gtid.MariaDBPosition) error {
	if start == nil {
		return nil
	}
	applied, found, err := checkpoint.Existing(ctx, db, stream)
	if err != nil || !found {
		return err
	}
	if len(applied.Extra) == 0 && applied.Position.String() == start.String() {
		return nil
	}
	return fmt.Errorf("--start-position %s: the target already holds position %s for stream %q, and replication continues from there; "+
		"if the target was re-seeded from a backup, clear that position first with `gapless reset --target URL --stream %s`, then run again with --start-position; "+
		"otherwise leave --start-position out",
		start.String(), emptyAsNone(applied.Position.String()), stream, stream)
}

// checkSource refuses a source gapless cannot replicate from, with the
// reason, and returns its binlog_format. It warns of one in STATEMENT
// format: it is replicated as
// MariaDB's replica replicates it, but a statement that MIXED would have
// logged as rows (UUID(), a LIMIT without ORDER BY) can leave the target
// different, on gapless's target as on MariaDB's replica.
func checkSource(ctx context.Context, db *sql.DB, cfg dburl.Config, logger *slog.Logger) (format string, err error) {
	flavor, version, err := binlog.ServerFlavor(ctx, db)
	if err != nil {
		return "", fmt.Errorf("source %s: %w", cfg.Addr(), err)
	}
	if flavor != binlog.FlavorMariaDB {
		return "", fmt.Errorf("source %s runs %s: only MariaDB sources are replicated so far", cfg.Addr(), version)
	}
	var logBin int
	err = db.QueryRowContext(ctx, "SELECT @@log_bin, @@global.binlog_format").Scan(&logBin, &format)
	if err != nil {
		return "", fmt.Errorf("source %s: read binlog settings: %w", cfg.Addr(), err)
	}
	if logBin == 0 {
		return "", fmt.Errorf("source %s has no binlog (log_bin=OFF); start it with log_bin and binlog_format=ROW", cfg.Addr())
	}
	if strings.EqualFold(format, "STATEMENT") {
		logger.Warn("the source writes binlog_format=STATEMENT: a statement unsafe for statement-based replication (UUID(), a LIMIT without ORDER BY, ...) can leave the target different from the source, as it can MariaDB's own replica; gapless warns at the first of each kind; SET GLOBAL binlog_format=MIXED on the source logs such statements as rows",
			"source", cfg.Addr())
	}
	return format, nil
}

// checkTargetPrivileges refuses a target user that cannot run the apply
// session, naming every privilege it lacks, before anything is written to
// the target. Each probe checks a privilege without changing the session.
func checkTargetPrivileges(ctx context.Context, db *sql.DB, cfg dburl.Config) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("target %s: %w", cfg.Addr(), err)
	}
	defer conn.Close()
	probes := []struct{ stmt, privilege, why string }{
		{"SET @@session.sql_log_bin=@@session.sql_log_bin", "BINLOG ADMIN", "to keep applied transactions in or out of the target's binlog"},
		{"BINLOG ''", "BINLOG REPLAY", "to replay row events under the source's GTIDs"},
	}
	var missing, grants []string
	for _, p := range probes {
		_, err := conn.ExecContext(ctx, p.stmt)
		var me *mysqldriver.MySQLError
		if errors.As(err, &me) && me.Number == 1227 {
			missing = append(missing, fmt.Sprintf("%s (or SUPER) %s", p.privilege, p.why))
			grants = append(grants, p.privilege)
		}
	}
	account := fmt.Sprintf("'%s'", cfg.User)
	var current string
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&current); err == nil {
		if user, host, ok := strings.Cut(current, "@"); ok {
			account = fmt.Sprintf("'%s'@'%s'", user, host)
		}
	}
	if len(missing) == 0 {
		return checkReadOnly(ctx, conn, cfg, account)
	}
	return fmt.Errorf("target %s: user %s lacks %s; on the target, GRANT %s ON *.* TO %s (it also needs the data privileges on the replicated schemas and on %s.*, e.g. GRANT ALL ON *.*); nothing was applied",
		cfg.Addr(), account, strings.Join(missing, ", and "), strings.Join(grants, ", "), account, checkpoint.Schema)
}

// readOnlyProbe is refused by a read-only target before anything else is
// checked (1290), and otherwise fails without changing anything: a table
// cannot have two columns of one name.
const readOnlyProbe = "CREATE TABLE " + checkpoint.Schema + ".read_only_probe (a INT, a INT)"

// checkReadOnly refuses a target that is read-only (read_only=ON, as
// replicas are often set) to a user without READ_ONLY ADMIN: every
// transaction would fail. MariaDB's own replica writes despite read_only.
func checkReadOnly(ctx context.Context, conn *sql.Conn, cfg dburl.Config, account string) error {
	_, err := conn.ExecContext(ctx, readOnlyProbe)
	var me *mysqldriver.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 || !strings.Contains(me.Message, "read-only") {
		return nil
	}
	return fmt.Errorf("target %s is read-only (read_only=ON) and user %s may not write to it; on the target, GRANT READ_ONLY ADMIN ON *.* TO %s "+
		"(on MariaDB 10.11, SUPER does not include it), or SET GLOBAL read_only=OFF; nothing was applied", cfg.Addr(), account, account)
}

// warnWithoutProcess warns when the target user cannot read InnoDB's lock
// waits and dictionary, which takes the PROCESS privilege. The run works
// without, but the watchdog is blind and foreign keys are read the slow way.
func warnWithoutProcess(ctx context.Context, db *sql.DB, logger *slog.Logger) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS").Scan(&n)
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && me.Number == 1227 {
		logger.Warn("the target user lacks the PROCESS privilege: a lock wait the policy could not foresee " +
			"(a trigger on the target, for one) then lasts until innodb_lock_wait_timeout, and foreign keys are read " +
			"from information_schema, which opens every table; GRANT PROCESS ON *.* TO the apply user")
	}
}

// targetWritesBinlog reports whether applied transactions go to the target's binlog.
func targetWritesBinlog(ctx context.Context, db *sql.DB, want bool) (bool, error) {
	if !want {
		return false, nil
	}
	var logBin int
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin").Scan(&logBin); err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	return logBin == 1, nil
}

// warnRowTargetGetsStatements warns when the target's binlog_format is ROW
// and sourceFormat is not: the apply sessions binlog in MIXED, so the
// source's statements go to the target's binlog as statements, which a
// reader of it that takes only row events (a CDC tool) would not see.
// A target that cannot say is left alone.
func warnRowTargetGetsStatements(ctx context.Context, sourceFormat string, tgt *sql.DB, logger *slog.Logger) {
	var targetFormat string
	if tgt.QueryRowContext(ctx, "SELECT @@global.binlog_format").Scan(&targetFormat) != nil {
		return
	}
	if !strings.EqualFold(targetFormat, "ROW") || strings.EqualFold(sourceFormat, "ROW") {
		return
	}
	logger.Warn("the target's binlog_format is ROW, but the source's is "+sourceFormat+": the changes the source logs as statements go to the target's binlog as those statements, not as rows "+
		"(gapless binlogs the source's events as the source logged them, so that each source transaction stays one GTID group on the target), "+
		"and a reader of the target's binlog that takes only row events (a CDC tool) would miss them; "+
		"SET GLOBAL binlog_format=ROW on the source makes every change a row event in both binlogs",
		"source format", sourceFormat, "target format", targetFormat)
}

// refuseRing refuses causal commit order with the target's binlog written
// when the source has replicated from the target (its @@gtid_slave_pos
// names the target's server id: a replication ring): the target would log
// the source's transactions under its own server id, and the source's
// replica would apply them a second time. The apply pipeline stops the same
// way at the first of the target's groups that comes back (ownGroup).
func refuseRing(ctx context.Context, src *sql.DB, targetServer uint32) error {
	var s string
	if err := src.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil || s == "" {
		return nil // a source that cannot say: the pipeline's check remains
	}
	pos, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return nil
	}
	for _, g := range pos.GTIDs() {
		if g.Server == targetServer {
			return fmt.Errorf("the source's @@gtid_slave_pos holds %s, written by the target (server id %d): the source replicates from the target (a replication ring), and under --commit-order causal the target would log the source's transactions under its own server id and GTIDs, which the source's replica takes for the target's writes and applies a second time; "+
				"run with --commit-order strict (the default; the target then logs them under the source's GTIDs, which the source passes) or --no-target-binlog", g, targetServer)
		}
	}
	return nil
}

// targetSlavePos is the target's @@gtid_slave_pos, the position a target
// restored from a backup or replicated by the server itself carries.
func targetSlavePos(ctx context.Context, db *sql.DB) (*gtid.MariaDBPosition, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&s); err != nil {
		return nil, fmt.Errorf("target: read @@gtid_slave_pos: %w", err)
	}
	if s == "" {
		return nil, nil
	}
	p, err := gtid.ParseMariaDBPosition(s)
	if err != nil {
		return nil, fmt.Errorf("target: @@gtid_slave_pos: %w", err)
	}
	return &p, nil
}
