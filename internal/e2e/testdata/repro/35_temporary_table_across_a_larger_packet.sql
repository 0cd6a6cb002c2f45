-- run with binlog_format=MIXED on a primary that allows large packets; the target keeps max_allowed_packet=16M.
-- The session holds a temporary table when a group of statements and a row event larger than the target's
-- max_allowed_packet comes (UUID() makes the INSERT unsafe, so MIXED logs it as rows): it runs on gapless's
-- statement session, the connection that holds the temporary table. gapless raises the target's
-- max_allowed_packet, which holds for new connections only, and reconnects; the temporary table must go along:
-- the next statements write it and read it, and the session's end drops it (a DROP the target binlogs only
-- when it holds the table).
CREATE TABLE test.r (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
CREATE TABLE test.big (id INT PRIMARY KEY, v LONGBLOB) ENGINE=InnoDB;
CREATE TEMPORARY TABLE test.tmp (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO test.tmp VALUES (1, 1), (2, 2);
BEGIN;
INSERT INTO test.r VALUES (100, 100);
INSERT INTO test.big VALUES (1, REPEAT(UUID(), 1000000));
COMMIT;
INSERT INTO test.tmp VALUES (3, 3);
INSERT INTO test.r SELECT * FROM test.tmp;
