// Package schedule decides which transactions may run at the same time: the
// dependency policies of gapless, as pure functions over Transactions, with no
// I/O (the target's key definitions come in through a Catalog).
//
// The coordinator calls Admit for every transaction in group-index order and
// Committed when one commits. Admit answers with the earlier transactions that
// must have committed before this one may start. A policy is safe when two
// transactions it lets overlap could have run in either order on the source
// with the same result.
//
// Example of the conflict every policy guards against: T1 "UPDATE t SET v=1
// WHERE id=7" and T2 "UPDATE t SET v=2 WHERE id=7". Run at once, T2 may commit
// first and T1's value wins, a state the primary never had. writeset sees the
// shared key t.PRIMARY(7) and makes T2 wait for T1; commit-id lets them
// overlap only when the primary committed them in one group (they could not
// have been, since one waited for the other's row lock).
package schedule

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"gapless/internal/binlog"
)

// Deps lists the group indexes that must commit before a transaction starts.
type Deps []int64

// Policy is a rule for running transactions in parallel.
type Policy interface {
	Name() string
	// Admit registers the transaction with group index gi (called in
	// increasing gi order) and returns what it waits for.
	Admit(gi int64, txn *binlog.Transaction) (Deps, error)
	// Committed tells the policy that gi committed.
	Committed(gi int64)
	// Barrier reports whether the last admitted transaction changes what
	// the policy knows of the target (a DDL): the coordinator lets it commit
	// before admitting the next one.
	Barrier() bool
}

// Names are the policies, as --policy spells them.
var Names = []string{"serial", "commit-id", "writeset", "schema", "domain"}

// New returns the policy called name. catalog is used by writeset only.
func New(name string, catalog Catalog) (Policy, error) {
	switch name {
	case "serial":
		return NewSerial(), nil
	case "commit-id":
		return NewCommitID(), nil
	case "writeset":
		if catalog == nil {
			return nil, fmt.Errorf("the writeset policy needs the target's schema")
		}
		return NewWriteset(catalog), nil
	case "schema":
		return NewSchema(), nil
	case "domain":
		return NewDomain(), nil
	}
	return nil, fmt.Errorf("unknown policy %q: want one of %s", name, strings.Join(Names, ", "))
}

// isBarrier reports whether a transaction must run alone: DDL, statements
// the decoder could not read (any but plain DML on tables it names:
// binlog.FlagKnownStatements), transactions the source marked as not to be
// run in parallel, and transactions that wrote a non-transactional table
// (they cannot be rolled back, so they never run beside one that a stop or
// an error might roll back).
func isBarrier(txn *binlog.Transaction) bool {
	if txn.Has(binlog.FlagDDL) || txn.Has(binlog.FlagStandalone) {
		return true
	}
	if txn.Flavor == binlog.FlavorMariaDB && (!txn.Has(binlog.FlagAllowParallel) || !txn.Has(binlog.FlagTransactional)) {
		return true
	}
	return !txn.Has(binlog.FlagKnownStatements) && hasStatements(txn)
}

// hasStatements reports whether the transaction carries SQL statements other than BEGIN/COMMIT.
func hasStatements(txn *binlog.Transaction) bool {
	if !txn.MayHoldQueries() {
		return false
	}
	for _, ev := range txn.Events {
		if _, ok := ev.Data.(*replication.ExecuteLoadQueryEvent); ok {
			return true // LOAD DATA logged as a statement
		}
		if q, ok := ev.Data.(*replication.QueryEvent); ok {
			switch binlog.ControlStatement(q.Query) {
			case "BEGIN", "COMMIT", "ROLLBACK":
			default:
				return true
			}
		}
	}
	return false
}
