--
-- tcopy_conflict: option on_conflict (table and COPY) of keyed tcopy tables,
-- side by side with a heap table with a primary key where Postgres 15 has
-- the behaviour: 'error' (the default of a new keyed table) as a primary
-- key, 'ignore' keeps a key's first row, 'replace' its last (what tables
-- made before 1.4 keep doing).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- the option: on tables, valid values only; a new keyed table says 'error'
CREATE FOREIGN TABLE c_bad (aid int, v text) SERVER ts OPTIONS (key 'aid', on_conflict 'skip');
CREATE SERVER c_srv FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', on_conflict 'ignore');
CREATE FOREIGN TABLE c_t (aid int, v text) SERVER ts OPTIONS (key 'aid');
SELECT o FROM pg_foreign_table, unnest(ftoptions) o
 WHERE ftrelid = 'c_t'::regclass AND o LIKE 'on_conflict=%';
CREATE TABLE c_h (aid int PRIMARY KEY, v text);

-- error: a duplicate inside one COPY, in key order (settled as rows arrive)
COPY c_h FROM stdin;
1	a
2	b
2	c
\.
COPY c_t FROM stdin;
1	a
2	b
2	c
\.
SELECT count(*) FROM c_t;

-- error: a duplicate out of order (settled when the session is prepared)
COPY c_h FROM stdin;
5	a
3	b
5	c
\.
COPY c_t FROM stdin;
5	a
3	b
5	c
\.
SELECT count(*) FROM c_t;

-- error: a duplicate of a key written earlier in the transaction
BEGIN;
INSERT INTO c_t VALUES (42, 'first');
COPY c_t FROM stdin;
41	x
42	y
43	z
\.
COMMIT;
BEGIN;
INSERT INTO c_h VALUES (42, 'first');
COPY c_h FROM stdin;
41	x
42	y
43	z
\.
COMMIT;
SELECT count(*) FROM c_t;

-- error: a key stored by an earlier transaction
INSERT INTO c_h VALUES (50, 'stored');
INSERT INTO c_t VALUES (50, 'stored');
COPY c_h FROM stdin;
49	x
50	y
\.
COPY c_t FROM stdin;
49	x
50	y
\.
SELECT * FROM c_t WHERE aid >= 49 ORDER BY aid;

-- a duplicate's CONTEXT names its own line, also where rows' lines do not
-- follow each other (excluded by WHERE, a second COPY in the transaction,
-- a row skipped by ON_ERROR ignore), and when the COMMIT finds it; a CSV
-- value over two lines, as Postgres 15 counts it
COPY c_h FROM stdin WHERE aid > 60;
70	a
50	excluded
65	b
70	c
\.
COPY c_t FROM stdin WHERE aid > 60;
70	a
50	excluded
65	b
70	c
\.
COPY c_h FROM stdin (FORMAT csv);
71,"two
lines"
72,b
71,c
\.
COPY c_t FROM stdin (FORMAT csv);
71,"two
lines"
72,b
71,c
\.
BEGIN;
COPY c_h FROM stdin;
80	a
81	b
\.
COPY c_h FROM stdin;
82	c
80	d
\.
COMMIT;
BEGIN;
COPY c_t FROM stdin;
80	a
81	b
\.
COPY c_t FROM stdin;
82	c
80	d
\.
COMMIT;
COPY c_t FROM stdin (ON_ERROR ignore);
90	a
x	bad
91	b
90	c
\.

-- INSERT follows the table's policy
INSERT INTO c_h VALUES (7, 'a'), (7, 'b');
INSERT INTO c_t VALUES (7, 'a'), (7, 'b');
SELECT * FROM c_t;

-- several key columns and text keys, as the user wrote them
CREATE FOREIGN TABLE c_multi (region text, aid bigint, v text) SERVER ts
	OPTIONS (key 'region, aid');
CREATE TABLE c_multi_h (region text, aid bigint, v text, PRIMARY KEY (region, aid));
INSERT INTO c_multi_h VALUES ('north', 1, 'a'), ('south', 1, 'b'), ('north', 1, 'c');
INSERT INTO c_multi VALUES ('north', 1, 'a'), ('south', 1, 'b'), ('north', 1, 'c');

-- keys stored as an image: the DETAIL shows the later row's value, as
-- its type prints it (numeric 1.0 after 1.00, interval '24 hours' after
-- '1 day'), in key order and out of it
CREATE FOREIGN TABLE c_num (k numeric, i interval, v text) SERVER ts OPTIONS (key 'k');
CREATE TABLE c_num_h (k numeric PRIMARY KEY, i interval, v text);
COPY c_num_h FROM stdin;
1.00	1 day	a
1.0	1 day	b
2	1 day	c
\.
COPY c_num FROM stdin;
1.00	1 day	a
1.0	1 day	b
2	1 day	c
\.
COPY c_num_h FROM stdin;
3.50	1 day	a
2	1 day	b
3.5000	1 day	c
\.
COPY c_num FROM stdin;
3.50	1 day	a
2	1 day	b
3.5000	1 day	c
\.
INSERT INTO c_num_h VALUES (10, '1 day', 'stored');
INSERT INTO c_num VALUES (10, '1 day', 'stored');
INSERT INTO c_num_h VALUES (10.000, '1 day', 'again');
INSERT INTO c_num VALUES (10.000, '1 day', 'again');
CREATE FOREIGN TABLE c_ival (i interval, n numeric, v text) SERVER ts OPTIONS (key 'n, i');
CREATE TABLE c_ival_h (i interval, n numeric, v text, PRIMARY KEY (n, i));
INSERT INTO c_ival_h VALUES ('1 day', 1, 'a'), ('24 hours', 1.0, 'b');
INSERT INTO c_ival VALUES ('1 day', 1, 'a'), ('24 hours', 1.0, 'b');

-- text keys as written, and column names quoted as Postgres quotes them
CREATE FOREIGN TABLE c_txt ("Name" text, v int) SERVER ts OPTIONS (key '"Name"');
CREATE TABLE c_txt_h ("Name" text PRIMARY KEY, v int);
COPY c_txt_h FROM stdin (FORMAT csv);
"it's, here",1
zeta,2
"it's, here",3
\.
COPY c_txt FROM stdin (FORMAT csv);
"it's, here",1
zeta,2
"it's, here",3
\.

-- the values only for a user who may read them: SELECT on the table or on
-- every key column; else no DETAIL
CREATE ROLE c_writer;
GRANT INSERT ON c_t, c_h TO c_writer;
SET ROLE c_writer;
INSERT INTO c_h VALUES (50, 'again');
INSERT INTO c_t VALUES (50, 'again');
RESET ROLE;
GRANT SELECT (aid) ON c_t, c_h TO c_writer;
SET ROLE c_writer;
INSERT INTO c_h VALUES (50, 'again');
INSERT INTO c_t VALUES (50, 'again');
RESET ROLE;

-- ignore: the first row of a key stays (as ON CONFLICT DO NOTHING)
INSERT INTO c_h VALUES (10, 'first'), (11, 'first') ON CONFLICT DO NOTHING;
INSERT INTO c_h VALUES (11, 'second'), (12, 'second') ON CONFLICT DO NOTHING;
COPY c_t FROM stdin (on_conflict 'ignore');
10	first
11	first
11	second
12	second
\.
COPY c_t FROM stdin (on_conflict 'ignore');
50	ignored
51	new
\.
INSERT INTO c_h VALUES (50, 'ignored'), (51, 'new') ON CONFLICT DO NOTHING;
SELECT * FROM c_t ORDER BY aid;
SELECT * FROM c_h WHERE aid >= 10 ORDER BY aid;
-- COPY's option overrides the table's; unknown values are refused, and
-- so is the option given twice, as Postgres refuses its own
COPY c_t FROM '/nonexistent' (on_conflict 'skip');
COPY c_t FROM '/nonexistent' (on_conflict 'ignore', on_conflict 'error');
-- a heap table knows no such option
COPY c_h FROM '/nonexistent' (on_conflict 'ignore');

-- replace: the last row of a key wins
ALTER FOREIGN TABLE c_t OPTIONS (SET on_conflict 'replace');
COPY c_t FROM stdin;
20	first
21	first
20	second
\.
SELECT * FROM c_t WHERE aid >= 20 ORDER BY aid;

-- one policy per table and transaction
BEGIN;
COPY c_t FROM stdin (on_conflict 'ignore');
30	a
\.
INSERT INTO c_t VALUES (31, 'b');
ROLLBACK;

-- a keyless table has no keys to conflict
CREATE FOREIGN TABLE c_nokey (aid int) SERVER ts OPTIONS (on_conflict 'error');
COPY c_nokey FROM stdin;
1
1
\.
SELECT count(*) FROM c_nokey;

-- a duplicate across tables of one transaction names the table it is in
BEGIN;
INSERT INTO c_multi VALUES ('east', 1, 'a');
INSERT INTO c_t VALUES (100, 'a');
INSERT INTO c_multi VALUES ('west', 2, 'b'), ('east', 1, 'c');
COMMIT;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE c_h, c_multi_h, c_num_h, c_ival_h, c_txt_h;
DROP ROLE c_writer;
