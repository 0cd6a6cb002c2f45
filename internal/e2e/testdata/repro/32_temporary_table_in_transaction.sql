-- a transaction that creates a temporary table without ENGINE= (InnoDB on the source, whose default it is,
-- so the source logs the CREATE inside the transaction's group) and writes through it, replayed on a
-- target whose default engine is MyISAM: the table was MyISAM there, the target logged its CREATE as a
-- group of its own and the rest under the next GTID, and the one-group check stopped the run
-- (main.commit_1innodb, which sets the session's default_storage_engine)
CREATE TABLE test.t (a INT) ENGINE=InnoDB;
SET autocommit = 0;
CREATE TEMPORARY TABLE test.scratch (a INT);
INSERT INTO test.scratch VALUES (1), (2);
INSERT INTO test.t SELECT a FROM test.scratch;
COMMIT;
INSERT INTO test.t SELECT a * 10 FROM test.scratch;
COMMIT;
SET autocommit = 1;
CREATE TABLE test.after (a INT) ENGINE=InnoDB;
INSERT INTO test.t VALUES (100);
