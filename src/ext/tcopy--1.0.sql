/* src/ext/tcopy--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION tcopy" to load this file. \quit

-- The one install script: CREATE EXTENSION runs it, then the updates to
-- the default version (tcopy.control), as postgres_fdw's are run.  Its
-- objects go into schema tcopy (tcopy.control: schema = tcopy).

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
