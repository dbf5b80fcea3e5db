--
-- tcopy_pushdown_agg: aggregates computed by the tserver
-- (docs/scans.md#aggregates).  EXPLAIN shows what is pushed down (Remote
-- Aggregate, Remote Group By) and what is not; every result is compared
-- with the same query on a heap twin, as text (so -0, NaN and numeric
-- scales count), errors by SQLSTATE and message.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- the plan, without the tserver's address (it differs between runs)
CREATE FUNCTION explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP
		IF l !~ '^\s*tserver: ' THEN
			RETURN NEXT l;
		END IF;
	END LOOP;
END $$;

-- q run on the heap table h and on the tcopy table tc (%1$s), rows as text
CREATE FUNCTION twins(q text, h text DEFAULT 'h', tc text DEFAULT 'tc',
					  OUT same boolean, OUT heap text, OUT tcopy text)
LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		EXECUTE format('SELECT string_agg(x::text, '' '' ORDER BY x::text) FROM (%s) x',
					   format(q, h)) INTO heap;
	EXCEPTION WHEN OTHERS THEN
		heap := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
	END;
	BEGIN
		EXECUTE format('SELECT string_agg(x::text, '' '' ORDER BY x::text) FROM (%s) x',
					   format(q, tc)) INTO tcopy;
	EXCEPTION WHEN OTHERS THEN
		tcopy := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
	END;
	same := heap IS NOT DISTINCT FROM tcopy;
END $$;

CREATE TABLE h (id int NOT NULL, g int, t text, i2 int2, i4 int, i8 bigint,
				f4 real, f8 float8, d date, ts timestamp, tz timestamptz, b bool, n numeric, z int);
CREATE FOREIGN TABLE tc (id int NOT NULL, g int, t text, i2 int2, i4 int, i8 bigint,
						 f4 real, f8 float8, d date, ts timestamp, tz timestamptz, b bool, n numeric, z int)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_pushdown_agg.t');
TRUNCATE tc;

-- an empty table: one group, count 0, the others NULL
SELECT * FROM twins('SELECT count(*), count(i4), sum(i2), sum(i4), sum(i8), avg(i4), avg(i8),
	sum(f4), sum(f8), avg(f4), avg(f8), min(i4), max(f8), min(d), max(ts) FROM %s');
SELECT * FROM twins('SELECT g, count(*) FROM %s GROUP BY g');
SELECT count(*), sum(i4) FROM tc;

INSERT INTO h VALUES
	(1, 1, 'a', 1, 2147483647, 9223372036854775807, 1.5, 1e100, '2024-01-01', '2024-01-01 10:00', '2024-01-01 10:00+00', true),
	(2, 1, 'a', 2, 2147483647, 9223372036854775807, '-0', '-0', '1999-12-31', '1999-12-31 23:59:59.999999', '1970-01-01 00:00+00', false),
	(3, 1, 'b', -32768, 2147483647, 9223372036854775807, 'NaN', 'NaN', '4713-01-01 BC', '4713-01-01 00:00 BC', '2100-01-01 00:00+00', NULL),
	(4, 2, 'b', 32767, -2147483648, -9223372036854775808, 'Infinity', 'Infinity', 'infinity', 'infinity', '-infinity', true),
	(5, 2, NULL, NULL, -2147483648, -9223372036854775808, '-Infinity', '-Infinity', '-infinity', '-infinity', 'infinity', false),
	(6, NULL, 'c', 7, 1, 1, 0.0, 0.0, '2000-02-29', '2000-02-29 12:00', '2000-02-29 12:00+05', true),
	(7, NULL, 'c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(8, 3, 'ü', 3, 3, 3, 3.25, 0.1, '2024-06-01', '2024-06-01 00:00', '2024-06-01 00:00+00', true),
	(9, 3, 'ü', 4, 4, 4, '-0', 0.2, '2024-06-02', '2024-06-02 00:00', '2024-06-02 00:00+00', true),
	(10, 3, '', 5, 5, 5, 0.0, 0.3, '2024-06-03', '2024-06-03 00:00', '2024-06-03 00:00+00', false),
	(11, 4, 'd', 1, 1, 1, 0.0, '-0', NULL, NULL, NULL, NULL),
	(12, 4, 'd', 1, 1, 1, '-0', 0.0, NULL, NULL, NULL, NULL);
UPDATE h SET n = i4;
INSERT INTO tc SELECT * FROM h;

ANALYZE tc;
-- what ships
SELECT explain('SELECT count(*), sum(i4) FROM tc');
SELECT explain('SELECT g, count(i4), sum(i2), sum(i8), avg(i4), avg(f8), min(f4), max(d) FROM tc GROUP BY g');
SELECT explain('SELECT t, b, min(ts), max(tz), sum(f4), sum(f8) FROM tc GROUP BY t, b');
-- HAVING stays local, on the groups the tserver returns
SELECT explain('SELECT g, sum(i4) FROM tc GROUP BY g HAVING sum(i4) > 10 AND count(*) > 1');
-- an expression over aggregates is computed over the scan's output
SELECT explain('SELECT sum(i4) + 1, count(*) * 2 FROM tc');

-- what does not ship
SELECT explain('SELECT count(DISTINCT i4) FROM tc');
SELECT explain('SELECT sum(i4) FILTER (WHERE i4 > 0) FROM tc');
SELECT explain('SELECT sum(n) FROM tc');
SELECT explain('SELECT f8, count(*) FROM tc GROUP BY f8');
SELECT explain('SELECT g + 1, count(*) FROM tc GROUP BY g + 1');
SELECT explain('SELECT sum(i4 + 1) FROM tc');
SELECT explain('SELECT t COLLATE "C", count(*) FROM tc GROUP BY 1');
SELECT explain('SELECT count(*) FROM tc WHERE length(t) > 1');
SELECT explain('SELECT string_agg(t, '','') FROM tc');
SET tcopy.pushdown_aggregates = off;
SELECT explain('SELECT count(*), sum(i4) FROM tc');
RESET tcopy.pushdown_aggregates;

-- counts, integer sums near and past the limits (sum of int8 is a numeric),
-- avg of integers as numeric
SELECT * FROM twins('SELECT count(*), count(i4), count(t), count(n), sum(i2), sum(i4), sum(i8), avg(i2), avg(i4), avg(i8) FROM %s');
SELECT * FROM twins('SELECT g, count(*), count(i4), sum(i2), sum(i4), sum(i8), avg(i2), avg(i4), avg(i8) FROM %s GROUP BY g');
-- floats: NaN, infinities and -0 in sums, averages, minimums and maximums
SELECT * FROM twins('SELECT g, sum(f4), sum(f8), avg(f4), avg(f8) FROM %s GROUP BY g');
SELECT * FROM twins('SELECT g, min(f4), max(f4), min(f8), max(f8) FROM %s GROUP BY g');
SELECT * FROM twins('SELECT min(f4), max(f4), min(f8), max(f8), min(i2), max(i2), min(i8), max(i8) FROM %s');
-- of a group of -0 and 0, min and max keep the one Postgres keeps
SELECT * FROM twins('SELECT g, min(f8)::text, max(f8)::text, min(f4)::text, max(f4)::text FROM %s GROUP BY g');
-- dates and timestamps, infinities included
SELECT * FROM twins('SELECT g, min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM %s GROUP BY g');
-- NULL keys are a group of their own, text keys are bytes (multibyte, empty)
SELECT * FROM twins('SELECT t, count(*), sum(i4), min(f8) FROM %s GROUP BY t');
SELECT * FROM twins('SELECT b, t, count(*) FROM %s GROUP BY b, t');
SELECT * FROM twins('SELECT d, count(*) FROM %s GROUP BY d');
SELECT * FROM twins('SELECT ts, tz, count(*) FROM %s GROUP BY ts, tz');
-- an all-NULL column
SELECT * FROM twins('SELECT count(z), sum(z), avg(z), min(z), max(z) FROM %s');
SELECT * FROM twins('SELECT g, count(z), sum(z), avg(z), max(z) FROM %s GROUP BY g');
SELECT * FROM twins('SELECT z, count(*), sum(i4) FROM %s GROUP BY z');
-- HAVING, and expressions over aggregates
SELECT * FROM twins('SELECT g, sum(i4) FROM %s GROUP BY g HAVING count(*) > 1 AND sum(i2) IS NOT NULL');
SELECT * FROM twins('SELECT g, sum(i4) + 1, count(*) * 2 FROM %s GROUP BY g');
SELECT * FROM twins('SELECT g, count(*) FROM %s GROUP BY g, g');
SELECT * FROM twins('SELECT count(*) FROM %s GROUP BY g');
-- groups without aggregates, a HAVING without GROUP BY, a LIMIT above
SELECT explain('SELECT t FROM tc GROUP BY t');
SELECT * FROM twins('SELECT t FROM %s GROUP BY t');
SELECT * FROM twins('SELECT count(*) FROM %s HAVING count(*) > 100');
SELECT * FROM twins('SELECT g, count(*) FROM %s GROUP BY g ORDER BY g LIMIT 2');
-- with a WHERE the tserver evaluates (the filter, and the key range)
SELECT explain('SELECT g, count(*), sum(i4) FROM tc WHERE i4 > 0 AND t <> ''c'' GROUP BY g');
SELECT explain('SELECT count(*), max(f8) FROM tc WHERE id BETWEEN 2 AND 9');
SELECT * FROM twins('SELECT g, count(*), sum(i4), min(f8), max(d) FROM %s WHERE i4 > 0 AND t <> ''c'' GROUP BY g');
SELECT * FROM twins('SELECT count(*), sum(i8), max(f8), min(f4) FROM %s WHERE id BETWEEN 2 AND 9');
SELECT * FROM twins('SELECT t, count(*) FROM %s WHERE f8 > 0 OR f8 IS NULL OR b GROUP BY t');
SELECT * FROM twins('SELECT count(*), sum(i4) FROM %s WHERE i4 > 1000000000000');
SELECT * FROM twins('SELECT g, count(*) FROM %s WHERE t IN (''a'', ''ü'', '''') GROUP BY g');
-- a parameter's value is known at execution only: the aggregate stays in Postgres
PREPARE agg_p(int) AS SELECT count(*), sum(i4) FROM tc WHERE g = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE agg_p(1);
EXECUTE agg_p(1);
EXECUTE agg_p(NULL);
RESET plan_cache_mode;
DEALLOCATE agg_p;
-- a pushed-down aggregate returns exactly what the local one does
SELECT g, sum(i4), avg(i4), min(f8) FROM tc GROUP BY g ORDER BY g;

-- overflow: the same error as the heap's
CREATE TABLE hov (id int NOT NULL, g int, f4 real, f8 float8);
CREATE FOREIGN TABLE tcov (id int NOT NULL, g int, f4 real, f8 float8)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_pushdown_agg.ov');
TRUNCATE tcov;
INSERT INTO hov VALUES (1, 1, 3e38, 1e308), (2, 1, 3e38, 1e308), (3, 2, 1, 1);
INSERT INTO tcov SELECT * FROM hov;
SELECT * FROM twins('SELECT sum(f8) FROM %s', 'hov', 'tcov');
SELECT * FROM twins('SELECT sum(f4) FROM %s', 'hov', 'tcov');
SELECT * FROM twins('SELECT avg(f8) FROM %s', 'hov', 'tcov');
SELECT * FROM twins('SELECT g, sum(f8) FROM %s GROUP BY g', 'hov', 'tcov');
SELECT sum(f8) FROM tcov;
-- infinite inputs are no overflow
DELETE FROM hov;
TRUNCATE tcov;
INSERT INTO hov VALUES (1, 1, 1, 1), (2, 1, 'Infinity', 'Infinity'), (3, 2, '-Infinity', '-Infinity'),
	(4, 2, 'Infinity', 'Infinity'), (5, 3, 3e38, 1e308), (6, 3, 'Infinity', 'Infinity');
INSERT INTO tcov SELECT * FROM hov;
SELECT * FROM twins('SELECT g, sum(f8), sum(f4), avg(f8), avg(f4) FROM %s GROUP BY g', 'hov', 'tcov');
-- Sxx overflows from finite inputs: float8_accum raises it too
DELETE FROM hov;
TRUNCATE tcov;
INSERT INTO hov VALUES (1, 1, 0, -1e200), (2, 1, 0, 1e200);
INSERT INTO tcov SELECT * FROM hov;
SELECT * FROM twins('SELECT avg(f8) FROM %s', 'hov', 'tcov');

-- a partitioned table: with partitionwise aggregation, each partition's
-- scan returns partial states (or whole groups when grouped by the
-- partition key) that Postgres combines
CREATE TABLE hp (id int NOT NULL, g int, i2 int2, i4 int, i8 bigint, f4 real, f8 float8, d date)
	PARTITION BY RANGE (id);
CREATE TABLE hp1 PARTITION OF hp FOR VALUES FROM (0) TO (100);
CREATE TABLE hp2 PARTITION OF hp FOR VALUES FROM (100) TO (200);
CREATE TABLE hp3 PARTITION OF hp FOR VALUES FROM (200) TO (300);
CREATE TABLE tp (id int NOT NULL, g int, i2 int2, i4 int, i8 bigint, f4 real, f8 float8, d date)
	PARTITION BY RANGE (id);
CREATE FOREIGN TABLE tp1 PARTITION OF tp FOR VALUES FROM (0) TO (100)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_pushdown_agg.p1');
CREATE FOREIGN TABLE tp2 PARTITION OF tp FOR VALUES FROM (100) TO (200)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_pushdown_agg.p2');
CREATE FOREIGN TABLE tp3 PARTITION OF tp FOR VALUES FROM (200) TO (300)
	SERVER ts OPTIONS (key 'id', table_name 'tcopy_pushdown_agg.p3');
TRUNCATE tp1, tp2, tp3;
INSERT INTO hp SELECT i, i % 7, i % 100, i * 1000, i::bigint * 4000000000000000,
	CASE WHEN i % 50 = 0 THEN NULL ELSE i / 8.0 END, i / 3.0, date '2020-01-01' + i
	FROM generate_series(0, 199) i;
INSERT INTO tp SELECT * FROM hp;
ANALYZE hp;
ANALYZE tp;
SET enable_partitionwise_aggregate = on;
SELECT explain('SELECT count(*), sum(i4), avg(i2), avg(f8), min(d), max(f4) FROM tp');
SELECT explain('SELECT g, count(*), sum(i2) FROM tp GROUP BY g');
SELECT explain('SELECT id, count(*) FROM tp GROUP BY id');
-- sum and avg of int8 have an internal state: no partial aggregate of them is pushed
SELECT explain('SELECT sum(i8) FROM tp');
SELECT * FROM twins('SELECT count(*), count(f4), sum(i2), sum(i4), avg(i2), avg(i4), sum(f4), sum(f8), avg(f4), avg(f8), min(d), max(d), min(f8), max(i4) FROM %s', 'hp', 'tp');
SELECT * FROM twins('SELECT g, count(*), sum(i2), avg(i4), avg(f8), max(f4) FROM %s GROUP BY g', 'hp', 'tp');
SELECT * FROM twins('SELECT sum(i8), avg(i8) FROM %s', 'hp', 'tp');
SELECT * FROM twins('SELECT id / 10, count(*), sum(i8) FROM %s GROUP BY id / 10', 'hp', 'tp');
SELECT * FROM twins('SELECT count(*), sum(i4) FROM %s WHERE id >= 300', 'hp', 'tp');
SET enable_partitionwise_aggregate = off;
SELECT explain('SELECT count(*), sum(i4) FROM tp');
SELECT * FROM twins('SELECT count(*), sum(i2), avg(i4), avg(f8) FROM %s', 'hp', 'tp');
RESET enable_partitionwise_aggregate;

TRUNCATE tc, tcov, tp1, tp2, tp3;
DROP EXTENSION tcopy CASCADE;
DROP TABLE h, hov, hp;
DROP FUNCTION explain(text), twins(text, text, text);
