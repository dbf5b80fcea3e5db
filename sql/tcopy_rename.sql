--
-- tcopy_rename: renaming a tcopy table, moving it to another schema or
-- renaming its schema keeps its rows: the name it was stored under is set
-- as its table_name option first, in the same statement.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE SCHEMA ren_a;
CREATE SCHEMA ren_b;
CREATE FOREIGN TABLE ren_a.t (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE ren_a.named (k int NOT NULL) SERVER ts
	OPTIONS (key 'k', table_name 'ren_named');
CREATE TABLE ren_a.heap (k int);
TRUNCATE ren_a.t, ren_a.named;
INSERT INTO ren_a.t SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO ren_a.named VALUES (1), (2);

-- rename the table
ALTER FOREIGN TABLE ren_a.t RENAME TO t2;
SELECT count(*), sum(k) FROM ren_a.t2;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.t2'::regclass;
-- ALTER TABLE renames foreign tables too; the option is there already
ALTER TABLE ren_a.t2 RENAME TO t3;
SELECT count(*), sum(k) FROM ren_a.t3;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.t3'::regclass;

-- move a table to another schema
CREATE FOREIGN TABLE ren_a.u (k int NOT NULL) SERVER ts OPTIONS (key 'k');
TRUNCATE ren_a.u;
INSERT INTO ren_a.u VALUES (7);
ALTER FOREIGN TABLE ren_a.u SET SCHEMA ren_b;
SELECT k FROM ren_b.u;

-- rename a schema holding tcopy tables
CREATE FOREIGN TABLE ren_b.w (k int NOT NULL) SERVER ts OPTIONS (key 'k');
TRUNCATE ren_b.w;
INSERT INTO ren_b.w VALUES (8), (9);
ALTER SCHEMA ren_b RENAME TO ren_c;
SELECT k FROM ren_c.w ORDER BY k;
SELECT c.relname, f.ftoptions FROM pg_foreign_table f JOIN pg_class c ON c.oid = f.ftrelid
WHERE c.relnamespace IN ('ren_a'::regnamespace, 'ren_c'::regnamespace) ORDER BY 1;

-- a table_name set by the user stays
ALTER FOREIGN TABLE ren_a.named RENAME TO named2;
SELECT count(*) FROM ren_a.named2;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.named2'::regclass;

-- other relations, and missing ones, are Postgres' business
ALTER TABLE ren_a.heap RENAME TO heap2;
ALTER TABLE IF EXISTS ren_a.nothing RENAME TO nothing2;
ALTER FOREIGN TABLE ren_a.nothing RENAME TO nothing2;

-- only the owner may rename, and the option is not set for anyone else
CREATE FOREIGN TABLE ren_a.v (k int) SERVER ts;
CREATE ROLE regress_tcopy_renamer;
GRANT USAGE ON SCHEMA ren_a TO regress_tcopy_renamer;
SET ROLE regress_tcopy_renamer;
ALTER FOREIGN TABLE ren_a.v RENAME TO v2;
RESET ROLE;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.v'::regclass;
-- a rename that fails takes the option back with it
ALTER FOREIGN TABLE ren_a.v RENAME TO t3;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.v'::regclass;

-- rename columns: a value column, then the key column, which the key
-- option names; the rows stay readable and writable
CREATE FOREIGN TABLE ren_a.cols (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k');
TRUNCATE ren_a.cols;
INSERT INTO ren_a.cols VALUES (1, 'one'), (2, 'two');
ALTER FOREIGN TABLE ren_a.cols RENAME COLUMN v TO label;
ALTER TABLE ren_a.cols RENAME COLUMN k TO id;
SELECT id, label FROM ren_a.cols ORDER BY id;
INSERT INTO ren_a.cols VALUES (2, 'deux'), (3, 'three');
SELECT id, label FROM ren_a.cols ORDER BY id;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.cols'::regclass;
SELECT attname, attfdwoptions FROM pg_attribute
WHERE attrelid = 'ren_a.cols'::regclass AND attnum > 0 ORDER BY attnum;
-- renamed again: the first column_name stays
ALTER FOREIGN TABLE ren_a.cols RENAME COLUMN label TO text_label;
SELECT text_label FROM ren_a.cols WHERE id = 1;
-- errors name a column as Postgres does, not by the name it is stored
-- under (id is stored as k): INSERT, COPY, COPY without raw fields
INSERT INTO ren_a.cols VALUES (NULL, 'x');
COPY ren_a.cols FROM STDIN;
4	four
\N	x
\.
SET tcopy.raw_fields = off;
COPY ren_a.cols FROM STDIN;
\N	x
\.
RESET tcopy.raw_fields;
SELECT id, text_label FROM ren_a.cols ORDER BY id;
-- a column that is not there is Postgres' to report
ALTER FOREIGN TABLE ren_a.cols RENAME COLUMN nothing TO something;

-- a schema owner renaming the schema: its own tables are kept, another
-- role's table without the option makes the rename fail, saying so
SELECT current_database() AS db \gset
GRANT CREATE ON DATABASE :"db" TO regress_tcopy_renamer;
GRANT USAGE ON FOREIGN SERVER ts TO regress_tcopy_renamer;
CREATE SCHEMA ren_d AUTHORIZATION regress_tcopy_renamer;
CREATE FOREIGN TABLE ren_d.x (k int) SERVER ts;
SET ROLE regress_tcopy_renamer;
CREATE FOREIGN TABLE ren_d.mine (k int NOT NULL) SERVER ts OPTIONS (key 'k');
TRUNCATE ren_d.mine;
INSERT INTO ren_d.mine VALUES (5);
ALTER SCHEMA ren_d RENAME TO ren_e;
RESET ROLE;
ALTER FOREIGN TABLE ren_d.x OPTIONS (ADD table_name 'x elsewhere');
SET ROLE regress_tcopy_renamer;
ALTER SCHEMA ren_d RENAME TO ren_e;
SELECT k FROM ren_e.mine;
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA ren_a, ren_c, ren_e CASCADE;
REVOKE CREATE ON DATABASE :"db" FROM regress_tcopy_renamer;
DROP ROLE regress_tcopy_renamer;
