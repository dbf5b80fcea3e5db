--
-- tcopy_typed: COPY fields of bool, date, timestamp, timestamptz and uuid
-- (copy_typed.c, behind tcopy's reader) give what their input functions
-- give: the common spelling converted by tcopy, every other spelling and
-- every bad value by the input function.  The same input is loaded into a
-- heap table and into a tcopy table with tcopy.fast_reader on and off; the
-- rows, and each bad value's error and CONTEXT, are the same.  Then rows
-- that tcopy's reader hands to Postgres' reader part way (a bare "\r", a
-- "\." row) and HEADER MATCH, beside the heap.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
-- a session time zone with daylight saving, and DateStyle day first
SET timezone = 'America/New_York';
SET datestyle = 'ISO, DMY';

CREATE SCHEMA h;
CREATE SCHEMA tc;
CREATE TABLE h.ty (k int NOT NULL, b bool, d date, ts timestamp, tz timestamptz,
	u uuid, ts3 timestamp(3));
CREATE FOREIGN TABLE tc.ty (k int NOT NULL, b bool, d date, ts timestamp, tz timestamptz,
	u uuid, ts3 timestamp(3)) SERVER ts OPTIONS (key 'k', table_name 'tcopy_typed.ty');
TRUNCATE tc.ty;
CREATE VIEW ty_check AS
SELECT (SELECT count(*) FROM h.ty) AS heap_rows,
	(SELECT count(*) FROM tc.ty) AS tc_rows,
	(SELECT count(*) FROM (SELECT r::text FROM h.ty r
						   EXCEPT ALL SELECT r::text FROM tc.ty r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.ty r
						   EXCEPT ALL SELECT r::text FROM h.ty r) d) AS tc_only;

-- common spellings and others, at their edges: leap days, the first and
-- last years, six digits of fraction and seven, offsets of either sign
-- with and without minutes and past 14 hours, the session's zone (a DST
-- gap and an ambiguous hour), blanks, DMY order, special values
COPY h.ty FROM STDIN;
1	t	2024-02-29	2024-02-29 23:59:59.999999	2024-02-29 23:59:59.999999+14	6ba7b810-9dad-11d1-80b4-00c04fd430c8	2024-01-01 00:00:00.123456
2	f	0001-01-01	0001-01-01 00:00:00	0001-01-01 00:00:00-14	6BA7B810-9DAD-11D1-80B4-00C04FD430C8	\N
3	true	1999-12-31	1999-12-31 12:00:00.5	1999-12-31 12:00:00.5+05:30	{6ba7b810-9dad-11d1-80b4-00c04fd430c8}	\N
4	false	2000-01-01	2000-01-01 00:00:00.000001	2000-01-01 00:00:00-03:45	6ba7b8109dad11d180b400c04fd430c8	\N
5	yes	31/12/1999	2024-03-10 02:30:00	2024-03-10 02:30:00	\N	\N
6	 t 	2024-01-02	2024-01-02T03:04:05	2024-01-02 03:04:05 UTC	\N	\N
7	ON	epoch	infinity	-infinity	\N	\N
8	\N	2024-1-2	2024-01-02 03:04:05+02	2024-01-02 03:04:05.1234567+00	\N	\N
9	1	9999-12-31	9999-12-31 23:59:59	2024-01-02 03:04:05+15	\N	\N
10	t	2024-02-28	2024-02-28 00:00:00.	2024-11-03 01:30:00	\N	\N
\.
TRUNCATE tc.ty;
SET tcopy.fast_reader = on;
COPY tc.ty FROM STDIN;
1	t	2024-02-29	2024-02-29 23:59:59.999999	2024-02-29 23:59:59.999999+14	6ba7b810-9dad-11d1-80b4-00c04fd430c8	2024-01-01 00:00:00.123456
2	f	0001-01-01	0001-01-01 00:00:00	0001-01-01 00:00:00-14	6BA7B810-9DAD-11D1-80B4-00C04FD430C8	\N
3	true	1999-12-31	1999-12-31 12:00:00.5	1999-12-31 12:00:00.5+05:30	{6ba7b810-9dad-11d1-80b4-00c04fd430c8}	\N
4	false	2000-01-01	2000-01-01 00:00:00.000001	2000-01-01 00:00:00-03:45	6ba7b8109dad11d180b400c04fd430c8	\N
5	yes	31/12/1999	2024-03-10 02:30:00	2024-03-10 02:30:00	\N	\N
6	 t 	2024-01-02	2024-01-02T03:04:05	2024-01-02 03:04:05 UTC	\N	\N
7	ON	epoch	infinity	-infinity	\N	\N
8	\N	2024-1-2	2024-01-02 03:04:05+02	2024-01-02 03:04:05.1234567+00	\N	\N
9	1	9999-12-31	9999-12-31 23:59:59	2024-01-02 03:04:05+15	\N	\N
10	t	2024-02-28	2024-02-28 00:00:00.	2024-11-03 01:30:00	\N	\N
\.
SELECT * FROM ty_check;
TRUNCATE tc.ty;
SET tcopy.fast_reader = off;
COPY tc.ty FROM STDIN;
1	t	2024-02-29	2024-02-29 23:59:59.999999	2024-02-29 23:59:59.999999+14	6ba7b810-9dad-11d1-80b4-00c04fd430c8	2024-01-01 00:00:00.123456
2	f	0001-01-01	0001-01-01 00:00:00	0001-01-01 00:00:00-14	6BA7B810-9DAD-11D1-80B4-00C04FD430C8	\N
3	true	1999-12-31	1999-12-31 12:00:00.5	1999-12-31 12:00:00.5+05:30	{6ba7b810-9dad-11d1-80b4-00c04fd430c8}	\N
4	false	2000-01-01	2000-01-01 00:00:00.000001	2000-01-01 00:00:00-03:45	6ba7b8109dad11d180b400c04fd430c8	\N
5	yes	31/12/1999	2024-03-10 02:30:00	2024-03-10 02:30:00	\N	\N
6	 t 	2024-01-02	2024-01-02T03:04:05	2024-01-02 03:04:05 UTC	\N	\N
7	ON	epoch	infinity	-infinity	\N	\N
8	\N	2024-1-2	2024-01-02 03:04:05+02	2024-01-02 03:04:05.1234567+00	\N	\N
9	1	9999-12-31	9999-12-31 23:59:59	2024-01-02 03:04:05+15	\N	\N
10	t	2024-02-28	2024-02-28 00:00:00.	2024-11-03 01:30:00	\N	\N
\.
SELECT * FROM ty_check;
SELECT * FROM tc.ty ORDER BY k;
RESET tcopy.fast_reader;

-- each bad value: the input function's error and CONTEXT, heap and tcopy
TRUNCATE h.ty;
TRUNCATE tc.ty;
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	maybe	\N	\N	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	maybe	\N	\N	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	2023-02-29	\N	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	2023-02-29	\N	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	0000-01-01	\N	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	0000-01-01	\N	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	2024-13-01	\N	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	2024-13-01	\N	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	2024-01-01 24:00:01	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	2024-01-01 24:00:01	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	2024-01-01 23:60:00	\N	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	2024-01-01 23:60:00	\N	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	2024-01-01 00:00:00+16	\N	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	2024-01-01 00:00:00+16	\N	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	\N	6ba7b810-9dad-11d1-80b4-00c04fd430cg	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	\N	6ba7b810-9dad-11d1-80b4-00c04fd430cg	\N
\.
COPY h.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	\N	6ba7b810-9dad-11d1-80b4-00c04fd430c	\N
\.
COPY tc.ty FROM STDIN;
1	t	2024-01-01	\N	\N	\N	\N
2	\N	\N	\N	\N	6ba7b810-9dad-11d1-80b4-00c04fd430c	\N
\.

-- tcopy's reader gives the rest to Postgres' reader from a row with a bare
-- "\r" (an error: the lines end in "\n"), and from a "\." row (the end);
-- HEADER MATCH refused and accepted; csv with quoted newlines before the
-- error, whose line numbers count them
TRUNCATE h.ty;
TRUNCATE tc.ty;
-- a bare "\r" in the second row
COPY h.ty (k, b) FROM PROGRAM $$printf '1\tt\n2\tf\rx\n3\tt\n'$$;
COPY tc.ty (k, b) FROM PROGRAM $$printf '1\tt\n2\tf\rx\n3\tt\n'$$;
-- lines that end in "\r\n" throughout, then one in "\n"
COPY h.ty (k, b) FROM PROGRAM $$printf '1\tt\r\n2\tf\r\n3\tt\n'$$;
COPY tc.ty (k, b) FROM PROGRAM $$printf '1\tt\r\n2\tf\r\n3\tt\n'$$;
-- "\r\n" throughout: loaded
COPY h.ty (k, b) FROM PROGRAM $$printf '1\tt\r\n2\tf\r\n'$$;
COPY tc.ty (k, b) FROM PROGRAM $$printf '1\tt\r\n2\tf\r\n'$$;
-- the end-of-data marker: what follows it is not read
COPY h.ty (k, b) FROM PROGRAM $$printf '3\tt\n4\tf\n\\.\nnot\ta row\n'$$;
COPY tc.ty (k, b) FROM PROGRAM $$printf '3\tt\n4\tf\n\\.\nnot\ta row\n'$$;
SELECT * FROM ty_check;
-- HEADER MATCH: a column name that is not the column's, then the right ones
COPY h.ty (k, b, d) FROM PROGRAM $$printf 'k,b,dd\n5,t,2024-01-01\n'$$ (FORMAT csv, HEADER match);
COPY tc.ty (k, b, d) FROM PROGRAM $$printf 'k,b,dd\n5,t,2024-01-01\n'$$ (FORMAT csv, HEADER match);
COPY h.ty (k, b, d) FROM PROGRAM $$printf 'k,"b",d\n5,t,2024-01-01\n'$$ (FORMAT csv, HEADER match);
COPY tc.ty (k, b, d) FROM PROGRAM $$printf 'k,"b",d\n5,t,2024-01-01\n'$$ (FORMAT csv, HEADER match);
-- csv: each quoted newline counts as a line, so that the bad value of the
-- third record is reported on line 6
COPY h.ty (k, b, u) FROM PROGRAM $$printf '6,"t",\n7,"\nf\n",\n8,t,"not\na uuid"\n'$$ (FORMAT csv);
COPY tc.ty (k, b, u) FROM PROGRAM $$printf '6,"t",\n7,"\nf\n",\n8,t,"not\na uuid"\n'$$ (FORMAT csv);
SELECT * FROM ty_check;
SELECT * FROM tc.ty ORDER BY k;

-- numeric(14,2), numeric, float8 and float4: the plain decimals tcopy
-- converts (numeric_send's bytes, Clinger's exact floats) and the rest
-- (rounding to the scale, exponents, NaN, blanks, more significant digits
-- than the fast path takes) by the input functions; then a numeric field
-- too wide for numeric(14,2)
CREATE TABLE h.num (k int NOT NULL, n numeric(14,2), nn numeric, f8 float8, f4 float4);
CREATE FOREIGN TABLE tc.num (k int NOT NULL, n numeric(14,2), nn numeric, f8 float8, f4 float4)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_typed.num');
TRUNCATE tc.num;
COPY h.num FROM STDIN;
1	-72722945.08	-72722945.08	913.10966383345	3.14159
2	0.5	0.5	-278.871891684305	-0.1
3	-0.00	-0.00	0.1	16777217
4	000123.4	000123.4000	1234567890123456	1234567.5
5	123456789012.34	123456789012.34	-0	0.0000000001
6	1.234	1.23456789012345678901234567890	5.	-0
7	-.5	-.5	.5	5.
8	1e3	1e3	1e-5	12345678
9	NaN	NaN	123456789012345	.25
10	 7 	10000.0001	0.000000000000000000001	1e3
11	999999999999.99	-0.0000001	-9007199254740993	NaN
12	0	0000	00000000000000000000000.5	3.4028235
\.
COPY tc.num FROM STDIN;
1	-72722945.08	-72722945.08	913.10966383345	3.14159
2	0.5	0.5	-278.871891684305	-0.1
3	-0.00	-0.00	0.1	16777217
4	000123.4	000123.4000	1234567890123456	1234567.5
5	123456789012.34	123456789012.34	-0	0.0000000001
6	1.234	1.23456789012345678901234567890	5.	-0
7	-.5	-.5	.5	5.
8	1e3	1e3	1e-5	12345678
9	NaN	NaN	123456789012345	.25
10	 7 	10000.0001	0.000000000000000000001	1e3
11	999999999999.99	-0.0000001	-9007199254740993	NaN
12	0	0000	00000000000000000000000.5	3.4028235
\.
SELECT (SELECT count(*) FROM (SELECT r::text FROM h.num r EXCEPT ALL SELECT r::text FROM tc.num r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.num r EXCEPT ALL SELECT r::text FROM h.num r) d) AS tc_only,
	(SELECT count(*) FROM tc.num) AS tc_rows;
SELECT k, n, nn, f8, float8send(f8) AS f8_bits, f4, float4send(f4) AS f4_bits, numeric_send(n) AS n_bytes
FROM tc.num ORDER BY k;
COPY h.num FROM STDIN;
13	1234567890123.4	0	0	0
\.
COPY tc.num FROM STDIN;
13	1234567890123.4	0	0	0
\.

-- rows longer than the reader's first 1 MB buffer, which grows: text with
-- an escape at the end of a 3 MB field, csv with a quoted field of 2.5 MB
-- holding a doubled quote and a newline; serial, then by parallel workers
CREATE TABLE h.long (k int NOT NULL, t text);
CREATE FOREIGN TABLE tc.long (k int NOT NULL, t text)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_typed.long');
TRUNCATE tc.long;
COPY h.long FROM PROGRAM $$perl -e 'print "1\t", "x" x 3000000, "\\t\n2\tshort\n"'$$;
COPY h.long FROM PROGRAM $$perl -e 'print "3,\"", "y" x 2500000, "\"\"\n\"\n4,x\n"'$$ (FORMAT csv);
COPY tc.long FROM PROGRAM $$perl -e 'print "1\t", "x" x 3000000, "\\t\n2\tshort\n"'$$;
COPY tc.long FROM PROGRAM $$perl -e 'print "3,\"", "y" x 2500000, "\"\"\n\"\n4,x\n"'$$ (FORMAT csv);
SELECT k, length(t), md5(t) FROM tc.long ORDER BY k;
SELECT (SELECT count(*) FROM (SELECT k, md5(t) FROM h.long EXCEPT ALL SELECT k, md5(t) FROM tc.long) d) AS heap_only;
TRUNCATE tc.long;
SET tcopy.copy_parallel_threshold = 0;
COPY tc.long FROM PROGRAM $$perl -e 'print "1\t", "x" x 3000000, "\\t\n2\tshort\n"'$$;
COPY tc.long FROM PROGRAM $$perl -e 'print "3,\"", "y" x 2500000, "\"\"\n\"\n4,x\n"'$$ (FORMAT csv);
RESET tcopy.copy_parallel_threshold;
SELECT (SELECT count(*) FROM (SELECT k, md5(t) FROM h.long EXCEPT ALL SELECT k, md5(t) FROM tc.long) d) AS heap_only,
	(SELECT count(*) FROM tc.long) AS tc_rows;

-- found by review: a text DELIMITER that is a hex digit, which "\x4A"
-- takes as its second digit (Postgres' reader reads such a COPY), and
-- HEADER MATCH of an empty input, which Postgres refuses
CREATE TABLE h.dl (k int NOT NULL, v text);
CREATE FOREIGN TABLE tc.dl (k int NOT NULL, v text)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_typed.dl');
TRUNCATE tc.dl;
COPY h.dl FROM PROGRAM $$printf '1A\\x4A5\n2AB\\x41\n'$$ (DELIMITER 'A');
COPY tc.dl FROM PROGRAM $$printf '1A\\x4A5\n2AB\\x41\n'$$ (DELIMITER 'A');
SELECT (SELECT count(*) FROM (SELECT r::text FROM h.dl r EXCEPT ALL SELECT r::text FROM tc.dl r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.dl r EXCEPT ALL SELECT r::text FROM h.dl r) d) AS tc_only;
SELECT * FROM tc.dl ORDER BY k;
COPY h.dl FROM PROGRAM 'true' (HEADER match);
COPY tc.dl FROM PROGRAM 'true' (HEADER match);
COPY h.dl FROM PROGRAM 'true' (FORMAT csv, HEADER match);
COPY tc.dl FROM PROGRAM 'true' (FORMAT csv, HEADER match);
COPY h.dl FROM PROGRAM 'true' (HEADER true);
COPY tc.dl FROM PROGRAM 'true' (HEADER true);

-- found by test/tools/copy_diff.py: a typmod's rounding past the last
-- timestamp, which Postgres stores and returns; the tcopy table took the
-- row and then refused it to every read (timestamp_recv's range check)
CREATE TABLE h.tr (k int NOT NULL, ts timestamp(2), tz timestamptz(0));
CREATE FOREIGN TABLE tc.tr (k int NOT NULL, ts timestamp(2), tz timestamptz(0))
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_typed.tr');
TRUNCATE tc.tr;
COPY h.tr FROM STDIN;
1	294276-12-31 23:59:59.999	294276-12-31 23:59:59.5+00
2	294276-12-31 23:59:59.99	294276-12-31 23:59:59.4+00
\.
COPY tc.tr FROM STDIN;
1	294276-12-31 23:59:59.999	294276-12-31 23:59:59.5+00
2	294276-12-31 23:59:59.99	294276-12-31 23:59:59.4+00
\.
INSERT INTO h.tr VALUES (3, '294276-12-31 23:59:59.996', '294276-12-31 23:59:59.9+00');
INSERT INTO tc.tr VALUES (3, '294276-12-31 23:59:59.996', '294276-12-31 23:59:59.9+00');
SELECT * FROM tc.tr ORDER BY k;
SELECT (SELECT count(*) FROM (SELECT r::text FROM h.tr r EXCEPT ALL SELECT r::text FROM tc.tr r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.tr r EXCEPT ALL SELECT r::text FROM h.tr r) d) AS tc_only;
SELECT k FROM tc.tr WHERE ts > '294276-12-31 23:59:59.99' ORDER BY k;
SELECT max(ts), max(tz), count(*) FROM tc.tr;
SELECT max(ts), max(tz), count(*) FROM h.tr;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP VIEW IF EXISTS ty_check;
DROP SCHEMA h, tc CASCADE;
RESET client_min_messages;
