/* src/ext/tcopy--1.8--1.9.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.9'" to load this file. \quit

-- Version 1.9: what the tservers store and do, seen from SQL
-- (src/ext/commands/monitor.c).  tcopy.table_size(rel): the rows and
-- stored bytes of a tcopy table, or of a partitioned table's tcopy
-- partitions, as the tservers estimate them (pg_total_relation_size knows
-- nothing of them); whoever may SELECT from the table may call it.
CREATE FUNCTION tcopy.table_size(rel regclass, OUT rows bigint, OUT bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'tcopy_table_size'
LANGUAGE C STRICT VOLATILE;

-- tcopy.server_stats(server): a tserver's counters, through the caller's
-- user mapping; whoever has USAGE on the server may call it.
CREATE FUNCTION tcopy.server_stats(server name)
RETURNS TABLE (stat text, value bigint)
AS 'MODULE_PATHNAME', 'tcopy_server_stats'
LANGUAGE C STRICT VOLATILE;

-- tcopy.check_tables(): the database's tcopy foreign tables whose tserver
-- table is absent, and the tserver tables no foreign table of this
-- database names (orphans); tcopy.drop_orphan(server, table_name) drops
-- such an orphan, checked again.  Superusers only
-- (src/ext/commands/check.c).
CREATE FUNCTION tcopy.check_tables()
RETURNS TABLE (server text, foreign_table regclass, table_name text, problem text)
AS 'MODULE_PATHNAME', 'tcopy_check_tables'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION tcopy.check_tables() FROM PUBLIC;

CREATE FUNCTION tcopy.drop_orphan(server name, table_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'tcopy_drop_orphan'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION tcopy.drop_orphan(name, text) FROM PUBLIC;
