// Package gtid holds global transaction ids and sets of them for both server
// flavours, parsed and printed exactly as the servers print them:
//
//   - MariaDB: MariaDBGTID ("domain-server-seq") and MariaDBPosition, the
//     per-domain last GTID of @@gtid_slave_pos and @@gtid_binlog_pos.
//   - MySQL: MySQLGTID ("uuid:gno", MySQL 8.4's "uuid:tag:gno") and MySQLSet,
//     the GTID sets of @@gtid_executed and @@gtid_purged.
//
// Both rest on Intervals, a set of sequence numbers kept as closed intervals
// in a B+ tree, so that sets with millions of gaps (MySQL bug #101717) still
// add and look up in O(log n), and in O(1) at the end of the set.
package gtid
