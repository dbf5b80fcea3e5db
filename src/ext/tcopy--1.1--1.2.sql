/* src/ext/tcopy--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.2'" to load this file. \quit

-- Version 1.2 binds every tcopy foreign table to its tserver data by its
-- table_name option, which a new table gets generated (unique, never
-- reused) and only superusers and a server's owner may set.  A table made
-- before without the option was stored under database.schema.table, each
-- part quoted as quote_ident quotes it: that name becomes its table_name,
-- so that it keeps its rows.  Only this database's tables are reached:
-- each database with the extension is updated on its own.

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::pg_catalog.regclass AS rel, n.nspname, c.relname
        FROM pg_catalog.pg_foreign_table ft
        JOIN pg_catalog.pg_class c ON c.oid = ft.ftrelid
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
        JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw
        JOIN pg_catalog.pg_proc p ON p.oid = w.fdwhandler
        WHERE p.probin = 'MODULE_PATHNAME' AND p.prosrc = 'tcopy_fdw_handler'
          AND NOT EXISTS (SELECT FROM pg_catalog.unnest(ft.ftoptions) o
                          WHERE o LIKE 'table\_name=%')
        ORDER BY c.oid
    LOOP
        EXECUTE pg_catalog.format('ALTER FOREIGN TABLE %s OPTIONS (ADD table_name %L)',
            t.rel,
            pg_catalog.quote_ident(pg_catalog.current_database()) || '.' ||
            pg_catalog.quote_ident(t.nspname) || '.' || pg_catalog.quote_ident(t.relname));
    END LOOP;
END
$$;
