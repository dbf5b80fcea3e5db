--
-- tcopy_pgbench: tcopy.create_pgbench_tables(server) makes pgbench's four
-- tables as tcopy tables: the columns, types and NOT NULLs of the tables
-- Postgres 15's pgbench creates (compared with heap tables made by
-- pgbench's own DDL), keyed by pgbench's primary key columns, in the
-- schema CREATE would use; all four or none.  pgbench itself runs on them
-- in test/ext/161_pgbench.pl.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- pgbench's DDL (pgbench.c, initCreateTables, scale below 20000), as heap tables
CREATE SCHEMA pgb_heap;
CREATE TABLE pgb_heap.pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22));
CREATE TABLE pgb_heap.pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84));
CREATE TABLE pgb_heap.pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84));
CREATE TABLE pgb_heap.pgbench_branches(bid int not null,bbalance int,filler char(88));

-- in the first schema of search_path, as pgbench's CREATE TABLE
CREATE SCHEMA pgb;
SET search_path = pgb, public;
SELECT tcopy.create_pgbench_tables('ts');
RESET search_path;
SELECT c.relname, c.relkind, s.srvname,
	array(SELECT o FROM unnest(ft.ftoptions) o WHERE o NOT LIKE 'table\_name=%' ORDER BY o) AS options
FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
JOIN pg_foreign_server s ON s.oid = ft.ftserver
WHERE c.relnamespace = 'pgb'::regnamespace ORDER BY 1;

-- the same columns as pgbench's tables: names, order, types, NOT NULL
SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pgb'::regnamespace AND a.attnum > 0
EXCEPT
SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pgb_heap'::regnamespace AND a.attnum > 0 AND c.relkind = 'r';
SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pgb'::regnamespace AND a.attnum > 0;
SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pgb_heap'::regnamespace AND a.attnum > 0 AND c.relkind = 'r';

-- what pgbench -i -I G writes, and a key refused twice as by a primary key
SET search_path = pgb;
INSERT INTO pgbench_branches(bid,bbalance) SELECT bid, 0 FROM generate_series(1, 2) AS bid;
INSERT INTO pgbench_tellers(tid,bid,tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, 20) AS tid;
INSERT INTO pgbench_accounts(aid,bid,abalance,filler) SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series(1, 1000) AS aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, 5, '2026-12-01 10:00'), (1, 1, 1, 5, '2026-12-01 10:00');
SELECT count(*), sum(bbalance) FROM pgbench_branches;
SELECT count(*), sum(tbalance), max(bid) FROM pgbench_tellers;
SELECT count(*), sum(abalance), max(bid), min(length(filler)), min(octet_length(filler)) FROM pgbench_accounts;
SELECT * FROM pgbench_history;
INSERT INTO pgbench_branches(bid,bbalance) VALUES (1, 0);
RESET search_path;

-- all four or none: a second call fails on the first table, and a call
-- that fails on a later table leaves none of the others
SET search_path = pgb;
SELECT tcopy.create_pgbench_tables('ts');
RESET search_path;
CREATE SCHEMA pgb_part;
CREATE TABLE pgb_part.pgbench_tellers (tid int);
SET search_path = pgb_part;
SELECT tcopy.create_pgbench_tables('ts');
RESET search_path;
SELECT relname FROM pg_class WHERE relnamespace = 'pgb_part'::regnamespace ORDER BY 1;

-- a server of another wrapper, or none, is refused
CREATE FOREIGN DATA WRAPPER pgb_other;
CREATE SERVER other FOREIGN DATA WRAPPER pgb_other;
SET search_path = pgb_part;
SELECT tcopy.create_pgbench_tables('other');
SELECT tcopy.create_pgbench_tables('no_such_server');
SELECT tcopy.create_pgbench_tables(NULL);
-- no schema to create in: Postgres' own error
SET search_path = no_such_schema;
SELECT tcopy.create_pgbench_tables('ts');
RESET search_path;

-- a server whose name needs quoting
CREATE SERVER "ts ""Quoted""" FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER "ts ""Quoted""";
CREATE SCHEMA pgb_q;
SET search_path = pgb_q;
SELECT tcopy.create_pgbench_tables('ts "Quoted"');
INSERT INTO pgbench_branches VALUES (7, 0, 'x');
SELECT bid, bbalance, octet_length(filler) FROM pgbench_branches;
RESET search_path;
SELECT DISTINCT s.srvname FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
JOIN pg_foreign_server s ON s.oid = ft.ftserver WHERE c.relnamespace = 'pgb_q'::regnamespace;

-- the caller's privileges: CREATE on the schema, USAGE on the server
CREATE ROLE regress_tcopy_pgbench;
CREATE SCHEMA pgb_role AUTHORIZATION regress_tcopy_pgbench;
SET ROLE regress_tcopy_pgbench;
SET search_path = pgb_role;
SELECT tcopy.create_pgbench_tables('ts');
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER ts TO regress_tcopy_pgbench;
SET ROLE regress_tcopy_pgbench;
SET search_path = pgb_role;
SELECT tcopy.create_pgbench_tables('ts');
RESET search_path;
SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c
WHERE c.relnamespace = 'pgb_role'::regnamespace ORDER BY 1;
RESET ROLE;

SET client_min_messages = warning;
DROP SCHEMA pgb, pgb_heap, pgb_part, pgb_q, pgb_role CASCADE;
DROP SERVER other;
DROP FOREIGN DATA WRAPPER pgb_other;
DROP EXTENSION tcopy CASCADE;
DROP ROLE regress_tcopy_pgbench;
