--
-- tcopy_limits: tables with no columns, which a heap table allows: rows are
-- written by INSERT (DEFAULT VALUES, SELECT without columns) and COPY (empty
-- lines), counted and copied out as on heap.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE TABLE hz ();
CREATE FOREIGN TABLE z () SERVER ts;
INSERT INTO hz DEFAULT VALUES;
INSERT INTO hz DEFAULT VALUES;
INSERT INTO hz DEFAULT VALUES;
INSERT INTO z DEFAULT VALUES;
INSERT INTO z DEFAULT VALUES;
INSERT INTO z DEFAULT VALUES;
INSERT INTO hz SELECT FROM generate_series(1, 2);
INSERT INTO z SELECT FROM generate_series(1, 2);
COPY hz FROM STDIN;


\.
COPY z FROM STDIN;


\.
SELECT (SELECT count(*) FROM hz) AS heap, (SELECT count(*) FROM z) AS tcopy;
SELECT * FROM hz;
SELECT * FROM z;
SELECT count(*) FROM z WHERE random() >= 0;
COPY hz TO STDOUT;
-- (COPY of a foreign table TO is refused by Postgres itself: the query form)
COPY (SELECT * FROM z) TO STDOUT;
COPY (SELECT count(*) FROM z) TO STDOUT;

-- a rolled-back write leaves nothing
BEGIN;
INSERT INTO z DEFAULT VALUES;
ROLLBACK;
SELECT count(*) FROM z;

-- and a table read by another session (a new connection)
\c
SELECT count(*) FROM z;
TRUNCATE z;
SELECT count(*) FROM z;

-- a row larger than a frame is refused with its size and the limit; rows
-- that each fit are sent in as many batches as they need
CREATE FOREIGN TABLE big (id int, t text) SERVER ts;
SET tcopy.max_frame_mb = 1;
INSERT INTO big VALUES (1, repeat('y', 2000000));
COPY big FROM STDIN;
1	short
\.
INSERT INTO big SELECT i, repeat('x', 400000) FROM generate_series(1, 5) i;
RESET tcopy.max_frame_mb;
SELECT count(*), sum(length(t)) FROM big;
INSERT INTO big VALUES (6, repeat('y', 2000000));
SELECT count(*), sum(length(t)) FROM big;
-- a scan's batches never carry a row past the frame: rows near the limit
-- read back with the same limit
TRUNCATE big;
SET tcopy.max_frame_mb = 1;
INSERT INTO big SELECT i, repeat('z', 600000) FROM generate_series(1, 3) i;
SELECT id, length(t) FROM big ORDER BY id;
RESET tcopy.max_frame_mb;
SET tcopy.max_frame_mb = 0;
SET tcopy.max_frame_mb = 4096;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE hz;
