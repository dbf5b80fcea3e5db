--
-- tcopy_analyze: ANALYZE samples a tcopy table's rows from the tserver, and
-- the planner's row estimates of a table never analyzed come from the
-- tserver.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- the same rows in a heap table and a tcopy table
CREATE TABLE an_heap (k int NOT NULL, grp int, label text, x float8);
CREATE FOREIGN TABLE an_t (k int NOT NULL, grp int, label text, x float8)
	SERVER ts OPTIONS (key 'k', table_name 'analyze_t');
TRUNCATE an_t;
INSERT INTO an_heap
	SELECT g, g % 5, CASE WHEN g % 10 = 0 THEN NULL ELSE 'label ' || g % 3 END, g / 7.0
	FROM generate_series(1, 2000) g;
INSERT INTO an_t SELECT * FROM an_heap;

-- never analyzed: reltuples unknown
SELECT relpages, reltuples FROM pg_class WHERE oid = 'an_t'::regclass;

-- the planner's rows then come from the tserver's estimate (not the
-- default 1000); approximate, so compared with a tolerance
CREATE FUNCTION an_plan_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT an_plan_rows('SELECT * FROM an_t') BETWEEN 1800 AND 2200 AS near_2000;
SELECT an_plan_rows('SELECT * FROM an_t WHERE k > 0') BETWEEN 1800 / 3 AND 2200 / 3 AS near_a_third;
-- a table never written to: no rows (the planner's least is 1)
CREATE FOREIGN TABLE an_empty (k int) SERVER ts OPTIONS (table_name 'analyze_never_written');
SELECT an_plan_rows('SELECT * FROM an_empty');
-- a tserver not there: the default, and no error before the scan
CREATE SERVER ts_gone FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/nonexistent/tcopy.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts_gone;
CREATE FOREIGN TABLE an_gone (k int) SERVER ts_gone;
SELECT an_plan_rows('SELECT * FROM an_gone');

-- ANALYZE no longer skips the table, and counts its rows
ANALYZE an_heap;
ANALYZE an_t;
SELECT reltuples FROM pg_class WHERE oid = 'an_t'::regclass;

-- the sample holds every row (2000 < 300 * default_statistics_target), so
-- the statistics are the heap table's
SELECT attname, null_frac, avg_width, n_distinct, most_common_vals, most_common_freqs
	FROM pg_stats WHERE tablename = 'an_t' AND attname IN ('grp', 'label')
	ORDER BY attname;
SELECT attname, null_frac, avg_width, n_distinct, most_common_vals::text,
	most_common_freqs, histogram_bounds::text
	FROM pg_stats WHERE tablename = 'an_heap'
EXCEPT
SELECT attname, null_frac, avg_width, n_distinct, most_common_vals::text,
	most_common_freqs, histogram_bounds::text
	FROM pg_stats WHERE tablename = 'an_t';
SELECT count(*) FROM pg_stats WHERE tablename = 'an_t';

-- the planner uses them: 2000 rows, a fifth of them in each group
EXPLAIN (COSTS ON) SELECT * FROM an_t;
EXPLAIN (COSTS ON) SELECT * FROM an_t WHERE grp = 3;

-- a sample smaller than the table: 300 rows of 2000, all rows counted
ALTER FOREIGN TABLE an_t ALTER COLUMN k SET STATISTICS 1,
	ALTER COLUMN grp SET STATISTICS 1, ALTER COLUMN label SET STATISTICS 1,
	ALTER COLUMN x SET STATISTICS 1;
ANALYZE VERBOSE an_t;
SELECT reltuples FROM pg_class WHERE oid = 'an_t'::regclass;
SELECT attname, n_distinct FROM pg_stats
	WHERE tablename = 'an_t' AND attname IN ('grp', 'label') ORDER BY attname;
ALTER FOREIGN TABLE an_t ALTER COLUMN k SET STATISTICS -1,
	ALTER COLUMN grp SET STATISTICS -1, ALTER COLUMN label SET STATISTICS -1,
	ALTER COLUMN x SET STATISTICS -1;

-- a table never written to the tserver has no rows
ANALYZE an_empty;
SELECT reltuples FROM pg_class WHERE oid = 'an_empty'::regclass;

-- ANALYZE in the transaction that wrote or truncated the table is refused
-- rather than sampling the committed rows only (a SELECT there reads the
-- transaction's writes over them; ANALYZE's sample does not)
BEGIN;
INSERT INTO an_t VALUES (2001, 1, 'new', 0);
ANALYZE an_t;
ROLLBACK;
BEGIN;
TRUNCATE an_t;
ANALYZE an_t;
ROLLBACK;

-- ANALYZE is the owner's, as for any table
CREATE ROLE regress_tcopy_analyze;
SET ROLE regress_tcopy_analyze;
ANALYZE an_t;
RESET ROLE;
DROP ROLE regress_tcopy_analyze;

-- after the rows change, another ANALYZE counts them again
INSERT INTO an_t SELECT g, g % 5, 'more', 0 FROM generate_series(2001, 2500) g;
ANALYZE an_t;
SELECT reltuples FROM pg_class WHERE oid = 'an_t'::regclass;

\set QUIET on
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE an_heap;
DROP FUNCTION an_plan_rows(text);
