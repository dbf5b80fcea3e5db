--
-- tcopy_errors: a COPY that fails fails exactly as it does on a heap table
-- (same ERROR, DETAIL and CONTEXT lines: h.e and tc.e share the name "e"),
-- and leaves nothing of itself in the tcopy table, even when rows before
-- the bad one were already sent to the tserver (batch_rows = 1).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
\getenv abs_builddir PG_ABS_BUILDDIR
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE DOMAIN err_posint AS int CHECK (VALUE > 0);
CREATE SCHEMA h;
CREATE SCHEMA tc;
CREATE TABLE h.e (
	id int NOT NULL,
	small int2,
	d date,
	v varchar(5),
	p err_posint,
	s text NOT NULL
);
CREATE FOREIGN TABLE tc.e (
	id int NOT NULL,
	small int2,
	d date,
	v varchar(5),
	p err_posint,
	s text NOT NULL
) SERVER ts OPTIONS (key 'id', table_name 'tcopy_errors.e');
TRUNCATE tc.e;
CREATE VIEW err_check AS
SELECT (SELECT count(*) FROM h.e) AS heap_rows,
	(SELECT count(*) FROM tc.e) AS tc_rows,
	(SELECT count(*) FROM (SELECT r::text FROM h.e r
						   EXCEPT ALL SELECT r::text FROM tc.e r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.e r
						   EXCEPT ALL SELECT r::text FROM h.e r) d) AS tc_only;

-- both tables start with the same two rows
COPY h.e FROM STDIN;
1	1	2024-01-01	a	1	one
2	2	2024-01-02	b	2	two
\.
COPY tc.e FROM STDIN;
1	1	2024-01-01	a	1	one
2	2	2024-01-02	b	2	two
\.
SELECT * FROM err_check;

-- every row its own batch, sent before the next one is read
SET tcopy.batch_rows = 1;

-- missing data for a column
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1
\.
SELECT count(*) FROM e;

-- extra data after the last column
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	eleven	extra
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	eleven	extra
\.
SELECT count(*) FROM e;

-- not an integer
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	abc	2024-01-01	a	1	eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	abc	2024-01-01	a	1	eleven
\.
SELECT count(*) FROM e;

-- out of range for smallint, and for integer
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	40000	2024-01-01	a	1	eleven
\.
COPY e FROM STDIN;
2147483648	1	2024-01-01	a	1	eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	40000	2024-01-01	a	1	eleven
\.
COPY e FROM STDIN;
2147483648	1	2024-01-01	a	1	eleven
\.
SELECT count(*) FROM e;

-- not a date
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2021-02-30	a	1	eleven
12	1	yesterday-ish	a	1	twelve
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2021-02-30	a	1	eleven
12	1	yesterday-ish	a	1	twelve
\.
SELECT count(*) FROM e;

-- too long for varchar(5)
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	abcdef	1	eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	abcdef	1	eleven
\.
SELECT count(*) FROM e;

-- the domain's check
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	-1	eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	-1	eleven
\.
SELECT count(*) FROM e;

-- NOT NULL, on a key column and on another one
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	\N
\.
COPY e FROM STDIN (FORMAT csv);
,1,2024-01-01,a,1,eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	\N
\.
COPY e FROM STDIN (FORMAT csv);
,1,2024-01-01,a,1,eleven
\.
SELECT count(*) FROM e;
-- NOT NULL of a column the COPY leaves out
SET search_path = h, public;
COPY e (id, small) FROM STDIN;
10	1
\.
SET search_path = tc, public;
COPY e (id, small) FROM STDIN;
10	1
\.
SELECT count(*) FROM e;

-- an unterminated quoted csv field
SET search_path = h, public;
COPY e FROM STDIN (FORMAT csv);
10,1,2024-01-01,a,1,ten
11,1,2024-01-01,a,1,"unterminated
\.
SET search_path = tc, public;
COPY e FROM STDIN (FORMAT csv);
10,1,2024-01-01,a,1,ten
11,1,2024-01-01,a,1,"unterminated
\.
SELECT count(*) FROM e;

-- a NUL byte from a text-format escape
SET search_path = h, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	nul\0byte
\.
SET search_path = tc, public;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	nul\0byte
\.
SELECT count(*) FROM e;

-- invalid UTF-8 in a file
\set badfile :abs_builddir '/results/tcopy_errors_utf8.data'
SELECT lo_from_bytea(0, convert_to(E'10\t1\t2024-01-01\ta\t1\tten\n11\t1\t2024-01-01\ta\t1\tbad', 'UTF8')
	|| '\xff0a'::bytea) AS lo \gset
SELECT lo_export(:lo, :'badfile');
SELECT lo_unlink(:lo);
SET search_path = h, public;
COPY e FROM :'badfile';
SET search_path = tc, public;
COPY e FROM :'badfile';
SELECT count(*) FROM e;
-- a header that does not match
SET search_path = h, public;
COPY e (id, s) FROM STDIN (FORMAT csv, HEADER match);
id,t
10,ten
\.
SET search_path = tc, public;
COPY e (id, s) FROM STDIN (FORMAT csv, HEADER match);
id,t
10,ten
\.
SELECT count(*) FROM e;

-- a WHERE clause that fails on the second row
SET search_path = h, public;
COPY e FROM STDIN WHERE 10 / (id - 11) <> 0;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	eleven
\.
SET search_path = tc, public;
COPY e FROM STDIN WHERE 10 / (id - 11) <> 0;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	eleven
\.
SELECT count(*) FROM e;

-- a program that fails after printing a good row
SET search_path = h, public;
COPY e FROM PROGRAM 'printf ''10\t1\t2024-01-01\ta\t1\tten\n''; exit 3';
SET search_path = tc, public;
COPY e FROM PROGRAM 'printf ''10\t1\t2024-01-01\ta\t1\tten\n''; exit 3';
SELECT count(*) FROM e;

-- binary input that is not COPY binary, or has other columns
\set textfile :abs_builddir '/results/tcopy_errors_text.data'
\set binfile :abs_builddir '/results/tcopy_errors_binary.data'
COPY h.e TO :'textfile';
COPY h.e TO :'binfile' (FORMAT binary);
SET search_path = h, public;
COPY e FROM :'textfile' (FORMAT binary);
COPY e (id, s) FROM :'binfile' (FORMAT binary);
SET search_path = tc, public;
COPY e FROM :'textfile' (FORMAT binary);
COPY e (id, s) FROM :'binfile' (FORMAT binary);
SELECT count(*) FROM e;

-- a bad row far into a large file, many batches after the first was sent
RESET tcopy.batch_rows;
\set bigfile :abs_builddir '/results/tcopy_errors_big.data'
COPY (SELECT g, g % 100, '2024-01-01', 'v', 1, 'row ' || g FROM generate_series(100, 50099) g
	  UNION ALL SELECT 50100, 1, '2024-01-01', 'v', 0, 'bad domain') TO :'bigfile';
SET search_path = h, public;
COPY e FROM :'bigfile';
SET search_path = tc, public;
COPY e FROM :'bigfile';
SELECT count(*) FROM e;
SET tcopy.batch_rows = 1;

-- statements that fail before reading anything: bad options, bad columns,
-- missing files
SET search_path = h, public;
COPY e FROM '/nonexistent/tcopy.data' (FORMAT bogus);
COPY e FROM '/nonexistent/tcopy.data' (FORMAT text, FORCE_NOT_NULL (s));
COPY e FROM '/nonexistent/tcopy.data' (FORMAT csv, QUOTE ',');
COPY e FROM '/nonexistent/tcopy.data' (DELIMITER '||');
COPY e FROM '/nonexistent/tcopy.data' (ENCODING 'KLINGON');
COPY e (id, nope) FROM '/nonexistent/tcopy.data';
COPY e (id, id) FROM '/nonexistent/tcopy.data';
COPY e FROM '/nonexistent/tcopy.data' WHERE nope > 1;
COPY e FROM '/nonexistent/tcopy.data' WHERE random() > 0.5;
COPY e FROM '/nonexistent/tcopy.data' WHERE max(id) > 1;
COPY e FROM '/nonexistent/tcopy.data';
SET search_path = tc, public;
COPY e FROM '/nonexistent/tcopy.data' (FORMAT bogus);
COPY e FROM '/nonexistent/tcopy.data' (FORMAT text, FORCE_NOT_NULL (s));
COPY e FROM '/nonexistent/tcopy.data' (FORMAT csv, QUOTE ',');
COPY e FROM '/nonexistent/tcopy.data' (DELIMITER '||');
COPY e FROM '/nonexistent/tcopy.data' (ENCODING 'KLINGON');
COPY e (id, nope) FROM '/nonexistent/tcopy.data';
COPY e (id, id) FROM '/nonexistent/tcopy.data';
COPY e FROM '/nonexistent/tcopy.data' WHERE nope > 1;
COPY e FROM '/nonexistent/tcopy.data' WHERE random() > 0.5;
COPY e FROM '/nonexistent/tcopy.data' WHERE max(id) > 1;
COPY e FROM '/nonexistent/tcopy.data';

-- the same errors through Postgres' own COPY and the FDW's insert path
SET tcopy.copy_hook = off;
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	1	2024-01-01	a	1	\N
\.
COPY e FROM STDIN;
10	1	2024-01-01	a	1	ten
11	abc	2024-01-01	a	1	eleven
\.
RESET tcopy.batch_rows;
COPY e FROM :'bigfile';
RESET tcopy.copy_hook;
SET tcopy.batch_rows = 1;
SELECT count(*) FROM e;

-- INSERT: the same errors; a failing INSERT ... SELECT leaves nothing
SET search_path = h, public;
INSERT INTO e VALUES (10, 1, '2024-01-01', 'a', 1, NULL);
INSERT INTO e VALUES (10, 1, '2024-01-01', 'abcdef', 1, 'ten');
INSERT INTO e SELECT g, 1, '2024-01-01', 'a', 1, CASE WHEN g < 600 THEN 'x' END
	FROM generate_series(100, 700) g;
SET search_path = tc, public;
INSERT INTO e VALUES (10, 1, '2024-01-01', 'a', 1, NULL);
INSERT INTO e VALUES (10, 1, '2024-01-01', 'abcdef', 1, 'ten');
INSERT INTO e SELECT g, 1, '2024-01-01', 'a', 1, CASE WHEN g < 600 THEN 'x' END
	FROM generate_series(100, 700) g;
SELECT count(*) FROM e;

-- in the end both tables still hold the same two rows
RESET search_path;
RESET tcopy.batch_rows;
SELECT * FROM err_check;
SELECT * FROM tc.e ORDER BY id;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA h, tc CASCADE;
DROP VIEW IF EXISTS err_check;
DROP DOMAIN err_posint;
