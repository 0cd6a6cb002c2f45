// Package checkpoint owns the position table on the target: the only place
// that writes or reads gapless's position SQL.
//
// The applied position of a stream is kept in gapless.checkpoint, one row per
// (stream, GTID domain, worker slot). A worker writes its own slot's row in
// the same target transaction as the data it applies, so:
//   - the position and the data commit or roll back together (exactly once);
//   - parallel workers never write the same row (no contention);
//   - the table holds streams x domains x workers rows however many
//     transactions are applied (it never grows with the history).
//
// Under strict commit order every committed transaction is gap-less, and the
// position of a domain is the highest sequence number among its slots' rows.
// Under causal commit order a transaction may commit while an earlier one has
// not (a gap); its row then also records the gap-less position at that moment
// (low_water) and the transactions its slot committed above it (above), so a
// restart knows exactly which transactions past the gap-less position are
// applied already. A slot commits at most a bounded window above low_water, and
// above lists runs of consecutive sequence numbers as one entry each, so it
// stays short.
package checkpoint

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"gapless/internal/gtid"
	"gapless/internal/sqltext"
)

// Schema is gapless's own database on the target.
const Schema = "gapless"

const createSchema = "CREATE DATABASE IF NOT EXISTS " + Schema

const createTable = `CREATE TABLE IF NOT EXISTS ` + Schema + `.checkpoint (
  stream      VARCHAR(64)      NOT NULL COMMENT 'replication stream, see --stream',
  domain_id   INT UNSIGNED     NOT NULL COMMENT 'GTID domain',
  slot        SMALLINT UNSIGNED NOT NULL COMMENT 'worker slot that wrote the row',
  server_id   INT UNSIGNED     NOT NULL,
  seq_no      BIGINT UNSIGNED  NOT NULL,
  source_time BIGINT           NOT NULL COMMENT 'unix seconds the source wrote the transaction',
  applied_at  DATETIME(6)      NOT NULL COMMENT 'UTC time the target committed it',
  low_water   VARCHAR(2048)    NOT NULL DEFAULT '' COMMENT 'causal order: gap-less position when the row was written',
  above       TEXT             NULL COMMENT 'causal order: GTIDs this slot committed above low_water',
  PRIMARY KEY (stream, domain_id, slot)
) ENGINE=InnoDB COMMENT='gapless: applied position, written with the data'`

const createWorkers = `CREATE TABLE IF NOT EXISTS ` + Schema + `.workers (
  stream     VARCHAR(64)       NOT NULL,
  slot       SMALLINT UNSIGNED NOT NULL,
  state      VARCHAR(64)       NOT NULL COMMENT 'idle, applying, waiting for prior commit, ...',
  gtid       VARCHAR(256)      NOT NULL DEFAULT '' COMMENT 'transaction (or batch) held',
  since      DATETIME(6)       NOT NULL COMMENT 'UTC time the worker entered the state',
  updated_at DATETIME(6)       NOT NULL COMMENT 'UTC time of the report',
  PRIMARY KEY (stream, slot)
) ENGINE=InnoDB COMMENT='gapless: what each worker of a running applier does, rewritten every second'`

// AloneSlots is added to a worker's slot for the position rows it writes
// outside the target's binlog: after a DDL or another group the target
// binlogs as it executes, for a skipped transaction, and the seed. The rows
// of slots below it are written inside binlogged transactions only. A
// replica of the target so holds exactly the rows the binlog created, and
// never meets an update of a row it lacks; the position is the highest of
// all rows either way.
const AloneSlots = 32768

// Store reads and writes one stream's position.
type Store struct {
	db     *sql.DB
	stream string
}

// OwnDomain is the GTID domain in which gapless creates its schema on a target
// that writes a binlog. The position rows travel inside the applied
// transactions to the target's own replicas, so they need the table too; a
// domain of its own keeps that DDL out of the source's domains, whose sequence
// numbers the target must keep as the source wrote them.
const OwnDomain = 2147483647

// Open creates gapless's schema on the target if it is missing: in OwnDomain
// when binlogged is true, outside the target's binlog otherwise.
func Open(ctx context.Context, db *sql.DB, stream string, binlogged bool) (*Store, error) {
	if stream == "" || len(stream) > 64 {
		return nil, fmt.Errorf("stream name %q must be 1 to 64 characters", stream)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	defer Discard(conn)
	setup := "SET @@session.sql_log_bin=0"
	if binlogged {
		setup = fmt.Sprintf("SET @@session.sql_log_bin=1, @@session.gtid_domain_id=%d", OwnDomain)
	}
	var exists int
	err = conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('checkpoint', 'workers')", Schema).Scan(&exists)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if exists != 2 {
		for _, stmt := range []string{setup, createSchema, createTable, createWorkers} {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("target: create %s.checkpoint: %w", Schema, err)
			}
		}
	}
	if err := createBegunTable(ctx, conn); err != nil {
		return nil, err
	}
	if err := createTemporaryTable(ctx, conn); err != nil {
		return nil, err
	}
	return &Store{db: db, stream: stream}, nil
}

// Stream is the stream's name.
func (s *Store) Stream() string { return s.stream }

// Applied is what the target holds of a stream: everything up to the
// gap-less Position, and the Extra transactions above it that causal commit
// order applied ahead of a gap.
type Applied struct {
	Position gtid.MariaDBPosition
	Extra    map[gtid.MariaDBGTID]bool
}

// Contains reports whether g is applied.
func (a Applied) Contains(g gtid.MariaDBGTID) bool {
	return a.Position.Contains(g) || a.Extra[g]
}

// Applied reads what the target holds of the stream.
func (s *Store) Applied(ctx context.Context) (Applied, error) {
	rows, err := s.Rows(ctx)
	if err != nil {
		return Applied{}, err
	}
	a := Applied{Extra: map[gtid.MariaDBGTID]bool{}}
	raise := func(g gtid.MariaDBGTID) {
		if have, ok := a.Position.Get(g.Domain); !ok || g.Seq > have.Seq {
			a.Position.Advance(g)
		}
	}
	for _, r := range rows {
		if r.LowWater == nil {
			raise(r.GTID)
			continue
		}
		for _, d := range r.LowWater.Domains() {
			g, _ := r.LowWater.Get(d)
			raise(g)
		}
		a.Extra[r.GTID] = true
		for _, g := range r.Above {
			a.Extra[g] = true
		}
	}
	for g := range a.Extra {
		if a.Position.Contains(g) {
			delete(a.Extra, g)
		}
	}
	return a, nil
}

// Position reads the gap-less applied position of the stream; empty when nothing was ever applied.
func (s *Store) Position(ctx context.Context) (gtid.MariaDBPosition, error) {
	a, err := s.Applied(ctx)
	return a.Position, err
}

// Statement is the SQL a worker runs inside the transaction that applies g.
func (s *Store) Statement(slot int, g gtid.MariaDBGTID, sourceTime time.Time) string {
	// low_water and above are left to their defaults, which the update
	// names too: not '', since the statement runs under whatever sql_mode
	// the source's last statement left, and EMPTY_STRING_IS_NULL makes ''
	// NULL. (Nor DEFAULT among the values, which Guarded's SELECT refuses.)
	return s.statement(slot, g, sourceTime, "", "low_water = DEFAULT(low_water), above = NULL")
}

// CausalStatement is Statement under causal commit order: it also records
// the gap-less position and the slot's transactions committed above it.
func (s *Store) CausalStatement(slot int, g gtid.MariaDBGTID, sourceTime time.Time, lowWater gtid.MariaDBPosition, above []gtid.MariaDBGTID) string {
	lw := lowWater.String()
	if lw == "" {
		lw = "-" // nothing gap-less yet, but the row is a causal one
	}
	return s.statement(slot, g, sourceTime, ", "+sqltext.Literal(lw)+", "+sqltext.Literal(encodeAbove(above)),
		"low_water = VALUES(low_water), above = VALUES(above)")
}

// The clauses around a position statement's values, where Guarded cuts it.
const (
	valuesClause = ") VALUES ("
	upsertClause = ") ON DUPLICATE KEY UPDATE "
)

// statement is the position row's upsert; causal is the values of
// low_water and above after a comma, or "" to leave them to their
// defaults, and causalUpdate what the update sets them to.
func (s *Store) statement(slot int, g gtid.MariaDBGTID, sourceTime time.Time, causal, causalUpdate string) string {
	columns := "stream, domain_id, slot, server_id, seq_no, source_time, applied_at"
	if causal != "" {
		columns += ", low_water, above"
	}
	return fmt.Sprintf("INSERT INTO %s.checkpoint (%s"+valuesClause+"%s, %d, %d, %d, %d, %d, %s%s"+upsertClause+
		"server_id = VALUES(server_id), seq_no = VALUES(seq_no), source_time = VALUES(source_time), "+
		"applied_at = VALUES(applied_at), %s",
		Schema, columns, sqltext.Literal(s.stream), g.Domain, slot, g.Server, g.Seq, sourceTime.Unix(),
		sqltext.Literal(time.Now().UTC().Format("2006-01-02 15:04:05.000000")), causal, causalUpdate)
}

// Guarded turns a position statement (Statement, CausalStatement) into one
// that writes its row only when the target's binlog holds no GTID of g's
// domain past g; false when stmt is not such a statement. The statement
// then changes no row where the target wrote g's group as more than one
// GTID group: the last part took a later sequence number. (A group the
// target did not binlog at all, an XA ROLLBACK of a branch that changed
// nothing there, passes, as it must.) The domain's sequence number is
// compared as a string of 20 digits, which turns nothing into a number: a
// conversion warning is an error under a strict sql_mode, and the statement
// runs under the source's. The values and the update clause stay as they
// are: the clauses cut at hold no quoted text, and the update clause is the
// statement's end.
func Guarded(stmt string, g gtid.MariaDBGTID) (string, bool) {
	i := strings.Index(stmt, valuesClause)
	j := strings.LastIndex(stmt, upsertClause)
	if i < 0 || j < i {
		return "", false
	}
	return stmt[:i] + ") SELECT " + stmt[i+len(valuesClause):j] +
		fmt.Sprintf(" FROM DUAL WHERE %s <= %s", lastSeq(g.Domain), seqText(g)) +
		stmt[j+1:], true
}

// lastSeq is an expression for the sequence number of the last GTID of
// domain d in the target's binlog, as 20 digits ("0" when it holds none).
func lastSeq(d uint32) string {
	return fmt.Sprintf("COALESCE(LPAD(SUBSTRING_INDEX(REGEXP_SUBSTR(CONCAT(%s, @@global.gtid_binlog_pos), %s), %s, -1), 20, %s), %s)",
		sqltext.Literal(","), sqltext.Literal(fmt.Sprintf(",%d-[0-9]+-[0-9]+", d)), sqltext.Literal("-"),
		sqltext.Literal("0"), sqltext.Literal("0"))
}

// seqText is g's sequence number as lastSeq writes one.
func seqText(g gtid.MariaDBGTID) string {
	return sqltext.Literal(fmt.Sprintf("%020d", g.Seq))
}

// OpenTransactionCache is a transactional statement that changes nothing
// and is binlogged: run first in a target transaction, it makes the target
// keep the statements on non-transactional tables that follow in the
// transaction's binlog cache (binlog_direct_non_transactional_updates off,
// logged as statements), so that they are one GTID group with the rest,
// rather than each a group of its own. The table it names is one that
// transactions binlogged by gapless write anyway (their positions), so a
// replica of the target has it. It looks up a whole primary key no row
// has (a stream's name is never empty), which locks only the gap before
// the first row, never a row a worker's position writes.
const OpenTransactionCache = "UPDATE " + Schema + ".checkpoint SET seq_no = seq_no WHERE stream = '' AND domain_id = 0 AND slot = 0"

// OneGroupCheck is a statement that fails with error 1242 (a subquery of
// more than one row) when the target's binlog holds a GTID of g's domain
// past g, and otherwise does nothing: it writes no table and no binlog, so
// it checks, in the round trip of a group the target binlogs as it
// executes, that the group took one GTID group there, as Guarded's
// statement does, but without a commit.
func OneGroupCheck(g gtid.MariaDBGTID) string {
	return fmt.Sprintf("SET @gapless_one_group = (SELECT 1 UNION ALL SELECT 2 FROM DUAL WHERE %s > %s)", lastSeq(g.Domain), seqText(g))
}

// Seed records start as the stream's position (slot AloneSlots, outside the
// binlog) unless a position exists already.
func (s *Store) Seed(ctx context.Context, start gtid.MariaDBPosition) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer Discard(conn)
	if _, err := conn.ExecContext(ctx, "SET @@session.sql_log_bin=0"); err != nil {
		return err
	}
	for _, d := range start.Domains() {
		g, _ := start.Get(d)
		stmt := strings.Replace(s.Statement(AloneSlots, g, time.Unix(0, 0)), "INSERT INTO", "INSERT IGNORE INTO", 1)
		stmt = stmt[:strings.Index(stmt, " ON DUPLICATE KEY")]
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("target: record the start position: %w", err)
		}
	}
	return nil
}

// Row is one position row.
type Row struct {
	Domain     uint32
	Slot       int
	GTID       gtid.MariaDBGTID
	SourceTime time.Time
	AppliedAt  time.Time
	LowWater   *gtid.MariaDBPosition // nil for a row written under strict commit order
	Above      []gtid.MariaDBGTID
}

// Rows lists the stream's position rows.
func (s *Store) Rows(ctx context.Context) ([]Row, error) {
	rows, err := s.db.QueryContext(ctx,
		"SELECT domain_id, slot, server_id, seq_no, source_time, applied_at, low_water, COALESCE(above, '') FROM "+Schema+".checkpoint WHERE stream = ? ORDER BY domain_id, slot", s.stream)
	if err != nil {
		return nil, fmt.Errorf("target: read %s.checkpoint: %w", Schema, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var src int64
		var applied, lowWater, above string
		if err := rows.Scan(&r.Domain, &r.Slot, &r.GTID.Server, &r.GTID.Seq, &src, &applied, &lowWater, &above); err != nil {
			return nil, fmt.Errorf("target: read %s.checkpoint: %w", Schema, err)
		}
		r.GTID.Domain = r.Domain
		if lowWater != "" {
			lw := gtid.MariaDBPosition{}
			if lowWater != "-" {
				if lw, err = gtid.ParseMariaDBPosition(lowWater); err != nil {
					return nil, fmt.Errorf("target: %s.checkpoint: low_water %q: %w", Schema, lowWater, err)
				}
			}
			r.LowWater = &lw
		}
		if r.Above, err = decodeAbove(above); err != nil {
			return nil, fmt.Errorf("target: %s.checkpoint: above %q: %w", Schema, above, err)
		}
		r.SourceTime = time.Unix(src, 0)
		r.AppliedAt, _ = time.Parse("2006-01-02 15:04:05.999999", applied)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Streams lists the streams that have a position on this target.
func Streams(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT stream FROM "+Schema+".checkpoint ORDER BY stream")
	if err != nil {
		if code := mysqlCode(err); code == 1146 || code == 1049 {
			return nil, nil
		}
		return nil, fmt.Errorf("target: read %s.checkpoint: %w", Schema, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Discard closes a connection whose session variables were changed, rather
// than returning it to the pool for another user to inherit them.
func Discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// ForStream reads a stream's position without creating anything.
func ForStream(db *sql.DB, stream string) *Store { return &Store{db: db, stream: stream} }
