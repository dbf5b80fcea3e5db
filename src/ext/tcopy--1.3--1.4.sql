/* src/ext/tcopy--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.4'" to load this file. \quit

-- Version 1.4 adds option on_conflict (README.md, Duplicate keys), whose
-- default, 'error', refuses a second row of a key as a primary key does.
-- Tables made before kept the last row of a key: a table with option key
-- and no on_conflict gets on_conflict 'replace', so that loads that
-- worked before the update still do.  New keyed tables get on_conflict
-- 'error' explicitly when they are made, so that this update, run after
-- the library was installed, leaves them alone.  Only this database's
-- tables are reached: each database with the extension is updated on its
-- own.

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::pg_catalog.regclass AS rel
        FROM pg_catalog.pg_foreign_table ft
        JOIN pg_catalog.pg_class c ON c.oid = ft.ftrelid
        JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
        JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw
        JOIN pg_catalog.pg_proc p ON p.oid = w.fdwhandler
        WHERE p.probin = 'MODULE_PATHNAME' AND p.prosrc = 'tcopy_fdw_handler'
          AND EXISTS (SELECT FROM pg_catalog.unnest(ft.ftoptions) o
                      WHERE o LIKE 'key=%')
          AND NOT EXISTS (SELECT FROM pg_catalog.unnest(ft.ftoptions) o
                          WHERE o LIKE 'on\_conflict=%')
        ORDER BY c.oid
    LOOP
        EXECUTE pg_catalog.format('ALTER FOREIGN TABLE %s OPTIONS (ADD on_conflict %L)',
            t.rel, 'replace');
    END LOOP;
END
$$;

-- Load labels (README.md, Loads that can be re-run): the labels published
-- for a tcopy table by COPY ... (load_id 'label'), and forgetting one, so
-- that a COPY with it loads again.  The labels live on the tserver, with
-- the table; these reach it with the caller's user mapping.  Listing takes
-- SELECT or INSERT on the table, forgetting INSERT (or owning it): the C
-- functions check, so both are left to PUBLIC (with USAGE on schema tcopy).
CREATE FUNCTION load_labels(rel regclass,
    OUT label text, OUT published_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'tcopy_load_labels'
LANGUAGE C STRICT VOLATILE;

-- At once, not with the transaction (as setval); true when it was published.
CREATE FUNCTION forget_load(rel regclass, label text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'tcopy_forget_load'
LANGUAGE C STRICT VOLATILE;
