/* src/ext/tcopy--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.5'" to load this file. \quit

-- The four tables of pgbench (README.md, pgbench), as tcopy tables on
-- server "server", in the schema CREATE puts them in (search_path's first,
-- as pgbench's own CREATE TABLE): the columns and types of Postgres 15's
-- pgbench (scales below 20000, whose aid is an int), each table keyed by
-- the column pgbench makes its primary key, pgbench_history keyless.
-- `pgbench -i -I g` (or `-I G`) then fills them, `pgbench -n` runs on them.
-- Security invoker: the caller needs CREATE on the schema and USAGE on the
-- server; nothing is created unless all four are.
CREATE FUNCTION create_pgbench_tables(server name)
RETURNS void
LANGUAGE plpgsql STRICT VOLATILE SECURITY INVOKER
AS $$
BEGIN
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
    -- unqualified names and keyword type names: the schema is the
    -- caller's current one, the types pg_catalog's whatever the search_path
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84))'
        ' SERVER %I OPTIONS (key %L)', server, 'aid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE pgbench_branches (bid int NOT NULL, bbalance int, filler char(88))'
        ' SERVER %I OPTIONS (key %L)', server, 'bid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84))'
        ' SERVER %I OPTIONS (key %L)', server, 'tid');
    EXECUTE pg_catalog.format(
        'CREATE FOREIGN TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22))'
        ' SERVER %I', server);
END
$$;
