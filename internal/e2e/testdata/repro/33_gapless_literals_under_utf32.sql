-- a DDL run while the source's connection reads statements as binary into utf32 (or ucs2): gapless's own
-- position statement after the group ran under that state, where the bytes of a literal without an
-- introducer are taken as utf32 as they are, so its stream name was not text (1366), and its check of the
-- target's binlog position an illegal mix of collations (1267) (main.ctype_utf32_uca)
CREATE TABLE test.t (a INT) ENGINE=InnoDB;
SET character_set_client = binary, collation_connection = utf32_myanmar_ci;
CREATE TABLE test.u (a CHAR(1)) ENGINE=InnoDB;
ALTER TABLE test.u CHANGE a a ENUM('a','b') CHARACTER SET utf32;
INSERT INTO test.t VALUES (1);
SET character_set_client = binary, collation_connection = ucs2_unicode_ci;
CREATE TABLE test.v (a INT) ENGINE=InnoDB;
SET character_set_client = utf8mb4, collation_connection = utf8mb4_general_ci;
INSERT INTO test.t VALUES (2);
