--
-- tcopy_legacy: rows tcopy 1.2 wrote stay readable.  1.2 stored records,
-- arrays of enums and reg* values as their text output, under the writing
-- session's settings; 1.3 stores them in versioned forms and still reads
-- the old text part by part, so that enum renames and attributes added
-- since apply to old rows too.  tcopy.test_legacy_forms writes as 1.2 did.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE TYPE lmood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE lpair AS (i interval, f float8, m lmood, t text);
CREATE SCHEMA ls;
CREATE TABLE ls.t (x int);
CREATE TABLE lh (id int PRIMARY KEY, p lpair, ms lmood[], r regclass, pr lpair[]);
CREATE FOREIGN TABLE lt (id int, p lpair, ms lmood[], r regclass, pr lpair[])
	SERVER ts OPTIONS (key 'id');

-- as 1.2 wrote them, with the search path 1.2's readers had
SET search_path = ls, public;
SET tcopy.test_legacy_forms = on;
INSERT INTO lt VALUES
	(1, ROW('1 day', 0.5, 'happy', 'a "quoted", (text)'), '{sad,happy}', 't',
	 ARRAY[ROW('2 hours', 1e-3, 'ok', 'x\y')::lpair, NULL]),
	(2, NULL, '{}', NULL, '{}'),
	(3, ROW(NULL, NULL, NULL, ''), '[0:1]={NULL,ok}', 'lh', NULL);
RESET tcopy.test_legacy_forms;
INSERT INTO lh SELECT * FROM lt;
-- and in the forms of 1.3
INSERT INTO lt VALUES
	(4, ROW('-1 day -2 hours', -0.0, 'sad', NULL), '{{happy},{ok}}', 'ls.t',
	 ARRAY[ROW(NULL, 'NaN', 'happy', 'é')::lpair]);
INSERT INTO lh SELECT * FROM lt WHERE id = 4;

CREATE VIEW diff AS
	SELECT id FROM lh h FULL JOIN lt t USING (id)
	WHERE h.id IS NULL OR t.id IS NULL
	   OR h.p::text IS DISTINCT FROM t.p::text OR h.ms::text IS DISTINCT FROM t.ms::text
	   OR h.r::text IS DISTINCT FROM t.r::text OR h.pr::text IS DISTINCT FROM t.pr::text;
SELECT * FROM lt ORDER BY id;
SELECT count(*) AS mismatches FROM diff;

-- what Postgres allows since: old rows follow as heap rows do
ALTER TYPE lmood RENAME VALUE 'happy' TO 'glad';
ALTER TYPE lmood ADD VALUE 'meh' BEFORE 'ok';
ALTER TYPE lpair ADD ATTRIBUTE z int;
ALTER TYPE lpair RENAME ATTRIBUTE t TO label;
ALTER TYPE lpair RENAME TO lpair2;
ALTER TYPE lmood RENAME TO lmood2;
SELECT * FROM lt ORDER BY id;
SELECT count(*) AS mismatches FROM diff;
RESET search_path;

-- the test setting is a superuser's
CREATE ROLE legacy_user;
SET ROLE legacy_user;
SET tcopy.test_legacy_forms = on;
RESET ROLE;
DROP ROLE legacy_user;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA ls CASCADE;
DROP TABLE lh;
DROP TYPE lpair2;
DROP TYPE lmood2;
