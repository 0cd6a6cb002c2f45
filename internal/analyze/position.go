// position.go bounds an analysis to part of the input: the transactions
// after one GTID position (--from) and up to another (--until), as a
// benchmark recording or an incident is written: from @@gtid_binlog_pos
// before to @@gtid_binlog_pos after.
//
// Invariant: a transaction is kept when From does not contain it and Until
// does (an empty bound keeps everything); a position of the other flavour
// contains no transaction.
package analyze

import (
	"fmt"
	"strings"

	"gapless/internal/binlog"
	"gapless/internal/gtid"
)

// position is a GTID position of either flavour.
type position struct {
	mariaDB *gtid.MariaDBPosition
	mySQL   *gtid.MySQLSet
}

// parsePosition reads a MariaDB position (0-1-51253,1-1-10) or a MySQL GTID
// set (3E11FA47-71CA-11E1-9E33-C80AA9429562:1-500); "" is no position.
func parsePosition(flag, s string) (*position, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if p, err := gtid.ParseMariaDBPosition(s); err == nil {
		return &position{mariaDB: &p}, nil
	}
	set, err := gtid.ParseMySQLSet(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is neither a MariaDB GTID position (0-1-51253,1-1-10) nor a MySQL GTID set (UUID:1-500)", flag, s)
	}
	return &position{mySQL: &set}, nil
}

func (p *position) contains(txn *binlog.Transaction) bool {
	if txn.Flavor == binlog.FlavorMySQL {
		return p.mySQL != nil && p.mySQL.Contains(txn.MySQL)
	}
	return p.mariaDB != nil && p.mariaDB.Contains(txn.MariaDB)
}

// txnRange is the part of the input an analysis keeps.
type txnRange struct {
	from, until *position
}

func (r txnRange) keeps(txn *binlog.Transaction) bool {
	if r.from != nil && r.from.contains(txn) {
		return false
	}
	return r.until == nil || r.until.contains(txn)
}
