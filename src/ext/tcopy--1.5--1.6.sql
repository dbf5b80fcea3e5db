/* src/ext/tcopy--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.6'" to load this file. \quit

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
