-- an ALTER of a system-versioned table that the source ran with system_versioning_alter_history=KEEP;
-- the target's default (ERROR) refused it (4119), where MariaDB's replica applies it (versioning.rpl_row)
CREATE TABLE test.v (x INT) WITH SYSTEM VERSIONING ENGINE=InnoDB;
INSERT INTO test.v VALUES (1);
SET system_versioning_alter_history = KEEP;
ALTER TABLE test.v ADD COLUMN y INT;
INSERT INTO test.v VALUES (2, 2);
