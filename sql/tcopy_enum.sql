--
-- tcopy_enum: renamed enum values are recorded in tcopy.enum_label, per
-- type, in the renaming transaction; a label stored for another value is
-- refused; a dropped type's rows go.  (Reading stored rows through the
-- map is the codec's, tested with it.)
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE SCHEMA en;
SET search_path = en, public;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE "Color" AS ENUM ('red', 'green');
CREATE VIEW labels AS
	SELECT enumtype, stored, label FROM tcopy.enum_label ORDER BY 1, 2;
SELECT * FROM labels;

-- a rename is one row: values stored as sad are the value now unhappy
ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy';
SELECT * FROM labels;
-- a chain stays one row
ALTER TYPE mood RENAME VALUE 'unhappy' TO 'blue';
SELECT * FROM labels;
-- a stored label is taken: not added, nor given to another value
\set VERBOSITY sqlstate
ALTER TYPE mood ADD VALUE 'sad';
\set VERBOSITY default
ALTER TYPE mood ADD VALUE 'sad';
ALTER TYPE mood ADD VALUE IF NOT EXISTS 'sad';
ALTER TYPE mood ADD VALUE 'sad' BEFORE 'ok';
ALTER TYPE mood RENAME VALUE 'ok' TO 'sad';
SELECT enumlabel FROM pg_enum WHERE enumtypid = 'mood'::regtype ORDER BY enumsortorder;
-- Postgres' own refusals come first, and record nothing
ALTER TYPE mood RENAME VALUE 'nope' TO 'fine';
ALTER TYPE mood RENAME VALUE 'ok' TO 'happy';
ALTER TYPE mood RENAME VALUE 'ok' TO 'ok';
ALTER TYPE nope ADD VALUE 'sad';
ALTER TYPE labels ADD VALUE 'sad';
SELECT * FROM labels;
-- renaming back to the stored label deletes the row; the label is free again
ALTER TYPE mood RENAME VALUE 'blue' TO 'sad';
SELECT * FROM labels;
ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy';
ALTER TYPE mood RENAME VALUE 'unhappy' TO 'sad';
SELECT * FROM labels;
-- swapping two labels through a third is refused: rows stored as happy
-- would name two values
ALTER TYPE mood RENAME VALUE 'ok' TO 'tmp';
ALTER TYPE mood RENAME VALUE 'happy' TO 'fine';
ALTER TYPE mood RENAME VALUE 'tmp' TO 'happy';
SELECT * FROM labels;
ALTER TYPE mood RENAME VALUE 'fine' TO 'happy';
ALTER TYPE mood RENAME VALUE 'tmp' TO 'ok';
SELECT * FROM labels;
SELECT enumlabel FROM pg_enum WHERE enumtypid = 'mood'::regtype ORDER BY enumsortorder;
-- an added value then renamed: recorded as any other
ALTER TYPE mood ADD VALUE 'meh';
ALTER TYPE mood RENAME VALUE 'meh' TO 'so-so';
-- per type: another type may use the labels mood stores
ALTER TYPE "Color" RENAME VALUE 'red' TO 'meh';
ALTER TYPE "Color" ADD VALUE 'sad';
ALTER TYPE "Color" RENAME VALUE 'green' TO 'so-so';
SELECT * FROM labels;
ALTER TYPE "Color" ADD VALUE 'red';

-- renames in a transaction that rolls back leave no row; a savepoint too
BEGIN;
ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';
SELECT * FROM labels WHERE enumtype = 'mood'::regtype;
ROLLBACK;
SELECT * FROM labels WHERE enumtype = 'mood'::regtype;
BEGIN;
ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';
SAVEPOINT s;
ALTER TYPE mood RENAME VALUE 'fine' TO 'good';
ALTER TYPE mood RENAME VALUE 'happy' TO 'glad';
ROLLBACK TO SAVEPOINT s;
SELECT * FROM labels WHERE enumtype = 'mood'::regtype;
COMMIT;
SELECT * FROM labels WHERE enumtype = 'mood'::regtype;
ALTER TYPE mood RENAME VALUE 'fine' TO 'ok';

-- a role renaming values of its own type: recorded, although the role
-- may not write the table; nobody may but through the hook
CREATE ROLE regress_tcopy_enum;
GRANT USAGE, CREATE ON SCHEMA en TO regress_tcopy_enum;
SET ROLE regress_tcopy_enum;
CREATE TYPE en.theirs AS ENUM ('a', 'b');
ALTER TYPE en.theirs RENAME VALUE 'a' TO 'x';
SELECT * FROM tcopy.enum_label WHERE enumtype = 'en.theirs'::regtype;
INSERT INTO tcopy.enum_label VALUES ('en.theirs', 'b', 'y');
UPDATE tcopy.enum_label SET label = 'z' WHERE enumtype = 'en.theirs'::regtype;
DELETE FROM tcopy.enum_label WHERE enumtype = 'en.theirs'::regtype;
TRUNCATE tcopy.enum_label;
-- another's type: Postgres refuses in its words, before tcopy looks
ALTER TYPE mood ADD VALUE 'sad';
ALTER TYPE mood RENAME VALUE 'so-so' TO 'meh';
RESET ROLE;
SELECT * FROM labels;

-- the hook runs nothing a caller's search_path could put in its way: an =
-- for regtype ahead of pg_catalog's is never called
CREATE SCHEMA en_trap;
CREATE FUNCTION en_trap.eq(regtype, regtype) RETURNS bool
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trap called'; END$$;
CREATE OPERATOR en_trap.= (LEFTARG = regtype, RIGHTARG = regtype, FUNCTION = en_trap.eq);
SET search_path = en_trap, pg_catalog, en;
ALTER TYPE en.mood RENAME VALUE 'ok' TO 'fine';
ALTER TYPE en.mood RENAME VALUE 'fine' TO 'ok';
SET search_path = en, public;
DROP SCHEMA en_trap CASCADE;

-- dropping a type deletes its rows, and only its: OIDs are reused
DROP TYPE "Color";
SELECT * FROM labels;
SET ROLE regress_tcopy_enum;
DROP TYPE en.theirs;
RESET ROLE;
SELECT * FROM labels;
-- in a transaction that rolls back, they stay
BEGIN;
DROP TYPE mood;
SELECT count(*) FROM tcopy.enum_label;
ROLLBACK;
SELECT * FROM labels;
-- DROP ... CASCADE reaches them too
CREATE SCHEMA en_drop;
CREATE TYPE en_drop.e AS ENUM ('one');
ALTER TYPE en_drop.e RENAME VALUE 'one' TO 'uno';
SELECT count(*) FROM tcopy.enum_label WHERE enumtype = 'en_drop.e'::regtype;
DROP SCHEMA en_drop CASCADE;
SELECT * FROM labels;

-- the table is readable by everyone, and pg_dump carries its rows
SELECT grantee, privilege_type FROM information_schema.role_table_grants
WHERE table_schema = 'tcopy' AND table_name = 'enum_label' AND grantee = 'PUBLIC';
SELECT extconfig::regclass[], extcondition FROM pg_extension WHERE extname = 'tcopy';

-- without the table (an extension older than 1.3) renames pass untouched
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
RESET client_min_messages;
ALTER TYPE mood RENAME VALUE 'sad' TO 'down';
ALTER TYPE mood ADD VALUE 'sad';
DROP TYPE mood;

DROP SCHEMA en;
DROP ROLE regress_tcopy_enum;
