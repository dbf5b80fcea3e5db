/* src/ext/tcopy--1.11--1.12.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION tcopy UPDATE TO '1.12'" to load this file. \quit

-- Version 1.12: tcopy.round_trips(), the round trips this backend made to
-- tservers since it started: reads that waited for an answer to what was
-- sent (issue 46; src/ext/commands/monitor.c).  The difference of two
-- calls is what the statements between them cost in round trips.
CREATE FUNCTION tcopy.round_trips()
RETURNS bigint
AS 'MODULE_PATHNAME', 'tcopy_round_trips'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
