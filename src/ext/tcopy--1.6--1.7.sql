/* src/ext/tcopy--1.6--1.7.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.7'" to load this file. \quit

-- Version 1.7 closes the ways a role could run its own code as, or plant
-- its own tables for, a superuser using the extension (docs/security.md,
-- "The extension's own objects"):
--  - schema tcopy must be a superuser's (the check below);
--  - every member of the extension moves into schema tcopy, which becomes
--    the extension's schema: an install made at 1.0, when the extension
--    was relocatable, kept it elsewhere (public, say), with 1.3 to 1.6's
--    objects there and 1.1's tables in schema tcopy;
--  - the SQL functions run with search_path pg_catalog, pg_temp: nothing
--    of the caller's path is looked up in them (CVE-2018-1058's lesson).
-- The C code finds the extension's tables as its members, whatever their
-- schema (extension.c).

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
DECLARE
    ext oid;
    old_schema oid;
    new_schema oid := 'tcopy'::pg_catalog.regnamespace;
    member record;
BEGIN
    SELECT e.oid, e.extnamespace INTO ext, old_schema
    FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'tcopy';
    FOR member IN
        SELECT p.oid::pg_catalog.regprocedure AS proc, NULL::pg_catalog.regclass AS rel
        FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.objid
        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND d.refobjid OPERATOR(pg_catalog.=) ext AND d.deptype OPERATOR(pg_catalog.=) 'e'
          AND p.pronamespace OPERATOR(pg_catalog.<>) new_schema
        UNION ALL
        SELECT NULL, c.oid::pg_catalog.regclass
        FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND d.refobjid OPERATOR(pg_catalog.=) ext AND d.deptype OPERATOR(pg_catalog.=) 'e'
          AND c.relnamespace OPERATOR(pg_catalog.<>) new_schema
    LOOP
        IF member.proc IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER FUNCTION %s SET SCHEMA tcopy', member.proc);
        ELSE
            EXECUTE pg_catalog.format('ALTER TABLE %s SET SCHEMA tcopy', member.rel);
        END IF;
    END LOOP;
    IF old_schema OPERATOR(pg_catalog.<>) new_schema THEN
        -- what ALTER EXTENSION ... SET SCHEMA records, which a
        -- non-relocatable extension cannot run
        UPDATE pg_catalog.pg_extension SET extnamespace = new_schema
        WHERE oid OPERATOR(pg_catalog.=) ext;
        UPDATE pg_catalog.pg_depend SET refobjid = new_schema
        WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND objid OPERATOR(pg_catalog.=) ext
          AND refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass
          AND refobjid OPERATOR(pg_catalog.=) old_schema;
    END IF;
END
$$;

-- The four tables of pgbench (README.md, pgbench), as tcopy tables on
-- server "server", in schema "schema": by default the schema CREATE puts
-- them in (search_path's first, as pgbench's own CREATE TABLE), which the
-- default, evaluated in the caller's context, names.  The columns and
-- types of Postgres 15's pgbench (scales below 20000, whose aid is an
-- int), each table keyed by the column pgbench makes its primary key,
-- pgbench_history keyless.  `pgbench -i -I g` (or `-I G`) then fills them,
-- `pgbench -n` runs on them.  Security invoker: the caller needs CREATE on
-- the schema and USAGE on the server; nothing is created unless all four
-- are.
DROP FUNCTION tcopy.create_pgbench_tables(name);
CREATE FUNCTION tcopy.create_pgbench_tables(server name,
                                            schema name DEFAULT pg_catalog.current_schema())
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF server IS NULL THEN
        RAISE EXCEPTION 'create_pgbench_tables needs a server'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF schema IS NULL THEN
        RAISE EXCEPTION 'no schema has been selected to create in'
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_foreign_server s
               JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw
               LEFT JOIN pg_catalog.pg_proc p ON p.oid = w.fdwhandler
               WHERE s.srvname = server
                 AND (p.oid IS NULL OR p.probin <> 'MODULE_PATHNAME'
                      OR p.prosrc <> 'tcopy_fdw_handler')) THEN
        RAISE EXCEPTION 'server "%" is not a tcopy server', server
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Name a server of foreign-data wrapper tcopy.';
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE %I.pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84))'
        ' SERVER %I OPTIONS (key %L)', schema, server, 'aid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE %I.pgbench_branches (bid int NOT NULL, bbalance int, filler char(88))'
        ' SERVER %I OPTIONS (key %L)', schema, server, 'bid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE %I.pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84))'
        ' SERVER %I OPTIONS (key %L)', schema, server, 'tid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE %I.pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22))'
        ' SERVER %I', schema, server);
END
$$;

-- Spread partitioned table "parent" over tcopy servers (tcopy--1.5--1.6.sql
-- says how); now with a fixed search_path, and the parent named by its
-- schema and name.
CREATE OR REPLACE FUNCTION tcopy.create_hash_partitions(parent regclass, servers name[],
                                       partitions integer DEFAULT NULL,
                                       options text[] DEFAULT '{}')
RETURNS SETOF regclass
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nservers integer := pg_catalog.cardinality(servers);
    nparts integer := COALESCE(partitions, nservers);
    strategy "char";
    nspname name;
    relname name;
    server name;
    opts text := '';
    opt text;
    part regclass;
BEGIN
    IF parent IS NULL OR nservers IS NULL OR nservers = 0 THEN
        RAISE EXCEPTION 'create_hash_partitions needs a parent table and at least one server'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF nparts < 1 THEN
        RAISE EXCEPTION 'number of partitions must be at least 1, not %', nparts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT pt.partstrat, n.nspname, c.relname INTO strategy, nspname, relname
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid = c.oid
    WHERE c.oid = parent;
    IF strategy IS DISTINCT FROM 'h' THEN
        RAISE EXCEPTION 'table "%" is not partitioned by hash', relname
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Create it with CREATE TABLE ... PARTITION BY HASH (column).';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_inherits WHERE inhparent = parent) THEN
        RAISE EXCEPTION 'table "%" has partitions already', relname
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Attach more partitions with CREATE FOREIGN TABLE ... PARTITION OF, or start from an empty parent.';
    END IF;
    FOREACH server IN ARRAY servers LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_foreign_server s
                       JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                       JOIN pg_catalog.pg_proc p ON p.oid = w.fdwhandler
                       WHERE s.srvname = server
                         AND p.probin = 'MODULE_PATHNAME'
                         AND p.prosrc = 'tcopy_fdw_handler') THEN
            RAISE EXCEPTION 'server "%" is not a tcopy server', server
                USING ERRCODE = 'wrong_object_type',
                      HINT = 'Name servers of foreign-data wrapper tcopy.';
        END IF;
    END LOOP;
    FOREACH opt IN ARRAY COALESCE(options, '{}') LOOP
        IF pg_catalog.strpos(opt, '=') < 2 THEN
            RAISE EXCEPTION 'invalid option "%"', opt
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Give options as name=value, e.g. key=aid.';
        END IF;
        opts := opts || CASE WHEN opts = '' THEN '' ELSE ', ' END ||
            pg_catalog.format('%I %L', pg_catalog.split_part(opt, '=', 1),
                              pg_catalog.substr(opt, pg_catalog.strpos(opt, '=') + 1));
    END LOOP;
    FOR i IN 0 .. nparts - 1 LOOP
        server := servers[i % nservers + 1];
        EXECUTE pg_catalog.format(
            'CREATE FOREIGN TABLE %I.%I PARTITION OF %I.%I FOR VALUES WITH (MODULUS %s, REMAINDER %s) SERVER %I%s',
            nspname, relname || '_' || i, nspname, relname, nparts, i, server,
            CASE WHEN opts = '' THEN '' ELSE ' OPTIONS (' || opts || ')' END);
        part := pg_catalog.format('%I.%I', nspname, relname || '_' || i)::regclass;
        RETURN NEXT part;
    END LOOP;
END
$$;
