-- roles (the roles suite): a role belongs to its creator (CREATE ROLE without WITH ADMIN), and statements name
-- the session's own account or role (CURRENT_USER, CURRENT_ROLE); MariaDB's replica runs them as the source's
-- user (the invoker it logs), gapless ran them as its apply user: the roles went to it (a silent difference, or
-- 1959 at SET DEFAULT ROLE), and it could not grant roles another account administers (1698)
CREATE DATABASE rdb;
CREATE ROLE r1, r2;
CREATE USER foo@localhost;
GRANT SELECT ON rdb.* TO r1;
GRANT r1 TO r2;
GRANT r2 TO foo@localhost;
SET DEFAULT ROLE r1 FOR root@localhost;
SET ROLE r1;
GRANT INSERT ON rdb.* TO CURRENT_ROLE;
SET ROLE NONE;
CREATE ROLE r3 WITH ADMIN CURRENT_USER;
GRANT r3 TO foo@localhost;
