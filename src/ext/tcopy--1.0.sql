/* src/ext/tcopy--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION tcopy" to load this file. \quit

-- The one install script: CREATE EXTENSION runs it, then the updates to
-- the default version (tcopy.control), as postgres_fdw's are run.  Its
-- objects go into schema tcopy (tcopy.control: schema = tcopy).

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

CREATE FUNCTION tcopy_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FUNCTION tcopy_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER tcopy
  HANDLER tcopy_fdw_handler
  VALIDATOR tcopy_fdw_validator;
