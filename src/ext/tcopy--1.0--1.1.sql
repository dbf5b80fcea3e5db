/* src/ext/tcopy--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.1'" to load this file. \quit

-- Version 1.1 commits with the tservers in two phases and keeps what it
-- prepared in schema tcopy.  An update cannot move version 1.0's objects:
-- the handler and validator functions stay in the schema 1.0 was
-- installed in; what is new goes into schema tcopy, created here unless
-- 1.0 was installed in it.

-- Schema tcopy must be wholly the superusers': owned by one, no one else
-- may create in it, and no one else owns anything in it.  Its owner could
-- drop or rename what the extension keeps there, and another role's
-- objects there could stand in for the extension's.  Postgres 15 installs
-- into a schema of that name that exists already, whoever made it.  (The
-- same check opens tcopy--1.0.sql, tcopy--1.0--1.1.sql, which may create
-- the schema, and tcopy--1.6--1.7.sql.)
DO $$
DECLARE
    nsp oid;
    problem text;
BEGIN
    SELECT n.oid INTO nsp FROM pg_catalog.pg_namespace n
    WHERE n.nspname OPERATOR(pg_catalog.=) 'tcopy';
    IF nsp IS NULL THEN
        RETURN;
    END IF;
    SELECT pg_catalog.format(w.what, COALESCE('role "' OPERATOR(pg_catalog.||) r.rolname
                                              OPERATOR(pg_catalog.||) '"', 'PUBLIC'))
    INTO problem
    FROM (SELECT 1 AS rank, 'schema "tcopy" is owned by %s, which is not a superuser' AS what,
                 n.nspowner AS who
          FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) nsp
          UNION ALL
          SELECT 2, '%s may create objects in schema "tcopy", and is not a superuser', a.grantee
          FROM pg_catalog.pg_namespace n CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
          WHERE n.oid OPERATOR(pg_catalog.=) nsp
            AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
          UNION ALL
          SELECT 3, '%s owns objects in schema "tcopy", and is not a superuser', o.owner
          FROM (SELECT c.relowner AS owner FROM pg_catalog.pg_class c
                WHERE c.relnamespace OPERATOR(pg_catalog.=) nsp
                UNION ALL
                SELECT p.proowner FROM pg_catalog.pg_proc p
                WHERE p.pronamespace OPERATOR(pg_catalog.=) nsp
                UNION ALL
                SELECT t.typowner FROM pg_catalog.pg_type t
                WHERE t.typnamespace OPERATOR(pg_catalog.=) nsp
                UNION ALL
                SELECT o.oprowner FROM pg_catalog.pg_operator o
                WHERE o.oprnamespace OPERATOR(pg_catalog.=) nsp) o) w
    LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) w.who
    WHERE NOT COALESCE(r.rolsuper, false)
    ORDER BY w.rank
    LIMIT 1;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION USING
            MESSAGE = problem,
            ERRCODE = 'insufficient_privilege',
            DETAIL = 'Extension tcopy keeps there the records its commits rely on: schema tcopy must be the superusers'' alone.',
            HINT = 'Drop or rename schema tcopy, or leave it, what is in it and the right to create in it to superusers, and try again.';
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
