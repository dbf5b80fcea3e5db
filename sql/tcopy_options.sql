--
-- tcopy_options: the options of tcopy servers, user mappings and foreign
-- tables, and the tcopy.* settings.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS

-- the wrapper itself takes no options
ALTER FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:');

-- servers: address is required and checked
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy;
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'http://localhost:5480');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'localhost:5480');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:localhost');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:localhost:notaport');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:localhost:99999');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address '');
-- a replica group's members: each a valid address, none null:, none empty
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/tmp/a.sock,null:');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/tmp/a.sock,,unix:/tmp/b.sock');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/tmp/a.sock,tcp:host');
CREATE SERVER opt_group FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/tmp/a.sock,tcp:10.0.0.2:7000,tcp:10.0.0.3:7000');
DROP SERVER opt_group;
-- unknown options, and options of other objects, are refused with a hint
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', adress 'null:');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', key 'a');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', token 'secret');
-- batch options: positive, bounded, batch_size in kB or with a unit
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', batch_rows '0');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', batch_rows '1000001');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', batch_rows 'many');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', batch_size '65MB');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', batch_size '10 parsecs');
CREATE SERVER opt_ok FOREIGN DATA WRAPPER tcopy
	OPTIONS (address 'null:', batch_rows '1000000', batch_size '32MB');
CREATE SERVER opt_tcp FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:5480');
CREATE SERVER opt_tcp6 FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:[::1]:5480');
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname LIKE 'opt\_%' ORDER BY 1;
-- ALTER is checked on the resulting option list
ALTER SERVER opt_ok OPTIONS (DROP address);
ALTER SERVER opt_ok OPTIONS (SET address 'udp:localhost:1');
ALTER SERVER opt_ok OPTIONS (ADD table_name 'x');
ALTER SERVER opt_ok OPTIONS (SET batch_rows '10', DROP batch_size);
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'opt_ok';

CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');

-- user mappings take token only
CREATE USER MAPPING FOR PUBLIC SERVER ts OPTIONS (user 'me');
CREATE USER MAPPING FOR PUBLIC SERVER ts OPTIONS (address 'null:');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_ok OPTIONS (token 'not-needed');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

-- foreign tables: key, key_form, table_name, batch_rows, batch_size
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (keys 'a');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (address 'null:');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (key '');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (key 'a,');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (key 'a,a');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (table_name '');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (batch_rows '-1');
-- key_form: image (the default) or bytes, on tables only
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (key 'a', key_form 'text');
CREATE FOREIGN TABLE opt_t (a int) SERVER ts OPTIONS (key 'a', key_form 'Image');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:', key_form 'bytes');
CREATE FOREIGN TABLE opt_kf (a int) SERVER ts OPTIONS (key 'a', key_form 'bytes');
CREATE FOREIGN TABLE opt_kf (a int) SERVER ts OPTIONS (key 'a', key_form 'image');
ALTER FOREIGN TABLE opt_kf OPTIONS (SET key_form 'image');
ALTER FOREIGN TABLE opt_kf OPTIONS (SET key_form 'pixels');
SELECT o FROM pg_foreign_table, unnest(ftoptions) o
WHERE ftrelid = 'opt_kf'::regclass AND o NOT LIKE 'table\_name=%' ORDER BY 1;
DROP FOREIGN TABLE opt_kf;
-- columns take column_name only, not empty
CREATE FOREIGN TABLE opt_t (a int OPTIONS (name 'b')) SERVER ts;
CREATE FOREIGN TABLE opt_t (a int OPTIONS (column_name '')) SERVER ts;

-- a key naming a column that does not exist is refused when it is set
CREATE FOREIGN TABLE opt_badkey (a int, b text) SERVER ts
	OPTIONS (key 'c', table_name 'opt_badkey');
CREATE FOREIGN TABLE opt_badkey (a int, b text) SERVER ts
	OPTIONS (key 'a', table_name 'opt_badkey');
ALTER FOREIGN TABLE opt_badkey OPTIONS (SET key 'c');
-- unquoted names in key are folded to lower case, as in SQL
CREATE FOREIGN TABLE opt_upper ("A" int NOT NULL, b text) SERVER ts
	OPTIONS (key 'A', table_name 'opt_upper', on_conflict 'replace');
CREATE FOREIGN TABLE opt_upper ("A" int NOT NULL, b text) SERVER ts
	OPTIONS (key '"A"', table_name 'opt_upper', on_conflict 'replace');
INSERT INTO opt_upper VALUES (1, 'x'), (1, 'y'), (2, 'z');
SELECT * FROM opt_upper ORDER BY 1;
-- a key column is not dropped; before the tserver holds the table, the
-- key may name other columns, and then the column goes
ALTER FOREIGN TABLE opt_badkey DROP COLUMN a;
ALTER FOREIGN TABLE opt_badkey OPTIONS (SET key 'b');
ALTER FOREIGN TABLE opt_badkey DROP COLUMN a;
INSERT INTO opt_badkey VALUES ('x');
SELECT * FROM opt_badkey;

-- two columns of key: rows with equal (a, b) replace each other
CREATE FOREIGN TABLE opt_key2 (a int, b text, c text) SERVER ts
	OPTIONS (key 'b, a', table_name 'opt_key2', on_conflict 'replace');
TRUNCATE opt_key2;
COPY opt_key2 FROM STDIN (FORMAT csv);
1,x,first
1,y,first
2,x,first
1,x,second
\.
SELECT * FROM opt_key2 ORDER BY a, b;
-- no key: every row is kept
CREATE FOREIGN TABLE opt_nokey (a int, b text) SERVER ts OPTIONS (table_name 'opt_nokey');
TRUNCATE opt_nokey;
INSERT INTO opt_nokey VALUES (1, 'x'), (1, 'x'), (NULL, NULL);
SELECT * FROM opt_nokey ORDER BY a, b;

-- table_name: two foreign tables on one tserver table see the same rows
CREATE FOREIGN TABLE opt_alias (a int, b text, c text) SERVER ts
	OPTIONS (key 'b,a', table_name 'opt_key2');
SELECT * FROM opt_alias ORDER BY a, b;
-- ... as long as their columns agree
CREATE FOREIGN TABLE opt_alias_bad (a int, b int, c text) SERVER ts
	OPTIONS (key 'b,a', table_name 'opt_key2');
\set SHOW_CONTEXT never
INSERT INTO opt_alias_bad VALUES (1, 1, 'x');
\set SHOW_CONTEXT errors
SELECT count(*) FROM opt_key2;

-- without table_name, a table gets a tserver table of its own: a generated
-- name (the server's namespace, the database's owner tag, 32 hex digits), whatever its name
CREATE SCHEMA opt;
CREATE FOREIGN TABLE opt.opt_key2 (a int, b text, c text) SERVER ts;
INSERT INTO opt.opt_key2 VALUES (1, 'x', 'y');
SELECT (SELECT count(*) FROM opt.opt_key2) AS "opt.opt_key2", (SELECT count(*) FROM opt_key2) AS opt_key2;
SELECT option_value ~ '^[0-9]+\.[0-9]+\.[0-9a-f]{32}$' AS generated FROM pg_options_to_table(
	(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'opt.opt_key2'::regclass))
WHERE option_name = 'table_name';
CREATE SERVER opt_ns FOREIGN DATA WRAPPER tcopy
	OPTIONS (address :'tcopy_address', namespace 'team_a/');
CREATE USER MAPPING FOR PUBLIC SERVER opt_ns;
CREATE FOREIGN TABLE opt.ns_t (a int) SERVER opt_ns;
CREATE FOREIGN TABLE opt.ns_u (a int) SERVER opt_ns;
SELECT c.relname, o.option_value ~ '^team_a/[0-9]+\.[0-9]+\.[0-9a-f]{32}$' AS generated
FROM pg_foreign_table f JOIN pg_class c ON c.oid = f.ftrelid,
	pg_options_to_table(f.ftoptions) o
WHERE f.ftserver = (SELECT oid FROM pg_foreign_server WHERE srvname = 'opt_ns') AND o.option_name = 'table_name' ORDER BY 1;
SELECT count(DISTINCT ftoptions) FROM pg_foreign_table WHERE ftserver = (SELECT oid FROM pg_foreign_server WHERE srvname = 'opt_ns');
-- the option cannot be dropped, nor be empty
ALTER FOREIGN TABLE opt.ns_t OPTIONS (DROP table_name);
ALTER FOREIGN TABLE opt.ns_t OPTIONS (SET table_name '');
ALTER SERVER opt_ns OPTIONS (SET namespace 'team_b/');

-- a column added once the tserver has the table: the rows stored before
-- read it as NULL (tcopy_alter_rows has the rest)
CREATE FOREIGN TABLE opt_alter (a int NOT NULL, b text) SERVER ts
	OPTIONS (key 'a', table_name 'opt_alter');
TRUNCATE opt_alter;
INSERT INTO opt_alter VALUES (1, 'x');
ALTER FOREIGN TABLE opt_alter ADD COLUMN c int;
INSERT INTO opt_alter VALUES (2, 'y');
SELECT * FROM opt_alter ORDER BY a;

-- the table's batch options override the server's, which override the GUCs:
-- any of them gives the same rows
CREATE FOREIGN TABLE opt_batch (a int NOT NULL, b text) SERVER ts
	OPTIONS (key 'a', table_name 'opt_batch', batch_rows '3', batch_size '1kB', on_conflict 'replace');
TRUNCATE opt_batch;
INSERT INTO opt_batch SELECT g, repeat('x', g) FROM generate_series(1, 1000) g;
SELECT count(*), sum(a), sum(length(b)) FROM opt_batch;
ALTER FOREIGN TABLE opt_batch OPTIONS (SET batch_rows '1000000', SET batch_size '32MB');
INSERT INTO opt_batch SELECT g, repeat('y', g) FROM generate_series(501, 1500) g;
SELECT count(*), sum(a), sum(length(b)), count(*) FILTER (WHERE b LIKE 'y%') AS ys FROM opt_batch;

-- the null: transport takes every write and keeps nothing
CREATE FOREIGN TABLE opt_null (a int, b text) SERVER opt_ok OPTIONS (key 'a');
INSERT INTO opt_null SELECT g, 'x' FROM generate_series(1, 1000) g;
COPY opt_null FROM STDIN;
1	a
2	b
\.
SELECT count(*) FROM opt_null;
TRUNCATE opt_null;

-- a tserver that is not there
CREATE SERVER opt_gone FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:/nonexistent/tcopy.sock');
CREATE USER MAPPING FOR PUBLIC SERVER opt_gone;
CREATE FOREIGN TABLE opt_gone_t (a int) SERVER opt_gone;
INSERT INTO opt_gone_t VALUES (1);
COPY opt_gone_t FROM STDIN;
1
\.
SELECT * FROM opt_gone_t;
-- a user without a user mapping, as in postgres_fdw
CREATE FOREIGN TABLE opt_nomap (a int) SERVER opt_tcp;
CREATE ROLE regress_tcopy_nomap;
GRANT INSERT ON opt_nomap TO regress_tcopy_nomap;
SET ROLE regress_tcopy_nomap;
INSERT INTO opt_nomap VALUES (1);
RESET ROLE;
-- through a view, the tserver is reached with the view owner's user
-- mapping, as postgres_fdw does; read directly, with the user's own
CREATE SERVER opt_owner FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_owner;
CREATE FOREIGN TABLE opt_owned (a int) SERVER opt_owner OPTIONS (key 'a');
CREATE VIEW opt_owned_v AS SELECT * FROM opt_owned;
GRANT SELECT, INSERT ON opt_owned_v TO regress_tcopy_nomap;
GRANT SELECT ON opt_owned TO regress_tcopy_nomap;
SET ROLE regress_tcopy_nomap;
INSERT INTO opt_owned_v VALUES (1), (2);
SELECT a FROM opt_owned_v ORDER BY a;
SELECT a FROM opt_owned;
RESET ROLE;

-- settings
SHOW tcopy.copy_hook;
SHOW tcopy.alloc_mode;
SHOW tcopy.batch_rows;
SHOW tcopy.batch_size;
SHOW tcopy.batches_in_flight;
SET tcopy.alloc_mode = 'jemalloc';
SET tcopy.batch_rows = 0;
SET tcopy.batch_size = '128MB';
SET tcopy.batches_in_flight = 0;
SET tcopy.no_such_setting = 1;
SET tcopy.batch_size = '4MB';
SHOW tcopy.batch_size;
RESET tcopy.batch_size;
SET tcopy.batches_in_flight = 16;
SHOW tcopy.batches_in_flight;
RESET tcopy.batches_in_flight;

SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP SCHEMA opt;
DROP ROLE regress_tcopy_nomap;
