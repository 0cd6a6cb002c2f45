-- one statement that writes a MEMORY table whose trigger updates an InnoDB table: the source logs it
-- as one statement in one GTID group; run inside a transaction on the target, it is unsafe to log as
-- a statement there, so the target logged its rows, each engine's in a GTID group of its own, and
-- the next group's GTID was taken (parts.partition_engine_innodb, stopped by the one-group check)
CREATE TABLE test.aux (a INT, b VARCHAR(10)) ENGINE=MEMORY;
CREATE TABLE test.tpl (a INT) ENGINE=MEMORY;
CREATE TABLE test.t (a INT PRIMARY KEY, b VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO test.tpl VALUES (1), (2), (3);
INSERT INTO test.t VALUES (1, 'new'), (2, 'new'), (3, 'new');
CREATE TRIGGER test.trg BEFORE INSERT ON test.aux FOR EACH ROW
  UPDATE test.t SET b = 'by trigger' WHERE a = NEW.a;
SET @m = 2;
INSERT INTO test.aux (a, b) SELECT a, 'copied' FROM test.tpl WHERE a BETWEEN @m - 1 AND @m;
DROP TRIGGER test.trg;
INSERT INTO test.t VALUES (4, 'after');
