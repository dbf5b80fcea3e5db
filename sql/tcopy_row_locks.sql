--
-- tcopy_row_locks: SELECT ... FOR UPDATE and the other strengths of a tcopy
-- table lock rows in Postgres' lock manager (row_locks.c,
-- fdw_row_marks.c), beside heap twins: the rows returned are the heap's,
-- with keys of text, numeric and several columns, after the transaction's
-- own writes, in joins and partitions; pg_locks shows the locks, a table
-- without a key is locked whole, and a scan that locked 256 rows one by
-- one locks the table's rows instead.  The waits, NOWAIT, SKIP LOCKED,
-- lock_timeout and deadlocks are in test/isolation/specs (row_locks.spec
-- and Postgres' own specs).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE SCHEMA h;
CREATE SCHEMA tc;

-- a key of text and numeric: the key of a locked row is read back by its image
CREATE TABLE h.m (a text, b numeric, v int, PRIMARY KEY (a, b));
CREATE FOREIGN TABLE tc.m (a text NOT NULL, b numeric NOT NULL, v int)
	SERVER ts OPTIONS (key 'a, b', table_name 'tcopy_row_locks.m');
TRUNCATE tc.m;
INSERT INTO h.m VALUES ('x', 1.0, 1), ('x', 2.50, 2), ('y', 1, 3);
INSERT INTO tc.m VALUES ('x', 1.0, 1), ('x', 2.50, 2), ('y', 1, 3);

CREATE VIEW row_locks AS
SELECT mode, CASE objsubid WHEN 29795 THEN 'key' WHEN 29796 THEN 'rows' END AS tag,
	count(*)
FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND objsubid IN (29795, 29796)
GROUP BY 1, 2 ORDER BY 1, 2;

BEGIN;
SELECT * FROM h.m WHERE a = 'x' ORDER BY b FOR UPDATE;
SELECT * FROM tc.m WHERE a = 'x' ORDER BY b FOR UPDATE;
-- a key lock a row, and the table's rows tag shared by the lockers of keys
SELECT * FROM row_locks;
SELECT * FROM tc.m WHERE b = 1 ORDER BY a FOR KEY SHARE;
SELECT * FROM row_locks;
COMMIT;
SELECT * FROM row_locks;

-- the transaction's own writes are what it locks
BEGIN;
UPDATE h.m SET v = v + 10 WHERE a = 'y';
UPDATE tc.m SET v = v + 10 WHERE a = 'y';
INSERT INTO h.m VALUES ('z', 0, 0);
INSERT INTO tc.m VALUES ('z', 0, 0);
SELECT * FROM h.m ORDER BY a, b FOR SHARE;
SELECT * FROM tc.m ORDER BY a, b FOR SHARE;
ROLLBACK;

-- FOR UPDATE OF one table of a join: the other is not locked
CREATE TABLE h.d (a text PRIMARY KEY, note text);
INSERT INTO h.d VALUES ('x', 'ex'), ('y', 'why');
BEGIN;
SELECT m.a, m.b, d.note FROM tc.m JOIN h.d USING (a) ORDER BY 1, 2 FOR UPDATE OF m;
SELECT * FROM row_locks;
ROLLBACK;
BEGIN;
SELECT d.a, d.note, count(*) FROM h.d JOIN tc.m USING (a) GROUP BY 1, 2 ORDER BY 1;
SELECT d.a, m.v FROM h.d JOIN tc.m USING (a) ORDER BY 1, 2 FOR UPDATE OF d;
SELECT * FROM row_locks;
ROLLBACK;

-- EXPLAIN: LockRows over the scan, which fetches the ctid LockRows hands back
EXPLAIN (COSTS OFF) SELECT v FROM tc.m WHERE a = 'x' FOR UPDATE;

-- a table partitioned over tcopy partitions
CREATE TABLE h.p (k int PRIMARY KEY, v text) PARTITION BY RANGE (k);
CREATE TABLE h.p1 PARTITION OF h.p FOR VALUES FROM (0) TO (10);
CREATE TABLE h.p2 PARTITION OF h.p FOR VALUES FROM (10) TO (20);
CREATE TABLE tc.p (k int NOT NULL, v text) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE tc.p1 PARTITION OF tc.p FOR VALUES FROM (0) TO (10)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_row_locks.p1');
CREATE FOREIGN TABLE tc.p2 PARTITION OF tc.p FOR VALUES FROM (10) TO (20)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_row_locks.p2');
TRUNCATE tc.p;
INSERT INTO h.p SELECT k, 'v' || k FROM generate_series(1, 19) k;
INSERT INTO tc.p SELECT k, 'v' || k FROM generate_series(1, 19) k;
BEGIN;
SELECT * FROM h.p WHERE k % 4 = 1 ORDER BY k FOR NO KEY UPDATE;
SELECT * FROM tc.p WHERE k % 4 = 1 ORDER BY k FOR NO KEY UPDATE;
SELECT * FROM row_locks;
COMMIT;

-- a table without a key: its rows are locked whole
CREATE FOREIGN TABLE tc.nokey (v int) SERVER ts OPTIONS (table_name 'tcopy_row_locks.nokey');
TRUNCATE tc.nokey;
INSERT INTO tc.nokey VALUES (1), (2);
BEGIN;
SELECT * FROM tc.nokey ORDER BY v FOR SHARE;
SELECT * FROM row_locks;
SELECT * FROM tc.nokey ORDER BY v FOR UPDATE;
SELECT * FROM row_locks;
COMMIT;

-- 300 rows locked: 256 keys, then the table's rows in ExclusiveLock
CREATE FOREIGN TABLE tc.many (k int NOT NULL, v int) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_row_locks.many');
TRUNCATE tc.many;
INSERT INTO tc.many SELECT k, k FROM generate_series(1, 300) k;
BEGIN;
SELECT count(*), sum(v) FROM (SELECT v FROM tc.many FOR UPDATE) s;
SELECT * FROM row_locks;
COMMIT;

-- a dropped column: the row read again after the lock is the row the
-- scan read, under REPEATABLE READ too; an upsert reads it the same way
CREATE TABLE h.dc (k int PRIMARY KEY, gone int, v int);
CREATE FOREIGN TABLE tc.dc (k int NOT NULL, gone int, v int) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_row_locks.dc');
TRUNCATE tc.dc;
INSERT INTO h.dc VALUES (1, 0, 10), (2, 0, 20);
INSERT INTO tc.dc VALUES (1, 0, 10), (2, 0, 20);
ALTER TABLE h.dc DROP COLUMN gone;
ALTER FOREIGN TABLE tc.dc DROP COLUMN gone;
INSERT INTO h.dc VALUES (3, 30);
INSERT INTO tc.dc VALUES (3, 30);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM h.dc ORDER BY k FOR UPDATE;
SELECT * FROM tc.dc ORDER BY k FOR UPDATE;
INSERT INTO h.dc VALUES (2, 5), (4, 40) ON CONFLICT (k) DO UPDATE SET v = dc.v + EXCLUDED.v RETURNING *;
INSERT INTO tc.dc VALUES (2, 5), (4, 40) ON CONFLICT (k) DO UPDATE SET v = dc.v + EXCLUDED.v RETURNING *;
COMMIT;

-- REPEATABLE READ FOR UPDATE of rows with short text (decoded in place:
-- the row read again must compare equal) and of a 2 MB value (a row over
-- a scan batch's bytes, read again after its batch is gone)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM tc.m ORDER BY a, b FOR UPDATE;
COMMIT;
INSERT INTO h.m VALUES ('big', 1, 1);
INSERT INTO tc.m VALUES ('big', 1, 1);
ALTER TABLE h.m ADD COLUMN t text;
ALTER FOREIGN TABLE tc.m ADD COLUMN t text;
UPDATE h.m SET t = repeat('x', 2000000) WHERE a = 'big';
UPDATE tc.m SET t = repeat('x', 2000000) WHERE a = 'big';
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT a, b, length(t) FROM h.m WHERE a = 'big' FOR UPDATE;
SELECT a, b, length(t) FROM tc.m WHERE a = 'big' FOR UPDATE;
COMMIT;
INSERT INTO h.m VALUES ('big', 1, 5, 'y') ON CONFLICT (a, b) DO UPDATE SET v = length(m.t) RETURNING a, v, length(t);
INSERT INTO tc.m VALUES ('big', 1, 5, 'y') ON CONFLICT (a, b) DO UPDATE SET v = length(m.t) RETURNING a, v, length(t);
SELECT a, v, length(t) FROM tc.m WHERE a = 'big';

-- 300 keys updated one statement at a time: 256 key locks, then the
-- table's rows in ExclusiveLock, not one lock a row
BEGIN;
DO $$ BEGIN FOR i IN 1..300 LOOP UPDATE tc.many SET v = v + 1 WHERE k = i; END LOOP; END $$;
SELECT * FROM row_locks;
COMMIT;
SELECT count(*), sum(v) FROM tc.many;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP VIEW IF EXISTS row_locks;
DROP SCHEMA h, tc CASCADE;
RESET client_min_messages;
