-- XA transactions of a session holding temporary tables (rpl.rpl_xa_survive_disconnect_mixed_engines):
-- the prepared branch holds its connection, and giving it up took the temporary tables with it (1146)
-- and logged their drop as the source's next GTID; a temporary MyISAM table made inside the branch was
-- logged by the target as groups of their own (binlog_direct_non_transactional_updates on the target)
SET SESSION binlog_direct_non_transactional_updates = OFF;
CREATE TABLE test.t (a INT) ENGINE=InnoDB;
CREATE TABLE test.tm (a INT) ENGINE=MyISAM;
CREATE TEMPORARY TABLE test.tmp_i LIKE test.t;
XA START 'x1';
INSERT INTO test.t VALUES (1);
INSERT INTO test.tmp_i VALUES (1);
INSERT INTO test.t SELECT * FROM test.tmp_i;
XA END 'x1';
XA PREPARE 'x1';
XA COMMIT 'x1';
INSERT INTO test.tmp_i VALUES (2);
INSERT INTO test.t SELECT * FROM test.tmp_i;
DROP TEMPORARY TABLE test.tmp_i;
XA START 'x1';
INSERT INTO test.t VALUES (3);
CREATE TEMPORARY TABLE test.tmp_m LIKE test.tm;
INSERT INTO test.tmp_m VALUES (3);
INSERT INTO test.t SELECT * FROM test.tmp_m;
XA END 'x1';
XA PREPARE 'x1';
XA ROLLBACK 'x1';
INSERT INTO test.tm VALUES (4);
INSERT INTO test.t VALUES (4);
DROP TEMPORARY TABLE test.tmp_m;
