-- a view made by a procedure under sql_mode=ORACLE is logged with its terminator ("... AS SELECT 1;");
-- gapless sent the next statement in the same packet after it, and ";;" is a syntax error
-- (compat/oracle.sp-package; the default run passed, as it sends a DDL alone, --no-target-binlog did not)
USE test;
SET sql_mode = 'ORACLE';
DELIMITER $$
CREATE PROCEDURE make_view AS
BEGIN
  CREATE OR REPLACE VIEW v1 AS SELECT 1 AS a;
END;
$$
DELIMITER ;
CALL make_view;
SET sql_mode = DEFAULT;
CREATE TABLE after_view (a INT PRIMARY KEY);
INSERT INTO after_view VALUES (1);
