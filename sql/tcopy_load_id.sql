--
-- tcopy_load_id: COPY ... (load_id 'label'), loads that can be re-run.  A
-- label is published with the rows of the COPY that carried it; a COPY
-- with a label published for the table loads nothing; a label whose load
-- failed or rolled back loads again.  Labels are listed and forgotten in
-- SQL, with the table's privileges.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE FOREIGN TABLE li (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id', on_conflict 'replace');
CREATE FOREIGN TABLE li_other (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id');

-- the first load publishes its label with its rows
COPY li FROM stdin (load_id 'batch-1');
1	one
2	two
\.
SELECT * FROM li ORDER BY id;
SELECT label, published_at <= now() AS published FROM tcopy.load_labels('li');

-- the same label again loads nothing: the input is read to its end
COPY li FROM stdin (load_id 'batch-1');
1	changed
3	three
\.
SELECT * FROM li ORDER BY id;

-- per table: the same label loads another table
COPY li_other FROM stdin (load_id 'batch-1');
7	seven
\.
SELECT count(*) FROM li_other;

-- a load that fails is not published: its label loads again
COPY li FROM stdin (load_id 'batch-2');
3	three
x	bad
\.
SELECT label FROM tcopy.load_labels('li') ORDER BY 1;
COPY li FROM stdin (load_id 'batch-2');
3	three
\.

-- a load rolled back is not published either
BEGIN;
COPY li FROM stdin (load_id 'batch-3');
4	four
\.
ROLLBACK;
SELECT label FROM tcopy.load_labels('li') ORDER BY 1;
BEGIN;
COPY li FROM stdin (load_id 'batch-3');
4	four
\.
-- twice in one transaction: the second loads nothing
COPY li FROM stdin (load_id 'batch-3');
5	five
\.
COMMIT;
SELECT * FROM li ORDER BY id;

-- a load of no rows publishes its label too
COPY li FROM stdin (load_id 'empty');
\.
SELECT label FROM tcopy.load_labels('li') ORDER BY 1;

-- other options pass through to COPY; the label's checks are Postgres' words
COPY li FROM stdin (FORMAT csv, load_id 'csv-1', HEADER);
id,v
6,six
\.
COPY li FROM stdin (FORMAT csv, load_id 'csv-1', HEADER);
id,v
6,six
\.
COPY li FROM '/dev/null' (load_id 'a', load_id 'b');
COPY li FROM '/dev/null' (load_id '');
COPY li FROM '/dev/null' (load_id);
-- Postgres' COPY does not know the option
CREATE TABLE li_heap (id int);
COPY li_heap FROM '/dev/null' (load_id 'x');

-- forgetting a label lets it load again (at once, not with the transaction)
SELECT tcopy.forget_load('li', 'batch-1');
SELECT tcopy.forget_load('li', 'batch-1');
SELECT tcopy.forget_load('li', 'never');
COPY li FROM stdin (load_id 'batch-1');
1	again
\.
SELECT * FROM li WHERE id = 1;

-- TRUNCATE forgets the table's labels with its rows
TRUNCATE li;
SELECT count(*) FROM tcopy.load_labels('li');
COPY li FROM stdin (load_id 'batch-1');
1	after truncate
\.
SELECT label FROM tcopy.load_labels('li');
-- and a TRUNCATE in the transaction of the load keeps the new label
BEGIN;
TRUNCATE li;
COPY li FROM stdin (load_id 'batch-1');
1	truncated and loaded
\.
COMMIT;
SELECT label FROM tcopy.load_labels('li');
SELECT * FROM li;

-- privileges: listing takes SELECT or INSERT, forgetting INSERT (or ownership)
CREATE ROLE li_reader;
CREATE ROLE li_writer;
GRANT USAGE ON SCHEMA tcopy TO li_reader, li_writer;
GRANT SELECT ON li TO li_reader;
GRANT INSERT ON li TO li_writer;
SET ROLE li_reader;
SELECT label FROM tcopy.load_labels('li');
SELECT tcopy.forget_load('li', 'batch-1');
RESET ROLE;
SET ROLE li_writer;
SELECT label FROM tcopy.load_labels('li');
COPY li FROM stdin (load_id 'batch-1');
9	nine
\.
SELECT tcopy.forget_load('li', 'batch-1');
RESET ROLE;
SELECT tcopy.load_labels('li_heap');

SET client_min_messages = warning;
DROP OWNED BY li_reader, li_writer;
DROP EXTENSION tcopy CASCADE;
DROP TABLE li_heap;
DROP ROLE li_reader;
DROP ROLE li_writer;
