--
-- tcopy_fields: COPY's fields converted straight to wire values
-- (tcopy.raw_fields, copy_fields.c) give what the input functions give:
-- the same input loaded with raw_fields on, with it off, and into a heap
-- table holds the same rows, and every bad field fails with the heap's
-- error and CONTEXT (h.f and tc.f share the name "f").
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE DOMAIN f_nn AS int NOT NULL;
CREATE SCHEMA h;
CREATE SCHEMA tc;
CREATE TABLE h.f (
	i4 int4 NOT NULL, i2 int2, i8 int8, f8 float8, t text, vc varchar(6),
	vcn varchar, bc char(5), bcn bpchar, n numeric, dom f_nn, b bool, j jsonb
);
CREATE FOREIGN TABLE tc.f (
	i4 int4 NOT NULL, i2 int2, i8 int8, f8 float8, t text, vc varchar(6),
	vcn varchar, bc char(5), bcn bpchar, n numeric, dom f_nn, b bool, j jsonb
) SERVER ts OPTIONS (key 'i4', table_name 'tcopy_fields.f');
TRUNCATE tc.f;
CREATE VIEW f_check AS
SELECT (SELECT count(*) FROM h.f) AS heap_rows,
	(SELECT count(*) FROM tc.f) AS tc_rows,
	(SELECT count(*) FROM (SELECT r::text FROM h.f r
						   EXCEPT ALL SELECT r::text FROM tc.f r) d) AS heap_only,
	(SELECT count(*) FROM (SELECT r::text FROM tc.f r
						   EXCEPT ALL SELECT r::text FROM h.f r) d) AS tc_only,
	-- char(n)'s stored blanks, which comparisons and casts to text ignore
	(SELECT count(*) FROM (SELECT i4, bpcharsend(bc) FROM h.f
						   EXCEPT ALL SELECT i4, bpcharsend(bc) FROM tc.f) d) AS bc_padding_differs;

-- every fast type at its edges, in text format: blanks around numbers,
-- signs, extreme values, NaN and infinities, multibyte characters (counted
-- as characters by char(n) and varchar(n)), trailing blanks clipped, NULLs
SET search_path = h, public;
COPY f FROM STDIN;
1	-32768	-9223372036854775808	-1.5	plain	abcdef	any length at all	ab	x	1.50	1	t	{"a": 1}
2	32767	9223372036854775807	1e-310	é	ééé	é	é	éé	-0	2	f	[]
3	 12 	  +7	NaN	\N	éééé	\N	abcde	  	1e3	3	yes	null
4	-0	0	-Infinity		abc   	 	abcde   	\N	\N	4	\N	\N
5	\N	\N	  1.25e2  	tab\there	a	b	\N	ab  	0	5	off	"s"
\.
SET search_path = tc, public;
COPY f FROM STDIN;
1	-32768	-9223372036854775808	-1.5	plain	abcdef	any length at all	ab	x	1.50	1	t	{"a": 1}
2	32767	9223372036854775807	1e-310	é	ééé	é	é	éé	-0	2	f	[]
3	 12 	  +7	NaN	\N	éééé	\N	abcde	  	1e3	3	yes	null
4	-0	0	-Infinity		abc   	 	abcde   	\N	\N	4	\N	\N
5	\N	\N	  1.25e2  	tab\there	a	b	\N	ab  	0	5	off	"s"
\.
SELECT * FROM f_check;
SELECT i4, bc, octet_length(bpcharsend(bc)) AS bc_bytes, vc, bcn, f8 FROM tc.f ORDER BY i4;

-- the same with raw_fields off: the same rows
TRUNCATE tc.f;
SET tcopy.raw_fields = off;
COPY f FROM STDIN;
1	-32768	-9223372036854775808	-1.5	plain	abcdef	any length at all	ab	x	1.50	1	t	{"a": 1}
2	32767	9223372036854775807	1e-310	é	ééé	é	é	éé	-0	2	f	[]
3	 12 	  +7	NaN	\N	éééé	\N	abcde	  	1e3	3	yes	null
4	-0	0	-Infinity		abc   	 	abcde   	\N	\N	4	\N	\N
5	\N	\N	  1.25e2  	tab\there	a	b	\N	ab  	0	5	off	"s"
\.
RESET tcopy.raw_fields;
SELECT * FROM f_check;

-- and through the protobuf-c encoder, from an arena and with malloc
TRUNCATE tc.f;
SET tcopy.encoder = protobuf;
COPY f FROM STDIN;
1	-32768	-9223372036854775808	-1.5	plain	abcdef	any length at all	ab	x	1.50	1	t	{"a": 1}
2	32767	9223372036854775807	1e-310	é	ééé	é	é	éé	-0	2	f	[]
3	 12 	  +7	NaN	\N	éééé	\N	abcde	  	1e3	3	yes	null
4	-0	0	-Infinity		abc   	 	abcde   	\N	\N	4	\N	\N
5	\N	\N	  1.25e2  	tab\there	a	b	\N	ab  	0	5	off	"s"
\.
SELECT * FROM f_check;
TRUNCATE tc.f;
SET tcopy.alloc_mode = malloc;
COPY f FROM STDIN;
1	-32768	-9223372036854775808	-1.5	plain	abcdef	any length at all	ab	x	1.50	1	t	{"a": 1}
2	32767	9223372036854775807	1e-310	é	ééé	é	é	éé	-0	2	f	[]
3	 12 	  +7	NaN	\N	éééé	\N	abcde	  	1e3	3	yes	null
4	-0	0	-Infinity		abc   	 	abcde   	\N	\N	4	\N	\N
5	\N	\N	  1.25e2  	tab\there	a	b	\N	ab  	0	5	off	"s"
\.
RESET tcopy.encoder;
RESET tcopy.alloc_mode;
SELECT * FROM f_check;

-- CSV: quoted fields, a quoted empty string, FORCE_NULL, FORCE_NOT_NULL,
-- and a column list in another order than the table's
TRUNCATE h.f;
TRUNCATE tc.f;
SET search_path = h, public;
COPY f (dom, t, i4, bc, vc, f8) FROM STDIN (FORMAT csv, FORCE_NULL (t), FORCE_NOT_NULL (vc));
7,"a,b",10,"x y",,2.5
8,"",11,,"",
9,,12,"",abc,"3"
\.
SET search_path = tc, public;
COPY f (dom, t, i4, bc, vc, f8) FROM STDIN (FORMAT csv, FORCE_NULL (t), FORCE_NOT_NULL (vc));
7,"a,b",10,"x y",,2.5
8,"",11,,"",
9,,12,"",abc,"3"
\.
SELECT * FROM f_check;
SELECT i4, t IS NULL AS t_null, t, vc IS NULL AS vc_null, bc, dom FROM tc.f WHERE i4 >= 10 ORDER BY i4;

-- date, time and timestamps travel as their send format, written without
-- the send function: their edges read back equal to a heap table's
CREATE TABLE h.dt (id int NOT NULL, d date, t time, ts timestamp, tz timestamptz);
CREATE FOREIGN TABLE tc.dt (id int NOT NULL, d date, t time, ts timestamp, tz timestamptz)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_fields.dt');
TRUNCATE tc.dt;
SET search_path = h, public;
COPY dt FROM STDIN;
1	2024-02-29	00:00:00	2024-02-29 12:34:56.789012	2024-02-29 12:34:56.789012+05:30
2	4713-01-01 BC	24:00:00	294276-12-31 23:59:59.999999	4713-11-24 00:00:00+00 BC
3	infinity	23:59:59.999999	-infinity	infinity
4	-infinity	12:00	1999-12-31 23:59:59	\N
\.
SET search_path = tc, public;
COPY dt FROM STDIN;
1	2024-02-29	00:00:00	2024-02-29 12:34:56.789012	2024-02-29 12:34:56.789012+05:30
2	4713-01-01 BC	24:00:00	294276-12-31 23:59:59.999999	4713-11-24 00:00:00+00 BC
3	infinity	23:59:59.999999	-infinity	infinity
4	-infinity	12:00	1999-12-31 23:59:59	\N
\.
SELECT (SELECT count(*) FROM tc.dt) AS tc_rows,
	(SELECT count(*) FROM (SELECT * FROM h.dt EXCEPT ALL SELECT * FROM tc.dt) d) AS heap_only,
	(SELECT count(*) FROM (SELECT * FROM tc.dt EXCEPT ALL SELECT * FROM h.dt) d) AS tc_only;
SELECT * FROM tc.dt ORDER BY id;

-- bad fields: each fails as on the heap table, and leaves nothing
SET tcopy.batch_rows = 1;
SET search_path = h, public;
COPY f (i4, i2) FROM STDIN;
100	1
101	abc
\.
COPY f (i4, i2) FROM STDIN;
100	40000
\.
COPY f (i4, i8) FROM STDIN;
100	9223372036854775808
\.
COPY f (i4, f8) FROM STDIN;
100	1e400
\.
COPY f (i4, f8) FROM STDIN;
100	1.5x
\.
COPY f (i4, vc) FROM STDIN;
100	abcdefg
\.
COPY f (i4, bc) FROM STDIN;
100	abcdef
\.
COPY f (i4, bc) FROM STDIN;
100	éééééé
\.
COPY f (i4, dom) FROM STDIN;
100	\N
\.
COPY f (i2, i4) FROM STDIN;
1	\N
\.
COPY f (i2, i4) FROM STDIN;
x
\.
COPY f (i4, i2) FROM STDIN;
100
\.
COPY f (i4, i2) FROM STDIN;
100	1	2
\.
SET search_path = tc, public;
COPY f (i4, i2) FROM STDIN;
100	1
101	abc
\.
COPY f (i4, i2) FROM STDIN;
100	40000
\.
COPY f (i4, i8) FROM STDIN;
100	9223372036854775808
\.
COPY f (i4, f8) FROM STDIN;
100	1e400
\.
COPY f (i4, f8) FROM STDIN;
100	1.5x
\.
COPY f (i4, vc) FROM STDIN;
100	abcdefg
\.
COPY f (i4, bc) FROM STDIN;
100	abcdef
\.
COPY f (i4, bc) FROM STDIN;
100	éééééé
\.
COPY f (i4, dom) FROM STDIN;
100	\N
\.
COPY f (i2, i4) FROM STDIN;
1	\N
\.
COPY f (i2, i4) FROM STDIN;
x
\.
COPY f (i4, i2) FROM STDIN;
100
\.
COPY f (i4, i2) FROM STDIN;
100	1	2
\.
SELECT * FROM f_check;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP VIEW IF EXISTS f_check;
DROP SCHEMA h, tc CASCADE;
DROP DOMAIN f_nn;
