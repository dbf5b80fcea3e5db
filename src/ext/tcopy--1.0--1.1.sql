/* src/ext/tcopy--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.1'" to load this file. \quit

-- Version 1.1 commits with the tservers in two phases and keeps what it
-- prepared in schema tcopy.  An update cannot move version 1.0's objects:
-- the handler and validator functions stay in the schema 1.0 was
-- installed in; what is new goes into schema tcopy, created here unless
-- 1.0 was installed in it.

-- Schema tcopy must be a superuser's, and only superusers may create in it:
-- its owner could drop or rename what the extension keeps there, and any
-- role that may create in it could put look-alikes beside it.  Postgres 15
-- installs into a schema of that name that exists already, whoever made it.
-- (The same check opens tcopy--1.0.sql, tcopy--1.0--1.1.sql, which may
-- create the schema, and tcopy--1.6--1.7.sql.)
DO $$
DECLARE
    role pg_catalog.text;
BEGIN
    SELECT r.rolname INTO role
    FROM pg_catalog.pg_namespace n
    JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
    WHERE n.nspname OPERATOR(pg_catalog.=) 'tcopy' AND NOT r.rolsuper;
    IF FOUND THEN
        RAISE EXCEPTION 'schema "tcopy" is owned by role "%", which is not a superuser', role
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Extension tcopy keeps there the records its commits rely on; the owner of the schema could drop or replace them.',
                  HINT = 'Drop or rename schema tcopy, or make a superuser its owner, and try again.';
    END IF;
    SELECT COALESCE(pg_catalog.quote_ident(r.rolname), 'PUBLIC') INTO role
    FROM pg_catalog.pg_namespace n
    CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
    LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) a.grantee
    WHERE n.nspname OPERATOR(pg_catalog.=) 'tcopy'
      AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
      AND NOT COALESCE(r.rolsuper, false)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% may create objects in schema "tcopy", and is not a superuser', role
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Extension tcopy keeps there the records its commits rely on; a role that may create objects in the schema could put look-alikes beside them.',
                  HINT = 'REVOKE CREATE ON SCHEMA tcopy FROM ' OPERATOR(pg_catalog.||) role OPERATOR(pg_catalog.||) ', and try again.';
    END IF;
END
$$;

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
