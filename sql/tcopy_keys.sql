--
-- tcopy_keys: key equality is the type's equality (its default btree operator
-- class).  For each key type, keys that are equal but spelled differently are
-- written into a heap table with a primary key (INSERT ... ON CONFLICT DO
-- UPDATE, so the last spelling and value win) and into two tcopy tables keyed
-- on the same column, one by INSERT and one by COPY (on_conflict 'replace':
-- equal keys overwrite, the last wins).  The three must then hold the same
-- rows and answer =, < and BETWEEN alike.  Keys whose equality cannot be
-- encoded (a nondeterministic collation, types without a usable btree class,
-- arrays, composites, jsonb) are refused when the key is declared.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE COLLATION icu_und (provider = icu, locale = 'und');

-- the driver: one row per key type; eq, lt, lo and hi are the constants of
-- the predicates k = eq, k < lt and k BETWEEN lo AND hi
CREATE TABLE kt (n int PRIMARY KEY, slug text, typ text, lits text[], eq text, lt text, lo text, hi text);
INSERT INTO kt VALUES
(1, 'int8', 'int8', ARRAY['1', '01', '+1', '-0', '0', '-1', '9223372036854775807', '-9223372036854775808'],
	'1', '0', '-1', '1'),
(2, 'numeric', 'numeric', ARRAY['1', '1.0', '1.00', 'NaN', '0', '-0.0', '2.5', '-1e-3', 'NaN', '2.50'],
	'1', '1', '0', 'NaN'),
(3, 'float8', 'float8', ARRAY['0', '-0', 'NaN', 'NaN', '1.5', '-1e-310', 'Infinity', '1.50', '-Infinity'],
	'0', '0', '-0', 'Infinity'),
(4, 'float4', 'float4', ARRAY['0', '-0', 'NaN', 'NaN', '1.5', '-1e-40', '-Infinity', '1.50'],
	'-0', '0', '0', 'NaN'),
(5, 'interval', 'interval', ARRAY['1 day', '24 hours', '1 mon', '30 days', '720 hours', '-1 day', '-24 hours', '1 day 00:00:00.000001', '1440 minutes'],
	'1 day', '1 day', '1 day', '1 mon'),
(6, 'bpchar', 'bpchar', ARRAY['a', 'a  ', 'b ', 'b', 'ab', '', ' '],
	'a', 'b', 'a', 'b'),
(7, 'char3', 'char(3)', ARRAY['a', 'a ', 'a  ', 'b', 'b  ', 'é'],
	'a', 'b', 'a', 'é'),
(8, 'text', 'text', ARRAY['abc', 'ABC', 'é', U&'e\0301', '', 'abc', 'b'],
	'abc', 'b', '', 'b'),
(9, 'text_icu', 'text COLLATE icu_und', ARRAY['a', 'B', 'b', 'A', 'a', 'ab'],
	'a', 'b', 'A', 'b'),
(10, 'date', 'date', ARRAY['2020-02-13', '13 Feb 2020', 'Feb 13, 2020', '2020-02-01', 'infinity', '-infinity', '20200213'],
	'2020-02-13', '2020-02-13', '2020-02-01', 'infinity'),
(11, 'timestamptz', 'timestamptz', ARRAY['2020-02-13 17:30', '2020-02-13 08:30', '2020-02-01 05:30', '2020-01-31 20:30', 'infinity', '2020-02-13 17:30:00.000001'],
	'2020-02-13 12:00+00', '2020-02-13 12:00+00', '2020-02-01 00:00+00', 'infinity');

-- hk_<slug>: heap with a primary key; ti_<slug>: tcopy, written by INSERT;
-- tc_<slug>: tcopy, written by COPY
\set ECHO errors
SELECT format('CREATE TABLE hk_%s (k %s PRIMARY KEY, v int)', slug, typ) FROM kt ORDER BY n
\gexec
SELECT format('CREATE FOREIGN TABLE %s_%s (k %s, v int) SERVER ts OPTIONS (key ''k'', on_conflict ''replace'')', p, slug, typ)
FROM kt, (VALUES ('ti'), ('tc')) AS x(p) ORDER BY n, p
\gexec
\set ECHO all

-- The INSERTs, one row per statement, in order; odd rows under TimeZone
-- Asia/Kolkata, even ones under America/St_Johns.
\set ECHO errors
SELECT s FROM kt, unnest(lits) WITH ORDINALITY AS u(lit, i),
	LATERAL (VALUES
		(1, format('SET TimeZone = %L', CASE WHEN i % 2 = 1 THEN 'Asia/Kolkata' ELSE 'America/St_Johns' END)),
		(2, format('INSERT INTO hk_%s VALUES (%L::%s, %s) ON CONFLICT (k) DO UPDATE SET k = excluded.k, v = excluded.v',
			slug, lit, typ, i)),
		(3, format('INSERT INTO ti_%s VALUES (%L::%s, %s)', slug, lit, typ, i))) AS q(o, s)
ORDER BY n, i, o
\gexec
\set ECHO all

-- The COPYs: the same rows in the same order (timestamptz with explicit
-- offsets, for the same instants)
SET TimeZone = 'Asia/Kolkata';
COPY tc_int8 FROM STDIN;
1	1
01	2
+1	3
-0	4
0	5
-1	6
9223372036854775807	7
-9223372036854775808	8
\.
COPY tc_numeric FROM STDIN;
1	1
1.0	2
1.00	3
NaN	4
0	5
-0.0	6
2.5	7
-1e-3	8
NaN	9
2.50	10
\.
COPY tc_float8 FROM STDIN;
0	1
-0	2
NaN	3
NaN	4
1.5	5
-1e-310	6
Infinity	7
1.50	8
-Infinity	9
\.
COPY tc_float4 FROM STDIN;
0	1
-0	2
NaN	3
NaN	4
1.5	5
-1e-40	6
-Infinity	7
1.50	8
\.
COPY tc_interval FROM STDIN;
1 day	1
24 hours	2
1 mon	3
30 days	4
720 hours	5
-1 day	6
-24 hours	7
1 day 00:00:00.000001	8
1440 minutes	9
\.
COPY tc_bpchar FROM STDIN;
a	1
a  	2
b 	3
b	4
ab	5
	6
 	7
\.
COPY tc_char3 FROM STDIN;
a	1
a 	2
a  	3
b	4
b  	5
é	6
\.
COPY tc_text FROM STDIN;
abc	1
ABC	2
é	3
é	4
	5
abc	6
b	7
\.
COPY tc_text_icu FROM STDIN;
a	1
B	2
b	3
A	4
a	5
ab	6
\.
COPY tc_date FROM STDIN;
2020-02-13	1
13 Feb 2020	2
Feb 13, 2020	3
2020-02-01	4
infinity	5
-infinity	6
20200213	7
\.
COPY tc_timestamptz FROM STDIN;
2020-02-13 17:30+05:30	1
2020-02-13 08:30-03:30	2
2020-02-01 05:30+05:30	3
2020-01-31 20:30-03:30	4
infinity	5
2020-02-13 21:00:00.000001+00	6
\.

-- the reader
RESET TimeZone;
SET DateStyle = 'ISO, YMD';
SET TimeZone = 'UTC';
SET IntervalStyle = postgres;

-- the rows of each table (k by its output function, so that padding and
-- spelling show), in key order
\set ECHO errors
SELECT format($$SELECT %L AS type, tab, count(*), string_agg(format('%%s=%%s', k, v), ' ' ORDER BY k, v) AS rows
FROM (SELECT 'heap' AS tab, k, v FROM hk_%s UNION ALL SELECT 'insert', k, v FROM ti_%s
	UNION ALL SELECT 'copy', k, v FROM tc_%s) r GROUP BY tab ORDER BY tab$$, slug, slug, slug, slug)
FROM kt ORDER BY n
\gexec
\set ECHO all

-- =, < and BETWEEN: the values of the rows found, in key order
\set ECHO errors
SELECT string_agg(format($$SELECT %L AS type, %L AS tab,
	(SELECT string_agg(v::text, ',' ORDER BY k, v) FROM %s_%s WHERE k = (%L::%s)) AS eq,
	(SELECT string_agg(v::text, ',' ORDER BY k, v) FROM %s_%s WHERE k < (%L::%s)) AS lt,
	(SELECT string_agg(v::text, ',' ORDER BY k, v) FROM %s_%s WHERE k BETWEEN (%L::%s) AND (%L::%s)) AS btw$$,
	slug, tab, p, slug, eq, typ, p, slug, lt, typ, p, slug, lo, typ, hi, typ), ' UNION ALL ' ORDER BY tab) || ' ORDER BY tab'
FROM kt, (VALUES ('copy', 'tc'), ('heap', 'hk'), ('insert', 'ti')) AS x(tab, p) GROUP BY n ORDER BY n
\gexec
\set ECHO all

-- Keys that cannot be encoded so that equal keys are one row are refused
-- when the key is declared: a nondeterministic collation ('abc' and 'ABC'
-- are equal under it), jsonb, a type without a btree class (point), arrays
-- and composites.
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TYPE kpair AS (a int, b text);
-- on a heap table with a primary key, 'abc' and 'ABC' are one key
CREATE TABLE hk_ci (k text COLLATE ci PRIMARY KEY, v int);
INSERT INTO hk_ci VALUES ('abc', 1);
INSERT INTO hk_ci VALUES ('ABC', 2) ON CONFLICT (k) DO UPDATE SET k = excluded.k, v = excluded.v;
SELECT k, v FROM hk_ci WHERE k = 'Abc';
CREATE FOREIGN TABLE t_ci (k text COLLATE ci, v int) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE t_jsonb (k jsonb, v int) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE t_point (k point, v int) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE t_intarr (k int[], v int) SERVER ts OPTIONS (key 'k');
CREATE FOREIGN TABLE t_kpair (k kpair, v int) SERVER ts OPTIONS (key 'k');
-- one bad column in a key of two
CREATE FOREIGN TABLE t_two (id int, k jsonb, v int) SERVER ts OPTIONS (key 'id,k');
SELECT count(*) FROM pg_class WHERE relname IN ('t_ci', 't_jsonb', 't_point', 't_intarr', 't_kpair', 't_two');

-- the same keys added to tables created without one
CREATE FOREIGN TABLE n_ci (k text COLLATE ci, v int) SERVER ts;
CREATE FOREIGN TABLE n_jsonb (k jsonb, v int) SERVER ts;
CREATE FOREIGN TABLE n_point (k point, v int) SERVER ts;
CREATE FOREIGN TABLE n_intarr (k int[], v int) SERVER ts;
CREATE FOREIGN TABLE n_kpair (k kpair, v int) SERVER ts;
ALTER FOREIGN TABLE n_ci OPTIONS (ADD key 'k');
ALTER FOREIGN TABLE n_jsonb OPTIONS (ADD key 'k');
ALTER FOREIGN TABLE n_point OPTIONS (ADD key 'k');
ALTER FOREIGN TABLE n_intarr OPTIONS (ADD key 'k');
ALTER FOREIGN TABLE n_kpair OPTIONS (ADD key 'k');
SELECT relname, ftoptions @> '{key=k}' AS keyed FROM pg_foreign_table JOIN pg_class ON oid = ftrelid
WHERE relname LIKE 'n\_%' ORDER BY relname;

-- a key column changed to a refused type or collation
CREATE FOREIGN TABLE a_k (k text, v int) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE a_k ALTER COLUMN k TYPE jsonb;
ALTER FOREIGN TABLE a_k ALTER COLUMN k TYPE text COLLATE ci;
-- a column not in the key may change to any type
ALTER FOREIGN TABLE a_k ALTER COLUMN v TYPE jsonb;
SELECT attname, format_type(atttypid, atttypmod), attcollation::regcollation
FROM pg_attribute WHERE attrelid = 'a_k'::regclass AND attnum > 0 ORDER BY attnum;
-- a column that is not in the key may be of any type
CREATE FOREIGN TABLE a_ok (id int, j jsonb, p point, a int[], c kpair, t text COLLATE ci)
	SERVER ts OPTIONS (key 'id');
INSERT INTO a_ok VALUES (1, '{"a": 1}', '(1,2)', '{1,2}', '(1,x)', 'abc');
SELECT * FROM a_ok;

-- keys of the accepted types (above, and these) are accepted
CREATE FOREIGN TABLE ok_keys (b bool, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, n numeric,
	t text COLLATE "C", vc varchar(5), c char(2), bc bpchar, nm name, ba bytea, ch "char",
	d date, tm time, tt timetz, ts timestamp, tz timestamptz, iv interval, u uuid,
	o oid, ip inet, mac macaddr, ti text COLLATE icu_und)
	SERVER ts OPTIONS (key 'b,i2,i4,i8,f4,f8,n,t,vc,c,bc,nm,ba,ch,d,tm,tt,ts,tz,iv,u,o,ip,mac,ti',
	on_conflict 'replace');
INSERT INTO ok_keys VALUES (true, 1, 2, 3, 1.5, '-0', 1.0, 'x', 'y', 'z', 'w ', 'nm', '\x00', 'c',
	'2020-02-13', '12:00', '12:00+01', '2020-02-13 12:00', '2020-02-13 12:00+00', '1 day',
	'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 7, '10.0.0.1', '08:00:2b:01:02:03', 'a');
INSERT INTO ok_keys VALUES (true, 1, 2, 3, 1.50, 0, 1.00, 'x', 'y', 'z ', 'w', 'nm', '\x00', 'c',
	'2020-02-13', '12:00', '12:00+01', '2020-02-13 12:00', '2020-02-13 13:00+01', '24 hours',
	'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 7, '10.0.0.1', '08002b010203', 'a');
SELECT count(*) FROM ok_keys;
SELECT f4, f8, n, c, bc, tz, iv FROM ok_keys;

-- a scan that reads no column fetches one of the table's own, never a key
-- image (this crashed the backend)
CREATE FOREIGN TABLE img_first (k numeric, v int) SERVER ts OPTIONS (key 'k', on_conflict 'replace');
INSERT INTO img_first VALUES (1, 1), (1.0, 2), (2, 3);
SELECT count(*) FROM img_first;
SELECT 1 AS one FROM img_first LIMIT 1;
SELECT EXISTS (SELECT FROM img_first);

-- reg* keys are their OIDs: a renamed table is the same key
CREATE TABLE reg_t1 ();
CREATE FOREIGN TABLE reg_keys (k regclass, v int) SERVER ts OPTIONS (key 'k', on_conflict 'replace');
INSERT INTO reg_keys VALUES ('reg_t1', 1);
ALTER TABLE reg_t1 RENAME TO reg_t2;
INSERT INTO reg_keys VALUES ('reg_t2', 2);
SELECT k, v FROM reg_keys;
SELECT count(*) FROM reg_keys WHERE k = 'reg_t2'::regclass;
DROP TABLE reg_t2;

-- key_form 'bytes' is the form of tables made before 1.3: not for new ones
CREATE FOREIGN TABLE kb (k numeric, v int) SERVER ts OPTIONS (key 'k', key_form 'bytes');
CREATE FOREIGN TABLE kb (k numeric, v int) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE kb OPTIONS (SET key_form 'bytes');

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
\set ECHO errors
SELECT format('DROP TABLE hk_%s', slug) FROM kt ORDER BY n
\gexec
\set ECHO all
DROP TABLE kt, hk_ci;
DROP TYPE kpair;
DROP COLLATION ci, icu_und;
