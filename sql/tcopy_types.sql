--
-- tcopy_types: every common type makes the round trip through a tcopy table
-- unchanged.  The same COPY data goes into a heap table and a tcopy table;
-- both must then hold the same values, compared as values and as text (so
-- that -0, NaN, numeric scale, padding and json whitespace count).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE TYPE ty_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN ty_posint AS int CHECK (VALUE > 0);
CREATE DOMAIN ty_code AS text CHECK (VALUE ~ '^[A-Z]{3}$');
CREATE TYPE ty_pair AS (a int, b text);

CREATE TABLE ty_heap (
	id int NOT NULL,
	b bool,
	i2 int2,
	i4 int4,
	i8 int8,
	f4 float4,
	f8 float8,
	n numeric,
	n2 numeric(12,4),
	t text,
	vc varchar(10),
	c char(5),
	ba bytea,
	d date,
	tm time,
	ttz timetz,
	ts timestamp,
	tstz timestamptz,
	iv interval,
	u uuid,
	j json,
	jb jsonb,
	ip inet,
	cd cidr,
	mac macaddr,
	bits varbit,
	ia int[],
	ta text[],
	r int4range,
	mood ty_mood,
	pos ty_posint,
	code ty_code,
	pair ty_pair,
	x xml
);
CREATE FOREIGN TABLE ty_tc (
	id int NOT NULL,
	b bool,
	i2 int2,
	i4 int4,
	i8 int8,
	f4 float4,
	f8 float8,
	n numeric,
	n2 numeric(12,4),
	t text,
	vc varchar(10),
	c char(5),
	ba bytea,
	d date,
	tm time,
	ttz timetz,
	ts timestamp,
	tstz timestamptz,
	iv interval,
	u uuid,
	j json,
	jb jsonb,
	ip inet,
	cd cidr,
	mac macaddr,
	bits varbit,
	ia int[],
	ta text[],
	r int4range,
	mood ty_mood,
	pos ty_posint,
	code ty_code,
	pair ty_pair,
	x xml
) SERVER ts OPTIONS (key 'id');
-- the same columns, loaded by INSERT ... SELECT instead of COPY
CREATE FOREIGN TABLE ty_ins (
	id int NOT NULL,
	b bool,
	i2 int2,
	i4 int4,
	i8 int8,
	f4 float4,
	f8 float8,
	n numeric,
	n2 numeric(12,4),
	t text,
	vc varchar(10),
	c char(5),
	ba bytea,
	d date,
	tm time,
	ttz timetz,
	ts timestamp,
	tstz timestamptz,
	iv interval,
	u uuid,
	j json,
	jb jsonb,
	ip inet,
	cd cidr,
	mac macaddr,
	bits varbit,
	ia int[],
	ta text[],
	r int4range,
	mood ty_mood,
	pos ty_posint,
	code ty_code,
	pair ty_pair,
	x xml
) SERVER ts OPTIONS (key 'id');
-- and by COPY with the hook off (COPY through the FDW's insert path)
CREATE FOREIGN TABLE ty_nohook (
	id int NOT NULL,
	b bool,
	i2 int2,
	i4 int4,
	i8 int8,
	f4 float4,
	f8 float8,
	n numeric,
	n2 numeric(12,4),
	t text,
	vc varchar(10),
	c char(5),
	ba bytea,
	d date,
	tm time,
	ttz timetz,
	ts timestamp,
	tstz timestamptz,
	iv interval,
	u uuid,
	j json,
	jb jsonb,
	ip inet,
	cd cidr,
	mac macaddr,
	bits varbit,
	ia int[],
	ta text[],
	r int4range,
	mood ty_mood,
	pos ty_posint,
	code ty_code,
	pair ty_pair,
	x xml
) SERVER ts OPTIONS (key 'id');
-- a table rerun against the same tserver starts empty
TRUNCATE ty_tc, ty_ins, ty_nohook;

-- the same data, twice
COPY ty_heap FROM STDIN;
1	t	1	2	3	1.5	2.25	3.14159	12.5	hello	varchar	abc	\\x68656c6c6f	2024-02-29	12:34:56.789	12:34:56+05:30	2024-02-29 12:34:56.123456	2024-02-29 12:34:56.123456+00	1 year 2 mons 3 days 04:05:06.7	a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11	{"a": 1,  "a": 2 ,"b":[1, 2]}	{"a": 1, "a": 2, "b": [1, 2]}	192.168.0.1/24	10.0.0.0/8	08:00:2b:01:02:03	10101	{1,NULL,3}	{"a b",NULL,"",x}	[1,10)	happy	5	ABC	(1,two)	<a>x</a>
2	f	-32768	-2147483648	-9223372036854775808	-Infinity	-Infinity	-0.000000000000000000015	-99999999.9999				\\x	4713-01-01 BC	00:00:00	00:00:00+15:59	4713-01-01 00:00:00 BC	-infinity	-178000000 years	00000000-0000-0000-0000-000000000000	""	[]	0.0.0.0/0	0.0.0.0/0	00:00:00:00:00:00		{}	{}	empty	sad	1	AAA	(,)	
3	true	32767	2147483647	9223372036854775807	Infinity	Infinity	123456789012345678901234567890.123456789012345678901234567890	99999999.9999	héllo wörld ☃ 😀 日本語	ÄÖÜäöüßéèê	ñandú	\\x00ff00ff	5874897-12-31	24:00:00	24:00:00-15:59	294276-12-31 23:59:59.999999	infinity	178000000 years	ffffffff-ffff-ffff-ffff-ffffffffffff	{"k": "\\u00e9\\ud83d\\ude00", "k": null}	{"b": {"c": [true, false, null, 1.50]}}	2001:db8::1/64	2001:db8::/32	ff:ff:ff:ff:ff:ff	1111000011110000111	{{1,2},{3,4}}	{"\\\\back\\\\slash","q\\"uote","{brace}","NULL"}	[-2147483648,2147483647)	ok	2147483647	ZZZ	(2147483647,"a ""quoted"", b\\\\c")	<r a="1">&amp;</r>
4	false	0	0	0	-0	-0	NaN	NaN	a\\b\\\\c\tTAB\nNL\rCR\\N \101\x42	\\N	a  	\\x000102	epoch	23:59:59.999999	23:59:59.999999+00	epoch	2000-01-01 00:00:00+14	1 day -1 second	{A0EEBC99-9C0B4EF8-BB6D6BB9BD380A11}	[1, 2,   3]	null	10.1.2.3	10.1.2.0/24	08-00-2b-01-02-03	0	[0:1]={7,8}	{NULL}	(,)	ok	42	XYZ	(0,"")	text only
5	yes	+5	 42 	-0	3.4028235e+38	1.7976931348623157e+308	0001.500	1.23456	\N	\N	\N	\N	20240229	1:2:3	\N	2024-2-29 1:2:3	2024-02-29 12:00:00 Europe/Paris	P1Y2M3DT4H5M6S	A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11	\N	\N	::ffff:1.2.3.4	192.168/16	0800.2b01.0203	\N	{ 1 , 2 }	\N	(0,5]	\N	7	QQQ	\N	\N
6	on	\N	\N	\N	1.4e-45	4.9e-324	1e-20	0.00005	\N	\N	\N	\N	\N	\N	\N	\N	1999-12-31 23:59:59.999999-08	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
7	off	\N	\N	\N	NaN	NaN	nan	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	-1 microsecond	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
8	1	\N	\N	\N	-3.4028235e+38	-1.7976931348623157e+308	9.999e100	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
9	0	\N	\N	\N	0.1	0.1	0.1	\N	\N	\N	\N	\N	2000-02-29	\N	\N	0001-01-01 00:00:00 BC	4714-11-24 00:00:00+00 BC	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
10	\N	 -1	\N	+9223372036854775807	  1.5  	1e3	\N	\N	 leading and trailing 	\N	x	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
11	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
12	\N	\N	\N	\N	\N	\N	\N	\N	\\\\	\N	\N	\\\\	\N	\N	\N	\N	\N	\N	\N	{}	{}	\N	\N	\N	\N	{NULL,NULL}	{"",""}	\N	\N	\N	\N	\N	\N
\.
COPY ty_tc FROM STDIN;
1	t	1	2	3	1.5	2.25	3.14159	12.5	hello	varchar	abc	\\x68656c6c6f	2024-02-29	12:34:56.789	12:34:56+05:30	2024-02-29 12:34:56.123456	2024-02-29 12:34:56.123456+00	1 year 2 mons 3 days 04:05:06.7	a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11	{"a": 1,  "a": 2 ,"b":[1, 2]}	{"a": 1, "a": 2, "b": [1, 2]}	192.168.0.1/24	10.0.0.0/8	08:00:2b:01:02:03	10101	{1,NULL,3}	{"a b",NULL,"",x}	[1,10)	happy	5	ABC	(1,two)	<a>x</a>
2	f	-32768	-2147483648	-9223372036854775808	-Infinity	-Infinity	-0.000000000000000000015	-99999999.9999				\\x	4713-01-01 BC	00:00:00	00:00:00+15:59	4713-01-01 00:00:00 BC	-infinity	-178000000 years	00000000-0000-0000-0000-000000000000	""	[]	0.0.0.0/0	0.0.0.0/0	00:00:00:00:00:00		{}	{}	empty	sad	1	AAA	(,)	
3	true	32767	2147483647	9223372036854775807	Infinity	Infinity	123456789012345678901234567890.123456789012345678901234567890	99999999.9999	héllo wörld ☃ 😀 日本語	ÄÖÜäöüßéèê	ñandú	\\x00ff00ff	5874897-12-31	24:00:00	24:00:00-15:59	294276-12-31 23:59:59.999999	infinity	178000000 years	ffffffff-ffff-ffff-ffff-ffffffffffff	{"k": "\\u00e9\\ud83d\\ude00", "k": null}	{"b": {"c": [true, false, null, 1.50]}}	2001:db8::1/64	2001:db8::/32	ff:ff:ff:ff:ff:ff	1111000011110000111	{{1,2},{3,4}}	{"\\\\back\\\\slash","q\\"uote","{brace}","NULL"}	[-2147483648,2147483647)	ok	2147483647	ZZZ	(2147483647,"a ""quoted"", b\\\\c")	<r a="1">&amp;</r>
4	false	0	0	0	-0	-0	NaN	NaN	a\\b\\\\c\tTAB\nNL\rCR\\N \101\x42	\\N	a  	\\x000102	epoch	23:59:59.999999	23:59:59.999999+00	epoch	2000-01-01 00:00:00+14	1 day -1 second	{A0EEBC99-9C0B4EF8-BB6D6BB9BD380A11}	[1, 2,   3]	null	10.1.2.3	10.1.2.0/24	08-00-2b-01-02-03	0	[0:1]={7,8}	{NULL}	(,)	ok	42	XYZ	(0,"")	text only
5	yes	+5	 42 	-0	3.4028235e+38	1.7976931348623157e+308	0001.500	1.23456	\N	\N	\N	\N	20240229	1:2:3	\N	2024-2-29 1:2:3	2024-02-29 12:00:00 Europe/Paris	P1Y2M3DT4H5M6S	A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11	\N	\N	::ffff:1.2.3.4	192.168/16	0800.2b01.0203	\N	{ 1 , 2 }	\N	(0,5]	\N	7	QQQ	\N	\N
6	on	\N	\N	\N	1.4e-45	4.9e-324	1e-20	0.00005	\N	\N	\N	\N	\N	\N	\N	\N	1999-12-31 23:59:59.999999-08	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
7	off	\N	\N	\N	NaN	NaN	nan	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	-1 microsecond	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
8	1	\N	\N	\N	-3.4028235e+38	-1.7976931348623157e+308	9.999e100	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
9	0	\N	\N	\N	0.1	0.1	0.1	\N	\N	\N	\N	\N	2000-02-29	\N	\N	0001-01-01 00:00:00 BC	4714-11-24 00:00:00+00 BC	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
10	\N	 -1	\N	+9223372036854775807	  1.5  	1e3	\N	\N	 leading and trailing 	\N	x	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
11	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
12	\N	\N	\N	\N	\N	\N	\N	\N	\\\\	\N	\N	\\\\	\N	\N	\N	\N	\N	\N	\N	{}	{}	\N	\N	\N	\N	{NULL,NULL}	{"",""}	\N	\N	\N	\N	\N	\N
\.
SET tcopy.copy_hook = off;
COPY ty_nohook FROM STDIN;
1	t	1	2	3	1.5	2.25	3.14159	12.5	hello	varchar	abc	\\x68656c6c6f	2024-02-29	12:34:56.789	12:34:56+05:30	2024-02-29 12:34:56.123456	2024-02-29 12:34:56.123456+00	1 year 2 mons 3 days 04:05:06.7	a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11	{"a": 1,  "a": 2 ,"b":[1, 2]}	{"a": 1, "a": 2, "b": [1, 2]}	192.168.0.1/24	10.0.0.0/8	08:00:2b:01:02:03	10101	{1,NULL,3}	{"a b",NULL,"",x}	[1,10)	happy	5	ABC	(1,two)	<a>x</a>
2	f	-32768	-2147483648	-9223372036854775808	-Infinity	-Infinity	-0.000000000000000000015	-99999999.9999				\\x	4713-01-01 BC	00:00:00	00:00:00+15:59	4713-01-01 00:00:00 BC	-infinity	-178000000 years	00000000-0000-0000-0000-000000000000	""	[]	0.0.0.0/0	0.0.0.0/0	00:00:00:00:00:00		{}	{}	empty	sad	1	AAA	(,)	
3	true	32767	2147483647	9223372036854775807	Infinity	Infinity	123456789012345678901234567890.123456789012345678901234567890	99999999.9999	héllo wörld ☃ 😀 日本語	ÄÖÜäöüßéèê	ñandú	\\x00ff00ff	5874897-12-31	24:00:00	24:00:00-15:59	294276-12-31 23:59:59.999999	infinity	178000000 years	ffffffff-ffff-ffff-ffff-ffffffffffff	{"k": "\\u00e9\\ud83d\\ude00", "k": null}	{"b": {"c": [true, false, null, 1.50]}}	2001:db8::1/64	2001:db8::/32	ff:ff:ff:ff:ff:ff	1111000011110000111	{{1,2},{3,4}}	{"\\\\back\\\\slash","q\\"uote","{brace}","NULL"}	[-2147483648,2147483647)	ok	2147483647	ZZZ	(2147483647,"a ""quoted"", b\\\\c")	<r a="1">&amp;</r>
4	false	0	0	0	-0	-0	NaN	NaN	a\\b\\\\c\tTAB\nNL\rCR\\N \101\x42	\\N	a  	\\x000102	epoch	23:59:59.999999	23:59:59.999999+00	epoch	2000-01-01 00:00:00+14	1 day -1 second	{A0EEBC99-9C0B4EF8-BB6D6BB9BD380A11}	[1, 2,   3]	null	10.1.2.3	10.1.2.0/24	08-00-2b-01-02-03	0	[0:1]={7,8}	{NULL}	(,)	ok	42	XYZ	(0,"")	text only
5	yes	+5	 42 	-0	3.4028235e+38	1.7976931348623157e+308	0001.500	1.23456	\N	\N	\N	\N	20240229	1:2:3	\N	2024-2-29 1:2:3	2024-02-29 12:00:00 Europe/Paris	P1Y2M3DT4H5M6S	A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11	\N	\N	::ffff:1.2.3.4	192.168/16	0800.2b01.0203	\N	{ 1 , 2 }	\N	(0,5]	\N	7	QQQ	\N	\N
6	on	\N	\N	\N	1.4e-45	4.9e-324	1e-20	0.00005	\N	\N	\N	\N	\N	\N	\N	\N	1999-12-31 23:59:59.999999-08	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
7	off	\N	\N	\N	NaN	NaN	nan	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	-1 microsecond	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
8	1	\N	\N	\N	-3.4028235e+38	-1.7976931348623157e+308	9.999e100	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
9	0	\N	\N	\N	0.1	0.1	0.1	\N	\N	\N	\N	\N	2000-02-29	\N	\N	0001-01-01 00:00:00 BC	4714-11-24 00:00:00+00 BC	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
10	\N	 -1	\N	+9223372036854775807	  1.5  	1e3	\N	\N	 leading and trailing 	\N	x	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
11	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N	\N
12	\N	\N	\N	\N	\N	\N	\N	\N	\\\\	\N	\N	\\\\	\N	\N	\N	\N	\N	\N	\N	{}	{}	\N	\N	\N	\N	{NULL,NULL}	{"",""}	\N	\N	\N	\N	\N	\N
\.
RESET tcopy.copy_hook;
INSERT INTO ty_ins SELECT * FROM ty_heap;

SELECT (SELECT count(*) FROM ty_heap) AS heap, (SELECT count(*) FROM ty_tc) AS tc,
	(SELECT count(*) FROM ty_ins) AS ins, (SELECT count(*) FROM ty_nohook) AS nohook;

-- as values (json and xml have no equality: as text)
SELECT id, b, i2, i4, i8, f4, f8, n, n2, t, vc, c, ba, d, tm, ttz, ts, tstz, iv, u, j::text, jb, ip, cd, mac, bits, ia, ta, r, mood, pos, code, pair, x::text FROM ty_heap
EXCEPT ALL
SELECT id, b, i2, i4, i8, f4, f8, n, n2, t, vc, c, ba, d, tm, ttz, ts, tstz, iv, u, j::text, jb, ip, cd, mac, bits, ia, ta, r, mood, pos, code, pair, x::text FROM ty_tc;
SELECT id, b, i2, i4, i8, f4, f8, n, n2, t, vc, c, ba, d, tm, ttz, ts, tstz, iv, u, j::text, jb, ip, cd, mac, bits, ia, ta, r, mood, pos, code, pair, x::text FROM ty_tc
EXCEPT ALL
SELECT id, b, i2, i4, i8, f4, f8, n, n2, t, vc, c, ba, d, tm, ttz, ts, tstz, iv, u, j::text, jb, ip, cd, mac, bits, ia, ta, r, mood, pos, code, pair, x::text FROM ty_heap;

-- as text, whole rows
SELECT hrow::text FROM ty_heap hrow EXCEPT ALL SELECT trow::text FROM ty_tc trow;
SELECT trow::text FROM ty_tc trow EXCEPT ALL SELECT hrow::text FROM ty_heap hrow;
SELECT hrow::text FROM ty_heap hrow EXCEPT ALL SELECT trow::text FROM ty_ins trow;
SELECT trow::text FROM ty_ins trow EXCEPT ALL SELECT hrow::text FROM ty_heap hrow;
SELECT hrow::text FROM ty_heap hrow EXCEPT ALL SELECT trow::text FROM ty_nohook trow;
SELECT trow::text FROM ty_nohook trow EXCEPT ALL SELECT hrow::text FROM ty_heap hrow;

-- as text, column by column: any difference, named
SELECT hrow.id, hv.key AS "column", hv.value AS heap, tv.value AS tcopy
FROM ty_heap hrow JOIN ty_tc trow ON trow.id = hrow.id
	CROSS JOIN LATERAL json_each(row_to_json(hrow)) hv
	JOIN LATERAL json_each(row_to_json(trow)) tv ON tv.key = hv.key
WHERE hv.value::text IS DISTINCT FROM tv.value::text
ORDER BY 1, 2;

-- the values themselves
SELECT id, b, i2, i4, i8 FROM ty_tc ORDER BY id;
SELECT id, f4, f8, n, n2 FROM ty_tc ORDER BY id;
SELECT id, f4::text, f8::text, float8send(f8), float4send(f4) FROM ty_tc WHERE id IN (4, 6) ORDER BY id;
SELECT id, t, length(t), vc, c, octet_length(c), ba FROM ty_tc ORDER BY id;
SELECT id, d, tm, ttz, ts, tstz, iv FROM ty_tc ORDER BY id;
SELECT id, u, j, jb FROM ty_tc ORDER BY id;
SELECT id, ip, cd, mac, bits, ia, array_lower(ia, 1) AS ia_lower, ta, r FROM ty_tc ORDER BY id;
SELECT id, mood, pos, code, pair, (pair).b, x FROM ty_tc ORDER BY id;

-- projections and quals evaluated on fetched columns
SELECT count(*), count(f4), count(j), count(x), count(pair) FROM ty_tc;
SELECT f8, id FROM ty_tc EXCEPT ALL SELECT f8, id FROM ty_heap;
SELECT tstz, ta, jb FROM ty_heap EXCEPT ALL SELECT tstz, ta, jb FROM ty_tc;
SELECT id FROM ty_tc WHERE f8 = 'NaN' OR f4 = 'NaN' ORDER BY id;
SELECT id FROM ty_tc WHERE f8 = 0 ORDER BY id;
SELECT id FROM ty_tc WHERE t = '' OR c = '' ORDER BY id;
SELECT id FROM ty_tc WHERE ia[1] IS NULL AND ia IS NOT NULL ORDER BY id;
SELECT id FROM ty_tc WHERE mood > 'sad' ORDER BY id;
SELECT id FROM ty_tc WHERE jb @> '{"a": 2}' ORDER BY id;
SELECT id FROM ty_tc WHERE ip << '192.168.0.0/16' ORDER BY id;
SELECT id FROM ty_tc WHERE 5 <@ r ORDER BY id;

-- what is stored does not depend on the writing session's client_encoding
-- (binary send formats of jsonb and text arrays would convert to it)
CREATE FOREIGN TABLE enc_t (k int NOT NULL, j jsonb, a text[])
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_types.enc');
TRUNCATE enc_t;
SET client_encoding = 'LATIN1';
INSERT INTO enc_t VALUES (1, to_jsonb(chr(233)), ARRAY[chr(233), chr(20013)]);
RESET client_encoding;
SELECT k, j = to_jsonb(chr(233)) AS jsonb_same,
	a = ARRAY[chr(233), chr(20013)] AS array_same FROM enc_t;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE ty_heap;
DROP TYPE ty_mood, ty_pair;
DROP DOMAIN ty_posint, ty_code;

