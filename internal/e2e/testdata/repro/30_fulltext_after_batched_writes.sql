-- a statement that searches a full-text index (MATCH ... AGAINST) after transactions that changed it:
-- InnoDB shows a full-text index only what is committed, so run in one target transaction with the
-- transactions before it, the DELETE found nothing and the target kept rows the primary deleted,
-- silently (innodb_fts.innodb_fts_large_records, which a later UPDATE then stopped with error 182)
CREATE TABLE test.f (id INT PRIMARY KEY, a TEXT, FULLTEXT KEY (a)) ENGINE=InnoDB;
INSERT INTO test.f VALUES (1, 'apple pie'), (2, 'pear tart'), (3, 'plum jam');
UPDATE test.f SET a = 'banana split' WHERE id = 1;
INSERT INTO test.f VALUES (4, 'banana bread');
DELETE FROM test.f WHERE MATCH(a) AGAINST('banana');
UPDATE test.f SET a = 'cherry pie' WHERE MATCH(a) AGAINST('+pear' IN BOOLEAN MODE);
