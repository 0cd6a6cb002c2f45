-- run with binlog_format=ROW. One statement's rows on a MyISAM table, more than gapless's round trip (16 MiB of
-- row events): the target ends a statement on a non-transactional table at the end of each BINLOG statement and
-- binlogs each as a GTID group of its own, so a statement cut between two BINLOG statements took two GTIDs there
-- and the run stopped ("the target wrote this transaction to its binlog as more than one GTID group"; found by
-- main.multi_update_big). MariaDB's replica applies it as one group. The target keeps a 16 MB max_allowed_packet:
-- the INSERT's 20 MB go in two fragments, the UPDATE's 40 MB (before and after images) need a larger packet.
CREATE TABLE test.m (id INT PRIMARY KEY, v VARCHAR(1000)) ENGINE=MyISAM;
INSERT INTO test.m SELECT seq, REPEAT(CHAR(65 + seq % 26), 1000) FROM test.seq_1_to_20000;
UPDATE test.m SET v = REPEAT(CHAR(97 + id % 26), 1000);
DELETE FROM test.m WHERE id % 2 = 0;
