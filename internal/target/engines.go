// engines.go knows, per target table, what decides how a group on it is
// applied: its engine and, for tables that statements name, whether it is
// a base table and has triggers.
//
// The source flags a group transactional when every table it wrote is so on
// the source; the target may hold one of those tables in another engine
// (a CREATE TABLE without ENGINE= under another default_storage_engine),
// and then binlogs its rows as they execute, not at COMMIT: the group is
// to be applied as a non-transactional one (groups.go), or its position row
// would take a GTID group of its own.
//
// A group of statements the decoder could read (binlog.FlagKnownStatements)
// may leave the statement session only when every table it names is, on
// the target, a base table (not a view, not a sequence) in a transactional
// engine, with no triggers and no column defaulting to a sequence's next
// value (either writes tables the statement does not name), spelt as the
// target spells it. Everything here is read again after
// a DDL, which runs alone.
package target

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
	"gapless/internal/galera"
	"gapless/internal/statement"
)

// Engines caches, per table, whether the target's engine for it is
// transactional. Not safe for concurrent use (the coordinator's alone).
type Engines struct {
	db    *sql.DB
	known map[tableName]bool // true: transactional
	// sequences holds the tables of known that are sequences.
	sequences map[tableName]bool
	// statementSafe: whether a statement on the table may run on any apply
	// session (see the file's comment).
	statementSafe map[tableName]bool
	// binlogged: the target keeps the source's GTIDs in its binlog, where
	// a group split in two would show.
	binlogged bool
	// mixed: some table of the replicated schemas is not transactional
	// (0 unknown, 1 no, 2 yes).
	mixed int
	// engine is the target's engine of each table of known.
	engine map[tableName]string
	// cluster is the target's wsrep state, read once (galera.go); nil
	// until then.
	cluster *galera.Node
	// analyzer reads the tables of statement groups on a cluster (galera.go).
	analyzer *statement.Analyzer
}

// NewEngines reads engines from db; binlogged says the target writes the
// source's transactions to its binlog under their GTIDs.
func NewEngines(db *sql.DB, binlogged bool) *Engines {
	return &Engines{db: db, known: map[tableName]bool{}, sequences: map[tableName]bool{}, statementSafe: map[tableName]bool{}, engine: map[tableName]string{}, binlogged: binlogged}
}

// Invalidate forgets what it knows, after a DDL.
func (e *Engines) Invalidate() {
	clear(e.known)
	clear(e.sequences)
	clear(e.statementSafe)
	clear(e.engine)
	e.mixed = 0
}

// Mark clears txn's FlagTransactional when it writes rows to a table that
// is not transactional on the target. A transaction of statements names no
// tables without parsing its SQL: on a target that binlogs the source's
// GTIDs it is taken as non-transactional as soon as any table outside the
// system schemas is (a statement's changes to such a table are binlogged
// at once, in a GTID group of their own).
//
// It clears binlog.FlagKnownStatements when a table the statements name is
// not one they may run on from any apply session.
//
// A group of row events that ends in ROLLBACK, on tables all transactional
// on the target, it marks RolledBack and Filtered, its events dropped: the
// source logged it for a change to a table that is not transactional there
// (a MyISAM temporary table, whose rows a ROW-format binlog leaves out),
// and its rows on transactional tables were rolled back. The source writes
// it when the rollback ends, which may be after a transaction that took
// the rows it had locked (a deadlock's victim): applied, its rows could
// meet that transaction's (found by the random load: 1062 on a unique key).
//
// A row event that writes a sequence without all its columns it replaces
// by SequenceValues (sequences.go), and it sets WritesSequence.
func (e *Engines) Mark(txn *binlog.Transaction) error {
	if txn.Filtered {
		txn.Flags &^= binlog.FlagKnownStatements
		return nil
	}
	if err := e.sequenceValues(txn); err != nil {
		return err
	}
	if err := e.mark(txn); err != nil {
		return err
	}
	if err := e.clusterCopies(txn); err != nil {
		return err
	}
	return e.markSequenceWrites(txn)
}

// mark is Mark's work on engines, statements and rolled-back groups.
func (e *Engines) mark(txn *binlog.Transaction) error {
	if rollsBackRows(txn) {
		for _, t := range txn.Tables { // its table maps' (the decoder's)
			transactional, err := e.transactional(t.Schema, t.Table)
			if err != nil || !transactional {
				return err
			}
		}
		txn.Events, txn.Filtered, txn.RolledBack = nil, true, true
		return nil
	}
	if !txn.Has(binlog.FlagTransactional) {
		txn.Flags &^= binlog.FlagKnownStatements
		return nil
	}
	if txn.Has(binlog.FlagKnownStatements) {
		for _, t := range txn.Tables {
			safe, err := e.safeForStatements(t.Schema, t.Table)
			if err != nil {
				return err
			}
			if !safe {
				txn.Flags &^= binlog.FlagKnownStatements
				break
			}
		}
	}
	if e.binlogged && NeedsStatementSession(txn) {
		mixed, err := e.anyNonTransactional()
		if err != nil {
			return err
		}
		if mixed {
			txn.Flags &^= binlog.FlagTransactional
			return nil
		}
	}
	for _, t := range txn.Tables {
		transactional, err := e.transactional(t.Schema, t.Table)
		if err != nil {
			return err
		}
		if !transactional {
			txn.Flags &^= binlog.FlagTransactional | binlog.FlagKnownStatements
			return nil
		}
	}
	return nil
}

// rollsBackRows reports whether txn is row events only (with their table
// maps and annotations) ending in a ROLLBACK.
func rollsBackRows(txn *binlog.Transaction) bool {
	n := len(txn.Events)
	if txn.Flavor != binlog.FlavorMariaDB || n < 2 {
		return false
	}
	// (An XA ROLLBACK is a statement of its own, not this one.)
	last, ok := txn.Events[n-1].Data.(*replication.QueryEvent)
	if !ok || binlog.ControlStatement(last.Query) != "ROLLBACK" {
		return false
	}
	for _, ev := range txn.Events[:n-1] {
		switch e := ev.Data.(type) {
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.MariadbAnnotateRowsEvent:
		case *replication.QueryEvent:
			if binlog.ControlStatement(e.Query) != "BEGIN" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (e *Engines) transactional(schema, table string) (bool, error) {
	name := tableName{schema, table}
	if t, ok := e.known[name]; ok {
		return t, nil
	}
	var engine, kind sql.NullString
	read := func() error {
		return e.db.QueryRowContext(context.Background(),
			"SELECT ENGINE, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&engine, &kind)
	}
	err := patiently(read)
	switch {
	case err == sql.ErrNoRows:
		return true, nil // not on the target (yet): as the source says
	case err != nil:
		return false, fmt.Errorf("read the engine of %s.%s on the target: %w", schema, table, err)
	}
	// InnoDB (and the other engines that take part in two-phase commit);
	// MyISAM, Aria, MEMORY, CSV, ... are written to the binlog at once. So
	// is a SEQUENCE, whatever its engine: the row event of one, applied
	// by a BINLOG statement, sets its value as SETVAL does, a GTID group of
	// its own, where the source may have logged it inside a transaction
	// (NEXTVAL taking a new cache of values).
	t := (!engine.Valid || isTransactionalEngine(engine.String)) && kind.String != "SEQUENCE"
	e.known[name] = t
	e.engine[name] = engine.String
	if kind.String == "SEQUENCE" {
		e.sequences[name] = true
	}
	return t, nil
}

// isSequence reports whether the target holds schema.table as a sequence.
func (e *Engines) isSequence(schema, table string) (bool, error) {
	if _, err := e.transactional(schema, table); err != nil {
		return false, err
	}
	return e.sequences[tableName{schema, table}], nil
}

// markSequenceWrites sets txn.WritesSequence when its row events write a
// table the target holds as a sequence (a sequence is written by row events
// alone: a statement that changes one is logged as rows, in MIXED too), and
// txn.SequencesOnly when they write nothing else and the group holds no
// statement. Only a group that applies alone needs to know: a
// transaction's sequence writes are made durable by its own commit.
func (e *Engines) markSequenceWrites(txn *binlog.Transaction) error {
	if txn.Filtered || txn.Has(binlog.FlagTransactional) && !txn.Has(binlog.FlagDDL) {
		return nil
	}
	only := true
	for _, ev := range txn.Events {
		switch d := ev.Data.(type) {
		case *SequenceValue:
			txn.WritesSequence = true
		case *replication.QueryEvent:
			if c := binlog.ControlStatement(d.Query); c != "BEGIN" && c != "COMMIT" {
				only = false
			}
		}
	}
	for _, t := range txn.Tables {
		sequence, err := e.isSequence(t.Schema, t.Table)
		if err != nil {
			return err
		}
		txn.WritesSequence = txn.WritesSequence || sequence
		only = only && sequence
	}
	txn.SequencesOnly = txn.WritesSequence && only
	return nil
}

// safeForStatements reports whether a statement naming schema.table may run
// on any apply session: the target has it, spelt so, as a base table in a
// transactional engine, without triggers.
func (e *Engines) safeForStatements(schema, table string) (bool, error) {
	name := tableName{schema, table}
	if safe, ok := e.statementSafe[name]; ok {
		return safe, nil
	}
	var gotSchema, gotTable, kind string
	var engine sql.NullString
	err := patiently(func() error {
		return e.db.QueryRowContext(context.Background(),
			"SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			schema, table).Scan(&gotSchema, &gotTable, &kind, &engine)
	})
	switch {
	case err == sql.ErrNoRows:
		e.statementSafe[name] = false
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the type of %s.%s on the target: %w", schema, table, err)
	}
	safe := gotSchema == schema && gotTable == table && kind == "BASE TABLE" && engine.Valid && isTransactionalEngine(engine.String)
	if safe {
		var triggers int
		err := patiently(func() error {
			return e.db.QueryRowContext(context.Background(),
				"SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?",
				schema, table).Scan(&triggers)
		})
		if err != nil {
			return false, fmt.Errorf("read the triggers of %s.%s on the target: %w", schema, table, err)
		}
		safe = triggers == 0
	}
	if safe {
		// A column whose default takes a sequence's next value writes the
		// sequence, which the statement does not name.
		var sequenceDefaults int
		err := patiently(func() error {
			return e.db.QueryRowContext(context.Background(),
				"SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"+
					" AND (LOWER(COLUMN_DEFAULT) LIKE '%nextval%' OR LOWER(COLUMN_DEFAULT) LIKE '%next value%' OR LOWER(COLUMN_DEFAULT) LIKE '%setval%' OR LOWER(COLUMN_DEFAULT) LIKE '%lastval%')",
				schema, table).Scan(&sequenceDefaults)
		})
		if err != nil {
			return false, fmt.Errorf("read the column defaults of %s.%s on the target: %w", schema, table, err)
		}
		safe = sequenceDefaults == 0
	}
	e.statementSafe[name] = safe
	return safe, nil
}

// anyNonTransactional reports whether a table outside the system schemas
// (and gapless's) is in an engine that is not transactional.
func (e *Engines) anyNonTransactional() (bool, error) {
	if e.mixed == 0 {
		var n int
		err := patiently(func() error {
			return e.db.QueryRowContext(context.Background(),
				"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'"+
					" AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys', 'gapless')"+
					" AND ENGINE NOT IN ('InnoDB', 'ROCKSDB', 'TokuDB')").Scan(&n)
		})
		if err != nil {
			return false, fmt.Errorf("read the target's table engines: %w", err)
		}
		e.mixed = 1
		if n > 0 {
			e.mixed = 2
		}
	}
	return e.mixed == 2, nil
}

func isTransactionalEngine(engine string) bool {
	switch strings.ToUpper(engine) {
	case "INNODB", "ROCKSDB", "TOKUDB":
		return true
	}
	return false
}
