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

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE hz;
