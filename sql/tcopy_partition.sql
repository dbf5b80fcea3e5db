--
-- tcopy_partition: a COPY straight into a partition checks each row
-- against the partition constraint, as Postgres' CopyFrom does for any
-- partition it is not routing to through the parent: a row outside the
-- partition fails exactly as it does for a heap partition (same ERROR,
-- SQLSTATE, DETAIL following column privileges, and CONTEXT: h.p1 and
-- tc.p1 share the name "p1"), with the COPY hook and without it, and
-- leaves nothing of the COPY behind.  Routed through the parent, rows go
-- where they belong.  An INSERT straight into a foreign partition is not
-- checked, by Postgres (ExecInsert checks local partitions only) nor by
-- tcopy.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE SCHEMA h;
CREATE SCHEMA tc;
CREATE TABLE h.parent (id int NOT NULL, v text, secret text) PARTITION BY RANGE (id);
CREATE TABLE h.p1 PARTITION OF h.parent FOR VALUES FROM (1) TO (100);
CREATE TABLE h.p2 PARTITION OF h.parent FOR VALUES FROM (100) TO (200);
CREATE TABLE tc.parent (id int NOT NULL, v text, secret text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE tc.p1 PARTITION OF tc.parent FOR VALUES FROM (1) TO (100)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition.p1');
CREATE FOREIGN TABLE tc.p2 PARTITION OF tc.parent FOR VALUES FROM (100) TO (200)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition.p2');
TRUNCATE tc.p1, tc.p2;
CREATE VIEW part_rows AS
SELECT 'h' AS s, tableoid::regclass::text AS part, id, v FROM h.parent
UNION ALL
SELECT 'tc', tableoid::regclass::text, id, v FROM tc.parent
ORDER BY 1, 3;

-- a row of p2 copied into p1: the second line fails
SET search_path = h, public;
COPY p1 (id, v) FROM STDIN;
1	one
150	not of p1
\.
SET search_path = tc, public;
COPY p1 (id, v) FROM STDIN;
1	one
150	not of p1
\.
SET tcopy.copy_hook = off;
COPY p1 (id, v) FROM STDIN;
1	one
150	not of p1
\.
RESET tcopy.copy_hook;
SELECT * FROM part_rows;

-- the SQLSTATE: check_violation
\set VERBOSITY sqlstate
SET search_path = h, public;
COPY p1 (id, v) FROM STDIN;
150	not of p1
\.
SET search_path = tc, public;
COPY p1 (id, v) FROM STDIN;
150	not of p1
\.
\set VERBOSITY default

-- CSV, a column list in another order
SET search_path = h, public;
COPY p1 (v, id) FROM STDIN (FORMAT csv);
"a, quoted",5
"b, quoted",0
\.
SET search_path = tc, public;
COPY p1 (v, id) FROM STDIN (FORMAT csv);
"a, quoted",5
"b, quoted",0
\.

-- with a WHERE clause: only the rows it keeps are checked
SET search_path = h, public;
COPY p1 FROM STDIN WHERE id < 100;
7	kept	s
300	filtered out	s
\.
SET search_path = tc, public;
COPY p1 FROM STDIN WHERE id < 100;
7	kept	s
300	filtered out	s
\.
SELECT * FROM part_rows;

-- a user who may insert id and v but read nothing: the DETAIL shows only
-- the columns it inserted
CREATE ROLE tcopy_part_writer;
GRANT USAGE ON SCHEMA h, tc TO tcopy_part_writer;
GRANT INSERT (id, v) ON h.p1, tc.p1 TO tcopy_part_writer;
SET ROLE tcopy_part_writer;
SET search_path = h, public;
COPY p1 (id, v) FROM STDIN;
250	no
\.
SET search_path = tc, public;
COPY p1 (id, v) FROM STDIN;
250	no
\.
RESET ROLE;
-- with SELECT on the table, every column
GRANT SELECT ON h.p1, tc.p1 TO tcopy_part_writer;
SET ROLE tcopy_part_writer;
SET search_path = h, public;
COPY p1 (id, v) FROM STDIN;
250	no
\.
SET search_path = tc, public;
COPY p1 (id, v) FROM STDIN;
250	no
\.
RESET ROLE;

-- a partition of a partition: the ancestors' constraints too
CREATE TABLE h.p3 (id int NOT NULL, v text, secret text) PARTITION BY LIST (v);
ALTER TABLE h.parent ATTACH PARTITION h.p3 FOR VALUES FROM (200) TO (300);
CREATE TABLE h.p3a PARTITION OF h.p3 FOR VALUES IN ('a');
CREATE TABLE tc.p3 (id int NOT NULL, v text, secret text) PARTITION BY LIST (v);
ALTER TABLE tc.parent ATTACH PARTITION tc.p3 FOR VALUES FROM (200) TO (300);
CREATE FOREIGN TABLE tc.p3a PARTITION OF tc.p3 FOR VALUES IN ('a')
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_partition.p3a');
TRUNCATE tc.p3a;
SET search_path = h, public;
COPY p3a (id, v) FROM STDIN;
250	a
50	a
\.
SET search_path = tc, public;
COPY p3a (id, v) FROM STDIN;
250	a
50	a
\.

-- routed through the parent: every row where it belongs
SET search_path = h, public;
COPY parent (id, v) FROM STDIN;
2	two
120	one twenty
\.
SET search_path = tc, public;
COPY parent (id, v) FROM STDIN;
2	two
120	one twenty
\.
SELECT * FROM part_rows;

-- INSERT straight into a partition: Postgres checks a heap partition...
INSERT INTO h.p1 VALUES (180, 'not of p1');
-- ... and no foreign partition (ExecInsert): neither does tcopy
INSERT INTO tc.p1 VALUES (180, 'not of p1');
SELECT * FROM tc.p1 WHERE id = 180;

RESET search_path;
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA h, tc CASCADE;
DROP VIEW IF EXISTS part_rows;
DROP ROLE tcopy_part_writer;
