// engines.go knows which of the target's tables are not transactional. The
// source flags a group transactional when every table it wrote is so on
// the source; the target may hold one of those tables in another engine
// (a CREATE TABLE without ENGINE= under another default_storage_engine),
// and then binlogs its rows as they execute, not at COMMIT: the group is
// to be applied as a non-transactional one (groups.go), or its position row
// would take a GTID group of its own.
package target

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"gapless/internal/binlog"
)

// Engines caches, per table, whether the target's engine for it is
// transactional. Not safe for concurrent use (the coordinator's alone).
type Engines struct {
	db    *sql.DB
	known map[tableName]bool // true: transactional
}

// NewEngines reads engines from db.
func NewEngines(db *sql.DB) *Engines {
	return &Engines{db: db, known: map[tableName]bool{}}
}

// Invalidate forgets what it knows, after a DDL.
func (e *Engines) Invalidate() { clear(e.known) }

// Mark clears txn's FlagTransactional when it writes rows to a table that
// is not transactional on the target.
func (e *Engines) Mark(txn *binlog.Transaction) error {
	if !txn.Has(binlog.FlagTransactional) || txn.Filtered {
		return nil
	}
	for _, t := range txn.Tables {
		transactional, err := e.transactional(t.Schema, t.Table)
		if err != nil {
			return err
		}
		if !transactional {
			txn.Flags &^= binlog.FlagTransactional
			return nil
		}
	}
	return nil
}

func (e *Engines) transactional(schema, table string) (bool, error) {
	name := tableName{schema, table}
	if t, ok := e.known[name]; ok {
		return t, nil
	}
	var engine sql.NullString
	err := e.db.QueryRowContext(context.Background(),
		"SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&engine)
	switch {
	case err == sql.ErrNoRows:
		return true, nil // not on the target (yet): as the source says
	case err != nil:
		return false, fmt.Errorf("read the engine of %s.%s on the target: %w", schema, table, err)
	}
	// InnoDB (and the other engines that take part in two-phase commit);
	// MyISAM, Aria, MEMORY, CSV, ... are written to the binlog at once.
	t := !engine.Valid || isTransactionalEngine(engine.String)
	e.known[name] = t
	return t, nil
}

func isTransactionalEngine(engine string) bool {
	switch strings.ToUpper(engine) {
	case "INNODB", "ROCKSDB", "TOKUDB":
		return true
	}
	return false
}
