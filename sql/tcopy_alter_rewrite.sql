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

DROP TABLE p;
DROP FOREIGN TABLE t;
DROP TABLE h, names;
DROP FUNCTION diff(), storage();
DROP SERVER ts CASCADE;
DROP EXTENSION tcopy;
