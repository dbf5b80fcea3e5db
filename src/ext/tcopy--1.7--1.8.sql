/* src/ext/tcopy--1.7--1.8.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.8'" to load this file. \quit

-- Version 1.8: tcopy.backup(label, directory) backs every tserver of the
-- database up, into directory/<server name> on its machine, at one point
-- that it marks with a restore point named label: Postgres recovered to it
-- (recovery_target_name) and the tservers started on their backups hold
-- exactly the transactions committed there, once recovery has resolved
-- the prepared sessions (docs/commit.md#backups).  Superusers only: it
-- writes on the tservers' machines and holds every commit back meanwhile.
CREATE FUNCTION tcopy.backup(label text, directory text)
RETURNS TABLE (servers text, address text, backup text, tables bigint,
               prepared_sessions bigint, bytes bigint, restore_lsn pg_lsn)
AS 'MODULE_PATHNAME', 'tcopy_backup'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION tcopy.backup(text, text) FROM PUBLIC;
