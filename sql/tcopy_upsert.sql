--
-- tcopy_upsert: INSERT ... ON CONFLICT (key) DO NOTHING and DO UPDATE of a
-- tcopy table (fdw_upsert.c), beside a heap twin with the key as primary
-- key: the same rows, RETURNING, errors and refusals.  Concurrent upserts
-- are in test/isolation/specs/upsert.spec.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE SCHEMA h;
CREATE SCHEMA tc;
CREATE TABLE h.t (k int PRIMARY KEY, v int, note text);
CREATE FOREIGN TABLE tc.t (k int NOT NULL, v int, note text)
	SERVER ts OPTIONS (key 'k', table_name 'tcopy_upsert.t');
TRUNCATE tc.t;
INSERT INTO h.t VALUES (1, 10, 'a'), (2, 20, 'b');
INSERT INTO tc.t VALUES (1, 10, 'a'), (2, 20, 'b');

CREATE VIEW diff AS
SELECT 'heap only' AS side, * FROM (SELECT * FROM h.t EXCEPT ALL SELECT * FROM tc.t) a
UNION ALL
SELECT 'tcopy only', * FROM (SELECT * FROM tc.t EXCEPT ALL SELECT * FROM h.t) b;

-- DO NOTHING: the stored key is skipped, a new one inserted
INSERT INTO h.t VALUES (1, 11, 'x'), (3, 30, 'c') ON CONFLICT (k) DO NOTHING RETURNING *;
INSERT INTO tc.t VALUES (1, 11, 'x'), (3, 30, 'c') ON CONFLICT (k) DO NOTHING RETURNING *;
INSERT INTO h.t VALUES (2, 0, 'y'), (4, 40, 'd') ON CONFLICT DO NOTHING RETURNING *;
INSERT INTO tc.t VALUES (2, 0, 'y'), (4, 40, 'd') ON CONFLICT DO NOTHING RETURNING *;
SELECT * FROM diff;

-- DO UPDATE with EXCLUDED, the stored row, and a WHERE
INSERT INTO h.t VALUES (1, 5, 'u'), (5, 50, 'e') ON CONFLICT (k)
	DO UPDATE SET v = t.v + EXCLUDED.v, note = t.note || EXCLUDED.note RETURNING *;
INSERT INTO tc.t VALUES (1, 5, 'u'), (5, 50, 'e') ON CONFLICT (k)
	DO UPDATE SET v = t.v + EXCLUDED.v, note = t.note || EXCLUDED.note RETURNING *;
INSERT INTO h.t VALUES (1, 1, 'w'), (2, 2, 'w') ON CONFLICT (k)
	DO UPDATE SET v = EXCLUDED.v WHERE t.v > 15 RETURNING k, v;
INSERT INTO tc.t VALUES (1, 1, 'w'), (2, 2, 'w') ON CONFLICT (k)
	DO UPDATE SET v = EXCLUDED.v WHERE t.v > 15 RETURNING k, v;
SELECT * FROM diff;
SELECT * FROM tc.t ORDER BY k;

-- a proposal whose WHERE rejects the stored row leaves it for the next
INSERT INTO h.t VALUES (3, 10, 'a'), (3, 20, 'b') ON CONFLICT (k)
	DO UPDATE SET v = EXCLUDED.v WHERE EXCLUDED.v > 15 RETURNING k, v;
INSERT INTO tc.t VALUES (3, 10, 'a'), (3, 20, 'b') ON CONFLICT (k)
	DO UPDATE SET v = EXCLUDED.v WHERE EXCLUDED.v > 15 RETURNING k, v;
SELECT * FROM diff;

-- one key proposed twice by a statement
INSERT INTO h.t VALUES (6, 1, 'p'), (6, 2, 'q') ON CONFLICT (k) DO NOTHING RETURNING *;
INSERT INTO tc.t VALUES (6, 1, 'p'), (6, 2, 'q') ON CONFLICT (k) DO NOTHING RETURNING *;
INSERT INTO h.t VALUES (7, 1, 'p'), (7, 2, 'q') ON CONFLICT (k) DO UPDATE SET v = 0;
INSERT INTO tc.t VALUES (7, 1, 'p'), (7, 2, 'q') ON CONFLICT (k) DO UPDATE SET v = 0;
SELECT * FROM diff;

-- the transaction's own rows conflict; a rollback leaves the stored ones
BEGIN;
INSERT INTO h.t VALUES (8, 80, 'h');
INSERT INTO tc.t VALUES (8, 80, 'h');
INSERT INTO h.t VALUES (8, 1, 'i'), (1, 1, 'i') ON CONFLICT (k) DO UPDATE SET v = t.v + 1 RETURNING *;
INSERT INTO tc.t VALUES (8, 1, 'i'), (1, 1, 'i') ON CONFLICT (k) DO UPDATE SET v = t.v + 1 RETURNING *;
SELECT * FROM diff;
ROLLBACK;
SELECT * FROM diff;

-- in a CTE, and prepared
WITH u AS (INSERT INTO h.t VALUES (2, 200, 'cte') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v RETURNING k, v)
SELECT * FROM u;
WITH u AS (INSERT INTO tc.t VALUES (2, 200, 'cte') ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v RETURNING k, v)
SELECT * FROM u;
PREPARE hup(int, int) AS INSERT INTO h.t VALUES ($1, $2, 'prep') ON CONFLICT (k) DO UPDATE SET v = t.v + EXCLUDED.v;
PREPARE tup(int, int) AS INSERT INTO tc.t VALUES ($1, $2, 'prep') ON CONFLICT (k) DO UPDATE SET v = t.v + EXCLUDED.v;
EXECUTE hup(9, 1); EXECUTE hup(9, 1); EXECUTE hup(9, 1); EXECUTE hup(9, 1); EXECUTE hup(9, 1); EXECUTE hup(9, 1);
EXECUTE tup(9, 1); EXECUTE tup(9, 1); EXECUTE tup(9, 1); EXECUTE tup(9, 1); EXECUTE tup(9, 1); EXECUTE tup(9, 1);
SELECT * FROM diff;
SELECT * FROM tc.t WHERE k = 9;

-- what Postgres refuses, it refuses for both; what tcopy cannot do, it says
INSERT INTO h.t VALUES (1, 1, 'z') ON CONFLICT (v) DO NOTHING;
INSERT INTO tc.t VALUES (1, 1, 'z') ON CONFLICT (v) DO NOTHING;
INSERT INTO h.t VALUES (1, 1, 'z') ON CONFLICT (k, v) DO NOTHING;
INSERT INTO tc.t VALUES (1, 1, 'z') ON CONFLICT (k, v) DO NOTHING;
INSERT INTO tc.t VALUES (1, 1, 'z') ON CONFLICT (k) DO UPDATE SET k = 100;

-- a key of two text columns
CREATE TABLE h.m (a text, b text, n int, PRIMARY KEY (a, b));
CREATE FOREIGN TABLE tc.m (a text NOT NULL, b text NOT NULL, n int)
	SERVER ts OPTIONS (key 'a, b', table_name 'tcopy_upsert.m');
TRUNCATE tc.m;
INSERT INTO h.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 6) i
	ON CONFLICT (b, a) DO UPDATE SET n = m.n + 1;
INSERT INTO tc.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 6) i
	ON CONFLICT (b, a) DO UPDATE SET n = m.n + 1;
INSERT INTO h.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 6) i
	ON CONFLICT (a, b) DO UPDATE SET n = m.n + 10 WHERE m.b = 'b1' RETURNING *;
INSERT INTO tc.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 6) i
	ON CONFLICT (a, b) DO UPDATE SET n = m.n + 10 WHERE m.b = 'b1' RETURNING *;
INSERT INTO h.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 7) i
	ON CONFLICT (a, b) DO UPDATE SET n = 0;
INSERT INTO tc.m SELECT 'a' || i % 3, 'b' || i % 2, 1 FROM generate_series(1, 7) i
	ON CONFLICT (a, b) DO UPDATE SET n = 0;
SELECT * FROM h.m ORDER BY a, b;
SELECT * FROM tc.m ORDER BY a, b;

-- a table without a key conflicts on nothing
CREATE FOREIGN TABLE tc.nokey (v int) SERVER ts OPTIONS (table_name 'tcopy_upsert.nokey');
TRUNCATE tc.nokey;
INSERT INTO tc.nokey VALUES (1), (1) ON CONFLICT DO NOTHING;
SELECT count(*) FROM tc.nokey;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP VIEW IF EXISTS diff;
DROP SCHEMA h, tc CASCADE;
RESET client_min_messages;
