/* src/ext/tcopy--1.6.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION tcopy" to load this file. \quit

-- Everything below goes into schema tcopy (tcopy.control: schema = tcopy).

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

-- One row per tserver write session a transaction prepared, inserted by
-- that transaction at its pre-commit: the row commits exactly when the
-- transaction does, and so tells recovery whether to publish the session
-- or discard it.  Recovery deletes rows whose session is resolved.  Rows
-- are transient: the table is not a configuration table, and pg_dump
-- leaves its rows out.
CREATE TABLE prepared_session_records (
    gid text PRIMARY KEY,
    server_id oid NOT NULL,
    user_id oid NOT NULL,
    xid xid8 NOT NULL,
    prepared_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON prepared_session_records FROM PUBLIC;

-- The sessions prepared on the tservers of this database's tcopy servers,
-- and what recovery would do with each.
CREATE FUNCTION prepared_sessions(
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

-- Resolve now the prepared sessions nobody finished; returns how many.
CREATE FUNCTION recover_prepared_sessions()
RETURNS int
AS 'MODULE_PATHNAME', 'tcopy_recover_prepared_sessions'
LANGUAGE C STRICT VOLATILE;

-- they reach every tserver with other users' mappings: superusers only,
-- unless granted
REVOKE ALL ON FUNCTION prepared_sessions() FROM PUBLIC;
REVOKE ALL ON FUNCTION recover_prepared_sessions() FROM PUBLIC;

-- The enum values renamed since tcopy stored them (README.md, Renamed enum
-- values): a row says that values stored as "stored" are the value whose
-- current label is "label".  tcopy's utility hook alone writes it, below
-- the executor, whoever renames: when ALTER TYPE renames an enum value, and
-- when a type is dropped (its rows go).  Everyone may read it: the labels
-- are in pg_enum anyway.  pg_dump carries its rows, enumtype as the type's
-- name, which a restore maps to the new database's type.
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

-- Spread partitioned table "parent" (PARTITION BY HASH, with no partitions
-- yet) over tcopy servers: "partitions" foreign tables (by default one per
-- server) named parent_0, parent_1, ... in the parent's schema, partition i
-- FOR VALUES WITH (MODULUS partitions, REMAINDER i) on servers[i % n + 1],
-- round-robin.  "options" are the partitions' OPTIONS, as 'name=value'
-- strings (pg_foreign_table.ftoptions' form), e.g. '{key=aid}'.  Returns the
-- partitions.  Security invoker: the caller needs what CREATE FOREIGN TABLE
-- ... PARTITION OF needs (ownership of the parent, USAGE on the servers);
-- nothing is created unless every partition is.  ATTACH and DETACH
-- PARTITION work on the result as on any partition.
CREATE FUNCTION create_hash_partitions(parent regclass, servers name[],
                                       partitions integer DEFAULT NULL,
                                       options text[] DEFAULT '{}')
RETURNS SETOF regclass
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
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
            'CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES WITH (MODULUS %s, REMAINDER %s) SERVER %I%s',
            nspname, relname || '_' || i, parent, nparts, i, server,
            CASE WHEN opts = '' THEN '' ELSE ' OPTIONS (' || opts || ')' END);
        part := pg_catalog.format('%I.%I', nspname, relname || '_' || i)::regclass;
        RETURN NEXT part;
    END LOOP;
END
$$;
