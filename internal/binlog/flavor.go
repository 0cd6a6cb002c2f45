// flavor.go tells MariaDB from MySQL, asking a server or reading a format
// description event. A version string alone can mislead: mysql-test starts
// servers with a --version of its own (10.5.99), without "MariaDB" in it.
package binlog

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// ServerFlavor asks a server what it is, and its version. MariaDB says so
// in its version, unless it was started with a --version of its own (as
// mysql-test does to play an older server); it alone has
// @@gtid_binlog_pos.
func ServerFlavor(ctx context.Context, db *sql.DB) (Flavor, string, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return 0, "", err
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return FlavorMariaDB, version, nil
	}
	var name, value string
	err := db.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'gtid_binlog_pos'").Scan(&name, &value)
	switch {
	case err == nil:
		return FlavorMariaDB, version, nil
	case errors.Is(err, sql.ErrNoRows):
		return FlavorMySQL, version, nil
	}
	return 0, "", err
}

// FormatFlavor says which server wrote a format description event: MariaDB
// names itself in the server version, unless started with a --version of
// its own, and its event types (from 160 on) are beyond MySQL's, so its
// post-header lengths list is longer than any MySQL's.
func FormatFlavor(fde *replication.FormatDescriptionEvent) Flavor {
	if strings.Contains(strings.ToLower(fde.ServerVersion), "mariadb") || len(fde.EventTypeHeaderLengths) >= mariaDBEventsBegin {
		return FlavorMariaDB
	}
	return FlavorMySQL
}

// mariaDBEventsBegin is the first of MariaDB's own event types (its
// annotate rows event).
const mariaDBEventsBegin = int(replication.MARIADB_ANNOTATE_ROWS_EVENT)
