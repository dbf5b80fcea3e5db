/* src/ext/tcopy--1.9--1.10.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.10'" to load this file. \quit

-- Version 1.10: more of what the tservers store and do, seen from SQL
-- (src/ext/commands/monitor.c).  tcopy.table_files(rel): a tcopy table's
-- SST files on its tservers, by level of RocksDB's tree (a file that also
-- holds other tables' rows counts whole); whoever may SELECT from the
-- table may call it.
CREATE FUNCTION tcopy.table_files(rel regclass)
RETURNS TABLE (relation regclass, level integer, files bigint, bytes bigint)
AS 'MODULE_PATHNAME', 'tcopy_table_files'
LANGUAGE C STRICT VOLATILE;

-- tcopy.server_sessions(server): the tserver's open write sessions (begun,
-- not yet prepared: tcopy.prepared_sessions() lists those), through the
-- caller's user mapping; whoever has USAGE on the server may call it.  The
-- backend (pid, database, role) of a session this cluster began is shown
-- to all, as pg_stat_activity shows it; what the session holds, and its
-- transaction, only to whom has the privileges of its role or of
-- pg_read_all_stats, as pg_stat_progress_copy does.
CREATE FUNCTION tcopy.server_sessions(server name)
RETURNS TABLE (session_id bigint, state text, began_at timestamptz, rows bigint,
	staged_bytes bigint, spilled_bytes bigint, tables integer, pid integer,
	datname text, usesysid oid, backend_xid xid)
AS 'MODULE_PATHNAME', 'tcopy_server_sessions'
LANGUAGE C STRICT VOLATILE;

-- tcopy.server_version(server): the tserver's version (NULL: the null
-- address, no tserver).
CREATE FUNCTION tcopy.server_version(server name)
RETURNS text
AS 'MODULE_PATHNAME', 'tcopy_server_version'
LANGUAGE C STRICT VOLATILE;

-- tcopy.copy_progress: pg_stat_progress_copy's rows of COPYs into tcopy
-- tables (or into partitioned tables with tcopy partitions), with their
-- start and their rates so far.  Rows that pg_stat_progress_copy hides
-- from the caller (another role's COPY) it hides too.
CREATE VIEW tcopy.copy_progress AS
SELECT p.pid, p.datname, p.relid::regclass AS relation, p.command, p.type,
	a.query_start AS started,
	clock_timestamp() - a.query_start AS elapsed,
	p.bytes_processed, p.bytes_total, p.tuples_processed, p.tuples_excluded,
	round(p.tuples_processed /
		greatest(extract(epoch FROM clock_timestamp() - a.query_start), 0.001))::bigint
		AS rows_per_second,
	round(p.bytes_processed /
		greatest(extract(epoch FROM clock_timestamp() - a.query_start), 0.001))::bigint
		AS bytes_per_second
FROM pg_stat_progress_copy p
JOIN pg_stat_activity a ON a.pid = p.pid
WHERE EXISTS (
	SELECT 1
	FROM pg_foreign_table ft
	JOIN pg_foreign_server s ON s.oid = ft.ftserver
	JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
	WHERE w.fdwname = 'tcopy'
		AND (ft.ftrelid = p.relid
			OR ft.ftrelid IN (SELECT t.relid FROM pg_partition_tree(p.relid) t)));

GRANT SELECT ON tcopy.copy_progress TO PUBLIC;
