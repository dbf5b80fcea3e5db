--
-- tcopy_twopc: the two-phase commit's side in SQL: the extension's schema,
-- its records and functions, the settings, and TRUNCATE and DROP as
-- operations of the transaction.  Crashes and faults at each step of the
-- commit are the TAP tests' (test/ext/12*.pl).
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE ROLE regress_tcopy_twopc;

-- the extension's objects are in schema tcopy, and not for everyone
SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'tcopy';
SELECT pg_describe_object(classid, objid, 0) AS member FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tcopy')
ORDER BY 1;
\d tcopy.prepared_session_records
SELECT has_function_privilege('regress_tcopy_twopc', 'tcopy.prepared_sessions()', 'EXECUTE'),
	has_function_privilege('regress_tcopy_twopc', 'tcopy.recover_prepared_sessions()', 'EXECUTE'),
	has_table_privilege('regress_tcopy_twopc', 'tcopy.prepared_session_records', 'SELECT');

-- settings: the recovery interval is the server's, the pause points a
-- superuser's
SHOW tcopy.recovery_interval;
SET tcopy.recovery_interval = '1s';
SHOW tcopy.test_pause_at;
SET tcopy.test_pause_at = 'sometime';
SET ROLE regress_tcopy_twopc;
SET tcopy.test_pause_at = 'after-prepare';
RESET ROLE;

-- committed writes leave nothing prepared; once recovery has run, no
-- record either (the worker may have run first: then it finds none)
CREATE FOREIGN TABLE tp_t (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_t');
TRUNCATE tp_t;
INSERT INTO tp_t VALUES (1, 'one'), (2, 'two');
BEGIN;
INSERT INTO tp_t VALUES (3, 'three');
COPY tp_t FROM STDIN;
4	four
\.
COMMIT;
SELECT * FROM tp_t ORDER BY k;
SELECT * FROM tcopy.prepared_sessions();
SELECT tcopy.recover_prepared_sessions();
SELECT count(*) FROM tcopy.prepared_session_records;
-- a transaction rolled back leaves nothing either
BEGIN;
INSERT INTO tp_t VALUES (5, 'five');
ROLLBACK;
SELECT count(*) FROM tp_t;
SELECT * FROM tcopy.prepared_sessions();

-- TRUNCATE is the transaction's: in a block (where the transaction reads
-- the table empty), rolled back, committed, with rows written after it
BEGIN;
TRUNCATE tp_t;
SELECT * FROM tp_t;
ROLLBACK;
SELECT * FROM tp_t ORDER BY k;
BEGIN;
TRUNCATE tp_t;
INSERT INTO tp_t VALUES (10, 'ten');
COMMIT;
SELECT * FROM tp_t ORDER BY k;
-- ... and after rows written to the table, which it removes
BEGIN;
INSERT INTO tp_t VALUES (11, 'eleven');
TRUNCATE tp_t;
ROLLBACK;
DO $$
BEGIN
	INSERT INTO tp_t VALUES (11, 'eleven');
	TRUNCATE tp_t;
	INSERT INTO tp_t VALUES (10, 'ten');
END
$$;
SELECT * FROM tp_t ORDER BY k;
-- a TRUNCATE in a rolled-back savepoint is forgotten (held back until
-- the session's next use, there was none): the commit keeps the rows
BEGIN;
SAVEPOINT s;
TRUNCATE tp_t;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM tp_t ORDER BY k;
-- prepared, it truncates at COMMIT PREPARED (a read in between would wait
-- for the TRUNCATE's lock, which the prepared transaction holds)
BEGIN;
TRUNCATE tp_t;
PREPARE TRANSACTION 'tp_prepared';
COMMIT PREPARED 'tp_prepared';
SELECT * FROM tp_t ORDER BY k;

-- DROP: the data goes when the transaction commits, and stays when it
-- rolls back
CREATE FOREIGN TABLE tp_d (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_d');
INSERT INTO tp_d VALUES (1, 'kept');
BEGIN;
DROP FOREIGN TABLE tp_d;
ROLLBACK;
SELECT * FROM tp_d;
BEGIN;
SAVEPOINT s;
DROP FOREIGN TABLE tp_d;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM tp_d;
DROP FOREIGN TABLE tp_d;
CREATE FOREIGN TABLE tp_d2 (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_d');
SELECT count(*) FROM tp_d2;
-- rows written to the dropped tserver table, after the DROP, are refused
BEGIN;
DROP FOREIGN TABLE tp_d2;
CREATE FOREIGN TABLE tp_d3 (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_d');
INSERT INTO tp_d3 VALUES (1, 'dropped with the table?');
ROLLBACK;
-- rows written before it go with it
BEGIN;
INSERT INTO tp_d2 VALUES (2, 'dropped');
DROP FOREIGN TABLE tp_d2;
COMMIT;
CREATE FOREIGN TABLE tp_d4 (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_d');
SELECT count(*) FROM tp_d4;
-- a prepared DROP drops the data at COMMIT PREPARED, from another session
CREATE FOREIGN TABLE tp_p (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_p');
INSERT INTO tp_p VALUES (1, 'dropped when committed');
BEGIN;
DROP FOREIGN TABLE tp_p;
PREPARE TRANSACTION 'tp_drop';
\c
COMMIT PREPARED 'tp_drop';
CREATE FOREIGN TABLE tp_p2 (k int NOT NULL, v text) SERVER ts OPTIONS (key 'k', table_name 'tp_p');
SELECT count(*) FROM tp_p2;
-- DROP SERVER ... CASCADE drops its user mappings, then its tables: the
-- data goes too
CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts2;
CREATE FOREIGN TABLE tp_s (k int NOT NULL) SERVER ts2 OPTIONS (key 'k', table_name 'tp_s');
INSERT INTO tp_s VALUES (1), (2);
SET client_min_messages = warning;
DROP SERVER ts2 CASCADE;
RESET client_min_messages;
CREATE FOREIGN TABLE tp_s (k int NOT NULL) SERVER ts OPTIONS (key 'k', table_name 'tp_s');
SELECT count(*) FROM tp_s;
-- the data must be reached: without a user mapping, or with the tserver
-- gone, the DROP fails at commit, and can be tried again
CREATE SERVER ts_nomap FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE FOREIGN TABLE tp_m (k int) SERVER ts_nomap;
ALTER FOREIGN TABLE tp_m OWNER TO regress_tcopy_twopc;
SET ROLE regress_tcopy_twopc;
DROP FOREIGN TABLE tp_m;
RESET ROLE;
CREATE SERVER ts_gone FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/nonexistent/tcopy.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts_gone;
CREATE FOREIGN TABLE tp_g (k int) SERVER ts_gone;
DROP FOREIGN TABLE tp_g;
SELECT count(*) FROM pg_foreign_table WHERE ftrelid = 'tp_g'::regclass;
-- ... unless the server's address is null:, whose tables hold nothing
ALTER SERVER ts_gone OPTIONS (SET address 'null:');
DROP FOREIGN TABLE tp_g;
-- nothing was left prepared
SELECT * FROM tcopy.prepared_sessions();

-- dropping the extension keeps its tables' data, as it did before
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
RESET client_min_messages;

-- the update from 1.0 adds the new objects in schema tcopy
CREATE EXTENSION tcopy VERSION '1.0';
ALTER EXTENSION tcopy UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'tcopy';
SELECT pg_describe_object(classid, objid, 0) AS member FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tcopy')
ORDER BY 1;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP ROLE regress_tcopy_twopc;
