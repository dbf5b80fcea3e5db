/* src/ext/tcopy--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.4'" to load this file. \quit

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
