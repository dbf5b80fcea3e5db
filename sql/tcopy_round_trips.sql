--
-- tcopy_round_trips: what a small transaction's statements cost in round
-- trips to the tserver (issue 46), counted by tcopy.round_trips(), the
-- backend's reads that waited for an answer.  Once the backend's
-- connections are open: a key-point SELECT, UPDATE or DELETE costs one
-- (a transaction's BEGIN and on_conflict go out with its first request),
-- an INSERT none (its batch is acknowledged at the commit), and a COMMIT
-- two (PREPARE behind the batches in flight, then RESOLVE).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE rt (k int NOT NULL, v int) SERVER ts
	OPTIONS (key 'k', table_name 'rt', on_conflict 'error');
CREATE FOREIGN TABLE rt_hist (k int, v int) SERVER ts OPTIONS (table_name 'rt_hist');
INSERT INTO rt SELECT i, 0 FROM generate_series(1, 100) i;
INSERT INTO rt_hist VALUES (0, 0);
ANALYZE rt, rt_hist;

-- the connections and tables opened once
BEGIN;
UPDATE rt SET v = v + 1 WHERE k = 1;
SELECT v FROM rt WHERE k = 1;
INSERT INTO rt_hist VALUES (1, 1);
DELETE FROM rt WHERE k = 100;
COMMIT;
SELECT v FROM rt WHERE k = 2;

-- a key-point SELECT: its scan
SELECT tcopy.round_trips() AS before \gset
SELECT v FROM rt WHERE k = 2;
SELECT tcopy.round_trips() - :before AS "SELECT";

-- a TPC-B-like transaction
SELECT tcopy.round_trips() AS before \gset
BEGIN;
UPDATE rt SET v = v + 5 WHERE k = 3;
SELECT tcopy.round_trips() - :before AS "first UPDATE: BEGIN, on_conflict, MODIFY";
SELECT tcopy.round_trips() AS before \gset
SELECT v FROM rt WHERE k = 3;
SELECT tcopy.round_trips() - :before AS "SELECT of its own write";
SELECT tcopy.round_trips() AS before \gset
UPDATE rt SET v = v - 5 WHERE k = 4;
SELECT tcopy.round_trips() - :before AS "second UPDATE";
SELECT tcopy.round_trips() AS before \gset
INSERT INTO rt_hist VALUES (3, 5);
SELECT tcopy.round_trips() - :before AS "INSERT";
SELECT tcopy.round_trips() AS before \gset
COMMIT;
SELECT tcopy.round_trips() - :before AS "COMMIT: PREPARE, RESOLVE";
SELECT k, v FROM rt WHERE k IN (3, 4) ORDER BY k;

-- an INSERT in a transaction of its own, and a DELETE
SELECT tcopy.round_trips() AS before \gset
INSERT INTO rt_hist VALUES (4, 4);
SELECT tcopy.round_trips() - :before AS "INSERT and its COMMIT";
SELECT tcopy.round_trips() AS before \gset
DELETE FROM rt WHERE k = 99;
SELECT tcopy.round_trips() - :before AS "DELETE and its COMMIT";
SELECT count(*) FROM rt;
SELECT count(*) FROM rt_hist;

-- a write that fails still answers with Postgres' error: the deferred
-- on_conflict's answer comes before the duplicate's
BEGIN;
INSERT INTO rt VALUES (5, 1);
COMMIT;

-- the scan's connection remembers rt's tserver table id: dropped and made
-- again under the same table_name, the table has a new id, and the read
-- opens it again (UNKNOWN_TABLE for the old one), seeing the new rows
SELECT v FROM rt WHERE k = 3;
DROP FOREIGN TABLE rt;
CREATE FOREIGN TABLE rt (k int NOT NULL, v int) SERVER ts
	OPTIONS (key 'k', table_name 'rt', on_conflict 'error');
INSERT INTO rt VALUES (3, 33);
SELECT v FROM rt WHERE k = 3;
SELECT count(*) FROM rt;

DROP FOREIGN TABLE rt, rt_hist;
DROP SERVER ts CASCADE;
DROP EXTENSION tcopy;
