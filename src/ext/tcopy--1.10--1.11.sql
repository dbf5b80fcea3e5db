/* src/ext/tcopy--1.10--1.11.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.11'" to load this file. \quit

-- Version 1.11: a sweep drops only what this database made
-- (src/ext/commands/check.c).  Generated table_names now carry the
-- database's owner tag (the cluster's system identifier and the database's
-- oid); tcopy.check_tables() calls only those orphans, and
-- tcopy.drop_orphan() drops nothing else unless force is true: a table
-- named before 1.11, or by hand, may be another database's.  The
-- tables' own table_names are left as they are.
DROP FUNCTION tcopy.drop_orphan(name, text);

CREATE FUNCTION tcopy.drop_orphan(server name, table_name text, force boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'tcopy_drop_orphan'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION tcopy.drop_orphan(name, text, boolean) FROM PUBLIC;
