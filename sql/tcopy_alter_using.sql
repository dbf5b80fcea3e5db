--
-- tcopy_alter_using: ALTER COLUMN ... TYPE ... USING on a tcopy table
-- whose rows the tserver holds, beside a heap twin (issue 48).  Postgres
-- takes USING only for tables with storage; tcopy applies it in its
-- rewrite (alter_rewrite.c), over the row as it was, and takes it off the
-- statement.  Results and errors are the heap's.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
\set VERBOSITY default

CREATE TABLE h (k int PRIMARY KEY, v int, s text);
CREATE FOREIGN TABLE t (k int, v int, s text) SERVER ts OPTIONS (key 'k');
INSERT INTO h VALUES (1, 10, '7'), (2, 20, '42'), (3, NULL, 'abc'), (4, 40, NULL);
INSERT INTO t VALUES (1, 10, '7'), (2, 20, '42'), (3, NULL, 'abc'), (4, 40, NULL);
CREATE FUNCTION using_diff() RETURNS TABLE (side text, r text) LANGUAGE sql AS $$
	SELECT 'heap only', h::text FROM (TABLE h EXCEPT ALL SELECT * FROM t) h
	UNION ALL
	SELECT 'tcopy only', t::text FROM (SELECT * FROM t EXCEPT ALL TABLE h) t $$;

-- no cast from text to int: the heap's hint, which now works
ALTER TABLE h ALTER COLUMN s TYPE int;
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE int;
-- a value USING refuses fails the ALTER, as on the twin
ALTER TABLE h ALTER COLUMN s TYPE int USING s::int;
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE int USING s::int;
SELECT * FROM using_diff();
-- over other columns of the old row, and of the same type
ALTER TABLE h ALTER COLUMN s TYPE int USING length(s) + k,
	ALTER COLUMN v TYPE int USING coalesce(v, -1) * 2;
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE int USING length(s) + k,
	ALTER COLUMN v TYPE int USING coalesce(v, -1) * 2;
SELECT * FROM t ORDER BY k;
SELECT * FROM using_diff();
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum;
-- a result that cannot be cast, a subquery: Postgres' own errors
ALTER TABLE h ALTER COLUMN v TYPE int USING 'x'::text;
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE int USING 'x'::text;
ALTER TABLE h ALTER COLUMN v TYPE int USING (SELECT 1);
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE int USING (SELECT 1);
ALTER FOREIGN TABLE t ALTER COLUMN nope TYPE int USING 1;
-- the key column: rows keyed by the new values
ALTER TABLE h ALTER COLUMN k TYPE bigint USING k * 100;
ALTER FOREIGN TABLE t ALTER COLUMN k TYPE bigint USING k * 100;
SELECT * FROM t WHERE k = 300;
SELECT * FROM using_diff();

-- from a PL/pgSQL function: its statement's plan is cached; each call
-- rewrites with USING, as on the twin
CREATE FUNCTION grow(tbl regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF tbl = 'h'::regclass THEN
		ALTER TABLE h ALTER COLUMN v TYPE bigint USING v + 1;
	ELSE
		ALTER FOREIGN TABLE t ALTER COLUMN v TYPE bigint USING v + 1;
	END IF;
END $$;
SELECT grow('h'), grow('t');
SELECT grow('h'), grow('t');
SELECT * FROM t ORDER BY k;
SELECT * FROM using_diff();

-- a table the tserver does not hold yet: nothing to rewrite, USING accepted
CREATE FOREIGN TABLE e (k int, v text) SERVER ts OPTIONS (key 'k');
ALTER FOREIGN TABLE e ALTER COLUMN v TYPE int USING nope::int;	-- still checked
ALTER FOREIGN TABLE e ALTER COLUMN v TYPE int USING v::int;
INSERT INTO e VALUES (1, 5);
SELECT * FROM e;

-- through a partitioned parent, USING is Postgres' refusal for a foreign
-- partition, as for any foreign table
CREATE TABLE p (k int, v int) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE p1 PARTITION OF p FOR VALUES FROM (0) TO (100) SERVER ts
	OPTIONS (key 'k');
INSERT INTO p VALUES (1, 1);
ALTER TABLE p ALTER COLUMN v TYPE bigint USING v * 2;
SELECT * FROM p;

DROP TABLE p;
DROP FUNCTION grow(regclass), using_diff();
DROP FOREIGN TABLE t, e;
DROP TABLE h;
DROP SERVER ts CASCADE;
DROP EXTENSION tcopy;
