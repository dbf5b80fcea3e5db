/* src/ext/tcopy--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.3'" to load this file. \quit

-- The enum values renamed since tcopy stored them (README.md, Renamed enum
-- values): a row says that values stored as "stored" are the value whose
-- current label is "label".  tcopy's utility hook alone writes it, below
-- the executor, whoever renames: when ALTER TYPE renames an enum value, and
-- when a type is dropped (its rows go).  Everyone may read it: the labels
-- are in pg_enum anyway.  pg_dump carries its rows, enumtype as the type's
-- name, which a restore maps to the new database's type.
-- Renames made before this update were not recorded.
CREATE TABLE enum_label (
    enumtype regtype NOT NULL,
    stored text NOT NULL,
    label text NOT NULL,
    PRIMARY KEY (enumtype, stored),
    UNIQUE (enumtype, label)
);
REVOKE ALL ON enum_label FROM PUBLIC;
GRANT SELECT ON enum_label TO PUBLIC;
-- Reading it takes USAGE on schema tcopy too.  The schema's other objects
-- are revoked from PUBLIC, but for the wrapper's handler and validator,
-- which postgres_fdw leaves to PUBLIC as well.
GRANT USAGE ON SCHEMA tcopy TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('enum_label', '');

-- Version 1.3 stores the keys of new tables in another form (option
-- key_form, default 'image'): a table made before with option key keeps
-- the form its rows were written in, key_form 'bytes'.  Only this
-- database's tables are reached: each database with the extension is
-- updated on its own.

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
                          WHERE o LIKE 'key\_form=%')
        ORDER BY c.oid
    LOOP
        EXECUTE pg_catalog.format('ALTER FOREIGN TABLE %s OPTIONS (ADD key_form %L)',
            t.rel, 'bytes');
    END LOOP;
END
$$;
