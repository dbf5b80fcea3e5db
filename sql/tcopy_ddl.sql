--
-- tcopy_ddl: ALTER of a tcopy table's columns and key, beside a heap twin.
-- Before the tserver holds the table (nothing written yet), ADD COLUMN,
-- DROP COLUMN, ALTER COLUMN TYPE and a new key work, and the table then
-- reads and writes as its twin.  Once it holds the table, they are refused
-- before anything changes, with the way to get there, and the table reads
-- as before (but ADD and DROP COLUMN, instant on it: tcopy_alter_rows.sql); renames,
-- defaults and NOT NULL work on it as on the twin.  A key naming no column
-- is refused when set, a key column is never dropped.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
\set VERBOSITY default

-- a key that names no column: refused when set
CREATE FOREIGN TABLE kx (k int, v int) SERVER ts OPTIONS (key 'nosuch');
CREATE FOREIGN TABLE kx (k int, v int) SERVER ts OPTIONS (key 'k, nosuch');
CREATE FOREIGN TABLE kx (k int, v int) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE kx OPTIONS (SET key 'nosuch');
ALTER FOREIGN TABLE kx DROP COLUMN k;
DROP FOREIGN TABLE kx;

-- ---- nothing written yet: the definition may change ----
CREATE TABLE h_new (k int PRIMARY KEY, v int);
CREATE FOREIGN TABLE t_new (k int, v int) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_ddl.t_new');
SELECT * FROM t_new;	-- a read does not make the table on the tserver
ALTER TABLE h_new ADD COLUMN extra text DEFAULT 'd';
ALTER FOREIGN TABLE t_new ADD COLUMN extra text DEFAULT 'd';
ALTER TABLE h_new DROP COLUMN v;
ALTER FOREIGN TABLE t_new DROP COLUMN v;
ALTER TABLE h_new ALTER COLUMN extra TYPE varchar(10);
ALTER FOREIGN TABLE t_new ALTER COLUMN extra TYPE varchar(10);
ALTER TABLE h_new ADD COLUMN k2 bigint;
ALTER FOREIGN TABLE t_new ADD COLUMN k2 bigint;
ALTER FOREIGN TABLE t_new OPTIONS (SET key 'k2');
INSERT INTO h_new (k, k2) VALUES (1, 10), (2, 20);
INSERT INTO t_new (k, k2) VALUES (1, 10), (2, 20);
SELECT * FROM h_new ORDER BY k2;
SELECT * FROM t_new ORDER BY k2;
-- now keyed by k2: a second row of k2 20 is the duplicate
INSERT INTO t_new (k, k2) VALUES (3, 20);

-- ---- the tserver holds the table ----
CREATE TABLE h (k int PRIMARY KEY, v int, w text);
CREATE FOREIGN TABLE t (k int, v int, w text) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_ddl.t');
INSERT INTO h VALUES (1, 10, 'a'), (2, 20, 'b');
INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b');
ALTER FOREIGN TABLE t DROP COLUMN k;
-- a new type or key rewrites the rows (tcopy_alter_rewrite); rolled back
BEGIN;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE bigint;
ALTER FOREIGN TABLE t OPTIONS (SET key 'v');
ALTER FOREIGN TABLE t OPTIONS (DROP key);
SELECT * FROM t ORDER BY k;
ROLLBACK;
-- one who does not own it: Postgres' refusal, nothing locked or read first
CREATE ROLE tcopy_ddl_other;
GRANT SELECT ON t TO tcopy_ddl_other;
SET ROLE tcopy_ddl_other;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE bigint;
ALTER FOREIGN TABLE t OPTIONS (SET key 'v');
RESET ROLE;
REVOKE SELECT ON t FROM tcopy_ddl_other;
DROP ROLE tcopy_ddl_other;
ALTER FOREIGN TABLE t OPTIONS (SET key '"k"');	-- the same column: no change
ALTER FOREIGN TABLE t OPTIONS (ADD key_form 'bytes');
-- several commands, one refused: none of them runs
ALTER FOREIGN TABLE t ALTER COLUMN w SET DEFAULT 'z', DROP COLUMN k;
SELECT column_name, column_default FROM information_schema.columns
WHERE table_name = 't' ORDER BY ordinal_position;
SELECT * FROM t ORDER BY k;
-- what works on it, as on the twin: renames, defaults, NOT NULL
ALTER TABLE h RENAME COLUMN v TO vv;
ALTER FOREIGN TABLE t RENAME COLUMN v TO vv;
ALTER TABLE h RENAME COLUMN k TO kk;
ALTER FOREIGN TABLE t RENAME COLUMN k TO kk;
ALTER TABLE h ALTER COLUMN w SET DEFAULT 'dflt';
ALTER FOREIGN TABLE t ALTER COLUMN w SET DEFAULT 'dflt';
ALTER TABLE h ALTER COLUMN vv SET NOT NULL;
ALTER FOREIGN TABLE t ALTER COLUMN vv SET NOT NULL;
INSERT INTO h (kk, vv) VALUES (3, 30);
INSERT INTO t (kk, vv) VALUES (3, 30);
INSERT INTO t (kk, vv) VALUES (4, NULL);
SELECT * FROM h ORDER BY kk;
SELECT * FROM t ORDER BY kk;
SELECT * FROM t WHERE kk = 2;
UPDATE h SET vv = vv + 1 WHERE kk = 2;
UPDATE t SET vv = vv + 1 WHERE kk = 2;
SELECT count(*) FROM (SELECT * FROM h EXCEPT SELECT * FROM t) d;

-- ---- through a partitioned parent: ADD COLUMN reaches a partition the tserver holds ----
CREATE TABLE p (k int NOT NULL, v int) PARTITION BY RANGE (k);
CREATE TABLE p_heap PARTITION OF p FOR VALUES FROM (0) TO (10);
CREATE FOREIGN TABLE p_tc PARTITION OF p FOR VALUES FROM (10) TO (20)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_ddl.p_tc');
INSERT INTO p VALUES (1, 1), (11, 11);
ALTER TABLE p ADD COLUMN extra int;
SELECT count(*) FROM information_schema.columns WHERE table_name IN ('p', 'p_heap', 'p_tc');
ALTER TABLE p RENAME COLUMN v TO vv;
SELECT * FROM p ORDER BY k;

DROP TABLE h, h_new, p;
DROP FOREIGN TABLE t, t_new;
DROP EXTENSION tcopy CASCADE;
