--
-- tcopy_partition_move: an UPDATE whose new row leaves its partition
-- moves the row, as Postgres moves a heap partition's (delete from the old
-- partition, insert routed from the root, in the same statement and
-- transaction): tcopy to tcopy, tcopy to heap and heap to tcopy, under
-- hash, range and list partitioning, each beside a heap twin, so that a
-- query that prunes finds the row where it went.  An UPDATE of the
-- partition itself fails with Postgres' partition constraint error, and a
-- row no partition takes with Postgres' routing error.  DELETE and UPDATE
-- over several tcopy children (partitions, inheritance) work.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE SCHEMA h;
CREATE SCHEMA tc;

-- ---- hash: every partition tcopy ----
CREATE TABLE h.acc (aid int NOT NULL, bal int, note text) PARTITION BY HASH (aid);
CREATE TABLE tc.acc (aid int NOT NULL, bal int, note text) PARTITION BY HASH (aid);
DO $$
BEGIN
	FOR i IN 0..3 LOOP
		EXECUTE format('CREATE TABLE h.acc_%s PARTITION OF h.acc FOR VALUES WITH (MODULUS 4, REMAINDER %s)', i, i);
		EXECUTE format('CREATE FOREIGN TABLE tc.acc_%s PARTITION OF tc.acc FOR VALUES WITH (MODULUS 4, REMAINDER %s) '
					   'SERVER ts OPTIONS (key ''aid'', table_name ''tcopy_partition_move.acc_%s'')', i, i, i);
		EXECUTE format('TRUNCATE tc.acc_%s', i);
	END LOOP;
END $$;
INSERT INTO h.acc SELECT g, g * 10, 'n' || g FROM generate_series(1, 40) g;
INSERT INTO tc.acc SELECT g, g * 10, 'n' || g FROM generate_series(1, 40) g;
CREATE VIEW acc_rows AS
SELECT 'h' AS s, right(tableoid::regclass::text, 5) AS part, * FROM h.acc
UNION ALL
SELECT 'tc', right(tableoid::regclass::text, 5), * FROM tc.acc
ORDER BY 3, 1;

-- one row to a key of another partition: found by a query that prunes
UPDATE h.acc SET aid = 2000000 WHERE aid = 20;
UPDATE tc.acc SET aid = 2000000 WHERE aid = 20;
SELECT * FROM acc_rows WHERE aid IN (20, 2000000);
SELECT aid, bal FROM tc.acc WHERE aid = 2000000;
EXPLAIN (COSTS OFF) SELECT aid FROM tc.acc WHERE aid = 2000000;
SELECT count(*) FROM tc.acc WHERE aid + 0 = 20;

-- many rows, with RETURNING; each key once, where pruning finds it
WITH u AS (UPDATE h.acc SET aid = aid + 1000 WHERE aid <= 10 RETURNING aid, bal)
SELECT * FROM u ORDER BY aid;
WITH u AS (UPDATE tc.acc SET aid = aid + 1000 WHERE aid <= 10 RETURNING aid, bal)
SELECT * FROM u ORDER BY aid;
SELECT s, count(*), sum(aid), sum(bal) FROM acc_rows GROUP BY s ORDER BY s;
SELECT a.aid FROM tc.acc a WHERE (SELECT count(*) FROM tc.acc b WHERE b.aid = a.aid) <> 1;
SELECT count(*) FROM (SELECT part, aid FROM acc_rows WHERE s = 'h'
					  EXCEPT SELECT part, aid FROM acc_rows WHERE s = 'tc') d;

-- rolled back: nothing moved
BEGIN;
UPDATE tc.acc SET aid = aid + 500 WHERE aid BETWEEN 21 AND 30;
SELECT count(*) FROM tc.acc WHERE aid BETWEEN 521 AND 530;
ROLLBACK;
SELECT count(*) FROM tc.acc WHERE aid BETWEEN 21 AND 30;
SELECT count(*) FROM tc.acc WHERE aid BETWEEN 521 AND 530;

-- a move onto a key that holds a row: the duplicate, as a primary key's
UPDATE tc.acc SET aid = 31 WHERE aid = 32;
SELECT aid, bal FROM tc.acc WHERE aid IN (31, 32) ORDER BY aid;

-- an UPDATE of the partition itself: Postgres' partition constraint error
\set VERBOSITY default
SELECT right(tableoid::regclass::text, 5) AS part FROM tc.acc WHERE aid = 33 \gset
UPDATE tc.:part SET aid = 1 WHERE aid = 33;
UPDATE h.:part SET aid = 1 WHERE aid = 33;

-- DELETE and UPDATE over every partition, each done whole by its tserver
EXPLAIN (COSTS OFF) UPDATE tc.acc SET bal = bal + 1 WHERE aid > 1003;
DELETE FROM tc.acc WHERE aid BETWEEN 35 AND 1003;
DELETE FROM h.acc WHERE aid BETWEEN 35 AND 1003;
UPDATE tc.acc SET bal = bal + 1 WHERE aid > 1003;
UPDATE h.acc SET bal = bal + 1 WHERE aid > 1003;
SELECT s, count(*), sum(aid), sum(bal) FROM acc_rows GROUP BY s ORDER BY s;

-- ---- range: tcopy, heap and tcopy partitions, beside an all-heap twin ----
CREATE TABLE h.r (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE TABLE h.r1 PARTITION OF h.r FOR VALUES FROM (0) TO (100);
CREATE TABLE h.r2 PARTITION OF h.r FOR VALUES FROM (100) TO (200);
CREATE TABLE h.r3 PARTITION OF h.r FOR VALUES FROM (200) TO (300);
CREATE TABLE tc.r (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE tc.r1 PARTITION OF tc.r FOR VALUES FROM (0) TO (100)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.r1');
CREATE TABLE tc.r2 PARTITION OF tc.r FOR VALUES FROM (100) TO (200);
CREATE UNIQUE INDEX ON tc.r2 (id);
CREATE FOREIGN TABLE tc.r3 PARTITION OF tc.r FOR VALUES FROM (200) TO (300)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.r3');
TRUNCATE tc.r1, tc.r3;
INSERT INTO h.r SELECT g, 'v' || g FROM generate_series(0, 299, 3) g;
INSERT INTO tc.r SELECT g, 'v' || g FROM generate_series(0, 299, 3) g;
CREATE VIEW r_rows AS
SELECT 'h' AS s, right(tableoid::regclass::text, 2) AS part, * FROM h.r
UNION ALL
SELECT 'tc', right(tableoid::regclass::text, 2), * FROM tc.r
ORDER BY 3, 1;

-- tcopy to heap and heap to tcopy in one statement; tcopy to tcopy
UPDATE h.r SET id = id + 100 WHERE v IN ('v3', 'v150');
UPDATE tc.r SET id = id + 100 WHERE v IN ('v3', 'v150');
UPDATE h.r SET id = id + 200 WHERE v = 'v6';
UPDATE tc.r SET id = id + 200 WHERE v = 'v6';
SELECT * FROM r_rows WHERE v IN ('v3', 'v6', 'v150');
-- back
WITH u AS (UPDATE h.r SET id = id - 100 WHERE v IN ('v3', 'v150') RETURNING *)
SELECT * FROM u ORDER BY id;
WITH u AS (UPDATE tc.r SET id = id - 100 WHERE v IN ('v3', 'v150') RETURNING *)
SELECT * FROM u ORDER BY id;
UPDATE h.r SET id = id - 200 WHERE v = 'v6';
UPDATE tc.r SET id = id - 200 WHERE v = 'v6';
SELECT * FROM r_rows WHERE v IN ('v3', 'v6', 'v150');
-- no partition takes the row: Postgres' routing error, nothing changed
UPDATE tc.r SET id = id + 100 WHERE v = 'v0' OR v = 'v297';
UPDATE h.r SET id = id + 100 WHERE v = 'v0' OR v = 'v297';
SELECT * FROM r_rows WHERE v IN ('v0', 'v297');
-- into the heap partition onto an indexed key that holds a row
UPDATE tc.r SET id = 102 WHERE id = 3;
-- over every partition: DELETE, UPDATE
DELETE FROM h.r WHERE id BETWEEN 95 AND 105 OR id > 290;
DELETE FROM tc.r WHERE id BETWEEN 95 AND 105 OR id > 290;
UPDATE h.r SET v = v || '!' WHERE id BETWEEN 90 AND 210;
UPDATE tc.r SET v = v || '!' WHERE id BETWEEN 90 AND 210;
SELECT count(*) FROM (SELECT part, id, v FROM r_rows WHERE s = 'h'
					  EXCEPT SELECT part, id, v FROM r_rows WHERE s = 'tc') d;
SELECT s, count(*), sum(id), count(*) FILTER (WHERE v LIKE '%!') FROM r_rows GROUP BY s ORDER BY s;

-- ---- list on a column that is not the key: never a direct modify ----
CREATE TABLE h.l (id int NOT NULL, region text NOT NULL, v int) PARTITION BY LIST (region);
CREATE TABLE h.l_eu PARTITION OF h.l FOR VALUES IN ('eu');
CREATE TABLE h.l_us PARTITION OF h.l FOR VALUES IN ('us');
CREATE TABLE tc.l (id int NOT NULL, region text NOT NULL, v int) PARTITION BY LIST (region);
CREATE FOREIGN TABLE tc.l_eu PARTITION OF tc.l FOR VALUES IN ('eu')
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.l_eu');
CREATE FOREIGN TABLE tc.l_us PARTITION OF tc.l FOR VALUES IN ('us')
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.l_us');
TRUNCATE tc.l_eu, tc.l_us;
INSERT INTO h.l SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, g FROM generate_series(1, 20) g;
INSERT INTO tc.l SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, g FROM generate_series(1, 20) g;
EXPLAIN (COSTS OFF) UPDATE tc.l_eu SET region = 'us' WHERE id = 2;
EXPLAIN (COSTS OFF) UPDATE tc.l_eu SET v = 0 WHERE id = 2;
UPDATE tc.l_eu SET region = 'us' WHERE id = 2;
UPDATE h.l SET region = 'us' WHERE id <= 6;
UPDATE tc.l SET region = 'us' WHERE id <= 6;
SELECT 'h' AS s, tableoid::regclass, count(*) FROM h.l GROUP BY 2
UNION ALL
SELECT 'tc', tableoid::regclass, count(*) FROM tc.l GROUP BY 2 ORDER BY 1, 2;
SELECT id, region FROM tc.l WHERE region = 'us' AND id <= 6 ORDER BY id;

-- ---- inheritance: DELETE and UPDATE over tcopy children ----
CREATE TABLE tc.base (id int, v text);
CREATE FOREIGN TABLE tc.kid1 () INHERITS (tc.base)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.kid1');
CREATE FOREIGN TABLE tc.kid2 () INHERITS (tc.base)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition_move.kid2');
TRUNCATE tc.kid1, tc.kid2;
INSERT INTO tc.base VALUES (1, 'base');
INSERT INTO tc.kid1 SELECT g, 'k1' FROM generate_series(1, 5) g;
INSERT INTO tc.kid2 SELECT g, 'k2' FROM generate_series(1, 5) g;
DELETE FROM tc.base WHERE id BETWEEN 2 AND 3;
UPDATE tc.base SET v = v || '+' WHERE id >= 4;
SELECT tableoid::regclass, id, v FROM tc.base ORDER BY 1, 2;

DROP SCHEMA h CASCADE;
DROP SCHEMA tc CASCADE;
DROP EXTENSION tcopy CASCADE;
