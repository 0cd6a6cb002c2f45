// startchecks.go opens the source and the target of a replicate run and
// checks them before the run starts, in the order openServers keeps: each
// check refuses, with what to do, a server the run cannot replicate from or
// apply to, or warns of one it can but where the user should know
// something. They only read (the privilege probes change nothing), and they
// all come before the relay folder is taken: a refused run has written
// nothing to the target nor to the relay log. Checks of a kind of their own
// live beside their kind: guards.go (the source as target, a shared relay
// folder), galera.go (cluster nodes), progress.go (the source's binlog goes
// on from the target's position).
package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"gapless/internal/apply"
	"gapless/internal/binlog"
	"gapless/internal/checkpoint"
	"gapless/internal/dburl"
	"gapless/internal/galera"
	"gapless/internal/gtid"
)

// checkedServers are the source and the target of a run, open, with what
// the checks found: the run is wired from them.
type checkedServers struct {
	source, target       *sql.DB
	sourceCfg, targetCfg dburl.Config
	sourceTLS            *tls.Config   // the source URL's tls parameter (nil: none)
	sourceTimeout        time.Duration // its timeout parameter (0: the driver's)
	sourceFormat         string        // the source's @@binlog_format
	sourceID, targetID   serverIdentity
	writeBinlog          bool        // applied transactions go to the target's binlog
	keepGTID             bool        // ... and keep the source's GTIDs there
	rowFormat            bool        // ... and the apply sessions log rows (the target's binlog_format is ROW)
	cluster              galera.Node // the target as a Galera node (On false: it is none)
	// start is where the run starts when the target holds no position for
	// the stream: --start-position, else the target's @@gtid_slave_pos in
	// the domains the source has written, else nil (the source's first binlog).
	start *gtid.MariaDBPosition
}

// openServers opens the source and the target and checks them. The order is
// the one a user meets the messages in: the source alone first (a wrong
// source URL is named before the target is reached), then the target beside
// it, then the position the run starts from, then the GTIDs the target's
// binlog gets. On an error what was opened is closed again.
func openServers(ctx context.Context, f replicateFlags, in checkedFlags, logger *slog.Logger) (_ *checkedServers, err error) {
	s := &checkedServers{} // not the result, which an error return sets to nil before the close
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err = s.openSource(ctx, in.sourceURL, logger); err != nil {
		return nil, err
	}
	if err = s.openTarget(ctx, in.targetURL, f.serverID, !f.noTargetBinlog, logger); err != nil {
		return nil, err
	}
	if err = s.findStart(ctx, f.stream, in.start, in.until, logger); err != nil {
		return nil, err
	}
	if err = s.checkTargetGTIDs(ctx, f.commitOrder); err != nil {
		return nil, err
	}
	return s, nil
}

// close closes the target's pool, then the source's.
func (s *checkedServers) close() {
	if s.target != nil {
		s.target.Close()
	}
	if s.source != nil {
		s.source.Close()
	}
}

// openSource opens the source and checks it alone: the nodes its URL names,
// its flavour and binlog, and its URL's tls and timeout parameters.
func (s *checkedServers) openSource(ctx context.Context, url string, logger *slog.Logger) error {
	db, cfg, err := dburl.Open(url, nil)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	s.source, s.sourceCfg = db, cfg
	if err := checkSourceNodes(ctx, db, cfg); err != nil {
		return err
	}
	if s.sourceFormat, err = checkSource(ctx, db, cfg, logger); err != nil {
		return err
	}
	if s.sourceTLS, err = cfg.TLS(); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if s.sourceTimeout, err = cfg.Timeout(0); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	return nil
}

// openTarget opens the target and checks it beside the source: that it is
// another server, that its own replica does not run from the source, that
// its user may apply, and whether it writes a binlog and is a Galera node.
// followTargetNodes comes first: on a node cut off from its cluster, any
// other statement would wait for the cluster.
func (s *checkedServers) openTarget(ctx context.Context, url string, serverID uint32, wantBinlog bool, logger *slog.Logger) error {
	db, cfg, err := dburl.Open(url, targetParams)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	s.target, s.targetCfg = db, cfg
	followTargetNodes(ctx, db, cfg, logger)
	if s.sourceID, s.targetID, err = checkServers(ctx, s.source, db, serverID); err != nil {
		return err
	}
	if err := checkTargetReplica(ctx, db, s.sourceID, s.sourceCfg.Host, s.sourceCfg.Port); err != nil {
		return err
	}
	if err := checkTargetPrivileges(ctx, db, cfg); err != nil {
		return err
	}
	warnWithoutProcess(ctx, db, logger)
	if s.writeBinlog, err = targetWritesBinlog(ctx, db, wantBinlog); err != nil {
		return err
	}
	if s.cluster, err = checkGaleraTarget(ctx, db, s.writeBinlog, logger); err != nil {
		return err
	}
	// A Galera node logs every change of a client session as rows, whatever
	// the session's format.
	s.rowFormat = s.writeBinlog && !s.cluster.On && targetLogsRows(ctx, s.sourceFormat, db, logger)
	return nil
}

// findStart settles s.start from --start-position (refused while the target
// holds another position) or the target's @@gtid_slave_pos, and checks that
// the source's binlog goes on from the position the run continues from.
func (s *checkedServers) findStart(ctx context.Context, stream string, start, until *gtid.MariaDBPosition, logger *slog.Logger) error {
	if err := checkStartPosition(ctx, s.target, stream, start); err != nil {
		return err
	}
	startOrigin := "--start-position"
	if start == nil {
		var err error
		if start, err = targetSlavePos(ctx, s.target); err != nil {
			return err
		}
		startOrigin = slavePosOrigin
	}
	written, err := sourceWritten(ctx, s.source)
	if err != nil {
		return err
	}
	if startOrigin == slavePosOrigin {
		start = sourceDomainsOf(start, written, logger)
	}
	position, origin := appliedOrStart(ctx, s.target, stream, start, startOrigin)
	if err := checkSourceContinues(written, position, origin, logger); err != nil {
		return err
	}
	warnUntilUnseen(until, written, position, logger)
	s.start = start
	return nil
}

// checkTargetGTIDs settles whether the target's binlog keeps the source's
// GTIDs, and where it does not, refuses a replication ring.
func (s *checkedServers) checkTargetGTIDs(ctx context.Context, commitOrder string) error {
	// Causal order commits a domain's transactions out of sequence, which a
	// binlog in GTID strict mode refuses: the target writes them under GTIDs of its own.
	// A Galera node gives a DDL the GTID its cluster chooses (galera.go).
	s.keepGTID = s.writeBinlog && commitOrder == string(apply.Strict) && !s.cluster.On
	if !s.writeBinlog || s.keepGTID {
		return nil
	}
	if err := refuseRing(ctx, s.source, s.targetID.serverID); err != nil {
		return err
	}
	if !s.cluster.On {
		fmt.Fprintln(os.Stderr, "note: with --commit-order causal the target's binlog gets GTIDs of its own, not the source's")
	}
	return nil
}

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

// targetLogsRows reports whether the target's global binlog_format is
// ROW: the apply sessions then log rows too (target.Options.RowFormat), so
// that a reader of the target's binlog that takes only row events (a CDC
// tool) sees the changes the source logged as statements. A target that
// cannot say is taken for MIXED.
func targetLogsRows(ctx context.Context, sourceFormat string, tgt *sql.DB, logger *slog.Logger) bool {
	var targetFormat string
	if tgt.QueryRowContext(ctx, "SELECT @@global.binlog_format").Scan(&targetFormat) != nil || !strings.EqualFold(targetFormat, "ROW") {
		return false
	}
	if !strings.EqualFold(sourceFormat, "ROW") {
		logger.Info("the target's binlog_format is ROW: the changes the source logs as statements go to the target's binlog as rows; "+
			"a group that must stay one transaction and writes a table that is not transactional is applied in MIXED, with a warning naming it",
			"source format", sourceFormat, "target format", targetFormat)
	}
	return true
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
