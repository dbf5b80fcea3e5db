--
-- tcopy_values: the differential test of issue 13.  For every built-in type
-- family (and domains, enums, composites, arrays, ranges, multiranges) rows
-- are written into a heap table h_<slug> and a tcopy table t_<slug> under
-- unusual session settings (two different sets, W1 and W2) and read back
-- under other settings (R, then W1 again).  A tcopy table must give back what
-- the heap table gives: the same x::text under the reader's settings and,
-- for types with an = operator, equal values.  Then the types evolve the ways
-- Postgres allows (enum labels renamed and added, types and attributes
-- renamed, attributes added and dropped) and every row must still read as on
-- heap.  Every comparison prints one line per type: its mismatching rows
-- (0 expected).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- objects of the same name in two schemas: a reg* value written under
-- search_path sa (or sb) names the object of that schema, whatever the
-- reader's search_path
CREATE SCHEMA sa;
CREATE SCHEMA sb;
CREATE TABLE public.t (a int);
CREATE TABLE sa.t (a int);
CREATE TABLE sb.t (a int);
CREATE TYPE sa.e AS ENUM ('x');
CREATE TYPE sb.e AS ENUM ('y');
CREATE FUNCTION sa.f() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION sb.f() RETURNS int LANGUAGE sql AS 'SELECT 2';
CREATE OPERATOR sa.### (FUNCTION = int4pl, LEFTARG = int, RIGHTARG = int);
CREATE OPERATOR sb.### (FUNCTION = int4mi, LEFTARG = int, RIGHTARG = int);
CREATE TEXT SEARCH CONFIGURATION sa.cfg (COPY = simple);
CREATE TEXT SEARCH CONFIGURATION sb.cfg (COPY = simple);
CREATE COLLATION sa.coll FROM "C";
CREATE COLLATION sb.coll FROM "POSIX";

-- user types, which evolve at the end
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN dom_date AS date CHECK (VALUE <> '2000-01-01');
CREATE TYPE pair AS (iv interval, f float8, ts timestamptz, n numeric, m mood);
CREATE TYPE floatrange AS RANGE (subtype = float8);
CREATE TYPE moodrange AS RANGE (subtype = mood);

-- The driver: one row per type.  slug names the tables h_<slug> and
-- t_<slug>; has_eq says whether the type has an = operator; lits are the
-- values, as text cast to the type in the writing session (NULL: a NULL).
CREATE TABLE vt (n int PRIMARY KEY, slug text, typ text, has_eq bool, lits text[]);
INSERT INTO vt VALUES
(1, 'bool', 'bool', true, ARRAY['true', 'false', NULL, 'yes']),
(2, 'int2', 'int2', true, ARRAY['0', '-32768', '32767', NULL]),
(3, 'int4', 'int4', true, ARRAY['0', '-2147483648', '2147483647', '  42  ']),
(4, 'int8', 'int8', true, ARRAY['-9223372036854775808', '9223372036854775807', '0', NULL]),
(5, 'float4', 'float4', true, ARRAY['0.123456789012', '-0', 'NaN', 'Infinity',
	'-Infinity', '1e-40', '3.4028235e38', '0.1']),
(6, 'float8', 'float8', true, ARRAY['0.123456789012', '-0', 'NaN', 'Infinity',
	'-Infinity', '1e-310', '1.7976931348623157e308', '0.1', '1e-320', '-123456.789']),
(7, 'numeric', 'numeric', true, ARRAY['1.00', '-0.0', 'NaN', 'Infinity', '-Infinity',
	'123456789012345678901234567890.123456789', '1e-20', '0.123456789012']),
(8, 'money', 'money', true, ARRAY['1234.56', '-0.01', '0', '92233720368547758.07']),
(9, 'text', 'text', true, ARRAY['é', '日本', '', E'a"b\\c', E'tab\there\nnewline',
	'NULL', NULL, ' x ']),
(10, 'varchar', 'varchar(10)', true, ARRAY['abc', 'é日本', '', 'trail  ']),
(11, 'bpchar', 'char(5)', true, ARRAY['ab', '', 'é', 'abcde']),
(12, 'name', 'name', true, ARRAY['x', 'Name With Spaces', '日本', '']),
(13, 'bytea', 'bytea', true, ARRAY['\x00ff', '\xdeadbeef', '', 'é\\x', NULL, 'abc']),
(14, 'char', '"char"', true, ARRAY['a', ' ', 'é', '\101']),
(15, 'date', 'date', true, ARRAY['2020-02-13', '2020-02-01', 'infinity', '-infinity',
	'4713-01-01 BC', '5874897-12-31', '2020-12-01', '1999-01-08']),
(16, 'time', 'time', true, ARRAY['00:00', '23:59:59.999999', '24:00:00', '12:34:56.789']),
(17, 'timetz', 'timetz', true, ARRAY['12:34:56+05:30', '00:00-12', '23:59:59.99+14',
	'01:02:03.456-03:30']),
(18, 'timestamp', 'timestamp', true, ARRAY['2020-02-13 01:02:03.456789', '2020-02-01 00:00',
	'infinity', '-infinity', '0001-01-01 00:00 BC', '2020-12-01 23:59:59.999']),
(19, 'timestamptz', 'timestamptz', true, ARRAY['2020-02-13 01:02:03+05:30',
	'2020-02-01 12:00 Asia/Kolkata', '2020-07-01 00:00 America/St_Johns',
	'2020-02-13 01:02:03.456789 Pacific/Chatham', 'infinity', '1900-01-01 00:00 UTC',
	'2020-02-01 00:00', '2020-12-01 10:00+00']),
(20, 'interval', 'interval', true, ARRAY['-1 day -2 hours', '1 year -3 days 04:05:06.789',
	'1 mon -1 sec', '-178000000 years', '0', 'P1Y2M3DT4H5M6S', '-1 day +2 hours',
	'1 day 24:00:00.000001']),
(21, 'uuid', 'uuid', true, ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	'{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A12}', NULL, '00000000-0000-0000-0000-000000000000']),
(22, 'json', 'json', false, ARRAY['{ "a" : 1,  "b":[1, 2 ] }', '"é日本"', 'null',
	'[1.0, 1e2, 0.123456789012]', '{"a":1,"a":2}', E'{\n "t": "\\u00e9"}']),
(23, 'jsonb', 'jsonb', true, ARRAY['{ "a" : 1,  "b":[1, 2 ] }', '"é日本"', 'null',
	'[1.0, 1e2, 0.123456789012]', '{"a":1,"a":2}', '{"n": 1.000, "t": "\u00e9"}']),
(24, 'xml', 'xml', false, ARRAY['<a x="1">é</a>', 'text only', '<r><s/> 日本 </r>', NULL]),
(25, 'inet', 'inet', true, ARRAY['192.168.0.1/24', '::1', '10.0.0.1', '::ffff:1.2.3.4/128']),
(26, 'cidr', 'cidr', true, ARRAY['10.0.0.0/8', '2001:db8::/32', '192.168', '10.1.2.3/32']),
(27, 'macaddr', 'macaddr', true, ARRAY['08:00:2b:01:02:03', '08002b010204', NULL, 'ff-ff-ff-ff-ff-ff']),
(28, 'macaddr8', 'macaddr8', true, ARRAY['08:00:2b:01:02:03:04:05', '08:00:2b:01:02:03',
	'0800.2b01.0203.0406', NULL]),
(29, 'bit', 'bit(4)', true, ARRAY['1010', '0000', 'x0f', NULL]),
(30, 'varbit', 'varbit', true, ARRAY['', '101010101', '1', 'x00ff']),
(31, 'tsvector', 'tsvector', true, ARRAY['a fat cat sat on a mat', $$'é':1A 日本:2B$$,
	'', $$'a b' c:1,2,3$$]),
(32, 'tsquery', 'tsquery', true, ARRAY['fat & (rat | cat)', '!a <-> b', 'é:* & 日本:AB', 'a:*B & !!c']),
(33, 'point', 'point', false, ARRAY['(0.123456789012,-0)', '(0.123456789012,-0)', '(NaN,Infinity)', '(1e-310,3)']),
(34, 'lseg', 'lseg', true, ARRAY['[(0.123456789012,0),(-0,1e-310)]', '[(0.123456789012,0),(-0,1e-310)]', '[(1,2),(3,4)]', '((0,0),(1,1))']),
(35, 'box', 'box', true, ARRAY['(0.123456789012,0),(-0,1)', '(0.123456789012,0),(-0,1)', '((5,5),(0,0))', NULL]),
(36, 'circle', 'circle', true, ARRAY['<(0.123456789012,-0),0.5>', '<(0.123456789012,-0),0.5>', '((0,0),0.123456789012)', NULL]),
(37, 'line', 'line', true, ARRAY['{0.123456789012,-1,0}', '{0.123456789012,-1,0}', '[(0,0),(1,1)]', NULL]),
(38, 'path', 'path', false, ARRAY['[(0.123456789012,-0)]', '[(0.123456789012,-0)]', '((0,0),(1,1),(1,0))', NULL]),
(39, 'polygon', 'polygon', false, ARRAY['((0.123456789012,-0))', '((0.123456789012,-0))', '(1,2),(3,4)', NULL]),
(40, 'pg_lsn', 'pg_lsn', true, ARRAY['16/B374D848', '0/0', 'FFFFFFFF/FFFFFFFF', NULL]),
(41, 'regclass', 'regclass', true, ARRAY['t', 't', 'pg_class', 'sa.t', 'public.t', 'sb.t']),
(42, 'regtype', 'regtype', true, ARRAY['e', 'e', 'integer', 'double precision[]',
	'mood', 'character varying']),
(43, 'regproc', 'regproc', true, ARRAY['f', 'f', 'now', 'sb.f']),
(44, 'regprocedure', 'regprocedure', true, ARRAY['f()', 'f()', 'sum(int4)', 'sa.f()']),
(45, 'regoper', 'regoper', true, ARRAY['###', '###', '||/', 'sb.###']),
(46, 'regoperator', 'regoperator', true, ARRAY['###(int,int)', '###(int,int)',
	'+(int4,int4)', 'sa.###(integer,integer)']),
(47, 'regnamespace', 'regnamespace', true, ARRAY['sa', 'sb', 'pg_catalog', 'public']),
(48, 'regrole', 'regrole', true, ARRAY['pg_monitor', 'pg_read_all_data', NULL, '-']),
(49, 'regconfig', 'regconfig', true, ARRAY['cfg', 'cfg', 'english', 'sb.cfg']),
(50, 'regcollation', 'regcollation', true, ARRAY['coll', 'coll', '"C"', 'sa.coll']),
(51, 'domain', 'dom_date', true, ARRAY['2020-02-13', '2020-02-01', NULL, 'infinity']),
(52, 'enum', 'mood', true, ARRAY['sad', 'ok', 'happy', NULL, 'sad', 'happy']),
(53, 'composite', 'pair', true, ARRAY[
	'("-1 day -2 hours",0.123456789012,"2020-02-01 12:00+05:30",1.00,sad)',
	'("1 year -3 days 04:05:06.789",-0,"2020-02-13 01:02:03 Asia/Kolkata",NaN,happy)',
	'(,,,,)', NULL,
	'("1 mon -1 sec",1e-310,infinity,-0.0,ok)',
	'(0,NaN,"2020-07-01 00:00 America/St_Johns",123.4500,sad)']),
(54, 'bool_array', 'bool[]', true, ARRAY['{t,f,NULL}', '{}', NULL, '{{t},{f}}']),
(55, 'int4_array', 'int4[]', true, ARRAY['{1,2,3}', '{{1,2},{3,4}}', '[0:1]={1,2}', '{NULL}']),
(56, 'float8_array', 'float8[]', true, ARRAY['{0.123456789012,-0,NaN,1e-310}',
	'{Infinity,-Infinity}', '{}', '{0.1,NULL}']),
(57, 'numeric_array', 'numeric[]', true, ARRAY['{1.00,-0.0,NaN}', '{Infinity,1e-20}', NULL, '{}']),
(58, 'text_array', 'text[]', true, ARRAY['{"a\"b","NULL",NULL,"{}","é, 日本"," x "}',
	'{}', '{"a\\b",c}', '{{a,b},{"}",","}}']),
(59, 'date_array', 'date[]', true, ARRAY['{2020-02-13,2020-02-01}', '{infinity,NULL}',
	'{"4713-01-01 BC"}', '{}']),
(60, 'interval_array', 'interval[]', true, ARRAY['{"-1 day -2 hours","1 year -3 days 04:05:06.789",NULL}',
	'{"1 mon -1 sec"}', '{}', '{"-1 day +2 hours",0}']),
(61, 'timestamptz_array', 'timestamptz[]', true, ARRAY['{"2020-02-13 01:02:03+05:30",infinity}',
	'{"2020-02-01 12:00 Asia/Kolkata",NULL}', '{}', '{"2020-02-13 01:02:03.456789 Pacific/Chatham"}']),
(62, 'jsonb_array', 'jsonb[]', true, ARRAY['{"{\"a\": 1.0}","[1, 2]",null}', '{}', NULL,
	'{"\"é\""}']),
(63, 'regclass_array', 'regclass[]', true, ARRAY['{t,pg_class}', '{t,sa.t}', '{}', '{public.t}']),
(64, 'enum_array', 'mood[]', true, ARRAY['{sad,ok,NULL}', '{happy}', '{}', '{sad,sad}']),
(65, 'composite_array', 'pair[]', true, ARRAY[
	'{"(\"-1 day -2 hours\",0.123456789012,\"2020-02-01 12:00+05:30\",1.00,sad)",NULL}',
	'{"(,,,,)"}', '{}',
	'{"(\"1 year -3 days 04:05:06.789\",-0,infinity,NaN,happy)","(0,1,\"2020-02-13 00:00\",2,ok)"}']),
(66, 'uuid_array', 'uuid[]', true, ARRAY['{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}', '{}', NULL, '{}']),
(67, 'point_array', 'point[]', false, ARRAY['{"(1,2)","(0.123456789012,-0)"}', '{"(1,2)","(0.123456789012,-0)"}', NULL, '{"(NaN,1e-310)"}']),
(68, 'int4range', 'int4range', true, ARRAY['[1,10)', '(1,10]', 'empty', '(,)', '[-2147483648,0]', NULL]),
(69, 'int8range', 'int8range', true, ARRAY['[1,10)', '(,9223372036854775806]', 'empty', '[5,5]']),
(70, 'numrange', 'numrange', true, ARRAY['[1.00,2.0]', '(,0.123456789012)', 'empty', '[-0.0,Infinity)']),
(71, 'tsrange', 'tsrange', true, ARRAY['[2020-02-01,2020-02-13)', '[2020-02-13 01:02:03.456789,infinity]',
	'(,2020-02-01)', 'empty', '[2020-02-13,2020-02-13]', '["2020-02-01 00:00","2020-12-01 00:00")']),
(72, 'tstzrange', 'tstzrange', true, ARRAY['[2020-02-01 00:00+05:30,2020-02-13 00:00 America/St_Johns)',
	'["2020-02-01 12:00","2020-02-13 12:00")', '(,infinity)', 'empty',
	'["2020-02-13 01:02:03.456789 Pacific/Chatham",)', '["2020-12-01 10:00+00","2020-12-01 10:00+00"]']),
(73, 'daterange', 'daterange', true, ARRAY['[2020-02-01,2020-02-13]', '(2020-02-13,)', 'empty',
	'[2020-02-01,2020-12-01)', '[-infinity,infinity]', NULL]),
(74, 'int4multirange', 'int4multirange', true, ARRAY['{[1,3),[5,7)}', '{}', '{(,0],[10,)}', '{[1,2],[3,4]}']),
(75, 'int8multirange', 'int8multirange', true, ARRAY['{[1,3),[5,7)}', '{}', NULL, '{[-9223372036854775808,0)}']),
(76, 'nummultirange', 'nummultirange', true, ARRAY['{[1.00,2.0],[3,Infinity)}', '{}',
	'{(,0.123456789012)}', '{[-0.0,0.0]}']),
(77, 'tsmultirange', 'tsmultirange', true, ARRAY['{[2020-02-01,2020-02-13)}', '{}',
	'{[2020-02-01,2020-02-02),["2020-02-13 01:02:03.456789",infinity]}', '{(,2020-12-01)}']),
(78, 'tstzmultirange', 'tstzmultirange', true, ARRAY['{["2020-02-01 12:00","2020-02-13 12:00")}', '{}',
	'{[2020-02-01 00:00+05:30,2020-02-13 00:00 America/St_Johns)}', '{["2020-12-01 10:00+00",)}']),
(79, 'datemultirange', 'datemultirange', true, ARRAY['{[2020-02-01,2020-02-13),[2020-03-01,)}', '{}',
	'{[2020-02-13,2020-02-13]}', '{(,2020-12-01)}']),
(80, 'floatrange', 'floatrange', true, ARRAY['[0.1,0.123456789012)', '(-0,NaN)', 'empty',
	'[1e-310,Infinity]', '[-Infinity,-0]', NULL]),
(81, 'floatmultirange', 'floatmultirange', true, ARRAY['{[0.1,0.123456789012),[1,2]}', '{}',
	'{(,1e-310)}', '{[-0,-0]}']),
(82, 'moodrange', 'moodrange', true, ARRAY['[sad,happy]', '(sad,ok)', 'empty', '[ok,)']),
(83, 'daterange_array', 'daterange[]', true, ARRAY['{"[2020-02-01,2020-02-13]",empty}', '{}', NULL,
	'{"(2020-02-13,)"}']);

-- one heap table and one tcopy table per type
\set ECHO errors
SELECT format('CREATE TABLE h_%s (id int PRIMARY KEY, v %s)', slug, typ) FROM vt ORDER BY n
\gexec
SELECT format('CREATE FOREIGN TABLE t_%s (id int, v %s) SERVER ts OPTIONS (key ''id'')', slug, typ)
FROM vt ORDER BY n
\gexec
\set ECHO all

-- The writes: each literal is cast to the column's type (as it is now) in the
-- writing session, the same into the heap table and the tcopy table.  Odd
-- positions are written under W1, even ones under W2.
CREATE VIEW vt_write AS
SELECT vt.n, vt.slug, vt.lits, format_type(a.atttypid, a.atttypmod) AS coltype
FROM vt JOIN pg_attribute a ON a.attrelid = ('public.h_' || vt.slug)::regclass AND a.attname = 'v';

-- W1
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = sql_standard;
SET extra_float_digits = -10;
SET TimeZone = 'Asia/Kolkata';
SET search_path = sa, public;
\set ECHO errors
SELECT format('INSERT INTO %I SELECT i, lit::%s FROM unnest(%L::text[]) WITH ORDINALITY AS u(lit, i) WHERE i %% 2 = 1',
	p || slug, coltype, lits)
FROM vt_write, (VALUES ('h_'), ('t_')) AS x(p) ORDER BY n, p
\gexec
\set ECHO all

-- W2
SET DateStyle = 'German, YMD';
SET IntervalStyle = iso_8601;
SET extra_float_digits = 3;
SET TimeZone = 'America/St_Johns';
SET search_path = sb, public;
SET bytea_output = escape;
\set ECHO errors
SELECT format('INSERT INTO %I SELECT i, lit::%s FROM unnest(%L::text[]) WITH ORDINALITY AS u(lit, i) WHERE i %% 2 = 0',
	p || slug, coltype, lits)
FROM vt_write, (VALUES ('h_'), ('t_')) AS x(p) ORDER BY n, p
\gexec
\set ECHO all

-- COPY under W1 (tcopy's fast path): the same lines into both tables
RESET ALL;
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = sql_standard;
SET extra_float_digits = -10;
SET TimeZone = 'Asia/Kolkata';
SET search_path = sa, public;
COPY h_date FROM STDIN;
101	13/02/2020
102	2020-02-01
103	01/02/2020
\.
COPY t_date FROM STDIN;
101	13/02/2020
102	2020-02-01
103	01/02/2020
\.
COPY h_float8 FROM STDIN;
101	0.123456789012
102	-0
103	1e-310
\.
COPY t_float8 FROM STDIN;
101	0.123456789012
102	-0
103	1e-310
\.
COPY h_numeric FROM STDIN;
101	1.000
102	-0.0
103	NaN
\.
COPY t_numeric FROM STDIN;
101	1.000
102	-0.0
103	NaN
\.
COPY h_text FROM STDIN;
101	é 日本
102	\N
103	a\tb\\c
\.
COPY t_text FROM STDIN;
101	é 日本
102	\N
103	a\tb\\c
\.
COPY h_timestamptz FROM STDIN;
101	13/02/2020 01:02:03
102	2020-02-01 00:00 IST
103	2020-07-01 00:00 America/St_Johns
\.
COPY t_timestamptz FROM STDIN;
101	13/02/2020 01:02:03
102	2020-02-01 00:00 IST
103	2020-07-01 00:00 America/St_Johns
\.
COPY h_interval FROM STDIN;
101	-1 day -2 hours
102	1 year -3 days 04:05:06.789
103	-1 2:03:04
\.
COPY t_interval FROM STDIN;
101	-1 day -2 hours
102	1 year -3 days 04:05:06.789
103	-1 2:03:04
\.
COPY h_jsonb FROM STDIN;
101	{ "a" : 1.000,  "b":[1, 2 ] }
102	"é日本"
\.
COPY t_jsonb FROM STDIN;
101	{ "a" : 1.000,  "b":[1, 2 ] }
102	"é日本"
\.
COPY h_regclass FROM STDIN;
101	t
102	sb.t
\.
COPY t_regclass FROM STDIN;
101	t
102	sb.t
\.
COPY h_regtype FROM STDIN;
101	e
102	sb.e
\.
COPY t_regtype FROM STDIN;
101	e
102	sb.e
\.
COPY h_enum FROM STDIN;
101	sad
102	happy
\.
COPY t_enum FROM STDIN;
101	sad
102	happy
\.
COPY h_composite FROM STDIN;
101	("-1 day -2 hours",0.123456789012,"13/02/2020 01:02:03",1.00,sad)
102	("1 year -3 days 04:05:06.789",-0,"01/02/2020 12:00",NaN,ok)
\.
COPY t_composite FROM STDIN;
101	("-1 day -2 hours",0.123456789012,"13/02/2020 01:02:03",1.00,sad)
102	("1 year -3 days 04:05:06.789",-0,"01/02/2020 12:00",NaN,ok)
\.
COPY h_interval_array FROM STDIN;
101	{"-1 day -2 hours","1 year -3 days 04:05:06.789"}
\.
COPY t_interval_array FROM STDIN;
101	{"-1 day -2 hours","1 year -3 days 04:05:06.789"}
\.
COPY h_enum_array FROM STDIN;
101	{sad,happy,NULL}
\.
COPY t_enum_array FROM STDIN;
101	{sad,happy,NULL}
\.
COPY h_composite_array FROM STDIN;
101	{"(\\"-1 day -2 hours\\",0.123456789012,\\"13/02/2020 01:02:03\\",1.00,sad)"}
\.
COPY t_composite_array FROM STDIN;
101	{"(\\"-1 day -2 hours\\",0.123456789012,\\"13/02/2020 01:02:03\\",1.00,sad)"}
\.
COPY h_tsrange FROM STDIN;
101	[13/02/2020,01/03/2020)
102	[2020-02-01,2020-02-13)
\.
COPY t_tsrange FROM STDIN;
101	[13/02/2020,01/03/2020)
102	[2020-02-01,2020-02-13)
\.
COPY h_tstzrange FROM STDIN;
101	["13/02/2020 01:02:03","01/03/2020 00:00 IST")
102	["2020-02-01 12:00",)
\.
COPY t_tstzrange FROM STDIN;
101	["13/02/2020 01:02:03","01/03/2020 00:00 IST")
102	["2020-02-01 12:00",)
\.
COPY h_datemultirange FROM STDIN;
101	{[01/02/2020,13/02/2020),[01/03/2020,)}
\.
COPY t_datemultirange FROM STDIN;
101	{[01/02/2020,13/02/2020),[01/03/2020,)}
\.
COPY h_floatrange FROM STDIN;
101	[0.1,0.123456789012)
102	(-0,1e-310]
\.
COPY t_floatrange FROM STDIN;
101	[0.1,0.123456789012)
102	(-0,1e-310]
\.

-- The comparison, one line per type: type, rows that differ (0 expected).
-- Rows missing from either table, a different x::text under the reader's
-- settings, or (for types with =) values not equal count as different.
CREATE VIEW public.vt_compare AS
SELECT n, format('SELECT %L AS type, count(*) AS mismatches FROM public.h_%s h FULL JOIN public.t_%s t USING (id) '
	'WHERE h.id IS NULL OR t.id IS NULL OR h.v::text IS DISTINCT FROM t.v::text%s',
	slug, slug, slug,
	CASE WHEN has_eq THEN ' OR NOT coalesce(h.v = t.v, h.v IS NULL AND t.v IS NULL)' ELSE '' END) AS q
FROM vt;
\pset tuples_only on

-- R: a reader with other settings
RESET ALL;
SET DateStyle = 'Postgres, MDY';
SET IntervalStyle = postgres_verbose;
SET extra_float_digits = 0;
SET TimeZone = 'Pacific/Chatham';
\set ECHO errors
SELECT q FROM public.vt_compare ORDER BY n
\gexec
\set ECHO all

-- the rows of a few types whose text depends on the settings, as this reader
-- sees them in the heap table and in the tcopy table
SELECT id, v FROM h_composite ORDER BY id;
SELECT id, v FROM t_composite ORDER BY id;
SELECT id, v FROM h_tstzrange ORDER BY id;
SELECT id, v FROM t_tstzrange ORDER BY id;
SELECT id, v FROM h_regclass ORDER BY id;
SELECT id, v FROM t_regclass ORDER BY id;

-- W1 again, as reader
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = sql_standard;
SET extra_float_digits = -10;
SET TimeZone = 'Asia/Kolkata';
SET search_path = sa, public;
\set ECHO errors
SELECT q FROM public.vt_compare ORDER BY n
\gexec
\set ECHO all

-- Type evolution, which a heap table survives.  After each step the types
-- that use the changed one are compared, at the end all of them (under R).
RESET ALL;
SET DateStyle = 'Postgres, MDY';
SET IntervalStyle = postgres_verbose;
SET extra_float_digits = 0;
SET TimeZone = 'Pacific/Chatham';
-- enum labels: one renamed, one added
ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy';
ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok';
\set ECHO errors
SELECT q FROM public.vt_compare JOIN public.vt USING (n)
WHERE slug IN ('enum', 'enum_array', 'composite', 'composite_array', 'moodrange') ORDER BY n
\gexec
\set ECHO all
-- composite attributes: one added, one dropped, one renamed
ALTER TYPE pair ADD ATTRIBUTE x int;
ALTER TYPE pair DROP ATTRIBUTE n;
ALTER TYPE pair RENAME ATTRIBUTE f TO f8;
\set ECHO errors
SELECT q FROM public.vt_compare JOIN public.vt USING (n)
WHERE slug IN ('composite', 'composite_array') ORDER BY n
\gexec
\set ECHO all
-- types renamed
ALTER TYPE mood RENAME TO mood2;
ALTER TYPE pair RENAME TO pair2;
ALTER DOMAIN dom_date RENAME TO dom_date2;
ALTER TYPE floatrange RENAME TO floatrange2;
ALTER TYPE moodrange RENAME TO moodrange2;
\set ECHO errors
SELECT q FROM public.vt_compare ORDER BY n
\gexec
\set ECHO all

-- more rows after the changes, with the renamed and the added labels and the
-- new attribute, under W2
CREATE TABLE vt_more (slug text PRIMARY KEY, lits text[]);
INSERT INTO vt_more VALUES
('enum', ARRAY['unhappy', 'meh', 'ok', 'happy']),
('enum_array', ARRAY['{unhappy,meh,NULL}', '{meh}']),
('composite', ARRAY['("-1 day -2 hours",0.123456789012,"2020-02-01 12:00+05:30",meh,7)',
	'(,,,unhappy,)', '("1 year -3 days 04:05:06.789",-0,infinity,happy,-1)']),
('composite_array', ARRAY['{"(\"-1 day -2 hours\",-0,\"2020-02-13 00:00\",unhappy,1)",NULL}']),
('moodrange', ARRAY['[unhappy,meh]', '[meh,happy)', '(,meh]']),
('domain', ARRAY['2020-02-13', '2020-02-01']),
('floatrange', ARRAY['[0.123456789012,1)']);
SET DateStyle = 'German, YMD';
SET IntervalStyle = iso_8601;
SET extra_float_digits = 3;
SET TimeZone = 'America/St_Johns';
SET search_path = sb, public;
\set ECHO errors
SELECT format('INSERT INTO public.%I SELECT 200 + i, lit::%s FROM unnest(%L::text[]) WITH ORDINALITY AS u(lit, i)',
	p || m.slug, w.coltype, m.lits)
FROM public.vt_more m JOIN public.vt_write w USING (slug), (VALUES ('h_'), ('t_')) AS x(p)
ORDER BY w.n, p
\gexec
\set ECHO all

RESET ALL;
SET DateStyle = 'Postgres, MDY';
SET IntervalStyle = postgres_verbose;
SET extra_float_digits = 0;
SET TimeZone = 'Pacific/Chatham';
\set ECHO errors
SELECT q FROM public.vt_compare ORDER BY n
\gexec
\set ECHO all
\pset tuples_only off

-- the evolved rows, in the heap table and in the tcopy table
SELECT id, v FROM h_enum ORDER BY id;
SELECT id, v FROM t_enum ORDER BY id;
SELECT id, v FROM h_composite ORDER BY id;
SELECT id, v FROM t_composite ORDER BY id;
SELECT id, v FROM h_moodrange ORDER BY id;
SELECT id, v FROM t_moodrange ORDER BY id;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
\set ECHO errors
SELECT format('DROP TABLE h_%s', slug) FROM vt ORDER BY n
\gexec
\set ECHO all
DROP VIEW vt_write, vt_compare;
DROP TABLE vt, vt_more, public.t;
DROP SCHEMA sa, sb CASCADE;
DROP TYPE pair2, moodrange2, floatrange2, mood2;
DROP DOMAIN dom_date2;
