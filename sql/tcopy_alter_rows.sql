--
-- tcopy_alter_rows: ADD and DROP COLUMN on a tcopy table whose rows the
-- tserver holds, beside a heap twin (issue 48).  Old rows read an added
-- column as NULL or as its default at the ALTER (attmissingval), new rows
-- store it; WHERE, aggregates, COPY, UPDATE and DELETE see it as on the
-- twin.  NOT NULL without a default and a generated column are refused
-- before anything changes (a volatile default and a serial rewrite the
-- rows: tcopy_alter_rewrite).  A
-- ROLLBACK leaves the old table, readable and writable, and the column can
-- be added again otherwise.  A dropped column is gone, the others read and
-- write as before, and a column is added after it; a key column is never
-- dropped.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
\set VERBOSITY default

CREATE TABLE h (k int PRIMARY KEY, v int, s text);
CREATE FOREIGN TABLE t (k int, v int, s text) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_alter_rows.t');
INSERT INTO h SELECT g, g * 10, 's' || g FROM generate_series(1, 6) g;
INSERT INTO t SELECT g, g * 10, 's' || g FROM generate_series(1, 6) g;

-- rows of h not in t and of t not in h: none, whenever it is asked
CREATE FUNCTION diff() RETURNS TABLE (side text, r text) LANGUAGE sql AS $$
	SELECT 'heap only', h::text FROM (TABLE h EXCEPT ALL SELECT * FROM t) h
	UNION ALL
	SELECT 'tcopy only', t::text FROM (SELECT * FROM t EXCEPT ALL TABLE h) t $$;

-- ---- ADD COLUMN without a default: old rows read NULL ----
ALTER TABLE h ADD COLUMN x int;
ALTER FOREIGN TABLE t ADD COLUMN x int;
SELECT * FROM t ORDER BY k;
SELECT * FROM diff();

-- ---- with defaults, in one transaction so that now() is the same ----
BEGIN;
ALTER TABLE h ADD COLUMN d int DEFAULT 7, ADD COLUMN ds text DEFAULT 'abc',
	ADD COLUMN dt timestamptz DEFAULT now(), ADD COLUMN df float8 DEFAULT 0.1,
	ADD COLUMN dn numeric DEFAULT 1.50, ADD COLUMN db bool DEFAULT true;
ALTER FOREIGN TABLE t ADD COLUMN d int DEFAULT 7, ADD COLUMN ds text DEFAULT 'abc',
	ADD COLUMN dt timestamptz DEFAULT now(), ADD COLUMN df float8 DEFAULT 0.1,
	ADD COLUMN dn numeric DEFAULT 1.50, ADD COLUMN db bool DEFAULT true;
COMMIT;
SELECT k, v, s, x, d, ds, dt = (SELECT dt FROM h WHERE k = 1) AS same_dt, df, dn, db
FROM t ORDER BY k;
SELECT * FROM diff();
SELECT atthasmissing, attmissingval FROM pg_attribute
WHERE attrelid = 't'::regclass AND attname IN ('d', 'ds') ORDER BY attname;
-- later rows take no now() of their own: the twins stay comparable
ALTER TABLE h ALTER COLUMN dt DROP DEFAULT;
ALTER FOREIGN TABLE t ALTER COLUMN dt DROP DEFAULT;

-- new rows store the new columns, given or defaulted
INSERT INTO h (k, v, s, x, d) VALUES (7, 70, 's7', 1, 8), (8, 80, 's8', NULL, NULL);
INSERT INTO t (k, v, s, x, d) VALUES (7, 70, 's7', 1, 8), (8, 80, 's8', NULL, NULL);
INSERT INTO h (k) VALUES (9);
INSERT INTO t (k) VALUES (9);
SELECT * FROM diff();

-- WHERE and aggregates on the new columns, old rows and new
SELECT k FROM t WHERE d = 7 ORDER BY k;
SELECT k FROM h WHERE d = 7 ORDER BY k;
SELECT k FROM t WHERE x IS NULL AND ds = 'abc' AND d > 6 ORDER BY k;
SELECT k FROM h WHERE x IS NULL AND ds = 'abc' AND d > 6 ORDER BY k;
SELECT count(*), count(x), count(d), sum(d), min(d), max(ds), sum(dn) FROM t;
SELECT count(*), count(x), count(d), sum(d), min(d), max(ds), sum(dn) FROM h;
SELECT d, count(*) FROM t GROUP BY d ORDER BY d;
SELECT d, count(*) FROM h GROUP BY d ORDER BY d;

-- COPY after ADD
COPY h (k, v, s, x, d, ds) FROM STDIN;
10	100	s10	10	11	c10
11	110	s11	\N	\N	c11
\.
COPY t (k, v, s, x, d, ds) FROM STDIN;
10	100	s10	10	11	c10
11	110	s11	\N	\N	c11
\.
COPY (SELECT k, v, s, x, d, ds, df, dn, db FROM t ORDER BY k) TO STDOUT;
SELECT * FROM diff();

-- UPDATE of the new columns (direct and not) and DELETE, old rows and new
UPDATE h SET d = d + 1 WHERE k <= 3;
UPDATE t SET d = d + 1 WHERE k <= 3;
UPDATE h SET x = k * 2, ds = 'u' WHERE k IN (4, 7, 10);
UPDATE t SET x = k * 2, ds = 'u' WHERE k IN (4, 7, 10);
UPDATE h SET d = NULL WHERE k = 5;
UPDATE t SET d = NULL WHERE k = 5;
DELETE FROM h WHERE k = 6;
DELETE FROM t WHERE k = 6;
SELECT * FROM diff();
SELECT k, x, d, ds FROM t ORDER BY k;

-- ---- refused, nothing changes (a volatile default or a serial rewrites
-- the rows: tcopy_alter_rewrite) ----
ALTER FOREIGN TABLE t ADD COLUMN r int NOT NULL;
ALTER FOREIGN TABLE t ADD COLUMN r int NOT NULL DEFAULT 1;	-- works
\set VERBOSITY sqlstate
ALTER FOREIGN TABLE t ADD COLUMN q int GENERATED ALWAYS AS (k * 2) STORED;
\set VERBOSITY default
ALTER TABLE h ADD COLUMN r int NOT NULL DEFAULT 1;
SELECT * FROM diff();

-- ---- transactional: a ROLLBACK leaves the old table ----
BEGIN;
ALTER FOREIGN TABLE t ADD COLUMN y int DEFAULT 3;
INSERT INTO t (k, y) VALUES (100, 4);
SELECT k, y FROM t WHERE k IN (1, 100) ORDER BY k;
ROLLBACK;
SELECT * FROM diff();
INSERT INTO h (k, v) VALUES (101, 1);
INSERT INTO t (k, v) VALUES (101, 1);
SELECT * FROM diff();
-- the same name again, of another type
ALTER TABLE h ADD COLUMN y text DEFAULT 'z';
ALTER FOREIGN TABLE t ADD COLUMN y text DEFAULT 'z';
INSERT INTO h (k, y) VALUES (102, 'w');
INSERT INTO t (k, y) VALUES (102, 'w');
SELECT * FROM diff();
SELECT k, y FROM t WHERE y = 'z' ORDER BY k;

-- ---- DROP COLUMN: gone, the others as before ----
ALTER TABLE h DROP COLUMN v;
ALTER FOREIGN TABLE t DROP COLUMN v;
SELECT * FROM diff();
SELECT k, s, x, d FROM t WHERE d = 7 ORDER BY k;
SELECT count(*), sum(d), count(s) FROM t;
ALTER FOREIGN TABLE t DROP COLUMN k;	-- a key column: refused
-- a ROLLBACK of a DROP leaves the column, with its values
BEGIN;
ALTER FOREIGN TABLE t DROP COLUMN s;
INSERT INTO t (k, x) VALUES (200, 1);
SELECT count(*) FROM t WHERE k = 200;
ROLLBACK;
SELECT k, s FROM t WHERE k <= 3 ORDER BY k;
SELECT * FROM diff();
-- written after the DROP: INSERT, COPY, UPDATE, DELETE
INSERT INTO h (k, s, x) VALUES (201, 'a', 1);
INSERT INTO t (k, s, x) VALUES (201, 'a', 1);
COPY h (k, s, d) FROM STDIN;
202	b	5
\.
COPY t (k, s, d) FROM STDIN;
202	b	5
\.
UPDATE h SET s = s || '!' WHERE k IN (1, 201, 202);
UPDATE t SET s = s || '!' WHERE k IN (1, 201, 202);
DELETE FROM h WHERE k = 2;
DELETE FROM t WHERE k = 2;
SELECT * FROM diff();
-- a column added after a drop, and a drop and an add in one ALTER
ALTER TABLE h ADD COLUMN v2 int DEFAULT 9;
ALTER FOREIGN TABLE t ADD COLUMN v2 int DEFAULT 9;
ALTER TABLE h DROP COLUMN ds, ADD COLUMN v3 text DEFAULT 'q';
ALTER FOREIGN TABLE t DROP COLUMN ds, ADD COLUMN v3 text DEFAULT 'q',
	OPTIONS (ADD batch_rows '100');
INSERT INTO h (k, v2, v3) VALUES (203, 1, 'r');
INSERT INTO t (k, v2, v3) VALUES (203, 1, 'r');
SELECT * FROM diff();
SELECT k, s, v2, v3 FROM t WHERE k IN (1, 201, 203) ORDER BY k;
SELECT v2, v3, count(*) FROM t GROUP BY v2, v3 ORDER BY v2, v3;
-- the places the dropped columns keep
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 't'::regclass;
ANALYZE t;
SELECT attname, null_frac FROM pg_stats WHERE tablename = 't' AND attname IN ('s', 'v2')
ORDER BY attname;

-- ---- a key of an image (numeric), and no key at all ----
CREATE TABLE hn (n numeric PRIMARY KEY, a text, b int);
CREATE FOREIGN TABLE tn (n numeric, a text, b int) SERVER ts
	OPTIONS (key 'n', table_name 'tcopy_alter_rows.tn');
CREATE TABLE hk (a text, b int);
CREATE FOREIGN TABLE tk (a text, b int) SERVER ts
	OPTIONS (table_name 'tcopy_alter_rows.tk');
INSERT INTO hn VALUES (1.5, 'x', 1), (2.50, 'y', 2);
INSERT INTO tn VALUES (1.5, 'x', 1), (2.50, 'y', 2);
INSERT INTO hk VALUES ('x', 1), ('y', 2);
INSERT INTO tk VALUES ('x', 1), ('y', 2);
ALTER TABLE hn ADD COLUMN c int DEFAULT 3, DROP COLUMN a;
ALTER FOREIGN TABLE tn ADD COLUMN c int DEFAULT 3, DROP COLUMN a;
ALTER TABLE hk DROP COLUMN a, ADD COLUMN c text DEFAULT 'c';
ALTER FOREIGN TABLE tk DROP COLUMN a, ADD COLUMN c text DEFAULT 'c';
INSERT INTO hn VALUES (3, 3, 4);
INSERT INTO tn VALUES (3, 3, 4);
INSERT INTO tn VALUES (2.5000, 5, 5);	-- the same key as 2.50
INSERT INTO hk VALUES (3, 'd');
INSERT INTO tk VALUES (3, 'd');
UPDATE hn SET c = c + 10 WHERE n = 1.50;
UPDATE tn SET c = c + 10 WHERE n = 1.50;
SELECT * FROM tn ORDER BY n;
SELECT * FROM hn ORDER BY n;
SELECT * FROM tk ORDER BY b;
SELECT * FROM hk ORDER BY b;
DROP TABLE hn, hk;
DROP FOREIGN TABLE tn, tk;

-- ---- through a partitioned parent ----
CREATE TABLE p (k int NOT NULL, v int) PARTITION BY RANGE (k);
CREATE TABLE p_heap PARTITION OF p FOR VALUES FROM (0) TO (10);
CREATE FOREIGN TABLE p_tc PARTITION OF p FOR VALUES FROM (10) TO (20)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_alter_rows.p_tc');
INSERT INTO p VALUES (1, 1), (11, 11);
ALTER TABLE p ADD COLUMN extra int DEFAULT 5;
INSERT INTO p VALUES (2, 2, 6), (12, 12, 6);
SELECT * FROM p ORDER BY k;
SELECT sum(extra) FROM p WHERE extra = 5;
ALTER TABLE p DROP COLUMN v;
INSERT INTO p VALUES (13, 7);
SELECT * FROM p ORDER BY k;

DROP TABLE h, p;
DROP FOREIGN TABLE t;
DROP EXTENSION tcopy CASCADE;
