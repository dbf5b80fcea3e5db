--
-- tcopy_dml: INSERT, SELECT, TRUNCATE and transactions on tcopy tables, and
-- the privileges COPY FROM checks.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
\getenv abs_builddir PG_ABS_BUILDDIR
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE TABLE dml_heap (k int NOT NULL, v text, n numeric DEFAULT 0);
-- a table_name, so that EXPLAIN's Remote Table is not a generated name
CREATE FOREIGN TABLE dml_t (k int NOT NULL, v text, n numeric DEFAULT 0)
	SERVER ts OPTIONS (key 'k', table_name 'dml_t', on_conflict 'replace');
CREATE FOREIGN TABLE dml_u (k bigint NOT NULL, v text) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE dml_s (k smallint NOT NULL) SERVER ts OPTIONS (key 'k');
TRUNCATE dml_t, dml_u, dml_s;
-- show command tags: INSERT's and COPY's row counts
\set QUIET off

CREATE VIEW dml_check AS
SELECT (SELECT count(*) FROM dml_heap) AS heap_rows,
	(SELECT count(*) FROM dml_t) AS tc_rows,
	(SELECT count(*) FROM (SELECT r::text FROM dml_heap r
						   EXCEPT ALL SELECT r::text FROM dml_t r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM dml_t r
						   EXCEPT ALL SELECT r::text FROM dml_heap r) d) AS tc_only;

-- INSERT: one row, several, a column list, defaults, RETURNING, a query
INSERT INTO dml_t VALUES (1, 'one', 1.5);
INSERT INTO dml_t VALUES (2, 'two', DEFAULT), (3, NULL, DEFAULT), (-5, 'minus five', -5);
INSERT INTO dml_t (v, k) VALUES ('four', 4);
INSERT INTO dml_t VALUES (6, 'six') RETURNING *;
INSERT INTO dml_t VALUES (7, 'seven'), (8, 'eight') RETURNING k * 2 AS doubled, upper(v);
INSERT INTO dml_t SELECT g, 'gen ' || g, g / 10.0 FROM generate_series(100, 1099) g;
INSERT INTO dml_heap VALUES (1, 'one', 1.5);
INSERT INTO dml_heap VALUES (2, 'two', DEFAULT), (3, NULL, DEFAULT), (-5, 'minus five', -5);
INSERT INTO dml_heap (v, k) VALUES ('four', 4);
INSERT INTO dml_heap VALUES (6, 'six'), (7, 'seven'), (8, 'eight');
INSERT INTO dml_heap SELECT g, 'gen ' || g, g / 10.0 FROM generate_series(100, 1099) g;
SELECT * FROM dml_check;

-- SELECT: rows, projections, aggregates, quals on any column
SELECT * FROM dml_t WHERE k < 10 ORDER BY k;
SELECT v FROM dml_t WHERE k = 3;
SELECT n, v FROM dml_t WHERE v LIKE '%e%' AND k < 100 ORDER BY k;
SELECT count(*), count(v), sum(k), sum(n), min(v), max(v) FROM dml_t;
SELECT count(*), count(v), sum(k), sum(n), min(v), max(v) FROM dml_heap;
SELECT k FROM dml_t LIMIT 3;
SELECT k, v FROM dml_t ORDER BY n DESC, k LIMIT 3;
SELECT t.k, h.v FROM dml_t t JOIN dml_heap h ON h.k = t.k + 1 WHERE t.k < 5 ORDER BY 1;

-- a comparison of the key with a constant also narrows the scan on the
-- tserver: every such predicate returns what it returns on the heap table
CREATE FUNCTION dml_both(pred text, OUT tc bigint, OUT heap bigint, OUT same_rows bool)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT count(*) FROM dml_t WHERE %s', pred) INTO tc;
	EXECUTE format('SELECT count(*) FROM dml_heap WHERE %s', pred) INTO heap;
	EXECUTE format('SELECT NOT EXISTS (SELECT r::text FROM dml_t r WHERE %1$s
									   EXCEPT ALL SELECT r::text FROM dml_heap r WHERE %1$s)
						   AND NOT EXISTS (SELECT r::text FROM dml_heap r WHERE %1$s
									   EXCEPT ALL SELECT r::text FROM dml_t r WHERE %1$s)', pred)
		INTO same_rows;
END
$$;
SELECT pred, (dml_both(pred)).*
FROM (VALUES ('k > 500'), ('k >= 500'), ('k < 3'), ('k <= 3'), ('k = 7'), ('k = 9'),
			 ('k BETWEEN 100 AND 200'), ('k > 200 AND k < 100'), ('k >= 5 AND k <= 5'),
			 ('k > 5 AND k < 6'), ('k < 0'), ('k >= -5'), ('k > -6 AND k < 2'),
			 ('500 < k'), ('1099 <= k'), ('k > 1000 AND k > 1050'), ('k >= 1050 AND k > 1050'),
			 ('k < 1 AND k <= 1'), ('k > 2147483647::bigint'), ('k < -3000000000::bigint'),
			 ('k > -3000000000::bigint'), ('k <> 5'), ('k IN (1, 2, 1000)'),
			 ('k = 1 OR k = 1000'), ('k::numeric > 1000.5'), ('k > 100 AND v LIKE ''gen 1%'''),
			 ('k > 32767::smallint'), ('k + 0 > 1000'), ('k > NULL::int'), ('NOT k > 10')) p(pred);
EXPLAIN (COSTS OFF) SELECT * FROM dml_t WHERE k > 5 AND k <= 10 AND v <> 'x';
EXPLAIN (COSTS OFF) SELECT * FROM dml_t WHERE 7 = k;
EXPLAIN (COSTS OFF) SELECT * FROM dml_t WHERE k > 10 AND k < 5;
EXPLAIN (COSTS OFF) SELECT count(*) FROM dml_t WHERE v = 'x';
-- the whole range of bigint and smallint keys
INSERT INTO dml_u VALUES (-9223372036854775808, 'min'), (-1, 'minus one'), (0, 'zero'),
	(1, 'one'), (9223372036854775807, 'max');
SELECT k FROM dml_u ORDER BY k;
SELECT k FROM dml_u WHERE k > 0;
SELECT k FROM dml_u WHERE k < 0;
SELECT k FROM dml_u WHERE k >= -9223372036854775808 AND k <= 9223372036854775807;
SELECT k FROM dml_u WHERE k > 9223372036854775806;
SELECT k FROM dml_u WHERE k < -9223372036854775807;
SELECT k FROM dml_u WHERE k = -1;
SELECT k FROM dml_u WHERE k > -2::smallint AND k < 1::int;
INSERT INTO dml_s VALUES (-32768), (-1), (0), (32767);
SELECT k FROM dml_s WHERE k > 100000;
SELECT k FROM dml_s WHERE k < 100000;
SELECT k FROM dml_s WHERE k > -100000 AND k < 0;
SELECT k FROM dml_s WHERE k >= 32767;
SELECT k FROM dml_s WHERE k <= -32768;

-- rescans: run again and again, and stopped half way
SELECT g, (SELECT v FROM dml_t WHERE k = g) FROM generate_series(0, 8) g;
SELECT g, (SELECT k FROM dml_t WHERE k > g LIMIT 1) AS next_k,
	(SELECT min(k) FROM dml_heap WHERE k > g) AS heap_next_k
FROM generate_series(-6, 8) g;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT count(*), sum(h.k) FROM dml_heap h JOIN dml_t t ON t.k = h.k WHERE h.k < 10;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
-- a cursor read in part, and a query that fails half way: the next
-- statements are not disturbed
BEGIN;
DECLARE c NO SCROLL CURSOR FOR SELECT k FROM dml_t;
FETCH 3 FROM c;
FETCH 2 FROM c;
CLOSE c;
COMMIT;
SELECT k, 10 / (k - 500) FROM dml_t WHERE k > 490;
SELECT count(*) FROM dml_t;

-- UPDATE and DELETE name rows by the key (tcopy_modify tests them against
-- a heap table); a table without a key refuses them
UPDATE dml_t SET v = 'updated' WHERE k = 2;
UPDATE dml_heap SET v = 'updated' WHERE k = 2;
DELETE FROM dml_t WHERE k = 3;
DELETE FROM dml_heap WHERE k = 3;
SELECT * FROM dml_check;
SELECT * FROM dml_t WHERE k BETWEEN 1 AND 4 ORDER BY k;
CREATE FOREIGN TABLE dml_nokey (a int) SERVER ts;
UPDATE dml_nokey SET a = 1;
DELETE FROM dml_nokey;
DROP FOREIGN TABLE dml_nokey;
-- a tserver write replaces a row with the same key, so ON CONFLICT DO
-- NOTHING must find the stored row first (fdw_upsert.c): the row stays,
-- never replaced; sql/tcopy_upsert.sql has the rest
INSERT INTO dml_t VALUES (1, 'replaced?') ON CONFLICT (k) DO NOTHING;
DO $$
BEGIN
	INSERT INTO dml_t VALUES (1, 'replaced?') ON CONFLICT DO NOTHING;
	RAISE NOTICE 'ON CONFLICT DO NOTHING accepted';
EXCEPTION WHEN feature_not_supported THEN
	RAISE NOTICE 'ON CONFLICT DO NOTHING refused';
END
$$;
SELECT * FROM dml_t WHERE k = 1;

-- TRUNCATE
TRUNCATE dml_t;
SELECT count(*) FROM dml_t;
TRUNCATE dml_t, dml_heap;
SELECT * FROM dml_check;

-- TRUNCATE is transactional in Postgres: a rolled-back TRUNCATE of a tcopy
-- table must leave its rows (or be refused), never lose them
INSERT INTO dml_t VALUES (1, 'kept'), (2, 'kept too');
BEGIN;
DO $$
BEGIN
	TRUNCATE dml_t;
EXCEPTION WHEN feature_not_supported OR active_sql_transaction THEN
	NULL;
END
$$;
ROLLBACK;
SELECT * FROM dml_t ORDER BY k;
TRUNCATE dml_t;

-- ROLLBACK leaves nothing
BEGIN;
COPY dml_t FROM STDIN;
1	a	1
2	b	2
\.
INSERT INTO dml_t VALUES (3, 'c');
ROLLBACK;
SELECT count(*) FROM dml_t;

-- the transaction that wrote a table reads its rows before they commit
-- (tcopy_modify tests more), and truncates it (tcopy_truncate_written
-- tests more): the rows before the TRUNCATE go with it
BEGIN;
INSERT INTO dml_t VALUES (1, 'a');
SELECT * FROM dml_t;
ROLLBACK;
BEGIN;
COPY dml_t FROM STDIN;
1	a	1
\.
SELECT count(*) FROM dml_t;
ROLLBACK;
BEGIN;
INSERT INTO dml_t VALUES (1, 'a');
TRUNCATE dml_t;
SELECT count(*) FROM dml_t;
ROLLBACK;
SELECT count(*) FROM dml_t;

-- other tables can be read, and the writes to several tables commit together
SELECT count(*) FROM dml_u;
BEGIN;
INSERT INTO dml_t VALUES (1, 'a');
SELECT count(*) FROM dml_u;
INSERT INTO dml_u VALUES (2, 'b');
COPY dml_t FROM STDIN;
2	b	2
\.
COMMIT;
SELECT * FROM dml_t ORDER BY k;
SELECT count(*) FROM dml_u;
-- one statement may read the table it writes: it reads what was committed
INSERT INTO dml_t SELECT k + 100, v || ' again', n FROM dml_t;
SELECT * FROM dml_t ORDER BY k;

-- a failing COPY in the middle of a transaction leaves nothing of it
BEGIN;
INSERT INTO dml_t VALUES (10, 'ten');
COPY dml_t FROM STDIN;
11	eleven	11
12	twelve	twelve
\.
COMMIT;
SELECT * FROM dml_t ORDER BY k;
BEGIN;
COPY dml_t FROM STDIN;
11	eleven	11
\.
INSERT INTO dml_t VALUES (NULL, 'no key');
COMMIT;
SELECT * FROM dml_t ORDER BY k;

-- subtransactions: a rolled-back savepoint's rows are taken back (the tserver
-- still holds them in memory), and the commit keeps the rest
BEGIN;
INSERT INTO dml_t VALUES (20, 'twenty');
SAVEPOINT s;
INSERT INTO dml_t VALUES (21, 'twenty-one');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM dml_t WHERE k >= 20 ORDER BY k;
-- ... and one that wrote nothing, or a released one, change nothing
BEGIN;
INSERT INTO dml_t VALUES (22, 'twenty-two');
SAVEPOINT s;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
INSERT INTO dml_t VALUES (23, 'twenty-three');
RELEASE SAVEPOINT t;
COMMIT;
SELECT * FROM dml_t WHERE k >= 20 ORDER BY k;

-- a transaction that wrote can be prepared: its rows are not seen, and
-- ROLLBACK PREPARED discards them
BEGIN;
INSERT INTO dml_t VALUES (24, 'twenty-four');
PREPARE TRANSACTION 'dml_prepared';
SELECT * FROM dml_t WHERE k >= 20 ORDER BY k;
ROLLBACK PREPARED 'dml_prepared';
SELECT * FROM dml_t WHERE k >= 20 ORDER BY k;

-- read-only transactions
BEGIN READ ONLY;
INSERT INTO dml_t VALUES (30, 'thirty');
ROLLBACK;
BEGIN READ ONLY;
COPY dml_t FROM '/nonexistent/tcopy.data';
ROLLBACK;
BEGIN READ ONLY;
COPY dml_heap FROM '/nonexistent/tcopy.data';
ROLLBACK;

-- privileges: COPY FROM checks what Postgres' COPY checks, in its words
\set dmlfile :abs_builddir '/results/tcopy_dml.data'
COPY (SELECT g, 'file ' || g, g FROM generate_series(40, 44) g) TO :'dmlfile';
SET dml.file = :'dmlfile';
CREATE ROLE regress_tcopy_user;
GRANT SELECT ON dml_t, dml_heap TO regress_tcopy_user;
SET ROLE regress_tcopy_user;
COPY dml_t FROM STDIN;
\.
COPY dml_heap FROM STDIN;
\.
INSERT INTO dml_t VALUES (40, 'x');
COPY dml_t FROM '/nonexistent/tcopy.data';
COPY dml_heap FROM '/nonexistent/tcopy.data';
COPY dml_t FROM PROGRAM 'cat /dev/null';
COPY dml_heap FROM PROGRAM 'cat /dev/null';
RESET ROLE;
GRANT INSERT (k, v) ON dml_t, dml_heap TO regress_tcopy_user;
SET ROLE regress_tcopy_user;
COPY dml_t FROM STDIN;
\.
COPY dml_heap FROM STDIN;
\.
COPY dml_t (k, v) FROM STDIN;
40	forty
\.
COPY dml_heap (k, v) FROM STDIN;
40	forty
\.
RESET ROLE;
REVOKE SELECT ON dml_t FROM regress_tcopy_user;
GRANT INSERT ON dml_t, dml_heap TO regress_tcopy_user;
GRANT pg_read_server_files TO regress_tcopy_user;
SET ROLE regress_tcopy_user;
SELECT count(*) FROM dml_t;
COPY dml_t FROM PROGRAM 'cat /dev/null';
DO $$ BEGIN EXECUTE format('COPY dml_t FROM %L', current_setting('dml.file')); END $$;
RESET ROLE;
SELECT * FROM dml_t WHERE k >= 40 ORDER BY k;
-- writes of two users (two connections) in one transaction commit, or
-- roll back, together
BEGIN;
INSERT INTO dml_t VALUES (50, 'superuser');
SET ROLE regress_tcopy_user;
INSERT INTO dml_t VALUES (51, 'regress_tcopy_user');
RESET ROLE;
COMMIT;
BEGIN;
INSERT INTO dml_t VALUES (52, 'superuser');
SET ROLE regress_tcopy_user;
INSERT INTO dml_t VALUES (53, 'regress_tcopy_user');
RESET ROLE;
ROLLBACK;
SELECT * FROM dml_t WHERE k >= 50 ORDER BY k;

RESET dml.file;
\set QUIET on
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE dml_heap;
DROP FUNCTION dml_both(text);
DROP OWNED BY regress_tcopy_user;
DROP ROLE regress_tcopy_user;
