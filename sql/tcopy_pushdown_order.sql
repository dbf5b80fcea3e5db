--
-- tcopy_pushdown_order: ORDER BY a prefix of an integer key, ascending or
-- descending, needs no sort (the tserver returns rows in key order, or
-- reads the range backward), and LIMIT stops the tserver
-- (Remote Limit) when the scan's rows are the query's rows.  Results are
-- checked against a heap twin.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE FOREIGN TABLE po (a int, b bigint, v text) SERVER ts OPTIONS (key 'a,b', table_name 'po');
CREATE TABLE po_heap (a int, b bigint, v text, PRIMARY KEY (a, b));
INSERT INTO po SELECT i % 50 - 25, i, 'v' || i FROM generate_series(1, 2000) i;
INSERT INTO po_heap SELECT * FROM po;
CREATE FOREIGN TABLE po_text (k text, v int) SERVER ts OPTIONS (key 'k', table_name 'po_text');
INSERT INTO po_text SELECT 'k' || i, i FROM generate_series(1, 20) i;
ANALYZE po, po_text;

-- the key's order: no Sort, and a LIMIT pushed
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY a, b LIMIT 5;
SELECT * FROM po ORDER BY a, b LIMIT 5;
SELECT * FROM po_heap ORDER BY a, b LIMIT 5;
EXPLAIN (COSTS OFF) SELECT a FROM po ORDER BY a LIMIT 3;
-- past the whole key the order still holds: the key is unique
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY a, b, v LIMIT 2;
-- the whole result, in order, equals the heap's
SELECT count(*) FROM (SELECT row_number() OVER () AS n, a, b FROM (SELECT a, b FROM po ORDER BY a, b) s) t
JOIN (SELECT row_number() OVER () AS n, a, b FROM (SELECT a, b FROM po_heap ORDER BY a, b) s) h USING (n)
WHERE t.a = h.a AND t.b = h.b;

-- the key's order backward: no Sort, the range read backward
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY a DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY a DESC, b DESC LIMIT 5;
SELECT * FROM po ORDER BY a DESC, b DESC LIMIT 5;
SELECT * FROM po_heap ORDER BY a DESC, b DESC LIMIT 5;
-- NULLS LAST alike: no key is NULL
EXPLAIN (COSTS OFF) SELECT a, b FROM po ORDER BY a DESC NULLS LAST LIMIT 2;
SELECT count(*) FROM (SELECT row_number() OVER () AS n, a, b FROM (SELECT a, b FROM po ORDER BY a DESC, b DESC) s) t
JOIN (SELECT row_number() OVER () AS n, a, b FROM (SELECT a, b FROM po_heap ORDER BY a DESC, b DESC) s) h USING (n)
WHERE t.a = h.a AND t.b = h.b;
-- within a key range, from its upper end
EXPLAIN (COSTS OFF) SELECT a, b FROM po WHERE a < 0 ORDER BY a DESC, b DESC LIMIT 3;
SELECT a, b FROM po WHERE a < 0 ORDER BY a DESC, b DESC LIMIT 3;
SELECT a, b FROM po_heap WHERE a < 0 ORDER BY a DESC, b DESC LIMIT 3;
SELECT a, b FROM po WHERE a BETWEEN -3 AND 3 AND b > 1900 ORDER BY a DESC, b DESC;
SELECT a, b FROM po_heap WHERE a BETWEEN -3 AND 3 AND b > 1900 ORDER BY a DESC, b DESC;
SELECT a, b FROM po WHERE a = 7 ORDER BY a DESC, b DESC LIMIT 2;
SELECT a, b FROM po_heap WHERE a = 7 ORDER BY a DESC, b DESC LIMIT 2;
-- max() is planned as ORDER BY ... DESC LIMIT 1
EXPLAIN (COSTS OFF) SELECT max(a) FROM po;
SELECT max(a), min(a) FROM po;
-- the transaction's own writes, read backward with the stored rows:
-- rows above, between and below them, and rows it deleted
BEGIN;
INSERT INTO po VALUES (30, 1, 'top'), (24, 1990, 'between'), (-30, 5, 'bottom');
DELETE FROM po WHERE a = 24 AND b > 1995;
UPDATE po SET v = 'updated' WHERE a = 24 AND b = 1949;
SELECT a, b, v FROM po ORDER BY a DESC, b DESC LIMIT 6;
SELECT a, b, v FROM po WHERE a < -24 ORDER BY a DESC, b DESC LIMIT 3;
SELECT a, b, v FROM po WHERE a <= -25 AND b < 120 ORDER BY a DESC, b DESC;
SELECT a, b, v FROM po ORDER BY a, b LIMIT 2;
ROLLBACK;
BEGIN;
INSERT INTO po_heap VALUES (30, 1, 'top'), (24, 1990, 'between'), (-30, 5, 'bottom');
DELETE FROM po_heap WHERE a = 24 AND b > 1995;
UPDATE po_heap SET v = 'updated' WHERE a = 24 AND b = 1949;
SELECT a, b, v FROM po_heap ORDER BY a DESC, b DESC LIMIT 6;
SELECT a, b, v FROM po_heap WHERE a < -24 ORDER BY a DESC, b DESC LIMIT 3;
SELECT a, b, v FROM po_heap WHERE a <= -25 AND b < 120 ORDER BY a DESC, b DESC;
ROLLBACK;
-- a cursor, backward
BEGIN;
DECLARE cd CURSOR FOR SELECT a, b FROM po ORDER BY a DESC, b DESC;
FETCH 2 FROM cd;
FETCH 2 FROM cd;
COMMIT;

-- not the key's order: sorted by Postgres, no limit at the tserver
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY a DESC, b LIMIT 5;
SELECT * FROM po ORDER BY a DESC, b LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM po ORDER BY b LIMIT 5;
SELECT * FROM po ORDER BY b LIMIT 5;
-- a text key is stored in byte order, not the collation's: sorted
EXPLAIN (COSTS OFF) SELECT * FROM po_text ORDER BY k LIMIT 3;
SELECT * FROM po_text ORDER BY k LIMIT 3;

-- LIMIT without ORDER BY, with OFFSET: the tserver stops at their sum
EXPLAIN (COSTS OFF) SELECT * FROM po LIMIT 4 OFFSET 3;
SELECT count(*) FROM (SELECT * FROM po LIMIT 4 OFFSET 3) s;
-- a qual Postgres evaluates, or an aggregate, a join, DISTINCT, a
-- set-returning function: no limit at the tserver
EXPLAIN (COSTS OFF) SELECT * FROM po WHERE v::text ~ '7' LIMIT 3;
SELECT count(*) FROM (SELECT * FROM po WHERE v ~ '7$' LIMIT 30) s;
EXPLAIN (COSTS OFF) SELECT DISTINCT a FROM po LIMIT 3;
EXPLAIN (COSTS OFF) SELECT generate_series(1, 2), a FROM po LIMIT 3;
SELECT count(*) FROM (SELECT generate_series(1, 0), a FROM po LIMIT 3) s;
EXPLAIN (COSTS OFF) SELECT * FROM po p JOIN po_text t ON p.a = t.v LIMIT 3;
-- a LIMIT in a subquery, a cursor, a prepared statement
SELECT count(*), min(a) FROM (SELECT a FROM po ORDER BY a, b LIMIT 100) s;
BEGIN;
DECLARE c CURSOR FOR SELECT a, b FROM po ORDER BY a, b LIMIT 3;
FETCH 2 FROM c;
FETCH 2 FROM c;
COMMIT;
PREPARE p(int) AS SELECT a, b FROM po ORDER BY a, b LIMIT $1;
EXECUTE p(2);
EXECUTE p(0);
-- a partitioned table: each partition stops at the limit, merged in order
CREATE TABLE pp (a int, b bigint, v text) PARTITION BY RANGE (a);
CREATE FOREIGN TABLE pp1 PARTITION OF pp FOR VALUES FROM (-100) TO (0) SERVER ts OPTIONS (key 'a,b', table_name 'pp1');
CREATE FOREIGN TABLE pp2 PARTITION OF pp FOR VALUES FROM (0) TO (100) SERVER ts OPTIONS (key 'a,b', table_name 'pp2');
INSERT INTO pp SELECT * FROM po;
EXPLAIN (COSTS OFF) SELECT * FROM pp ORDER BY a, b LIMIT 3;
SELECT * FROM pp ORDER BY a, b LIMIT 3;
SELECT * FROM pp WHERE a >= 0 ORDER BY a, b LIMIT 3;
EXPLAIN (COSTS OFF) SELECT * FROM pp ORDER BY a DESC, b DESC LIMIT 3;
SELECT * FROM pp ORDER BY a DESC, b DESC LIMIT 3;
SELECT * FROM pp WHERE a < 0 ORDER BY a DESC, b DESC LIMIT 3;

DROP EXTENSION tcopy CASCADE;
DROP TABLE po_heap;
