--
-- tcopy_pushdown_filter: WHERE quals pushed down to the tserver
-- (docs/scans.md#filters).  EXPLAIN shows what ships ("Remote Filter") and
-- what stays in Postgres; every filter's rows are compared with a heap twin
-- of the table; EXPLAIN ANALYZE shows that the tserver removed the rows
-- (no "Rows Removed by Filter" on the Postgres side) when the qual shipped.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE COLLATION pf_nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

CREATE TABLE pf_heap (id int PRIMARY KEY, i2 smallint, i8 bigint, b bool, f4 real, f8 float8,
	d date, ts timestamp, tstz timestamptz, tm time, txt text, vc varchar(10), bp char(3),
	ba bytea, n numeric);
CREATE FOREIGN TABLE pf_t (id int NOT NULL, i2 smallint, i8 bigint, b bool, f4 real, f8 float8,
	d date, ts timestamp, tstz timestamptz, tm time, txt text, vc varchar(10), bp char(3),
	ba bytea, n numeric)
	SERVER ts OPTIONS (key 'id', table_name 'pf_t');
INSERT INTO pf_heap VALUES
(1, 1, 1, true, 1.5, 1.5, '2020-01-01', '2020-01-01 10:00', '2020-01-01 10:00+00', '10:00', 'abc', 'abc', 'ab', '\x00', 1),
(2, 2, 2147483648, false, -0.0, -0.0, '2020-01-02', '2020-01-02 00:00', '2020-01-02 00:00+00', '12:00', 'ABC', 'ABC', 'ab ', '\x0001', 2),
(3, 3, -9223372036854775808, true, 'NaN', 'NaN', '2019-12-31', '2019-12-31 23:59:59.999999', '2019-12-31 23:59:59+00', '23:59:59', 'é', 'é', 'é', '', 3.0),
(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(5, 3, 9223372036854775807, false, 'Infinity', 'Infinity', 'infinity', 'infinity', 'infinity', '00:00', U&'e\0301', 'x', 'x', '\xff', 'NaN'),
(6, -32768, 0, true, '-Infinity', '-Infinity', '-infinity', '-infinity', '-infinity', '00:00:00.000001', '', '', '', '\x00', -1),
(7, 32767, -1, false, 0.0, 0.0, '2020-02-29', '2020-02-29 12:00', '2020-02-29 12:00+05', '12:00', 'abc ', 'abc ', 'abc', '\x61', 0),
(8, 7, 7, NULL, 'NaN', '-NaN', '2020-01-01', '2020-01-01 10:00', '2020-01-01 05:00-05', NULL, '日本語', '日本', '日', NULL, NULL);
INSERT INTO pf_t SELECT * FROM pf_heap;

-- the ids a condition selects, from the heap and from tcopy: they must agree
CREATE FUNCTION pf_check(cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	heap text;
	tc text;
BEGIN
	EXECUTE format('SELECT string_agg(id::text, '','' ORDER BY id) FROM pf_heap WHERE %s', cond) INTO heap;
	EXECUTE format('SELECT string_agg(id::text, '','' ORDER BY id) FROM pf_t WHERE %s', cond) INTO tc;
	RETURN CASE WHEN heap IS NOT DISTINCT FROM tc THEN 'ok: ' || coalesce(heap, 'none')
		ELSE format('DIFFER: heap %s, tcopy %s', heap, tc) END;
END $$;

-- EXPLAIN VERBOSE but the tserver's address, which differs between runs
CREATE FUNCTION pf_explain_verbose(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || query LOOP
		IF line NOT LIKE '%tserver: %' THEN
			RETURN NEXT line;
		END IF;
	END LOOP;
END $$;

-- what ships
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 = 3;
SELECT pf_explain_verbose('SELECT id FROM pf_t WHERE i2 = 3');
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE 3 < i8 AND i8 < 10;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 IN (1, 3) OR NOT b OR f8 IS NULL;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 NOT IN (1, 3) AND b;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE f4 = 'NaN' AND f8 >= 1.5::float4;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE d = '2020-01-01' AND ts > '2020-01-01' AND tstz <= now() - now() + '2020-01-01'::timestamptz AND tm < '12:00';
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE txt = 'abc' AND vc <> 'x' AND ba = '\x00';
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE txt IN ('abc', 'é') AND vc = ANY (ARRAY['abc', 'x']);
-- with the key: a key range and the filter
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE id >= 2 AND i2 = 3;

-- what does not ship: the qual stays in the local Filter alone
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE f8 < random();
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE bp = 'ab';
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE txt = 'ABC' COLLATE pf_nd;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE txt < 'b';
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE d < '2020-01-02'::timestamp;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE ts = '2020-01-01'::date;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE n = 1;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 = NULL;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 IN (1, NULL);
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 + 1 = 4;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 = i8;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE b IS TRUE;
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE tstz < now();
-- a mix: the shippable quals ship, the others stay
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 = 3 AND f8 < random() AND bp = 'x';
-- an OR with a part that cannot ship does not ship
EXPLAIN (COSTS OFF) SELECT id FROM pf_t WHERE i2 = 3 OR bp = 'x';

-- results, against the heap
SELECT c, pf_check(c) FROM (VALUES
	('i2 = 3'), ('i2 <> 3'), ('i2 < 3'), ('i2 <= 3'), ('i2 > 3'), ('i2 >= 3'),
	('3 > i2'), ('i2 = 70000'), ('i2 < 70000'), ('i8 > 2147483647'), ('i8 = -9223372036854775808'),
	('i8 < 2'), ('i8 IN (0, -1, 7)'), ('i8 NOT IN (0, -1, 7)'), ('i2 IN (3)'),
	('i2 IS NULL'), ('i2 IS NOT NULL'), ('NOT (i2 = 3)'), ('NOT (i2 IS NULL)'),
	('b'), ('NOT b'), ('b = false'), ('b <> true'), ('b IS NOT NULL AND NOT b'),
	('i2 = 3 OR b'), ('i2 = 3 OR f8 > 0'), ('NOT (i2 = 3 OR b)'), ('NOT (i2 = 1 AND b)'),
	('(i2 = 3 OR i2 IS NULL) AND NOT (f8 = 0)'),
	('f8 = ''NaN'''), ('f8 > ''Infinity'''), ('f8 < ''NaN'''), ('f8 >= ''NaN'''), ('f8 <> ''NaN'''),
	('f8 = 0'), ('f8 = ''-0'''), ('f8 < 0'), ('f8 <= 0'), ('f8 > ''-Infinity'''),
	('f8 IN (0, ''NaN'')'), ('f8 NOT IN (0, ''NaN'')'),
	('f4 = ''NaN'''), ('f4 = 0'), ('f4 < 0'), ('f4 = 1.5'), ('f4 = 1.5::float8'), ('f4 > 1'),
	('f4 IN (''-0'', ''Infinity'')'), ('f4 >= ''NaN''::float8'),
	('d = ''2020-01-01'''), ('d > ''2020-01-01'''), ('d < ''infinity'''), ('d <= ''-infinity'''),
	('d IN (''2020-01-01'', ''2019-12-31'')'),
	('ts >= ''2020-01-01 10:00'''), ('ts < ''2019-12-31 23:59:59.999999'''), ('ts = ''infinity'''),
	('tstz = ''2020-01-01 10:00+00'''), ('tstz > ''2020-01-01 09:00+00'''),
	('tm < ''12:00'''), ('tm = ''12:00'''), ('tm > ''00:00'''),
	('txt = ''abc'''), ('txt <> ''abc'''), ('txt = ''abc '''), ('txt = ''é'''), ('txt = U&''e\0301'''),
	('txt = ''日本語'''), ('txt = '''''), ('txt IN (''é'', ''日本語'', ''zz'')'), ('txt NOT IN (''abc'', '''')'),
	('vc = ''abc'''), ('vc = ''日本'''), ('vc <> ''x'''), ('vc IN (''ABC'', ''x'')'),
	('ba = ''\x00'''), ('ba <> ''\x00'''), ('ba = '''''), ('ba IN (''\xff'', ''\x61'')'),
	('bp = ''ab'''), ('txt = ''ABC'' COLLATE pf_nd'), ('n = 3'), ('i2 IN (3, NULL)'),
	('i2 NOT IN (3, NULL)'), ('d < ''2020-01-02''::timestamp'), ('i2 = 3 OR bp = ''x''')
) AS q(c);

-- the tserver removed the rows (Rows Removed by Remote Filter): Postgres' own
-- Filter removes none
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM pf_t WHERE i2 = 3;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM pf_t WHERE txt IN ('abc', 'é') OR f8 = 'NaN';
-- not shipped: Postgres removes them
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM pf_t WHERE bp = 'ab';

-- the filter's columns need not be fetched: count(*) and another column
SELECT count(*) FROM pf_t WHERE txt = 'abc';
SELECT i8 FROM pf_t WHERE f8 = 'NaN' ORDER BY i8;
-- a LIMIT counts only the rows that pass
SELECT id FROM pf_t WHERE i2 IS NOT NULL AND b ORDER BY id LIMIT 2;
-- in a subquery the final range table moves: EXPLAIN still names the columns
SELECT pf_explain_verbose('SELECT h.id FROM pf_heap h, (SELECT id, i2 FROM pf_t WHERE i2 = 3 OFFSET 0) s WHERE h.id = s.id');
SELECT h.id FROM pf_heap h, (SELECT id, i2 FROM pf_t WHERE i2 = 3 OFFSET 0) s WHERE h.id = s.id ORDER BY 1;

-- prepared statements: a generic plan ships $1, evaluated at the scan's start
SET plan_cache_mode = force_generic_plan;
PREPARE pf_q(int) AS SELECT id FROM pf_t WHERE i2 = $1 ORDER BY id;
EXPLAIN (COSTS OFF) EXECUTE pf_q(3);
EXECUTE pf_q(3);
EXECUTE pf_q(7);
-- a NULL parameter: no row, and the filter is not sent
EXPLAIN (COSTS OFF) EXECUTE pf_q(NULL);
EXECUTE pf_q(NULL);
PREPARE pf_in(smallint[], text) AS SELECT id FROM pf_t WHERE i2 = ANY ($1) AND txt <> $2 ORDER BY id;
EXPLAIN (COSTS OFF) EXECUTE pf_in('{1,3}', 'x');
EXECUTE pf_in('{1,3}', 'x');
EXECUTE pf_in('{1,3}', 'é');
EXECUTE pf_in('{1,NULL}', 'x');
EXECUTE pf_in('{}', 'x');
PREPARE pf_f(float8, date) AS SELECT id FROM pf_t WHERE f8 >= $1 OR d = $2 ORDER BY id;
EXECUTE pf_f('NaN', '2020-01-02');
EXECUTE pf_f('Infinity', NULL);
RESET plan_cache_mode;
-- the same, planned custom six times then generic
PREPARE pf_g(bigint) AS SELECT count(*) FROM pf_t WHERE i8 > $1;
EXECUTE pf_g(0);
EXECUTE pf_g(0);
EXECUTE pf_g(0);
EXECUTE pf_g(0);
EXECUTE pf_g(0);
EXECUTE pf_g(0);
EXECUTE pf_g(-2);
DEALLOCATE ALL;

-- a partitioned table: each partition's scan ships its filter
CREATE TABLE pf_p (g int, id int, v text) PARTITION BY LIST (g);
CREATE FOREIGN TABLE pf_p1 PARTITION OF pf_p FOR VALUES IN (1) SERVER ts OPTIONS (key 'id', table_name 'pf_p1');
CREATE FOREIGN TABLE pf_p2 PARTITION OF pf_p FOR VALUES IN (2) SERVER ts OPTIONS (key 'id', table_name 'pf_p2');
INSERT INTO pf_p SELECT 1 + i % 2, i, CASE WHEN i % 3 = 0 THEN 'three' WHEN i % 5 = 0 THEN NULL ELSE 'ü' END
FROM generate_series(1, 30) i;
EXPLAIN (COSTS OFF) SELECT id FROM pf_p WHERE v = 'three';
SELECT g, id FROM pf_p WHERE v = 'three' ORDER BY id;
SELECT count(*) FROM pf_p WHERE v IS NULL OR v <> 'ü';
SET plan_cache_mode = force_generic_plan;
PREPARE pf_pp(text) AS SELECT g, count(*) FROM pf_p WHERE v = $1 GROUP BY g ORDER BY g;
EXPLAIN (COSTS OFF) EXECUTE pf_pp('ü');
EXECUTE pf_pp('ü');
RESET plan_cache_mode;
DEALLOCATE ALL;

-- a transaction's own writes are filtered as the stored rows are: the row it
-- inserted passes, the one it deleted and the one it changed do not
BEGIN;
INSERT INTO pf_t (id, i2, txt) VALUES (9, 3, 'new'), (10, 4, 'other');
DELETE FROM pf_t WHERE id = 3;
UPDATE pf_t SET i2 = 4 WHERE id = 5;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM pf_t WHERE i2 = 3;
SELECT id, txt FROM pf_t WHERE i2 = 3 ORDER BY id;
ROLLBACK;

-- UPDATE and DELETE read through the filter too
UPDATE pf_t SET txt = 'upd' WHERE i2 = 3 AND b;
DELETE FROM pf_t WHERE f8 = 'NaN' AND b IS NULL;
SELECT id, txt FROM pf_t WHERE txt = 'upd' OR f8 = 'NaN' ORDER BY id;

DROP EXTENSION tcopy CASCADE;
DROP TABLE pf_heap;
DROP FUNCTION pf_check(text);
DROP FUNCTION pf_explain_verbose(text);
DROP COLLATION pf_nd;
