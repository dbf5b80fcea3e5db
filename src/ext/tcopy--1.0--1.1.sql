/* src/ext/tcopy--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.1'" to load this file. \quit

-- Version 1.1 commits with the tservers in two phases and keeps what it
-- prepared in schema tcopy.  An update cannot move version 1.0's objects:
-- the handler and validator functions stay in the schema 1.0 was
-- installed in; what is new goes into schema tcopy, created here unless
-- 1.0 was installed in it.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'tcopy') THEN
        CREATE SCHEMA tcopy;
    END IF;
END
$$;

CREATE TABLE tcopy.prepared_session_records (
    gid text PRIMARY KEY,
    server_id oid NOT NULL,
    user_id oid NOT NULL,
    xid xid8 NOT NULL,
    prepared_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON tcopy.prepared_session_records FROM PUBLIC;

CREATE FUNCTION tcopy.prepared_sessions(
    OUT server text,
    OUT gid text,
    OUT xid xid8,
    OUT rows bigint,
    OUT prepared_at timestamptz,
    OUT attached bool,
    OUT decision text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tcopy_prepared_sessions'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION tcopy.recover_prepared_sessions()
RETURNS int
AS 'MODULE_PATHNAME', 'tcopy_recover_prepared_sessions'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION tcopy.prepared_sessions() FROM PUBLIC;
REVOKE ALL ON FUNCTION tcopy.recover_prepared_sessions() FROM PUBLIC;
