--
-- tcopy_rename: a tcopy table is bound to its tserver data by its
-- table_name option, generated when it is created: renaming the table,
-- moving it to another schema or renaming its schema keeps its rows and
-- touches no option.  Renaming a column sets its column_name option to the
-- name its values are stored under, in the same statement, also when the
-- rename comes through a partitioned or inheritance parent.  A table made
-- before version 1.2, without table_name, gets its old name pinned by
-- ALTER EXTENSION tcopy UPDATE.
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
TRUNCATE ren_a.named;
INSERT INTO ren_a.t SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO ren_a.named VALUES (1), (2);
-- the options of ren_a.t, which no rename below changes
SELECT ftoptions AS t_options FROM pg_foreign_table WHERE ftrelid = 'ren_a.t'::regclass \gset

-- rename the table
ALTER FOREIGN TABLE ren_a.t RENAME TO t2;
SELECT count(*), sum(k) FROM ren_a.t2;
SELECT ftoptions = :'t_options' AS options_kept FROM pg_foreign_table WHERE ftrelid = 'ren_a.t2'::regclass;
-- ALTER TABLE renames foreign tables too
ALTER TABLE ren_a.t2 RENAME TO t3;
SELECT count(*), sum(k) FROM ren_a.t3;
-- a new table of the old name is a new, empty table
CREATE FOREIGN TABLE ren_a.t (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k');
SELECT count(*) FROM ren_a.t;

-- move a table to another schema
CREATE FOREIGN TABLE ren_a.u (k int NOT NULL) SERVER ts OPTIONS (key 'k');
INSERT INTO ren_a.u VALUES (7);
ALTER FOREIGN TABLE ren_a.u SET SCHEMA ren_b;
SELECT k FROM ren_b.u;

-- rename a schema holding tcopy tables
CREATE FOREIGN TABLE ren_b.w (k int NOT NULL) SERVER ts OPTIONS (key 'k');
INSERT INTO ren_b.w VALUES (8), (9);
ALTER SCHEMA ren_b RENAME TO ren_c;
SELECT k FROM ren_c.w ORDER BY k;
SELECT k FROM ren_c.u;

-- a table_name set by a superuser stays
ALTER FOREIGN TABLE ren_a.named RENAME TO named2;
SELECT count(*) FROM ren_a.named2;
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.named2'::regclass;

-- other relations, and missing ones, are Postgres' business
ALTER TABLE ren_a.heap RENAME TO heap2;
ALTER TABLE IF EXISTS ren_a.nothing RENAME TO nothing2;
ALTER FOREIGN TABLE ren_a.nothing RENAME TO nothing2;

-- only the owner may rename
CREATE FOREIGN TABLE ren_a.v (k int) SERVER ts;
CREATE ROLE regress_tcopy_renamer;
GRANT USAGE ON SCHEMA ren_a TO regress_tcopy_renamer;
SET ROLE regress_tcopy_renamer;
ALTER FOREIGN TABLE ren_a.v RENAME TO v2;
ALTER FOREIGN TABLE ren_a.v RENAME COLUMN k TO k2;
RESET ROLE;
SELECT attname, attfdwoptions FROM pg_attribute
WHERE attrelid = 'ren_a.v'::regclass AND attnum > 0 ORDER BY attnum;

-- rename columns: a value column, then the key column, which the key
-- option names; the rows stay readable and writable
CREATE FOREIGN TABLE ren_a.cols (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE ren_a.cols OPTIONS (SET on_conflict 'replace');
INSERT INTO ren_a.cols VALUES (1, 'one'), (2, 'two');
ALTER FOREIGN TABLE ren_a.cols RENAME COLUMN v TO label;
ALTER TABLE ren_a.cols RENAME COLUMN k TO id;
SELECT id, label FROM ren_a.cols ORDER BY id;
INSERT INTO ren_a.cols VALUES (2, 'deux'), (3, 'three');
SELECT id, label FROM ren_a.cols ORDER BY id;
SELECT option_name, option_value FROM pg_options_to_table(
	(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.cols'::regclass))
WHERE option_name <> 'table_name';
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

-- a column renamed through a partitioned parent, and through an
-- inheritance parent: the tcopy children keep their values and their key
CREATE TABLE ren_a.parted (k int NOT NULL, v text) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE ren_a.part1 PARTITION OF ren_a.parted FOR VALUES FROM (0) TO (100)
	SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE ren_a.part1 OPTIONS (SET on_conflict 'replace');
CREATE TABLE ren_a.part2 PARTITION OF ren_a.parted FOR VALUES FROM (100) TO (200);
INSERT INTO ren_a.parted VALUES (1, 'a'), (2, 'b'), (150, 'c');
ALTER TABLE ren_a.parted RENAME COLUMN k TO id;
ALTER TABLE ren_a.parted RENAME COLUMN v TO label;
SELECT * FROM ren_a.parted ORDER BY id;
INSERT INTO ren_a.parted VALUES (2, 'b2'), (3, 'c');
SELECT * FROM ren_a.part1 ORDER BY id;
SELECT option_name, option_value FROM pg_options_to_table(
	(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a.part1'::regclass))
WHERE option_name <> 'table_name';
CREATE TABLE ren_a.base (k int NOT NULL, v text);
CREATE FOREIGN TABLE ren_a.child () INHERITS (ren_a.base) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE ren_a.child OPTIONS (SET on_conflict 'replace');
INSERT INTO ren_a.child VALUES (5, 'five');
ALTER TABLE ren_a.base RENAME COLUMN k TO id;
SELECT * FROM ren_a.base;
INSERT INTO ren_a.child VALUES (5, 'FIVE'), (6, 'six');
SELECT * FROM ren_a.child ORDER BY id;
-- ONLY the parent: Postgres refuses, the child is left as it was
ALTER TABLE ONLY ren_a.base RENAME COLUMN v TO w;
SELECT attname, attfdwoptions FROM pg_attribute
WHERE attrelid = 'ren_a.child'::regclass AND attnum > 0 ORDER BY attnum;

-- a schema owner renaming the schema, another role's table in it: the
-- rows stay with every table
SELECT current_database() AS db \gset
GRANT CREATE ON DATABASE :"db" TO regress_tcopy_renamer;
GRANT USAGE ON FOREIGN SERVER ts TO regress_tcopy_renamer;
CREATE SCHEMA ren_d AUTHORIZATION regress_tcopy_renamer;
CREATE FOREIGN TABLE ren_d.x (k int) SERVER ts;
INSERT INTO ren_d.x VALUES (4);
SET ROLE regress_tcopy_renamer;
CREATE FOREIGN TABLE ren_d.mine (k int NOT NULL) SERVER ts OPTIONS (key 'k');
INSERT INTO ren_d.mine VALUES (5);
ALTER SCHEMA ren_d RENAME TO ren_e;
SELECT k FROM ren_e.mine;
RESET ROLE;
SELECT k FROM ren_e.x;

-- a table made before version 1.2 has no table_name; its rows are under
-- database.schema.table.  It is refused until ALTER EXTENSION tcopy UPDATE
-- pins that name.  (Such a table is made here by taking the option out of
-- the catalog: no statement can.)
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
RESET client_min_messages;
CREATE EXTENSION tcopy VERSION '1.1';
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE ren_a."old one" (k int NOT NULL) SERVER ts
	OPTIONS (key 'k', table_name 'contrib_regression.ren_a."old one"');
TRUNCATE ren_a."old one";
INSERT INTO ren_a."old one" VALUES (1), (2), (3);
UPDATE pg_foreign_table SET ftoptions = '{key=k}' WHERE ftrelid = 'ren_a."old one"'::regclass;
SELECT count(*) FROM ren_a."old one";
ALTER FOREIGN TABLE ren_a."old one" OPTIONS (SET key 'k');
ALTER EXTENSION tcopy UPDATE TO '1.2';
SELECT count(*) FROM ren_a."old one";
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'ren_a."old one"'::regclass;

-- version 1.3 stores new tables' keys in another form: the update pins
-- key_form 'bytes' on every keyed table, not on a keyless one nor on one
-- with key_form already, and adds tcopy.enum_label.  Before it, an enum
-- rename passes through unrecorded.
CREATE FOREIGN TABLE ren_a.nokey (k int) SERVER ts;
CREATE FOREIGN TABLE ren_a.formed (k int NOT NULL) SERVER ts
	OPTIONS (key 'k', key_form 'image');
CREATE FOREIGN TABLE ren_a.two (a int NOT NULL, b text NOT NULL) SERVER ts
	OPTIONS (key 'a, b', batch_rows '10');
-- a keyed table made by this library says key_form 'image' already; one
-- made by 1.2 had no key_form
SELECT array(SELECT o FROM unnest(ftoptions) o WHERE o NOT LIKE 'table\_name=%' ORDER BY o)
FROM pg_foreign_table WHERE ftrelid = 'ren_a.two'::regclass;
UPDATE pg_foreign_table SET ftoptions = array_remove(ftoptions, 'key_form=image')
WHERE ftrelid = 'ren_a.two'::regclass;
CREATE TYPE ren_a.mood AS ENUM ('sad', 'ok');
ALTER TYPE ren_a.mood RENAME VALUE 'sad' TO 'unhappy';
SELECT to_regclass('tcopy.enum_label');
ALTER EXTENSION tcopy UPDATE TO '1.3';
SELECT c.relname, array(SELECT o FROM unnest(ft.ftoptions) o
						WHERE o NOT LIKE 'table\_name=%' ORDER BY o) AS options
FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
WHERE c.relnamespace = 'ren_a'::regnamespace ORDER BY 1;
SELECT count(*) FROM ren_a."old one";
SELECT extversion, extconfig::regclass[] FROM pg_extension WHERE extname = 'tcopy';
SELECT grantee, privilege_type FROM information_schema.role_table_grants
WHERE table_schema = 'tcopy' AND table_name = 'enum_label' AND grantee = 'PUBLIC';
SELECT * FROM tcopy.enum_label;
ALTER TYPE ren_a.mood RENAME VALUE 'ok' TO 'fine';
SELECT * FROM tcopy.enum_label;

-- version 1.4 makes a duplicate key an error (option on_conflict): the
-- update pins on_conflict 'replace' on keyed tables without the option, not
-- on a keyless one nor on one that says on_conflict already
ALTER FOREIGN TABLE ren_a.formed OPTIONS (SET on_conflict 'ignore');
UPDATE pg_foreign_table SET ftoptions = array_remove(ftoptions, 'on_conflict=error')
WHERE ftrelid = 'ren_a.two'::regclass;
ALTER EXTENSION tcopy UPDATE TO '1.4';
SELECT c.relname, array(SELECT o FROM unnest(ft.ftoptions) o
						WHERE o LIKE 'on\_conflict=%' ORDER BY o) AS options
FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
WHERE c.relnamespace = 'ren_a'::regnamespace ORDER BY 1;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA ren_a, ren_c, ren_e CASCADE;
REVOKE CREATE ON DATABASE :"db" FROM regress_tcopy_renamer;
DROP ROLE regress_tcopy_renamer;
