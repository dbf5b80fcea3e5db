--
-- tcopy_parallel: cases a parallel COPY once got wrong, each beside a heap
-- table or the serial COPY.  test/pg_tests.sh runs every regression test a
-- second time with every COPY parallel (3 workers, chunks of 7 bytes), so
-- these run through the leader and its workers there, and here through the
-- serial COPY that reads what the leader read first (tcopy_source_replay).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE t (id int, v text) SERVER ts OPTIONS (key 'id');
CREATE TABLE h (id int, v text);

-- text from the client: "\." after a row's data ends the input there (the
-- rest of the client's data is read and dropped), as Postgres' reader does
COPY h FROM stdin;
1	a
2	b\.
3	c
4	d
\.
COPY t FROM stdin;
1	a
2	b\.
3	c
4	d
\.
SELECT * FROM h ORDER BY id;
SELECT * FROM t ORDER BY id;

-- binary from a program that writes in small pieces: what the stream read
-- ahead of the header is not lost
TRUNCATE h;
INSERT INTO h SELECT g, 'v' || g FROM generate_series(1, 20000) g;
COPY h TO PROGRAM 'cat > /tmp/tcopy_regress_parallel.bin' (FORMAT binary);
TRUNCATE t;
COPY t FROM PROGRAM 'dd if=/tmp/tcopy_regress_parallel.bin bs=1000 status=none' (FORMAT binary);
SELECT count(*), sum(id), sum(length(v)) FROM t;

-- a row longer than the input ring (8 MB): its room is reused while its
-- worker reads it, before its chunk ends
TRUNCATE t;
COPY (SELECT g, CASE WHEN g = 2 THEN repeat('x', 9000000) ELSE 'v' || g END
	  FROM generate_series(1, 3) g) TO '/tmp/tcopy_regress_parallel_long.txt';
COPY t FROM '/tmp/tcopy_regress_parallel_long.txt' (workers 2);
SELECT id, length(v), left(v, 2) FROM t ORDER BY id;

-- a domain whose CHECK is not parallel safe: the COPY stays serial (a
-- worker may not call nextval())
CREATE SEQUENCE sq;
CREATE FUNCTION chk(int) RETURNS bool LANGUAGE sql AS $$ SELECT nextval('sq') > 0 AND $1 > 0 $$;
CREATE DOMAIN dpos AS int CHECK (chk(VALUE));
CREATE FOREIGN TABLE td (k dpos, v text) SERVER ts;
COPY td FROM stdin (FORMAT csv);
1,a
2,b
\.
SELECT * FROM td ORDER BY k;

-- a partitioned table: a partition no row goes to is not written by the
-- COPY, so its on_conflict need not agree with the transaction's earlier
-- writes to it
CREATE TABLE tp (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE tp1 PARTITION OF tp FOR VALUES FROM (0) TO (100) SERVER ts OPTIONS (key 'id');
CREATE FOREIGN TABLE tp2 PARTITION OF tp FOR VALUES FROM (100) TO (200) SERVER ts OPTIONS (key 'id');
BEGIN;
INSERT INTO tp2 VALUES (150, 'x');
COPY tp FROM stdin (FORMAT csv, on_conflict 'replace');
1,a
2,b
1,c
\.
SELECT * FROM tp ORDER BY id;
COMMIT;

-- a bad row after the replayed start: its line, as a heap table's
COPY t FROM stdin;
5	e
6
\.

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE h, tp;
DROP DOMAIN dpos;
DROP FUNCTION chk(int);
DROP SEQUENCE sq;
COPY (SELECT 1) TO PROGRAM 'rm -f /tmp/tcopy_regress_parallel.bin /tmp/tcopy_regress_parallel_long.txt';
