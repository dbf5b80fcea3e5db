--
-- tcopy_alter_rewrite: what a heap rewrites its rows for, on a tcopy table
-- whose rows the tserver holds, beside a heap twin (issue 48): ALTER
-- COLUMN TYPE (of a key column too), a change of option key (the twin's
-- primary key moved), ADD COLUMN of a serial or with a volatile default.
-- The rows go to a new tserver table inside the transaction; errors are
-- the heap's and leave the table as it was; a ROLLBACK leaves the old
-- definition and rows; the old tserver table is gone after the commit.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address',
	namespace 'alter_rewrite/');	-- its own: check_tables sees this test's tables
CREATE USER MAPPING FOR PUBLIC SERVER ts;
\set VERBOSITY default

CREATE TABLE h (k int PRIMARY KEY, v int, s text, f float8, gone int);
CREATE FOREIGN TABLE t (k int, v int, s text, f float8, gone int) SERVER ts
	OPTIONS (key 'k');
INSERT INTO h SELECT g, g * 10, 's' || (g % 3), g + 0.4, g FROM generate_series(1, 6) g;
INSERT INTO t SELECT g, g * 10, 's' || (g % 3), g + 0.4, g FROM generate_series(1, 6) g;
INSERT INTO h VALUES (7, NULL, NULL, NULL, NULL);
INSERT INTO t VALUES (7, NULL, NULL, NULL, NULL);
-- a dropped column keeps its place in the old storage, not in the new
ALTER TABLE h DROP COLUMN gone;
ALTER FOREIGN TABLE t DROP COLUMN gone;

-- rows of h not in t and of t not in h: none, whenever it is asked
CREATE FUNCTION diff() RETURNS TABLE (side text, r text) LANGUAGE sql AS $$
	SELECT 'heap only', h::text FROM (TABLE h EXCEPT ALL SELECT * FROM t) h
	UNION ALL
	SELECT 'tcopy only', t::text FROM (SELECT * FROM t EXCEPT ALL TABLE h) t $$;
CREATE FUNCTION storage() RETURNS text LANGUAGE sql AS $$
	SELECT option_value FROM pg_options_to_table(
		(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 't'::regclass))
	WHERE option_name = 'table_name' $$;
CREATE TEMP TABLE names AS SELECT storage() AS before;

-- ---- ALTER COLUMN TYPE: the issue's case, int to bigint ----
ALTER TABLE h ALTER COLUMN v TYPE bigint;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE bigint;
SELECT * FROM t ORDER BY k;
SELECT * FROM diff();
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 't'::regclass AND attname = 'v';
-- a new tserver table, and no orphan: the old one went at the commit
SELECT storage() <> before AS new_storage FROM names;
SELECT problem FROM tcopy.check_tables();
-- the new type's values
INSERT INTO h VALUES (8, 1099511627776, 'big', 8.5);
INSERT INTO t VALUES (8, 1099511627776, 'big', 8.5);
SELECT * FROM diff();
SELECT k, v FROM t WHERE v > 2147483647;

-- ---- an assignment cast that rounds, and several columns at once ----
ALTER TABLE h ALTER COLUMN f TYPE int, ALTER COLUMN s TYPE varchar(3);
ALTER FOREIGN TABLE t ALTER COLUMN f TYPE int, ALTER COLUMN s TYPE varchar(3);
SELECT * FROM t ORDER BY k;
SELECT * FROM diff();

-- ---- errors are the heap's, and leave the table as it was ----
ALTER TABLE h ALTER COLUMN s TYPE varchar(1);
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE varchar(1);
ALTER TABLE h ALTER COLUMN v TYPE int;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE int;
ALTER TABLE h ALTER COLUMN s TYPE int;	-- no cast: the heap hints at USING
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE int;	-- so does tcopy (tcopy_alter_using)
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE int USING s::int;	-- 's1' is no integer
SELECT * FROM diff();
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 't'::regclass AND attname IN ('v', 's') ORDER BY attnum;

-- ---- the key column's type: lookups by key read the new key images ----
ALTER TABLE h ALTER COLUMN k TYPE bigint;
ALTER FOREIGN TABLE t ALTER COLUMN k TYPE bigint;
SELECT * FROM t WHERE k = 3;
SELECT * FROM t WHERE k BETWEEN 2 AND 4 ORDER BY k;
INSERT INTO t VALUES (3, 0, 'dup', 0);	-- still the key
SELECT * FROM diff();

-- ---- ROLLBACK: the old definition and rows; inside, the new ones ----
UPDATE names SET before = storage();
BEGIN;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE numeric;
SELECT k, v, pg_typeof(v) FROM t WHERE k <= 2 ORDER BY k;
INSERT INTO t VALUES (100, 1.5, 'in', 1);
SELECT count(*) FROM t;
ROLLBACK;
SELECT storage() = before AS old_storage FROM names;
SELECT * FROM diff();
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 't'::regclass AND attname = 'v';

-- ---- writes after the rewrite, in its transaction ----
BEGIN;
ALTER TABLE h ALTER COLUMN v TYPE numeric;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE numeric;
INSERT INTO h VALUES (9, 9.25, 'n', 9);
INSERT INTO t VALUES (9, 9.25, 'n', 9);
UPDATE h SET v = v + 0.5 WHERE k = 1;
UPDATE t SET v = v + 0.5 WHERE k = 1;
COMMIT;
SELECT * FROM diff();
-- the rolled-back rewrite's tserver table is an orphan, as after a load
-- rolled back: tcopy.drop_orphan drops it
SELECT problem FROM tcopy.check_tables();
SELECT tcopy.drop_orphan(server, table_name) FROM tcopy.check_tables();

-- ---- rewrites after writes, and two rewrites, in one transaction ----
BEGIN;
INSERT INTO h VALUES (10, 1, 'x', 1);
INSERT INTO t VALUES (10, 1, 'x', 1);
DELETE FROM h WHERE k = 9;
DELETE FROM t WHERE k = 9;
ALTER TABLE h ALTER COLUMN f TYPE bigint;
ALTER FOREIGN TABLE t ALTER COLUMN f TYPE bigint;
ALTER TABLE h ALTER COLUMN v TYPE float8;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE float8;
SELECT * FROM diff();
COMMIT;
SELECT * FROM diff();
SELECT problem FROM tcopy.check_tables();

-- ---- a change of key: the twin's primary key moves ----
-- a NULL in the new key fails it, as on the twin
ALTER TABLE h DROP CONSTRAINT h_pkey, ADD PRIMARY KEY (v);
ALTER FOREIGN TABLE t OPTIONS (SET key 'v');
DELETE FROM h WHERE k = 7;
DELETE FROM t WHERE k = 7;
ALTER TABLE h DROP CONSTRAINT h_pkey, ADD PRIMARY KEY (v);
ALTER FOREIGN TABLE t OPTIONS (SET key 'v');
SELECT * FROM diff();
SELECT k, v FROM t WHERE v = 20;
INSERT INTO h VALUES (11, 20, 'dup', 0);	-- the key is v now
INSERT INTO t VALUES (11, 20, 'dup', 0);
INSERT INTO h VALUES (2, 21, 'k2', 0);	-- k is not
INSERT INTO t VALUES (2, 21, 'k2', 0);
SELECT * FROM diff();
-- keys that collide under the new key fail it, as a primary key would
ALTER TABLE h DROP CONSTRAINT h_pkey, ADD PRIMARY KEY (s);
ALTER FOREIGN TABLE t OPTIONS (SET key 's');
SELECT option_value FROM pg_options_to_table(
	(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 't'::regclass))
WHERE option_name = 'key';
SELECT * FROM diff();

-- ---- ADD COLUMN with a volatile default or a serial: a value per row ----
ALTER FOREIGN TABLE t ADD COLUMN r serial, ADD COLUMN x float8 DEFAULT random();
SELECT count(*) AS rows, count(DISTINCT r) AS serials, min(r), max(r),
	count(DISTINCT x) AS randoms, bool_and(x >= 0 AND x < 1) AS in_range FROM t;
INSERT INTO t (k, v, s, f) VALUES (12, 120, 'new', 1);
SELECT r > 8 AS next_serial FROM t WHERE k = 12;
ALTER FOREIGN TABLE t ADD COLUMN id int GENERATED ALWAYS AS IDENTITY;
SELECT count(*), count(DISTINCT id), min(id), max(id) FROM t;
INSERT INTO t (k, v, s, f) VALUES (13, 130, 'id', 1);
SELECT id FROM t WHERE k = 13;
-- still refused: a column computed from the others, or NOT NULL without a value
ALTER FOREIGN TABLE t ADD COLUMN g int GENERATED ALWAYS AS (f * 2) STORED;
ALTER FOREIGN TABLE t ADD COLUMN nn int NOT NULL;

-- ---- more rows than work_mem: the tuplestore spills to temp files ----
CREATE FOREIGN TABLE big (k int, v int, s text) SERVER ts OPTIONS (key 'k');
INSERT INTO big SELECT g, g, repeat('x', 50) FROM generate_series(1, 30000) g;
SET work_mem = '64kB';
BEGIN;
ALTER FOREIGN TABLE big ALTER COLUMN v TYPE bigint, ALTER COLUMN k TYPE bigint;
SELECT count(*), sum(v), count(DISTINCT s) FROM big;
COMMIT;
RESET work_mem;
SELECT count(*), sum(k), sum(v), pg_typeof(sum(v)) FROM big;
SELECT * FROM big WHERE k = 29999;
DROP FOREIGN TABLE big;

-- ---- through a partitioned parent: each tcopy partition is rewritten ----
CREATE TABLE p (k int, v int) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100) SERVER ts
	OPTIONS (key 'k');
CREATE FOREIGN TABLE p2 PARTITION OF p FOR VALUES FROM (100) TO (200) SERVER ts
	OPTIONS (key 'k');
INSERT INTO p SELECT g, g FROM generate_series(90, 110) g;
ALTER TABLE p ALTER COLUMN v TYPE int8;
SELECT tableoid::regclass, count(*), sum(v), pg_typeof(sum(v)) FROM p GROUP BY 1 ORDER BY 1;
-- the rewrite that failed at a collision had made its tserver table
SELECT problem FROM tcopy.check_tables();
SELECT tcopy.drop_orphan(server, table_name) FROM tcopy.check_tables();
SELECT problem FROM tcopy.check_tables();

-- ---- on_conflict 'replace' or 'ignore': the rewrite writes with the
-- table's policy, so the transaction's later writes (which must have it)
-- work; keys that collide under a new key still fail the ALTER ----
CREATE TABLE oh (k int PRIMARY KEY, v int);
CREATE FOREIGN TABLE oc (k int, v int) SERVER ts OPTIONS (key 'k', on_conflict 'replace');
INSERT INTO oh SELECT g, g * 10 FROM generate_series(1, 4) g;
INSERT INTO oc SELECT g, g * 10 FROM generate_series(1, 4) g;
BEGIN;
ALTER TABLE oh DROP CONSTRAINT oh_pkey, ADD PRIMARY KEY (v);
ALTER FOREIGN TABLE oc OPTIONS (SET key 'v');
INSERT INTO oh VALUES (5, 50);
INSERT INTO oc VALUES (5, 50);
UPDATE oh SET k = -k WHERE v = 10;
UPDATE oc SET k = -k WHERE v = 10;
COMMIT;
SELECT * FROM oc ORDER BY v;
SELECT * FROM oh EXCEPT ALL SELECT * FROM oc;
INSERT INTO oc VALUES (9, 20);	-- replaces the row of key 20, as its policy says
UPDATE oc SET k = 1;
ALTER FOREIGN TABLE oc OPTIONS (SET key 'k');	-- the rows collide
SELECT * FROM oc ORDER BY v;
CREATE FOREIGN TABLE oi (k int, v int) SERVER ts OPTIONS (key 'k', on_conflict 'ignore');
INSERT INTO oi SELECT g, g * 10 FROM generate_series(1, 4) g;
BEGIN;
ALTER FOREIGN TABLE oi ALTER COLUMN k TYPE bigint;
INSERT INTO oi VALUES (1, 0), (5, 50);	-- 1 is there: ignored
COPY oi FROM STDIN;
2	0
6	60
\.
COMMIT;
SELECT *, pg_typeof(k) FROM oi ORDER BY k;
UPDATE oi SET v = 10 WHERE k > 4;
ALTER FOREIGN TABLE oi OPTIONS (SET key 'v');	-- three rows of v 10 collide
ALTER FOREIGN TABLE oi ALTER COLUMN k TYPE int, OPTIONS (SET key 'v,k');
SELECT *, pg_typeof(k) FROM oi ORDER BY k;
SELECT tcopy.drop_orphan(server, table_name) FROM tcopy.check_tables();
DROP TABLE oh;
DROP FOREIGN TABLE oc, oi;

-- ---- an ALTER run inside the ALTER (an event trigger's) keeps apart from
-- it: the rewrite is done, and the columns dropped keep their places ----
CREATE TABLE side (a int);
CREATE TABLE eh (k int PRIMARY KEY, v int, s text);
CREATE FOREIGN TABLE et (k int, v int, s text) SERVER ts OPTIONS (key 'k');
INSERT INTO eh SELECT g, g * 10, 's' || g FROM generate_series(1, 3) g;
INSERT INTO et SELECT g, g * 10, 's' || g FROM generate_series(1, 3) g;
CREATE FUNCTION side_alter() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT FROM pg_event_trigger_ddl_commands()
			   WHERE object_identity IN ('public.et', 'public.eh')) THEN
		ALTER TABLE side ADD COLUMN IF NOT EXISTS b int;
	END IF;
END $$;
CREATE EVENT TRIGGER side_alter ON ddl_command_end EXECUTE FUNCTION side_alter();
SET client_min_messages = warning;	-- the NOTICE of IF NOT EXISTS
ALTER TABLE eh ALTER COLUMN v TYPE bigint;
ALTER FOREIGN TABLE et ALTER COLUMN v TYPE bigint;
ALTER TABLE eh DROP COLUMN s, ADD COLUMN n int DEFAULT 5;
ALTER FOREIGN TABLE et DROP COLUMN s, ADD COLUMN n int DEFAULT 5;
RESET client_min_messages;
DROP EVENT TRIGGER side_alter;
SELECT *, pg_typeof(v) FROM et ORDER BY k;
SELECT * FROM eh EXCEPT ALL SELECT * FROM et;
DROP FUNCTION side_alter();
DROP TABLE side;

-- ---- savepoints and exception blocks: a rewrite rolled back to a
-- savepoint leaves the old rows, and the next ALTER reads them ----
BEGIN;
SAVEPOINT a;
ALTER TABLE eh ALTER COLUMN v TYPE numeric;
ALTER FOREIGN TABLE et ALTER COLUMN v TYPE numeric;
INSERT INTO eh VALUES (4, 4.5, 4);
INSERT INTO et VALUES (4, 4.5, 4);
ROLLBACK TO SAVEPOINT a;
ALTER TABLE eh ALTER COLUMN n TYPE text;
ALTER FOREIGN TABLE et ALTER COLUMN n TYPE text;
SAVEPOINT b;
ALTER TABLE eh ALTER COLUMN v TYPE int2;
ALTER FOREIGN TABLE et ALTER COLUMN v TYPE int2;
RELEASE SAVEPOINT b;
COMMIT;
SELECT *, pg_typeof(v), pg_typeof(n) FROM et ORDER BY k;
SELECT * FROM eh EXCEPT ALL SELECT * FROM et;
CREATE FUNCTION alter_twice(tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	caught text;
BEGIN
	BEGIN
		EXECUTE format('ALTER TABLE %I ALTER COLUMN v TYPE bigint', tab);
		EXECUTE format('INSERT INTO %I VALUES (5, 5, %L)', tab, 'x');
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		caught := SQLERRM;
	END;
	BEGIN
		EXECUTE format('ALTER TABLE %I ALTER COLUMN n TYPE varchar(1)', tab);
	EXCEPTION WHEN string_data_right_truncation THEN
		caught := caught || ', ' || SQLERRM;
	END;
	EXECUTE format('ALTER TABLE %I ALTER COLUMN v TYPE numeric(4,1)', tab);
	RETURN caught;
END $$;
UPDATE eh SET n = 'long';
UPDATE et SET n = 'long';
SELECT alter_twice('eh');
SELECT alter_twice('et');
SELECT *, pg_typeof(v) FROM et ORDER BY k;
SELECT * FROM eh EXCEPT ALL SELECT * FROM et;
DROP FUNCTION alter_twice(text);

-- ---- PREPARE TRANSACTION: COMMIT PREPARED publishes the rewrite,
-- ROLLBACK PREPARED leaves the old rows ----
BEGIN;
ALTER FOREIGN TABLE et ALTER COLUMN v TYPE bigint;
INSERT INTO et VALUES (6, 6, 'p');
PREPARE TRANSACTION 'tcopy_alter_rewrite_1';
COMMIT PREPARED 'tcopy_alter_rewrite_1';
BEGIN;
ALTER FOREIGN TABLE et ALTER COLUMN v TYPE int;
PREPARE TRANSACTION 'tcopy_alter_rewrite_2';
ROLLBACK PREPARED 'tcopy_alter_rewrite_2';
SELECT *, pg_typeof(v) FROM et ORDER BY k;
SELECT tcopy.drop_orphan(server, table_name) FROM tcopy.check_tables();
DROP TABLE eh;
DROP FOREIGN TABLE et;

-- ---- the type of a column added with a default: Postgres keeps and
-- relabels a foreign table's missing value (tcopy's), which crashed ----
CREATE TABLE mh (k int PRIMARY KEY);
CREATE FOREIGN TABLE mt (k int) SERVER ts OPTIONS (key 'k');
ALTER TABLE mh ADD COLUMN n int DEFAULT 5;
ALTER FOREIGN TABLE mt ADD COLUMN n int DEFAULT 5;	-- no rows yet
ALTER TABLE mh ALTER COLUMN n TYPE text;
ALTER FOREIGN TABLE mt ALTER COLUMN n TYPE text;
INSERT INTO mh VALUES (1);
INSERT INTO mt VALUES (1);
ALTER TABLE mh ADD COLUMN m int DEFAULT 7;
ALTER FOREIGN TABLE mt ADD COLUMN m int DEFAULT 7;	-- rows held
ALTER TABLE mh ALTER COLUMN m TYPE text;
ALTER FOREIGN TABLE mt ALTER COLUMN m TYPE text;
INSERT INTO mh VALUES (2);
INSERT INTO mt VALUES (2);
SELECT *, pg_typeof(n), pg_typeof(m) FROM mt ORDER BY k;
SELECT * FROM mh EXCEPT ALL SELECT * FROM mt;
DROP TABLE mh;
DROP FOREIGN TABLE mt;

-- ---- types: a domain's CHECK, typmods, a collation; a dropped text column
-- before the rewrite; ADD, DROP and TYPE in one ALTER; a keyless table ----
CREATE DOMAIN small AS int CHECK (VALUE < 30);
CREATE TABLE th (k text COLLATE "C" PRIMARY KEY, v int, n numeric(8,3), c varchar(8), d text, w int);
CREATE FOREIGN TABLE tt (k text COLLATE "C", v int, n numeric(8,3), c varchar(8), d text, w int)
	SERVER ts OPTIONS (key 'k');
INSERT INTO th VALUES ('a', 10, 1.234, 'abcdef', 'dd', 1), ('B', 20, 2.5, 'ab', NULL, 2),
	('b', 30, NULL, NULL, 'd', 3);
INSERT INTO tt VALUES ('a', 10, 1.234, 'abcdef', 'dd', 1), ('B', 20, 2.5, 'ab', NULL, 2),
	('b', 30, NULL, NULL, 'd', 3);
ALTER TABLE th DROP COLUMN d;
ALTER FOREIGN TABLE tt DROP COLUMN d;
ALTER TABLE th ALTER COLUMN v TYPE small;	-- 30 is refused
ALTER FOREIGN TABLE tt ALTER COLUMN v TYPE small;
DELETE FROM th WHERE v = 30;
DELETE FROM tt WHERE v = 30;
ALTER TABLE th ALTER COLUMN v TYPE small, ALTER COLUMN n TYPE numeric(6,1),
	ALTER COLUMN c TYPE varchar(6), ALTER COLUMN k TYPE varchar(4) COLLATE "POSIX",
	ADD COLUMN x int DEFAULT 9, DROP COLUMN w;
ALTER FOREIGN TABLE tt ALTER COLUMN v TYPE small, ALTER COLUMN n TYPE numeric(6,1),
	ALTER COLUMN c TYPE varchar(6), ALTER COLUMN k TYPE varchar(4) COLLATE "POSIX",
	ADD COLUMN x int DEFAULT 9, DROP COLUMN w;
SELECT * FROM tt ORDER BY k;
SELECT * FROM th EXCEPT ALL SELECT * FROM tt;
SELECT attname, format_type(atttypid, atttypmod), collname FROM pg_attribute
	LEFT JOIN pg_collation c ON c.oid = attcollation
WHERE attrelid = 'tt'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
INSERT INTO th VALUES ('c', 25);
INSERT INTO tt VALUES ('c', 25);
ALTER TABLE th ALTER COLUMN c TYPE varchar(2);
ALTER FOREIGN TABLE tt ALTER COLUMN c TYPE varchar(2);
ALTER TABLE th ALTER COLUMN n TYPE numeric(1,0);
ALTER FOREIGN TABLE tt ALTER COLUMN n TYPE numeric(1,0);
SELECT * FROM tt WHERE k = 'B';
SELECT * FROM th EXCEPT ALL SELECT * FROM tt;
-- a NOT NULL column added with a default that gives NULL
ALTER TABLE th ADD COLUMN z int NOT NULL DEFAULT (CASE WHEN random() < 2 THEN NULL::int END);
ALTER FOREIGN TABLE tt ADD COLUMN z int NOT NULL DEFAULT (CASE WHEN random() < 2 THEN NULL::int END);
SELECT tcopy.drop_orphan(server, table_name) FROM tcopy.check_tables();
CREATE TABLE nh (a int, b text);
CREATE FOREIGN TABLE nt (a int, b text) SERVER ts;
INSERT INTO nh VALUES (1, 'x'), (1, 'x'), (2, NULL);
INSERT INTO nt VALUES (1, 'x'), (1, 'x'), (2, NULL);
ALTER TABLE nh ALTER COLUMN a TYPE int8, ADD COLUMN r serial;
ALTER FOREIGN TABLE nt ALTER COLUMN a TYPE int8, ADD COLUMN r serial;
SELECT a, b, count(DISTINCT r) FROM nt GROUP BY a, b ORDER BY a;
SELECT a, b FROM nh EXCEPT ALL SELECT a, b FROM nt;
DROP TABLE th, nh;
DROP FOREIGN TABLE tt, nt;
DROP DOMAIN small;

-- ---- through a partitioned parent of a heap and a tcopy partition ----
CREATE TABLE mp (k int, v int, s text) PARTITION BY RANGE (k);
CREATE TABLE mp_h PARTITION OF mp FOR VALUES FROM (0) TO (100);
CREATE FOREIGN TABLE mp_t PARTITION OF mp FOR VALUES FROM (100) TO (200) SERVER ts
	OPTIONS (key 'k');
INSERT INTO mp SELECT g, g, 's' || g FROM generate_series(98, 102) g;
ALTER TABLE mp ADD COLUMN z int, DROP COLUMN s, ALTER COLUMN v TYPE numeric(6,1);
ALTER TABLE mp ALTER COLUMN v TYPE numeric(2,0);	-- the tcopy partition's rows overflow
ALTER TABLE mp ADD COLUMN r serial;
SELECT tableoid::regclass, *, pg_typeof(v) FROM mp ORDER BY k;
DROP TABLE mp;

DROP TABLE p;
DROP FOREIGN TABLE t;
DROP TABLE h, names;
DROP FUNCTION diff(), storage();
DROP SERVER ts CASCADE;
DROP EXTENSION tcopy;
