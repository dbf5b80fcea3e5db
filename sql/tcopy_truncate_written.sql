--
-- tcopy_truncate_written: TRUNCATE of a tcopy table after the transaction
-- wrote rows to it (issue 48, 6b).  Each case runs on a heap table (hw)
-- and then, the same statements, on a tcopy table (tw); tw_check compares
-- the two after the commit.  The rows written before the TRUNCATE go with
-- it, the rows after it stay, and a read inside the transaction sees the
-- later rows only.  Large cases spill the session to the tserver's disk
-- (its --session-memory-mb, 64 MB by default, stages half of it in
-- memory): in key order (direct SST files) and out of order (runs), and
-- through a parallel COPY.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE tw (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tw');
CREATE TABLE hw (k int PRIMARY KEY, v text);
-- another table the transactions write, which no TRUNCATE names
CREATE FOREIGN TABLE tw2 (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tw2');
CREATE TABLE hw2 (k int PRIMARY KEY, v text);
CREATE VIEW tw_check AS
SELECT (SELECT count(*) FROM tw) AS tc_rows, (SELECT count(*) FROM hw) AS heap_rows,
	(SELECT count(*) FROM (SELECT * FROM tw EXCEPT SELECT * FROM hw) d) AS tc_only,
	(SELECT count(*) FROM (SELECT * FROM hw EXCEPT SELECT * FROM tw) d) AS heap_only,
	(SELECT count(*) FROM (SELECT * FROM tw2 EXCEPT SELECT * FROM hw2) d) AS tc2_only,
	(SELECT count(*) FROM (SELECT * FROM hw2 EXCEPT SELECT * FROM tw2) d) AS heap2_only;

-- INSERT, TRUNCATE, INSERT: only the later rows, in the transaction too
\set t hw
TRUNCATE :t;
INSERT INTO :t VALUES (1, 'committed'), (2, 'committed');
BEGIN;
INSERT INTO :t VALUES (3, 'a'), (4, 'a');
TRUNCATE :t;
SELECT * FROM :t ORDER BY k;
INSERT INTO :t VALUES (4, 'b'), (5, 'b');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
\set t tw
TRUNCATE :t;
INSERT INTO :t VALUES (1, 'committed'), (2, 'committed');
BEGIN;
INSERT INTO :t VALUES (3, 'a'), (4, 'a');
TRUNCATE :t;
SELECT * FROM :t ORDER BY k;
INSERT INTO :t VALUES (4, 'b'), (5, 'b');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM tw_check;

-- COPY, then TRUNCATE: empty
\set t hw
BEGIN;
COPY :t FROM stdin;
10	copied
11	copied
\.
TRUNCATE :t;
SELECT count(*) FROM :t;
COMMIT;
SELECT count(*) FROM :t;
\set t tw
BEGIN;
COPY :t FROM stdin;
10	copied
11	copied
\.
TRUNCATE :t;
SELECT count(*) FROM :t;
COMMIT;
SELECT count(*) FROM :t;
SELECT * FROM tw_check;

-- UPDATE and DELETE of committed rows, TRUNCATE, more writes; TRUNCATE
-- twice; the other table written before and after keeps its rows
\set t hw
\set t2 hw2
INSERT INTO :t SELECT g, 'c' || g FROM generate_series(1, 20) g;
BEGIN;
INSERT INTO :t2 VALUES (1, 'before');
UPDATE :t SET v = 'updated' WHERE k <= 5;
DELETE FROM :t WHERE k > 15;
INSERT INTO :t VALUES (30, 'a');
TRUNCATE :t;
INSERT INTO :t VALUES (1, 'b'), (30, 'b'), (31, 'b');
UPDATE :t SET v = 'b updated' WHERE k = 31;
DELETE FROM :t WHERE k = 30;
SELECT * FROM :t ORDER BY k;
TRUNCATE :t;
INSERT INTO :t VALUES (2, 'c');
INSERT INTO :t2 VALUES (2, 'after');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM :t2 ORDER BY k;
\set t tw
\set t2 tw2
INSERT INTO :t SELECT g, 'c' || g FROM generate_series(1, 20) g;
BEGIN;
INSERT INTO :t2 VALUES (1, 'before');
UPDATE :t SET v = 'updated' WHERE k <= 5;
DELETE FROM :t WHERE k > 15;
INSERT INTO :t VALUES (30, 'a');
TRUNCATE :t;
INSERT INTO :t VALUES (1, 'b'), (30, 'b'), (31, 'b');
UPDATE :t SET v = 'b updated' WHERE k = 31;
DELETE FROM :t WHERE k = 30;
SELECT * FROM :t ORDER BY k;
TRUNCATE :t;
INSERT INTO :t VALUES (2, 'c');
INSERT INTO :t2 VALUES (2, 'after');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM :t2 ORDER BY k;
SELECT * FROM tw_check;

-- in a DO block; then a savepoint taken after the TRUNCATE rolled back to
\set t hw
DO $$
BEGIN
	INSERT INTO hw VALUES (40, 'do');
	TRUNCATE hw;
	INSERT INTO hw VALUES (41, 'do');
END
$$;
BEGIN;
INSERT INTO :t VALUES (42, 'a');
TRUNCATE :t;
INSERT INTO :t VALUES (43, 'b');
SAVEPOINT s;
INSERT INTO :t VALUES (44, 'rolled back');
ROLLBACK TO SAVEPOINT s;
INSERT INTO :t VALUES (45, 'c');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
\set t tw
DO $$
BEGIN
	INSERT INTO tw VALUES (40, 'do');
	TRUNCATE tw;
	INSERT INTO tw VALUES (41, 'do');
END
$$;
BEGIN;
INSERT INTO :t VALUES (42, 'a');
TRUNCATE :t;
INSERT INTO :t VALUES (43, 'b');
SAVEPOINT s;
INSERT INTO :t VALUES (44, 'rolled back');
ROLLBACK TO SAVEPOINT s;
INSERT INTO :t VALUES (45, 'c');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM tw_check;

-- a TRUNCATE rolled back to a savepoint (or in a PL/pgSQL block that
-- raises) leaves the rows written before it; released, it takes them.
-- The extension holds a subtransaction's TRUNCATE back until the session's
-- next use, so that a rollback right after it forgets it.
\set t hw
TRUNCATE :t;
BEGIN;
INSERT INTO :t VALUES (1, 'a');
SAVEPOINT s;
TRUNCATE :t;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM :t ORDER BY k;
SAVEPOINT s1;
SAVEPOINT s2;
TRUNCATE :t;
RELEASE SAVEPOINT s2;
ROLLBACK TO SAVEPOINT s1;
DO $$
BEGIN
	TRUNCATE hw;
	RAISE EXCEPTION 'raised after TRUNCATE';
EXCEPTION WHEN raise_exception THEN
	NULL;
END
$$;
INSERT INTO :t VALUES (2, 'b');
COMMIT;
SELECT * FROM :t ORDER BY k;
BEGIN;
INSERT INTO :t VALUES (3, 'c');
SAVEPOINT s;
TRUNCATE :t;
RELEASE SAVEPOINT s;
INSERT INTO :t VALUES (4, 'd');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
\set t tw
TRUNCATE :t;
BEGIN;
INSERT INTO :t VALUES (1, 'a');
SAVEPOINT s;
TRUNCATE :t;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM :t ORDER BY k;
SAVEPOINT s1;
SAVEPOINT s2;
TRUNCATE :t;
RELEASE SAVEPOINT s2;
ROLLBACK TO SAVEPOINT s1;
DO $$
BEGIN
	TRUNCATE tw;
	RAISE EXCEPTION 'raised after TRUNCATE';
EXCEPTION WHEN raise_exception THEN
	NULL;
END
$$;
INSERT INTO :t VALUES (2, 'b');
COMMIT;
SELECT * FROM :t ORDER BY k;
BEGIN;
INSERT INTO :t VALUES (3, 'c');
SAVEPOINT s;
TRUNCATE :t;
RELEASE SAVEPOINT s;
INSERT INTO :t VALUES (4, 'd');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM tw_check;

-- released and nothing after it: sent at the commit; so in a block with an
-- exception handler that does not raise
\set t hw
BEGIN;
INSERT INTO :t VALUES (6, 'f');
SAVEPOINT s;
TRUNCATE :t;
RELEASE SAVEPOINT s;
COMMIT;
SELECT count(*) FROM :t;
INSERT INTO :t VALUES (7, 'g');
DO $$
BEGIN
	TRUNCATE hw;
EXCEPTION WHEN others THEN
	NULL;
END
$$;
SELECT count(*) FROM :t;
\set t tw
BEGIN;
INSERT INTO :t VALUES (6, 'f');
SAVEPOINT s;
TRUNCATE :t;
RELEASE SAVEPOINT s;
COMMIT;
SELECT count(*) FROM :t;
INSERT INTO :t VALUES (7, 'g');
DO $$
BEGIN
	TRUNCATE tw;
EXCEPTION WHEN others THEN
	NULL;
END
$$;
SELECT count(*) FROM :t;
SELECT * FROM tw_check;

-- not when the subtransaction used the table's server after the TRUNCATE
-- (here a read of the table, which sees it empty): the TRUNCATE was staged,
-- its rows discarded, and the transaction cannot commit (0A000); a heap
-- table commits with the rows
BEGIN;
INSERT INTO tw VALUES (5, 'e');
SAVEPOINT s;
TRUNCATE tw;
SELECT count(*) FROM tw;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM tw ORDER BY k;

-- a ROLLBACK after it all leaves the committed rows
BEGIN;
INSERT INTO tw VALUES (50, 'a');
TRUNCATE tw;
INSERT INTO tw VALUES (51, 'b');
ROLLBACK;
SELECT * FROM tw ORDER BY k;
SELECT * FROM tw_check;

-- spilled in key order (direct SST files): 70 MB of rows, then TRUNCATE;
-- the other table's rows, written before, spill with them and stay
TRUNCATE hw, tw, hw2, tw2;
\set t hw
\set t2 hw2
BEGIN;
INSERT INTO :t2 SELECT g, 'other' FROM generate_series(100, 2000) g;
INSERT INTO :t SELECT g, repeat('x', 1000) FROM generate_series(1, 70000) g;
TRUNCATE :t;
INSERT INTO :t VALUES (7, 'after'), (70001, 'after');
SELECT * FROM :t ORDER BY k;
COMMIT;
\set t tw
\set t2 tw2
BEGIN;
INSERT INTO :t2 SELECT g, 'other' FROM generate_series(100, 2000) g;
INSERT INTO :t SELECT g, repeat('x', 1000) FROM generate_series(1, 70000) g;
SELECT spilled_bytes > 0 AS spilled FROM tcopy.server_sessions('ts') WHERE pid = pg_backend_pid();
TRUNCATE :t;
INSERT INTO :t VALUES (7, 'after'), (70001, 'after');
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM tw_check;

-- spilled out of key order (runs): keys scattered, the other table's rows
-- between them; the rows after the TRUNCATE read back and committed
TRUNCATE hw, tw, hw2, tw2;
\set t hw
\set t2 hw2
BEGIN;
INSERT INTO :t SELECT (g * 7919) % 70000, repeat('y', 1000) FROM generate_series(1, 35000) g;
INSERT INTO :t2 SELECT g, 'between' FROM generate_series(3000, 3500) g;
INSERT INTO :t SELECT (g * 7919) % 70000, repeat('y', 1000) FROM generate_series(35001, 70000) g;
TRUNCATE :t;
INSERT INTO :t SELECT (g::bigint * 104729) % 40000, 'after ' || g FROM generate_series(1, 40000) g;
SELECT count(*), count(DISTINCT k), sum(k) FROM :t;
COMMIT;
\set t tw
\set t2 tw2
BEGIN;
INSERT INTO :t SELECT (g * 7919) % 70000, repeat('y', 1000) FROM generate_series(1, 35000) g;
INSERT INTO :t2 SELECT g, 'between' FROM generate_series(3000, 3500) g;
INSERT INTO :t SELECT (g * 7919) % 70000, repeat('y', 1000) FROM generate_series(35001, 70000) g;
SELECT spilled_bytes > 0 AS spilled FROM tcopy.server_sessions('ts') WHERE pid = pg_backend_pid();
TRUNCATE :t;
INSERT INTO :t SELECT (g::bigint * 104729) % 40000, 'after ' || g FROM generate_series(1, 40000) g;
SELECT count(*), count(DISTINCT k), sum(k) FROM :t;
COMMIT;
SELECT count(*), count(DISTINCT k), sum(k) FROM :t;
SELECT * FROM tw_check;

-- a COPY parsed by parallel workers, spilled, then TRUNCATE, then COPY
TRUNCATE hw, tw, hw2, tw2;
COPY (SELECT g, repeat('z', 900) FROM generate_series(1, 75000) g)
	TO '/tmp/tcopy_regress_truncate_written.txt';
SET tcopy.copy_parallel_threshold = 0;
SET tcopy.copy_workers = 2;
SET tcopy.copy_chunk_bytes = '1MB';
\set t hw
BEGIN;
COPY :t FROM '/tmp/tcopy_regress_truncate_written.txt';
TRUNCATE :t;
COPY :t FROM stdin;
60	after
61	after
\.
SELECT * FROM :t ORDER BY k;
COMMIT;
\set t tw
BEGIN;
COPY :t FROM '/tmp/tcopy_regress_truncate_written.txt';
SELECT spilled_bytes > 0 AS spilled FROM tcopy.server_sessions('ts') WHERE pid = pg_backend_pid();
TRUNCATE :t;
COPY :t FROM stdin;
60	after
61	after
\.
SELECT * FROM :t ORDER BY k;
COMMIT;
SELECT * FROM :t ORDER BY k;
SELECT * FROM tw_check;
RESET tcopy.copy_workers;
RESET tcopy.copy_parallel_threshold;
RESET tcopy.copy_chunk_bytes;
\! rm -f /tmp/tcopy_regress_truncate_written.txt

-- a load label claimed before the TRUNCATE goes with the rows: the same
-- label loads again after it
BEGIN;
COPY tw FROM stdin (load_id 'trunc-label');
70	labelled
\.
TRUNCATE tw;
COPY tw FROM stdin (load_id 'trunc-label');
71	labelled again
\.
COMMIT;
SELECT * FROM tw ORDER BY k;
COPY tw FROM stdin (load_id 'trunc-label');
72	not loaded
\.
SELECT * FROM tw ORDER BY k;

SET client_min_messages = warning;
DROP VIEW tw_check;
DROP TABLE hw, hw2;
DROP FOREIGN TABLE tw, tw2;
DROP EXTENSION tcopy CASCADE;
