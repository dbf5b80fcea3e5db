--
-- tcopy_routing: COPY into a partitioned table whose leaves are tcopy
-- tables is routed by tcopy's hook (copy_route.c) with Postgres' own tuple
-- routing.  Each case runs against a heap twin partitioned the same way (in
-- schema h; the tcopy tables in schema tc share the names) and must give
-- the same rows per partition and the same errors, with the same CONTEXT
-- line.  tcopy.create_hash_partitions spreads a table over servers.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE SERVER ts_b FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE USER MAPPING FOR PUBLIC SERVER ts_b;
CREATE SCHEMA h;
CREATE SCHEMA tc;

-- range, with a sub-partitioned partition (list) and a default partition
CREATE TABLE h.r (id int NOT NULL, v text, n numeric) PARTITION BY RANGE (id);
CREATE TABLE h.r1 PARTITION OF h.r FOR VALUES FROM (1) TO (100);
CREATE TABLE h.r2 PARTITION OF h.r FOR VALUES FROM (100) TO (200) PARTITION BY LIST (v);
CREATE TABLE h.r2a PARTITION OF h.r2 FOR VALUES IN ('a');
CREATE TABLE h.r2b PARTITION OF h.r2 FOR VALUES IN ('b', NULL);
CREATE TABLE h.rd PARTITION OF h.r DEFAULT;
CREATE TABLE tc.r (id int NOT NULL, v text, n numeric) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE tc.r1 PARTITION OF tc.r FOR VALUES FROM (1) TO (100) SERVER ts;
CREATE TABLE tc.r2 PARTITION OF tc.r FOR VALUES FROM (100) TO (200) PARTITION BY LIST (v);
CREATE FOREIGN TABLE tc.r2a PARTITION OF tc.r2 FOR VALUES IN ('a') SERVER ts_b;
CREATE FOREIGN TABLE tc.r2b PARTITION OF tc.r2 FOR VALUES IN ('b', NULL) SERVER ts;
CREATE FOREIGN TABLE tc.rd PARTITION OF tc.r DEFAULT SERVER ts_b;
CREATE VIEW r_rows AS
SELECT 'h' AS s, tableoid::regclass::text AS part, id, v, n FROM h.r
UNION ALL
SELECT 'tc', tableoid::regclass::text, id, v, n FROM tc.r
ORDER BY 3, 1;

SET search_path = h, public;
COPY r FROM STDIN;
1	x	1.5
150	a	2
150	b	\N
160	\N	3
500	far	4e3
-7	negative	0
\.
SET search_path = tc, public;
COPY r FROM STDIN;
1	x	1.5
150	a	2
150	b	\N
160	\N	3
500	far	4e3
-7	negative	0
\.
SELECT * FROM r_rows;

-- a column list, csv, a header, FORCE_NULL; and a WHERE clause
SET search_path = h, public;
COPY r (v, id) FROM STDIN (FORMAT csv, HEADER, FORCE_NULL (v));
v,id
"a",101
"",102
"b, quoted",2
\.
COPY r FROM STDIN WHERE id % 2 = 0;
110	a	1
111	a	1
\.
SET search_path = tc, public;
COPY r (v, id) FROM STDIN (FORMAT csv, HEADER, FORCE_NULL (v));
v,id
"a",101
"",102
"b, quoted",2
\.
COPY r FROM STDIN WHERE id % 2 = 0;
110	a	1
111	a	1
\.
SELECT * FROM r_rows WHERE id BETWEEN 2 AND 111;

-- errors: the same words, DETAIL and line; nothing of the COPY stays
TRUNCATE h.r;
TRUNCATE tc.r1, tc.r2a, tc.r2b, tc.rd;
SET search_path = h, public;
COPY r FROM STDIN;
1	x	1
150	c	1
\.
COPY r FROM STDIN;
1	x	1
2	y	not a number
\.
COPY r FROM STDIN;
1	x	1
\N	y	1
\.
SET search_path = tc, public;
COPY r FROM STDIN;
1	x	1
150	c	1
\.
COPY r FROM STDIN;
1	x	1
2	y	not a number
\.
COPY r FROM STDIN;
1	x	1
\N	y	1
\.
SELECT count(*) FROM r_rows;

-- an attached partition whose columns are in another order, with a dropped one
CREATE TABLE h.hp (a int NOT NULL, b text, c int) PARTITION BY HASH (a);
CREATE TABLE h.hp0 PARTITION OF h.hp FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE h.hp1 (c int, dropped int, b text, a int NOT NULL);
ALTER TABLE h.hp1 DROP COLUMN dropped;
ALTER TABLE h.hp ATTACH PARTITION h.hp1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE tc.hp (a int NOT NULL, b text, c int) PARTITION BY HASH (a);
CREATE FOREIGN TABLE tc.hp0 PARTITION OF tc.hp FOR VALUES WITH (MODULUS 2, REMAINDER 0)
	SERVER ts OPTIONS (key 'a');
CREATE FOREIGN TABLE tc.hp1 (c int, dropped int, b text, a int NOT NULL) SERVER ts_b OPTIONS (key 'a');
ALTER TABLE tc.hp1 DROP COLUMN dropped;
ALTER TABLE tc.hp ATTACH PARTITION tc.hp1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
COPY h.hp FROM STDIN;
1	one	10
2	two	20
3	three	30
4	four	40
\.
COPY tc.hp FROM STDIN;
1	one	10
2	two	20
3	three	30
4	four	40
\.
SELECT 'h' AS s, tableoid::regclass, * FROM h.hp
UNION ALL SELECT 'tc', tableoid::regclass, * FROM tc.hp ORDER BY 3, 1;
SELECT * FROM tc.hp1 ORDER BY a;
-- a key repeated: the partition's on_conflict, or COPY's
COPY tc.hp FROM STDIN;
3	again	0
\.
COPY tc.hp FROM STDIN (on_conflict 'replace');
3	again	0
\.
SELECT * FROM tc.hp WHERE a = 3;
-- load_id is per table
COPY tc.hp FROM STDIN (load_id 'l1');
\.

-- what the hook leaves to Postgres' COPY, which routes through the FDW:
-- a heap partition among tcopy ones, a trigger
CREATE TABLE tc.mixed (a int, b text) PARTITION BY LIST (a);
CREATE FOREIGN TABLE tc.mixed1 PARTITION OF tc.mixed FOR VALUES IN (1) SERVER ts;
CREATE TABLE tc.mixed2 PARTITION OF tc.mixed FOR VALUES IN (2);
COPY tc.mixed FROM STDIN;
1	foreign
2	heap
\.
SELECT tableoid::regclass, * FROM tc.mixed ORDER BY a;
CREATE FUNCTION tc.upper_b() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN NEW.b := upper(NEW.b); RETURN NEW; END$$;
CREATE TRIGGER upper_b BEFORE INSERT ON tc.hp FOR EACH ROW EXECUTE FUNCTION tc.upper_b();
COPY tc.hp FROM STDIN;
5	five	50
\.
SELECT * FROM tc.hp WHERE a = 5;
DROP TRIGGER upper_b ON tc.hp;

-- create_hash_partitions: N partitions over the servers, round-robin
CREATE TABLE tc.acc (aid int NOT NULL, bid int, abalance int) PARTITION BY HASH (aid);
SELECT tcopy.create_hash_partitions('tc.acc', ARRAY['ts', 'ts_b'], 3, '{key=aid}');
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound, s.srvname, ft.ftoptions[1]
FROM pg_class c JOIN pg_foreign_table ft ON ft.ftrelid = c.oid
JOIN pg_foreign_server s ON s.oid = ft.ftserver
WHERE c.relname LIKE 'acc\_%' ORDER BY 1;
CREATE TABLE h.acc (aid int NOT NULL, bid int, abalance int) PARTITION BY HASH (aid);
CREATE TABLE h.acc_0 PARTITION OF h.acc FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE h.acc_1 PARTITION OF h.acc FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE h.acc_2 PARTITION OF h.acc FOR VALUES WITH (MODULUS 3, REMAINDER 2);
COPY h.acc (aid) FROM PROGRAM 'seq 1 3000';
COPY tc.acc (aid) FROM PROGRAM 'seq 1 3000';
SELECT tableoid::regclass, count(*), sum(aid) FROM h.acc GROUP BY 1
UNION ALL SELECT tableoid::regclass, count(*), sum(aid) FROM tc.acc GROUP BY 1 ORDER BY 1;
-- scans prune partitions, and push the key down to the one left
CREATE FUNCTION tc.plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		IF line NOT LIKE '%Remote Table:%' THEN RETURN NEXT line; END IF;
	END LOOP;
END $$;
SELECT tc.plan('SELECT * FROM tc.acc WHERE aid = 42');
SELECT tc.plan('SELECT * FROM tc.r WHERE id BETWEEN 120 AND 130 AND v = ''a''');
SELECT * FROM tc.acc WHERE aid = 42;
-- DETACH: the parent no longer has its rows, nor takes them; ATTACH: back
ALTER TABLE tc.acc DETACH PARTITION tc.acc_1;
SELECT count(*) FROM tc.acc;
SELECT count(*) FROM tc.acc_1;
COPY tc.acc (aid) FROM PROGRAM 'seq 3001 3010';
ALTER TABLE tc.acc ATTACH PARTITION tc.acc_1 FOR VALUES WITH (MODULUS 3, REMAINDER 1);
COPY tc.acc (aid) FROM PROGRAM 'seq 3001 3010';
SELECT count(*), sum(aid) FROM tc.acc;
-- what it refuses
SELECT tcopy.create_hash_partitions('tc.acc', ARRAY['ts']);
SELECT tcopy.create_hash_partitions('tc.r', ARRAY['ts']);
CREATE TABLE tc.acc2 (aid int) PARTITION BY HASH (aid);
SELECT tcopy.create_hash_partitions('tc.acc2', ARRAY['ts', 'nosuch']);
SELECT tcopy.create_hash_partitions('tc.acc2', ARRAY[]::name[]);
SELECT tcopy.create_hash_partitions('tc.acc2', ARRAY['ts'], 0);
SELECT tcopy.create_hash_partitions('tc.acc2', ARRAY['ts'], 2, '{key}');
SELECT count(*) FROM pg_inherits WHERE inhparent = 'tc.acc2'::regclass;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA h, tc CASCADE;
DROP EXTENSION tcopy CASCADE;
