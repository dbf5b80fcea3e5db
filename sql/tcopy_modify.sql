--
-- tcopy_modify: UPDATE and DELETE of keyed tcopy tables, and a transaction
-- reading its own writes (INSERT, COPY, UPDATE, DELETE, TRUNCATE), each
-- case run against a tcopy table m_t and a heap table m_h with a primary
-- key holding the same rows; m_check compares the two tables whole (row
-- counts, and rows found in one only: 0 and 0 when they agree).  Where tcopy
-- differs from the heap table on purpose, a comment says why.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE FOREIGN TABLE m_t (k int NOT NULL, v text, n numeric) SERVER ts OPTIONS (key 'k');
CREATE TABLE m_h (k int PRIMARY KEY, v text, n numeric);
CREATE VIEW m_check AS
SELECT (SELECT count(*) FROM m_t) AS tc_rows,
	(SELECT count(*) FROM m_h) AS heap_rows,
	(SELECT count(*) FROM (SELECT r::text FROM m_t r
						   EXCEPT ALL SELECT r::text FROM m_h r) d) AS tc_only,
	(SELECT count(*) FROM (SELECT r::text FROM m_h r
						   EXCEPT ALL SELECT r::text FROM m_t r) d) AS heap_only;
INSERT INTO m_t SELECT g, 'v' || g, g * 1.5 FROM generate_series(1, 20) g;
INSERT INTO m_h SELECT g, 'v' || g, g * 1.5 FROM generate_series(1, 20) g;
-- command tags: the rows each UPDATE and DELETE found
\set QUIET off
SELECT * FROM m_check;

-- ---- UPDATE ----
-- by key
UPDATE m_t SET v = 'one' WHERE k = 1;
UPDATE m_h SET v = 'one' WHERE k = 1;
-- by key range, and by a predicate on another column
UPDATE m_t SET n = n * 2 WHERE k BETWEEN 5 AND 8;
UPDATE m_h SET n = n * 2 WHERE k BETWEEN 5 AND 8;
UPDATE m_t SET v = v || '!' WHERE v LIKE 'v1%';
UPDATE m_h SET v = v || '!' WHERE v LIKE 'v1%';
-- a key that is not there, and an empty range
UPDATE m_t SET v = 'none' WHERE k = 1000;
UPDATE m_h SET v = 'none' WHERE k = 1000;
UPDATE m_t SET v = 'none' WHERE k > 10 AND k < 5;
UPDATE m_h SET v = 'none' WHERE k > 10 AND k < 5;
-- every row
UPDATE m_t SET n = n + 1;
UPDATE m_h SET n = n + 1;
-- the key set to itself is no move
UPDATE m_t SET k = k, v = 'same key' WHERE k = 2;
UPDATE m_h SET k = k, v = 'same key' WHERE k = 2;
SELECT * FROM m_check;
SELECT * FROM m_t WHERE k <= 10 ORDER BY k;
-- RETURNING (ordered: the heap table returns rows in its physical order)
WITH u AS (UPDATE m_t SET n = -n WHERE k IN (3, 4) RETURNING k, v, n, n * 2 AS twice)
SELECT * FROM u ORDER BY k;
WITH u AS (UPDATE m_h SET n = -n WHERE k IN (3, 4) RETURNING k, v, n, n * 2 AS twice)
SELECT * FROM u ORDER BY k;
UPDATE m_t SET v = 'returned' WHERE k = 9 RETURNING *;
UPDATE m_h SET v = 'returned' WHERE k = 9 RETURNING *;
-- joins and subqueries below the update
UPDATE m_t t SET v = h.v || ' (from heap)' FROM m_h h WHERE h.k = t.k AND h.k IN (10, 11);
UPDATE m_h SET v = v || ' (from heap)' WHERE k IN (10, 11);
UPDATE m_t SET n = 0 WHERE k IN (SELECT k FROM m_h WHERE k > 18);
UPDATE m_h SET n = 0 WHERE k IN (SELECT k FROM m_h WHERE k > 18);
SELECT * FROM m_check;
-- a NULL key is refused as a NOT NULL column's NULL is
UPDATE m_t SET k = NULL WHERE k = 1;
UPDATE m_h SET k = NULL WHERE k = 1;

-- moving a row: its key changes
UPDATE m_t SET k = 100 WHERE k = 4;
UPDATE m_h SET k = 100 WHERE k = 4;
WITH u AS (UPDATE m_t SET k = k + 1000 WHERE k BETWEEN 5 AND 7 RETURNING *)
SELECT * FROM u ORDER BY k;
WITH u AS (UPDATE m_h SET k = k + 1000 WHERE k BETWEEN 5 AND 7 RETURNING *)
SELECT * FROM u ORDER BY k;
SELECT * FROM m_check;
-- every key at once, to free keys and back
UPDATE m_t SET k = k + 10000;
UPDATE m_h SET k = k + 10000;
SELECT * FROM m_check;
UPDATE m_t SET k = k - 10000;
UPDATE m_h SET k = k - 10000;
SELECT * FROM m_check;
-- onto a key that exists: 23505 as the primary key's, and nothing changed
UPDATE m_t SET k = 2 WHERE k = 3;
\echo :LAST_ERROR_SQLSTATE
UPDATE m_h SET k = 2 WHERE k = 3;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM m_check;
SELECT * FROM m_t WHERE k IN (2, 3) ORDER BY k;
-- ... also when every row moves one up (each lands on the next one's key)
UPDATE m_t SET k = k + 1 WHERE k < 100;
UPDATE m_h SET k = k + 1 WHERE k < 100;
SELECT * FROM m_check;
-- in a transaction the duplicate is found at the COMMIT (the moved row's
-- insert comes out of key order); until then the transaction reads what
-- its writes say, the moved row in the other's place, where a primary key
-- fails the UPDATE at once
BEGIN;
UPDATE m_t SET k = 2 WHERE k = 3;
SELECT * FROM m_t WHERE k IN (2, 3) ORDER BY k;
COMMIT;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM m_check;

-- ---- DELETE ----
DELETE FROM m_t WHERE k = 1;
DELETE FROM m_h WHERE k = 1;
DELETE FROM m_t WHERE k = 1;
DELETE FROM m_h WHERE k = 1;
DELETE FROM m_t WHERE k = 2 RETURNING *;
DELETE FROM m_h WHERE k = 2 RETURNING *;
WITH d AS (DELETE FROM m_t WHERE k BETWEEN 1000 AND 1010 RETURNING k, v)
SELECT * FROM d ORDER BY k;
WITH d AS (DELETE FROM m_h WHERE k BETWEEN 1000 AND 1010 RETURNING k, v)
SELECT * FROM d ORDER BY k;
DELETE FROM m_t WHERE v LIKE '%heap%';
DELETE FROM m_h WHERE v LIKE '%heap%';
DELETE FROM m_t t USING m_h h WHERE h.k = t.k AND h.n = 0;
DELETE FROM m_h WHERE n = 0;
SELECT * FROM m_check;
-- a deleted row moved elsewhere in the same statement
WITH d AS (DELETE FROM m_t WHERE k = 3 RETURNING *)
INSERT INTO m_t SELECT k + 5000, v, n FROM d;
WITH d AS (DELETE FROM m_h WHERE k = 3 RETURNING *)
INSERT INTO m_h SELECT k + 5000, v, n FROM d;
SELECT * FROM m_check;
SELECT * FROM m_t ORDER BY k;
-- every row, returned
WITH d AS (DELETE FROM m_t RETURNING *) SELECT count(*), sum(k), sum(n) FROM d;
WITH d AS (DELETE FROM m_h RETURNING *) SELECT count(*), sum(k), sum(n) FROM d;
SELECT * FROM m_check;

-- ---- a table without a key: rows have no name to update or delete by ----
CREATE FOREIGN TABLE m_nokey (a int, b text) SERVER ts;
INSERT INTO m_nokey VALUES (1, 'x');
UPDATE m_nokey SET b = 'y' WHERE a = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM m_nokey WHERE a = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM m_nokey;
EXPLAIN (COSTS OFF) UPDATE m_nokey SET b = 'y';
SELECT * FROM m_nokey;

-- ---- reading your own writes: inside a transaction, the tcopy table
-- reads as the heap table does ----
INSERT INTO m_t SELECT g, 'v' || g, g FROM generate_series(1, 20) g;
INSERT INTO m_h SELECT g, 'v' || g, g FROM generate_series(1, 20) g;
-- INSERT
BEGIN;
INSERT INTO m_t VALUES (30, 'thirty', 30), (31, 'thirty-one', 31);
INSERT INTO m_h VALUES (30, 'thirty', 30), (31, 'thirty-one', 31);
SELECT * FROM m_check;
SELECT * FROM m_t WHERE k >= 20 ORDER BY k;
SELECT count(*), sum(n) FROM m_t;
COMMIT;
SELECT * FROM m_check;
-- COPY
BEGIN;
COPY m_t FROM STDIN;
40	forty	40
41	forty-one	41
\.
COPY m_h FROM STDIN;
40	forty	40
41	forty-one	41
\.
SELECT * FROM m_check;
SELECT * FROM m_t WHERE k BETWEEN 35 AND 45 ORDER BY k;
COMMIT;
SELECT * FROM m_check;
-- UPDATE, and rows inserted, updated and deleted in the transaction
BEGIN;
UPDATE m_t SET v = 'updated' WHERE k BETWEEN 3 AND 5;
UPDATE m_h SET v = 'updated' WHERE k BETWEEN 3 AND 5;
SELECT * FROM m_t WHERE k BETWEEN 2 AND 6 ORDER BY k;
INSERT INTO m_t VALUES (50, 'fifty', 50), (51, 'fifty-one', 51);
INSERT INTO m_h VALUES (50, 'fifty', 50), (51, 'fifty-one', 51);
UPDATE m_t SET n = 500 WHERE k = 50;
UPDATE m_h SET n = 500 WHERE k = 50;
DELETE FROM m_t WHERE k = 51;
DELETE FROM m_h WHERE k = 51;
SELECT * FROM m_t WHERE k >= 50 ORDER BY k;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_check;
-- DELETE, and a deleted key inserted again
BEGIN;
DELETE FROM m_t WHERE k IN (6, 7, 8);
DELETE FROM m_h WHERE k IN (6, 7, 8);
SELECT count(*) FROM m_t WHERE k BETWEEN 6 AND 8;
INSERT INTO m_t VALUES (7, 'seven again', 7);
INSERT INTO m_h VALUES (7, 'seven again', 7);
UPDATE m_t SET v = 'gone' WHERE k = 6;
UPDATE m_h SET v = 'gone' WHERE k = 6;
SELECT * FROM m_t WHERE k BETWEEN 5 AND 9 ORDER BY k;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_check;
-- TRUNCATE, then INSERT: the transaction reads only its new rows
BEGIN;
TRUNCATE m_t, m_h;
SELECT count(*) FROM m_t;
INSERT INTO m_t VALUES (1, 'after truncate', 1), (2, 'after truncate', 2);
INSERT INTO m_h VALUES (1, 'after truncate', 1), (2, 'after truncate', 2);
SELECT * FROM m_t ORDER BY k;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_check;
-- ... and a TRUNCATE after rows written to the table removes them too
-- (tcopy_truncate_written tests more); rolled back here
BEGIN;
INSERT INTO m_t VALUES (3, 'x', 3);
TRUNCATE m_t;
SELECT count(*) FROM m_t;
ROLLBACK;
INSERT INTO m_t SELECT g, 'v' || g, g FROM generate_series(3, 20) g;
INSERT INTO m_h SELECT g, 'v' || g, g FROM generate_series(3, 20) g;
SELECT * FROM m_check;

-- rolled back: the transaction read its writes, then nothing is left
BEGIN;
INSERT INTO m_t VALUES (60, 'sixty', 60);
INSERT INTO m_h VALUES (60, 'sixty', 60);
UPDATE m_t SET n = n * 10 WHERE k < 5;
UPDATE m_h SET n = n * 10 WHERE k < 5;
DELETE FROM m_t WHERE k BETWEEN 10 AND 15;
DELETE FROM m_h WHERE k BETWEEN 10 AND 15;
COPY m_t FROM STDIN;
61	sixty-one	61
\.
COPY m_h FROM STDIN;
61	sixty-one	61
\.
SELECT * FROM m_check;
SELECT count(*), sum(n) FROM m_t;
ROLLBACK;
SELECT * FROM m_check;
SELECT count(*), sum(n) FROM m_t;
BEGIN;
TRUNCATE m_t, m_h;
INSERT INTO m_t VALUES (1, 'only row', 1);
INSERT INTO m_h VALUES (1, 'only row', 1);
SELECT * FROM m_t;
ROLLBACK;
SELECT * FROM m_check;

-- savepoints: released ones read and commit as the heap table's
BEGIN;
SAVEPOINT a;
UPDATE m_t SET v = 'in a' WHERE k = 1;
UPDATE m_h SET v = 'in a' WHERE k = 1;
RELEASE SAVEPOINT a;
SAVEPOINT b;
DELETE FROM m_t WHERE k = 2;
DELETE FROM m_h WHERE k = 2;
SAVEPOINT c;
INSERT INTO m_t VALUES (70, 'in c', 70);
INSERT INTO m_h VALUES (70, 'in c', 70);
RELEASE SAVEPOINT c;
SELECT * FROM m_check;
RELEASE SAVEPOINT b;
SELECT * FROM m_t WHERE k <= 2 OR k = 70 ORDER BY k;
COMMIT;
SELECT * FROM m_check;
-- a rolled-back savepoint that only read, or failed before writing,
-- leaves the transaction readable
BEGIN;
UPDATE m_t SET v = 'before s' WHERE k = 3;
UPDATE m_h SET v = 'before s' WHERE k = 3;
SAVEPOINT s;
SELECT v FROM m_t WHERE k = 3;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT s2;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT s2;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_check;
-- a rolled-back savepoint that wrote: its writes are taken back (the
-- tserver still holds them in memory), the table reads as before the
-- savepoint, and the rest commits, as on the heap table
BEGIN;
UPDATE m_t SET v = 'before s' WHERE k = 4;
UPDATE m_h SET v = 'before s' WHERE k = 4;
SAVEPOINT s;
INSERT INTO m_t VALUES (80, 'in s', 80);
INSERT INTO m_h VALUES (80, 'in s', 80);
UPDATE m_t SET v = 'in s' WHERE k = 5;
UPDATE m_h SET v = 'in s' WHERE k = 5;
DELETE FROM m_t WHERE k = 6;
DELETE FROM m_h WHERE k = 6;
SELECT * FROM m_check;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM m_t WHERE k IN (4, 5, 6, 80) ORDER BY k;
SELECT * FROM m_check;
-- a PL/pgSQL exception block is a savepoint too
DO $$
BEGIN
	UPDATE m_t SET v = 'in block' WHERE k = 5;
	UPDATE m_h SET v = 'in block' WHERE k = 5;
	PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
	NULL;
END $$;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_t WHERE k IN (4, 5, 6, 80) ORDER BY k;
SELECT * FROM m_check;

-- an UPDATE reads the transaction's earlier UPDATEs: three increments add 3
BEGIN;
UPDATE m_t SET n = n + 1 WHERE k = 1;
UPDATE m_t SET n = n + 1 WHERE k = 1;
UPDATE m_t SET n = n + 1 WHERE k = 1;
UPDATE m_h SET n = n + 1 WHERE k = 1;
UPDATE m_h SET n = n + 1 WHERE k = 1;
UPDATE m_h SET n = n + 1 WHERE k = 1;
SELECT k, n FROM m_t WHERE k = 1;
-- ... of every row, twice
UPDATE m_t SET n = n + 1;
UPDATE m_t SET n = n + 1;
UPDATE m_h SET n = n + 1;
UPDATE m_h SET n = n + 1;
SELECT * FROM m_check;
COMMIT;
SELECT k, n FROM m_t WHERE k = 1;
SELECT * FROM m_check;

-- INSERT ... SELECT from the table itself, in a transaction that wrote it:
-- the SELECT reads the transaction's rows as of the statement's start, not
-- the rows the statement itself inserts
BEGIN;
INSERT INTO m_t VALUES (90, 'ninety', 90);
INSERT INTO m_h VALUES (90, 'ninety', 90);
INSERT INTO m_t SELECT k + 1000, v || ' copied', n FROM m_t;
INSERT INTO m_h SELECT k + 1000, v || ' copied', n FROM m_h;
SELECT * FROM m_check;
-- ... and an UPDATE moving every key, including the ones just inserted
UPDATE m_t SET k = k + 100000;
UPDATE m_h SET k = k + 100000;
SELECT * FROM m_check;
COMMIT;
SELECT * FROM m_check;
SELECT min(k), max(k), count(*) FROM m_t;

-- a larger transaction: more rows than a write batch or a scan batch
-- (1000), updated, deleted and moved, read back between the steps
TRUNCATE m_t, m_h;
BEGIN;
INSERT INTO m_t SELECT g, 'row ' || g, g FROM generate_series(1, 3000) g;
INSERT INTO m_h SELECT g, 'row ' || g, g FROM generate_series(1, 3000) g;
UPDATE m_t SET n = n * 2 WHERE k % 3 = 0;
UPDATE m_h SET n = n * 2 WHERE k % 3 = 0;
DELETE FROM m_t WHERE k % 5 = 0;
DELETE FROM m_h WHERE k % 5 = 0;
SELECT * FROM m_check;
UPDATE m_t SET k = -k WHERE k % 7 = 0;
UPDATE m_h SET k = -k WHERE k % 7 = 0;
SELECT * FROM m_check;
SELECT count(*), sum(k), sum(n) FROM m_t WHERE k BETWEEN 1000 AND 2000;
SELECT count(*), sum(k), sum(n) FROM m_h WHERE k BETWEEN 1000 AND 2000;
COMMIT;
SELECT * FROM m_check;

-- a scan reads the writes of its own user's connection only: rows written
-- as another role (another connection to the tserver, as with two user
-- mappings) cannot be merged, so the read is refused rather than stale
CREATE ROLE regress_tcopy_modify;
GRANT SELECT, INSERT, UPDATE ON m_t TO regress_tcopy_modify;
BEGIN;
INSERT INTO m_t VALUES (5000, 'superuser', 0);
SET ROLE regress_tcopy_modify;
SELECT count(*) FROM m_t;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SET ROLE regress_tcopy_modify;
INSERT INTO m_t VALUES (5001, 'role', 0);
UPDATE m_t SET v = 'role updated' WHERE k = 5001;
SELECT * FROM m_t WHERE k > 4000;
RESET ROLE;
SELECT * FROM m_t WHERE k > 4000;
ROLLBACK;
DROP OWNED BY regress_tcopy_modify;
DROP ROLE regress_tcopy_modify;

-- ---- keys of other types ----
-- numeric: 1.0 and 1.00 are one key; setting it to the other spelling
-- moves the row onto its own key, which works and keeps the new spelling
CREATE FOREIGN TABLE m_num (k numeric NOT NULL, v text) SERVER ts OPTIONS (key 'k');
CREATE TABLE m_num_h (k numeric PRIMARY KEY, v text);
INSERT INTO m_num VALUES (1.0, 'one'), (2, 'two');
INSERT INTO m_num_h VALUES (1.0, 'one'), (2, 'two');
UPDATE m_num SET k = 1.00 WHERE k = 1;
UPDATE m_num_h SET k = 1.00 WHERE k = 1;
SELECT * FROM m_num ORDER BY k;
SELECT * FROM m_num_h ORDER BY k;
UPDATE m_num SET k = 2.0 WHERE k = 1;
UPDATE m_num_h SET k = 2.0 WHERE k = 1;
DELETE FROM m_num WHERE k = 2.000 RETURNING *;
DELETE FROM m_num_h WHERE k = 2.000 RETURNING *;
-- text, and a key of two columns, one of them moved
CREATE FOREIGN TABLE m_two (a text NOT NULL, b int NOT NULL, v text)
	SERVER ts OPTIONS (key 'a, b');
CREATE TABLE m_two_h (a text, b int, v text, PRIMARY KEY (a, b));
INSERT INTO m_two VALUES ('x', 1, 'x1'), ('x', 2, 'x2'), ('y', 1, 'y1');
INSERT INTO m_two_h VALUES ('x', 1, 'x1'), ('x', 2, 'x2'), ('y', 1, 'y1');
UPDATE m_two SET v = 'updated' WHERE a = 'x' AND b = 2;
UPDATE m_two_h SET v = 'updated' WHERE a = 'x' AND b = 2;
UPDATE m_two SET b = 3 WHERE a = 'y';
UPDATE m_two_h SET b = 3 WHERE a = 'y';
UPDATE m_two SET a = 'z' WHERE b = 1;
UPDATE m_two_h SET a = 'z' WHERE b = 1;
UPDATE m_two SET b = 2 WHERE a = 'z';
UPDATE m_two_h SET b = 2 WHERE a = 'z';
DELETE FROM m_two WHERE a = 'y';
DELETE FROM m_two_h WHERE a = 'y';
SELECT * FROM m_two ORDER BY a, b;
SELECT * FROM m_two_h ORDER BY a, b;

-- ---- on_conflict 'ignore': an inserted row of a stored key is dropped at
-- the commit, so the transaction reads the stored row, as a heap table's
-- INSERT ... ON CONFLICT DO NOTHING keeps it (the tcopy INSERT's tag counts
-- the rows it sent, not the ones the tserver will keep) ----
CREATE FOREIGN TABLE m_ig (k int NOT NULL, v text) SERVER ts
	OPTIONS (key 'k', on_conflict 'ignore');
CREATE TABLE m_ig_h (k int PRIMARY KEY, v text);
INSERT INTO m_ig VALUES (1, 'stored'), (2, 'stored'), (3, 'stored');
INSERT INTO m_ig_h VALUES (1, 'stored'), (2, 'stored'), (3, 'stored');
BEGIN;
INSERT INTO m_ig VALUES (1, 'duplicate'), (4, 'new'), (4, 'second new');
INSERT INTO m_ig_h VALUES (1, 'duplicate'), (4, 'new'), (4, 'second new') ON CONFLICT DO NOTHING;
SELECT * FROM m_ig ORDER BY k;
SELECT * FROM m_ig_h ORDER BY k;
-- an UPDATE replaces a row whatever on_conflict says; a deleted key can
-- be inserted again
UPDATE m_ig SET v = 'updated' WHERE k = 1;
UPDATE m_ig_h SET v = 'updated' WHERE k = 1;
DELETE FROM m_ig WHERE k = 2;
DELETE FROM m_ig_h WHERE k = 2;
INSERT INTO m_ig VALUES (2, 'inserted again');
INSERT INTO m_ig_h VALUES (2, 'inserted again') ON CONFLICT DO NOTHING;
-- an inserted duplicate of a stored key, then updated: the UPDATE reads the
-- stored row, and its row is what commits
INSERT INTO m_ig VALUES (3, 'duplicate');
INSERT INTO m_ig_h VALUES (3, 'duplicate') ON CONFLICT DO NOTHING;
UPDATE m_ig SET v = v || ', updated' WHERE k = 3;
UPDATE m_ig_h SET v = v || ', updated' WHERE k = 3;
SELECT * FROM m_ig ORDER BY k;
COMMIT;
SELECT * FROM m_ig ORDER BY k;
SELECT * FROM m_ig_h ORDER BY k;
-- after a TRUNCATE in the transaction nothing is stored: the first row of
-- a key stays
BEGIN;
TRUNCATE m_ig, m_ig_h;
INSERT INTO m_ig VALUES (1, 'first'), (1, 'second');
INSERT INTO m_ig_h VALUES (1, 'first'), (1, 'second') ON CONFLICT DO NOTHING;
SELECT * FROM m_ig;
COMMIT;
SELECT * FROM m_ig;
SELECT * FROM m_ig_h;
-- a row moved onto a stored key: the move's insert is what on_conflict
-- ignores, so the moved row is gone and the stored one stays (a heap
-- table has no such policy: its primary key fails the UPDATE)
INSERT INTO m_ig VALUES (2, 'stored');
UPDATE m_ig SET k = 2 WHERE k = 1;
SELECT * FROM m_ig ORDER BY k;

-- ---- on_conflict 'replace': a moved row replaces the row of its new key;
-- a heap table without a unique key shows what every row moving one key
-- up must leave ----
CREATE FOREIGN TABLE m_rep (k int NOT NULL, v text) SERVER ts
	OPTIONS (key 'k', on_conflict 'replace');
CREATE TABLE m_rep_h (k int, v text);
INSERT INTO m_rep SELECT g, 'v' || g FROM generate_series(1, 5) g;
INSERT INTO m_rep_h SELECT g, 'v' || g FROM generate_series(1, 5) g;
UPDATE m_rep SET k = 1 WHERE k = 5;
DELETE FROM m_rep_h WHERE k = 1;
UPDATE m_rep_h SET k = 1 WHERE k = 5;
SELECT * FROM m_rep ORDER BY k;
SELECT * FROM m_rep_h ORDER BY k;
-- every row moving one key up: row k's move deletes key k, which the row
-- below moved onto just before in the same statement; that delete must
-- take the old row of key k only, never the row moved there
UPDATE m_rep SET k = k + 1;
UPDATE m_rep_h SET k = k + 1;
SELECT * FROM m_rep ORDER BY k;
SELECT * FROM m_rep_h ORDER BY k;

\set QUIET on
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE m_h, m_num_h, m_two_h, m_ig_h, m_rep_h;
