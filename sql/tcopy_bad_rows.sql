--
-- tcopy_bad_rows: COPY ... (ON_ERROR, LOG_VERBOSITY, REJECT_LIMIT) into a
-- tcopy table, as Postgres 17/18 run them on heap tables, and tcopy's
-- reject_table; COPY ... (FREEZE) as Postgres 15 takes it with the hook off.
-- Postgres 15 cannot run the 17/18 options: the comments "-- PG 17:" give
-- what Postgres 17/18 print for the same COPY into a heap table (from their
-- copy.c / copyfrom.c / copyfromparse.c), and the output must match them.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE DOMAIN br_posint AS int CHECK (VALUE > 0);
-- plpgsql: a SQL function would be inlined into the CHECK, built-ins only
CREATE FUNCTION br_is_even(int) RETURNS bool LANGUAGE plpgsql IMMUTABLE
	AS 'BEGIN RETURN $1 % 2 = 0; END';
CREATE DOMAIN br_even AS int CHECK (br_is_even(VALUE));
CREATE TYPE br_pair AS (a int, b text);
CREATE FOREIGN TABLE br (id int NOT NULL, n int, t text, p br_posint)
	SERVER ts;
CREATE FOREIGN TABLE br_odd (id int, e br_even, pr br_pair) SERVER ts;
CREATE TABLE br_heap (id int NOT NULL, n int, t text, p br_posint);

-- the reject table: these six columns, any others with defaults
CREATE TABLE br_rejects (
	copy_table text,
	line_number bigint,
	raw_line text,
	column_name text,
	sqlstate text,
	message text,
	rejected_at timestamptz DEFAULT now()
);

-- options: Postgres 18's checks and words
COPY br FROM STDIN (ON_ERROR foo);
\.
-- PG 17: ERROR:  COPY ON_ERROR "foo" not recognized
COPY br FROM STDIN (ON_ERROR ignore, ON_ERROR stop);
\.
-- PG 17: ERROR:  conflicting or redundant options
COPY br FROM STDIN (LOG_VERBOSITY loud);
\.
-- PG 18: ERROR:  COPY LOG_VERBOSITY "loud" not recognized
COPY br FROM STDIN (FORMAT binary, ON_ERROR ignore);
\.
-- PG 17: ERROR:  only ON_ERROR STOP is allowed in BINARY mode
COPY br FROM STDIN (REJECT_LIMIT 0, ON_ERROR ignore);
\.
-- PG 18: ERROR:  REJECT_LIMIT (0) must be greater than zero
COPY br FROM STDIN (REJECT_LIMIT -3, ON_ERROR ignore);
\.
-- PG 18: ERROR:  REJECT_LIMIT (-3) must be greater than zero
COPY br FROM STDIN (REJECT_LIMIT 2);
\.
-- PG 18: ERROR:  COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE
COPY br FROM STDIN (REJECT_LIMIT 2, ON_ERROR stop);
\.
-- PG 18: ERROR:  COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE
COPY br FROM STDIN (reject_table 'br_rejects');
\.
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'no_such_table');
\.
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'br');
\.

-- Postgres 15's own COPY does not know them: a heap table refuses them
COPY br_heap FROM STDIN (ON_ERROR ignore);
\.
COPY br_heap FROM STDIN (LOG_VERBOSITY verbose);
\.
COPY br_heap FROM STDIN (REJECT_LIMIT 1);
\.
-- and so does a tcopy table when the hook is off
SET tcopy.copy_hook = off;
COPY br FROM STDIN (ON_ERROR ignore);
\.
RESET tcopy.copy_hook;

-- ON_ERROR stop (the default): the first bad field fails the COPY
COPY br FROM STDIN (ON_ERROR stop);
1	1	a	1
2	x	b	2
\.
-- PG 17: ERROR:  invalid input syntax for type integer: "x"
--        CONTEXT:  COPY br, line 2, column n: "x"

-- ON_ERROR ignore: bad fields of each kind, the end-of-COPY NOTICE
COPY br FROM STDIN (ON_ERROR ignore);
1	1	a	1
2	x	b	2
3	3	c	-3
4	99999999999	d	4
5	5	e	5
\.
-- PG 17: NOTICE:  3 rows were skipped due to data type incompatibility
SELECT * FROM br ORDER BY id;

-- LOG_VERBOSITY verbose: a NOTICE per row, its context the table alone
\set SHOW_CONTEXT always
COPY br FROM STDIN (ON_ERROR ignore, LOG_VERBOSITY verbose);
6	6	f	6
7	seven	g	7
8	8	h	0
9	9	i	9
\.
\set SHOW_CONTEXT errors
-- PG 17: NOTICE:  skipping row due to data type incompatibility at line 2 for column "n": "seven"
--        CONTEXT:  COPY br
-- PG 17: NOTICE:  skipping row due to data type incompatibility at line 3 for column "p": "0"
--        CONTEXT:  COPY br
-- PG 17: NOTICE:  2 rows were skipped due to data type incompatibility
-- csv, a domain's NOT NULL on a NULL ("null input"), a long value cut at 100
COPY br FROM STDIN (FORMAT csv, ON_ERROR ignore, LOG_VERBOSITY verbose);
10,10,j,10
11,1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111,k,11
12,12,"l
l",12
13,13,m,x
\.
-- the row's NOT NULL: Postgres 17 fails; tcopy skips it as a null input
COPY br FROM STDIN (ON_ERROR ignore, LOG_VERBOSITY verbose);
\N	14	n	14
15	15	o	15
\.
-- LOG_VERBOSITY silent (18): no NOTICE at all
COPY br FROM STDIN (ON_ERROR ignore, LOG_VERBOSITY silent);
16	x	p	16
17	17	q	17
\.
SELECT * FROM br WHERE id >= 6 ORDER BY id;
-- the same input through NextCopyFrom (raw fields off): the same result
SET tcopy.raw_fields = off;
COPY br FROM STDIN (ON_ERROR ignore, LOG_VERBOSITY verbose);
18	x	r	18
\N	19	s	19
20	20	t	-20
21	21	u	21
\.
RESET tcopy.raw_fields;
SELECT * FROM br WHERE id >= 18 ORDER BY id;

-- the line's structure stays fatal, as in Postgres 17
COPY br FROM STDIN (ON_ERROR ignore);
22	22	v
\.
-- PG 17: ERROR:  missing data for column "p"
COPY br FROM STDIN (ON_ERROR ignore);
23	23	w	23	extra
\.
-- PG 17: ERROR:  extra data after last expected column

-- what is never skipped: a domain whose CHECK calls a user function, a
-- composite (record_in keeps a reference when it throws), the WHERE clause
COPY br_odd FROM STDIN (ON_ERROR ignore);
1	3	(1,a)
\.
COPY br_odd FROM STDIN (ON_ERROR ignore);
2	2	(x,b)
\.
COPY br FROM STDIN (ON_ERROR ignore) WHERE 1 / (n - 24) > 0;
24	24	x	24
\.
SELECT count(*) FROM br_odd;

-- REJECT_LIMIT n: n skipped rows are fine, n + 1 fail the COPY
COPY br FROM STDIN (ON_ERROR ignore, REJECT_LIMIT 2);
25	x	a	25
26	x	b	26
27	27	c	27
\.
-- PG 18: NOTICE:  2 rows were skipped due to data type incompatibility
COPY br FROM STDIN (ON_ERROR ignore, REJECT_LIMIT 2);
28	x	a	28
29	x	b	29
30	x	c	30
31	31	d	31
\.
-- PG 18: ERROR:  skipped more than REJECT_LIMIT (2) rows due to data type incompatibility
--        CONTEXT:  COPY br, line 3, column n: "x"
SELECT id FROM br WHERE id >= 25 ORDER BY id;

-- reject_table: each skipped row, in the COPY's transaction
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'br_rejects');
32	x	a	32
33	33	b	33
\N	34	c	34
35	35	d	0
\.
SELECT copy_table, line_number, raw_line, column_name, sqlstate, message,
	rejected_at IS NOT NULL AS stamped
FROM br_rejects ORDER BY line_number;
-- a load rolled back leaves no rejects behind
BEGIN;
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'br_rejects');
36	x	a	36
37	37	b	37
\.
SELECT count(*) FROM br_rejects;
ROLLBACK;
SELECT count(*) FROM br_rejects;
SELECT id FROM br WHERE id >= 32 ORDER BY id;
-- nor does a load that exceeds its REJECT_LIMIT
COPY br FROM STDIN (ON_ERROR ignore, REJECT_LIMIT 1, reject_table 'br_rejects');
38	x	a	38
39	x	b	39
\.
SELECT count(*) FROM br_rejects;
-- the user's privileges: INSERT on the reject table
CREATE ROLE br_loader;
GRANT INSERT ON br TO br_loader;
SET ROLE br_loader;
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'br_rejects');
\.
RESET ROLE;
GRANT INSERT ON br_rejects TO br_loader;
SET ROLE br_loader;
COPY br FROM STDIN (ON_ERROR ignore, reject_table 'br_rejects');
40	x	a	40
\.
RESET ROLE;
SELECT line_number, column_name FROM br_rejects WHERE raw_line LIKE '40%';

-- pg_stat_progress_copy: skipped rows count in tuples_excluded (15 has no
-- tuples_skipped); seen from the COPY itself through a domain's CHECK
CREATE TABLE br_progress (tuples_processed bigint, tuples_excluded bigint);
CREATE FUNCTION br_watch(int) RETURNS bool LANGUAGE sql VOLATILE AS $$
	INSERT INTO br_progress
		SELECT tuples_processed, tuples_excluded FROM pg_stat_progress_copy
		WHERE pid = pg_backend_pid();
	SELECT true $$;
COPY br FROM STDIN (ON_ERROR ignore) WHERE br_watch(id);
41	x	a	41
42	x	b	42
43	43	c	43
44	44	d	44
\.
SELECT * FROM br_progress;

-- FREEZE: Postgres 15's checks, with the hook and without it
COPY br FROM STDIN (FREEZE);
\.
-- PG 15, hook off: the same error
SET tcopy.copy_hook = off;
COPY br FROM STDIN (FREEZE);
\.
RESET tcopy.copy_hook;
BEGIN;
CREATE FOREIGN TABLE br_new (id int) SERVER ts;
COPY br_new FROM STDIN (FREEZE);
1
\.
COMMIT;
SELECT * FROM br_new;
DROP FOREIGN TABLE br_new;
BEGIN;
SET LOCAL tcopy.copy_hook = off;
CREATE FOREIGN TABLE br_new (id int) SERVER ts;
COPY br_new FROM STDIN (FREEZE);
2
\.
COMMIT;
SELECT * FROM br_new;
DROP FOREIGN TABLE br_new;
-- created in the transaction but not in the current subtransaction
BEGIN;
CREATE FOREIGN TABLE br_new (id int) SERVER ts;
SAVEPOINT s;
COPY br_new FROM STDIN (FREEZE);
\.
ROLLBACK;
-- truncated in the current subtransaction: tcopy loads it (its TRUNCATE
-- is applied before the rows), as pgbench -i does
BEGIN;
TRUNCATE br;
COPY br FROM STDIN (FREEZE);
70	70	z	70
71	71	z	71
\.
COMMIT;
SELECT * FROM br ORDER BY 1;
-- truncated in the transaction, not in the current subtransaction: refused
BEGIN;
TRUNCATE br;
SAVEPOINT s;
COPY br FROM STDIN (FREEZE);
\.
ROLLBACK;
-- truncated in a subtransaction since released: it counts; rolled back: not
BEGIN;
SAVEPOINT s;
TRUNCATE br;
RELEASE s;
COPY br FROM STDIN (FREEZE);
\.
SAVEPOINT t;
TRUNCATE br;
ROLLBACK TO t;
SAVEPOINT u;
COPY br FROM STDIN (FREEZE);
\.
ROLLBACK;
-- Postgres' own COPY (hook off): a foreign table gets no new relfilenode
BEGIN;
SET LOCAL tcopy.copy_hook = off;
TRUNCATE br;
COPY br FROM STDIN (FREEZE);
\.
ROLLBACK;

DROP EXTENSION tcopy CASCADE;
DROP TABLE br_heap, br_rejects, br_progress;
DROP FUNCTION br_watch(int);
DROP DOMAIN br_posint, br_even;
DROP FUNCTION br_is_even(int);
DROP TYPE br_pair;
DROP ROLE br_loader;
