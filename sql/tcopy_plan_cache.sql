--
-- tcopy_plan_cache: what a backend keeps of a tcopy table between
-- statements (codec_cache.c: the codec its scans read with, the key the
-- planner bounds and orders by) follows every change of what it was read
-- from, within one session: the table's options, its columns, its
-- server's options, the user mapping, a table dropped and made again
-- under the same name.  Each change comes between two reads of the table,
-- as a plain statement and as a prepared one, which must see it.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE FOREIGN TABLE pc_a (k int, v text) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_plan_cache.a');
CREATE FOREIGN TABLE pc_b (k int, v text) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_plan_cache.b');
INSERT INTO pc_a VALUES (1, 'a1'), (2, 'a2');
INSERT INTO pc_b VALUES (1, 'b1'), (2, 'b2');
PREPARE get_a(int) AS SELECT v FROM pc_a WHERE k = $1;
-- a generic plan, kept unless an invalidation replans it
SET plan_cache_mode = force_generic_plan;
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a(2);

-- the table's options: another tserver table, and back
ALTER FOREIGN TABLE pc_a OPTIONS (SET table_name 'tcopy_plan_cache.b');
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a(2);
ALTER FOREIGN TABLE pc_a OPTIONS (SET table_name 'tcopy_plan_cache.a');
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a(2);

-- the server's options: null: holds no rows
ALTER SERVER ts OPTIONS (SET address 'null:');
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a(2);
ALTER SERVER ts OPTIONS (SET address :'tcopy_address');
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a(2);

-- the user mapping, as a user of its own (the codec is kept per user)
CREATE ROLE regress_tcopy_pc;
GRANT SELECT ON pc_a TO regress_tcopy_pc;
GRANT USAGE ON FOREIGN SERVER ts TO regress_tcopy_pc;
SET ROLE regress_tcopy_pc;
SELECT v FROM pc_a WHERE k = 1;
PREPARE get_a_user(int) AS SELECT v FROM pc_a WHERE k = $1;
EXECUTE get_a_user(2);
RESET ROLE;
DROP USER MAPPING FOR PUBLIC SERVER ts;
SET ROLE regress_tcopy_pc;
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a_user(2);
RESET ROLE;
CREATE USER MAPPING FOR PUBLIC SERVER ts;
SET ROLE regress_tcopy_pc;
SELECT v FROM pc_a WHERE k = 1;
EXECUTE get_a_user(2);
RESET ROLE;

-- the columns and the key of a table the tserver does not hold yet
CREATE FOREIGN TABLE pc_c (k int, v int) SERVER ts
	OPTIONS (key 'k', table_name 'tcopy_plan_cache.c');
PREPARE get_c AS SELECT k FROM pc_c ORDER BY k;
SELECT * FROM pc_c WHERE k = 1;
EXECUTE get_c;
EXPLAIN (COSTS OFF) SELECT * FROM pc_c WHERE k = 1;
EXPLAIN (COSTS OFF) SELECT * FROM pc_c ORDER BY k;
ALTER FOREIGN TABLE pc_c ADD COLUMN k2 bigint;
ALTER FOREIGN TABLE pc_c DROP COLUMN v;
ALTER FOREIGN TABLE pc_c ADD COLUMN w text;
ALTER FOREIGN TABLE pc_c OPTIONS (SET key 'k2');
INSERT INTO pc_c VALUES (1, 20, 'x'), (2, 10, 'y');
-- keyed by k2 now: bounded and ordered by it, not by k
EXPLAIN (COSTS OFF) SELECT * FROM pc_c WHERE k2 = 10;
EXPLAIN (COSTS OFF) SELECT * FROM pc_c WHERE k = 1;
EXPLAIN (COSTS OFF) SELECT * FROM pc_c ORDER BY k2;
EXPLAIN (COSTS OFF) SELECT * FROM pc_c ORDER BY k;
SELECT * FROM pc_c WHERE k2 = 10;
SELECT * FROM pc_c ORDER BY k2;
EXECUTE get_c;
-- a duplicate of k2, not of k
INSERT INTO pc_c VALUES (3, 20, 'z');
INSERT INTO pc_c VALUES (1, 30, 'z');
SELECT * FROM pc_c ORDER BY k2;
-- a column's name on the tserver is read from its options: a rename of
-- the column keeps it, and the table reads as before
ALTER FOREIGN TABLE pc_c RENAME COLUMN w TO w2;
SELECT k, w2 FROM pc_c WHERE k2 = 20;

-- an UPDATE the tserver does (fdw_direct.c) follows the table's options too
PREPARE upd_a(int) AS UPDATE pc_a SET v = v || '!' WHERE k = $1;
UPDATE pc_a SET v = v || '!' WHERE k = 1;
EXECUTE upd_a(2);
ALTER FOREIGN TABLE pc_a OPTIONS (SET table_name 'tcopy_plan_cache.b');
UPDATE pc_a SET v = v || '?' WHERE k = 1;
EXECUTE upd_a(2);
ALTER FOREIGN TABLE pc_a OPTIONS (SET table_name 'tcopy_plan_cache.a');
SELECT * FROM pc_a ORDER BY k;
SELECT * FROM pc_b ORDER BY k;

-- an INSERT's writer too: a duplicate key is an error, then ignored
PREPARE ins_a(int, text) AS INSERT INTO pc_a VALUES ($1, $2);
INSERT INTO pc_a VALUES (1, 'dup');
EXECUTE ins_a(2, 'dup');
ALTER FOREIGN TABLE pc_a OPTIONS (ADD on_conflict 'ignore');
INSERT INTO pc_a VALUES (1, 'dup');
EXECUTE ins_a(2, 'dup');
ALTER FOREIGN TABLE pc_a OPTIONS (DROP on_conflict);
EXECUTE ins_a(2, 'dup');
SELECT * FROM pc_a ORDER BY k;

-- dropped, and made again under the same name: other columns, other rows
SELECT v FROM pc_b WHERE k = 2;
DROP FOREIGN TABLE pc_b;
CREATE FOREIGN TABLE pc_b (id bigint, k int, v text) SERVER ts
	OPTIONS (key 'id', table_name 'tcopy_plan_cache.b_again');
INSERT INTO pc_b VALUES (7, 2, 'b again');
SELECT v FROM pc_b WHERE k = 2;
SELECT * FROM pc_b WHERE id = 7;

RESET plan_cache_mode;
DEALLOCATE ALL;
DROP FOREIGN TABLE pc_a, pc_b, pc_c;
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP ROLE regress_tcopy_pc;
