--
-- tcopy_copy: COPY FROM into a tcopy table in every format and with every
-- option gives the rows that the same COPY gives a heap table.
--
CREATE EXTENSION tcopy;
\getenv tcopy_address TCOPY_ADDRESS
\getenv abs_builddir PG_ABS_BUILDDIR
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address :'tcopy_address');
CREATE USER MAPPING FOR PUBLIC SERVER ts;

CREATE SEQUENCE cp_heap_seq;
CREATE SEQUENCE cp_tc_seq;
CREATE TABLE cp_heap (
	id int NOT NULL,
	name text,
	qty int DEFAULT 7,
	price numeric(10,2),
	note text DEFAULT 'none',
	serial int DEFAULT nextval('cp_heap_seq')
);
CREATE FOREIGN TABLE cp_tc (
	id int NOT NULL,
	name text,
	qty int DEFAULT 7,
	price numeric(10,2),
	note text DEFAULT 'none',
	serial int DEFAULT nextval('cp_tc_seq')
) SERVER ts OPTIONS (key 'id', on_conflict 'replace');
TRUNCATE cp_tc;
-- show command tags: COPY's row counts
\set QUIET off

-- rows in both tables, and rows only in one of them (compared as text)
CREATE VIEW cp_check AS
SELECT (SELECT count(*) FROM cp_heap) AS heap_rows,
	(SELECT count(*) FROM cp_tc) AS tc_rows,
	(SELECT count(*) FROM (SELECT h::text FROM cp_heap h
						   EXCEPT ALL SELECT t::text FROM cp_tc t) d) AS heap_only,
	(SELECT count(*) FROM (SELECT t::text FROM cp_tc t
						   EXCEPT ALL SELECT h::text FROM cp_heap h) d) AS tc_only;

-- text format: NULLs, escapes, numeric input rounded to the typmod
COPY cp_heap FROM STDIN;
1	apple	3	1.50	fresh	100
2	\N	\N	\N	\N	\N
3	tab\there	0	-0.505	back\\slash	102
4	line\nbreak	10	1e2	\N	103
5	\x41\102C	-1	0		104
\.
COPY cp_tc FROM STDIN;
1	apple	3	1.50	fresh	100
2	\N	\N	\N	\N	\N
3	tab\there	0	-0.505	back\\slash	102
4	line\nbreak	10	1e2	\N	103
5	\x41\102C	-1	0		104
\.
SELECT * FROM cp_check;
SELECT * FROM cp_tc ORDER BY id;

-- csv, with a header line, quoted delimiters and newlines, "" and NULL
TRUNCATE cp_heap, cp_tc;
COPY cp_heap FROM STDIN (FORMAT csv, HEADER);
id,name,qty,price,note,serial
10,"quoted, with comma",1,2.5,"multi
line",1
11,,2,,"",2
12,"say ""hi""",3,3,plain,3
13,\N,4,4,\.x,4
\.
COPY cp_tc FROM STDIN (FORMAT csv, HEADER);
id,name,qty,price,note,serial
10,"quoted, with comma",1,2.5,"multi
line",1
11,,2,,"",2
12,"say ""hi""",3,3,plain,3
13,\N,4,4,\.x,4
\.
SELECT * FROM cp_check;
SELECT id, name, note, note IS NULL AS note_null FROM cp_tc ORDER BY id;

-- header match: the header must name the columns
TRUNCATE cp_heap, cp_tc;
COPY cp_heap (id, name) FROM STDIN (FORMAT csv, HEADER match);
id,name
14,matched
\.
COPY cp_tc (id, name) FROM STDIN (FORMAT csv, HEADER match);
id,name
14,matched
\.

-- delimiter and null string
COPY cp_heap FROM STDIN (DELIMITER '|', NULL '<null>');
20|pipe|5|5.55|<null>|20
21|<null>|6|6|x\|y|21
22|\N|6|6||22
\.
COPY cp_tc FROM STDIN (DELIMITER '|', NULL '<null>');
20|pipe|5|5.55|<null>|20
21|<null>|6|6|x\|y|21
22|\N|6|6||22
\.
SELECT * FROM cp_check;

-- quote and escape characters
COPY cp_heap FROM STDIN (FORMAT csv, QUOTE '''', ESCAPE '\');
30,'it\'s',1,1,'a,b',30
31,'',2,2,plain,31
32,"double",3,3,'''',32
\.
COPY cp_tc FROM STDIN (FORMAT csv, QUOTE '''', ESCAPE '\');
30,'it\'s',1,1,'a,b',30
31,'',2,2,plain,31
32,"double",3,3,'''',32
\.
SELECT * FROM cp_check;

-- force_not_null, force_null
COPY cp_heap FROM STDIN (FORMAT csv, FORCE_NOT_NULL (name), FORCE_NULL (note));
40,,1,1,"",40
41,x,2,2,y,41
\.
COPY cp_tc FROM STDIN (FORMAT csv, FORCE_NOT_NULL (name), FORCE_NULL (note));
40,,1,1,"",40
41,x,2,2,y,41
\.
SELECT * FROM cp_check;
SELECT id, name, name IS NULL AS name_null, note, note IS NULL AS note_null
FROM cp_tc WHERE id IN (40, 41) ORDER BY id;

-- a column list: the other columns get their defaults, volatile ones per row
SELECT setval('cp_heap_seq', 1, false), setval('cp_tc_seq', 1, false);
COPY cp_heap (name, id) FROM STDIN (FORMAT csv);
first,50
second,51
\.
COPY cp_tc (name, id) FROM STDIN (FORMAT csv);
first,50
second,51
\.
SELECT * FROM cp_check;
SELECT * FROM cp_tc WHERE id >= 50 ORDER BY id;

-- a WHERE clause: only the rows it keeps are loaded and counted
COPY cp_heap FROM STDIN WHERE qty > 5 AND name <> 'skip';
60	keep	6	1	a	60
61	skip	9	1	b	61
62	small	1	1	c	62
63	keep2	100	1	\N	63
64	\N	50	1	e	64
\.
COPY cp_tc FROM STDIN WHERE qty > 5 AND name <> 'skip';
60	keep	6	1	a	60
61	skip	9	1	b	61
62	small	1	1	c	62
63	keep2	100	1	\N	63
64	\N	50	1	e	64
\.
SELECT * FROM cp_check;
-- ... also on columns filled by defaults
COPY cp_heap (id, name) FROM STDIN WHERE note = 'none' AND id % 2 = 0;
65	a
66	b
\.
COPY cp_tc (id, name) FROM STDIN WHERE note = 'none' AND id % 2 = 0;
65	a
66	b
\.
SELECT * FROM cp_check;

-- no rows at all
COPY cp_heap FROM STDIN;
\.
COPY cp_tc FROM STDIN;
\.
COPY cp_tc FROM STDIN WHERE false;
70	never	1	1	x	70
\.
SELECT * FROM cp_check;

-- files: text, csv and binary written by the heap table, read by both
\set textfile :abs_builddir '/results/tcopy_copy_text.data'
\set csvfile :abs_builddir '/results/tcopy_copy_csv.data'
\set binfile :abs_builddir '/results/tcopy_copy_binary.data'
COPY cp_heap TO :'textfile';
COPY cp_heap TO :'csvfile' (FORMAT csv, HEADER);
COPY cp_heap TO :'binfile' (FORMAT binary);
TRUNCATE cp_tc;
COPY cp_tc FROM :'textfile';
SELECT * FROM cp_check;
TRUNCATE cp_tc;
COPY cp_tc FROM :'csvfile' (FORMAT csv, HEADER true);
SELECT * FROM cp_check;
TRUNCATE cp_tc;
COPY cp_tc FROM :'binfile' (FORMAT binary);
SELECT * FROM cp_check;

-- a program's output
\set catcmd 'cat ' :'textfile'
TRUNCATE cp_tc;
COPY cp_tc FROM PROGRAM :'catcmd';
SELECT * FROM cp_check;

-- a file in another encoding
\set latin1file :abs_builddir '/results/tcopy_copy_latin1.data'
SELECT lo_from_bytea(0, convert_to(E'80\tcaf\u00e9\t1\t1\t\u00e0 la carte\t80\n81\tna\u00efve\t2\t2\t\u00a9\t81\n', 'LATIN1')) AS lo \gset
SELECT lo_export(:lo, :'latin1file');
SELECT lo_unlink(:lo);
COPY cp_heap FROM :'latin1file' (ENCODING 'LATIN1');
COPY cp_tc FROM :'latin1file' (ENCODING 'LATIN1');
SELECT * FROM cp_check;
SELECT id, name, note, octet_length(name) FROM cp_tc WHERE id >= 80 ORDER BY id;

-- inside a function: the hook sees COPY run by EXECUTE, and its row count
SET cp.textfile = :'textfile';
CREATE FUNCTION cp_copy_in(tab regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('COPY %s FROM %L', tab, current_setting('cp.textfile'));
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END
$$;
TRUNCATE cp_heap, cp_tc;
SELECT cp_copy_in('cp_heap'), cp_copy_in('cp_tc');
SELECT * FROM cp_check;

-- one larger load, through every path the settings choose: the hook with
-- arena and malloc messages, many tiny batches with one in flight, and the
-- FDW's insert path with the hook off
\set bigfile :abs_builddir '/results/tcopy_copy_big.data'
COPY (SELECT g, 'name ' || g, g % 100, (g * 1.25)::numeric(10,2),
		CASE WHEN g % 7 = 0 THEN NULL ELSE repeat(chr(65 + g % 26), g % 50) END, g
	  FROM generate_series(1, 20000) g) TO :'bigfile';
TRUNCATE cp_heap, cp_tc;
COPY cp_heap FROM :'bigfile';
COPY cp_tc FROM :'bigfile';
SELECT * FROM cp_check;
SELECT count(*), sum(id), sum(qty), sum(price), md5(string_agg(t::text, ',' ORDER BY id)) = (SELECT md5(string_agg(h::text, ',' ORDER BY id)) FROM cp_heap h) AS same_md5 FROM cp_tc t;
TRUNCATE cp_tc;
SET tcopy.alloc_mode = malloc;
COPY cp_tc FROM :'bigfile';
SELECT * FROM cp_check;
TRUNCATE cp_tc;
SET tcopy.batch_rows = 7;
SET tcopy.batch_size = '1kB';
SET tcopy.batches_in_flight = 1;
COPY cp_tc FROM :'bigfile';
SELECT * FROM cp_check;
RESET tcopy.alloc_mode;
TRUNCATE cp_tc;
COPY cp_tc FROM :'bigfile';
SELECT * FROM cp_check;
RESET tcopy.batch_rows;
RESET tcopy.batch_size;
RESET tcopy.batches_in_flight;
TRUNCATE cp_tc;
SET tcopy.copy_hook = off;
COPY cp_tc FROM :'bigfile';
SELECT * FROM cp_check;
COPY cp_tc FROM STDIN (FORMAT csv) WHERE name <> 'skipped';
20001,nohook,1,1,x,1
20002,skipped,1,1,x,1
\.
RESET tcopy.copy_hook;
SELECT * FROM cp_tc WHERE id > 20000;

-- several COPYs in one transaction become visible together at commit
TRUNCATE cp_tc;
BEGIN;
COPY cp_tc FROM :'bigfile' WHERE id <= 10000;
COPY cp_tc FROM :'bigfile' WHERE id > 10000;
COMMIT;
SELECT * FROM cp_check;

-- a key repeated: the last row wins, within a batch, across batches, across
-- statements; COPY counts the rows it read
TRUNCATE cp_tc;
COPY cp_tc (id, name, serial) FROM STDIN;
90	first	1
91	other	2
90	second	3
90	third	4
\.
SELECT id, name, serial FROM cp_tc ORDER BY id;
SET tcopy.batch_rows = 1;
COPY cp_tc (id, name, serial) FROM STDIN;
92	first	1
90	fourth	5
92	second	2
\.
RESET tcopy.batch_rows;
SELECT id, name, serial FROM cp_tc ORDER BY id;
INSERT INTO cp_tc (id, name, serial) VALUES (91, 'inserted', 6);
SELECT id, name, serial FROM cp_tc ORDER BY id;

-- a value far larger than a batch
\set hugefile :abs_builddir '/results/tcopy_copy_huge.data'
COPY (SELECT 100, repeat('0123456789', 500000), 1, 1, md5(repeat('0123456789', 500000)), 100) TO :'hugefile';
TRUNCATE cp_heap, cp_tc;
COPY cp_heap FROM :'hugefile';
COPY cp_tc FROM :'hugefile';
SELECT * FROM cp_check;
SELECT id, length(name), md5(name) = note AS intact FROM cp_tc;

-- a table with a dropped column, and one added after it
CREATE TABLE cp_drop_heap (a int NOT NULL, b int, c text);
CREATE FOREIGN TABLE cp_drop_tc (a int NOT NULL, b int, c text) SERVER ts OPTIONS (key 'a');
ALTER TABLE cp_drop_heap DROP COLUMN b;
ALTER TABLE cp_drop_heap ADD COLUMN d int;
ALTER FOREIGN TABLE cp_drop_tc DROP COLUMN b;
ALTER FOREIGN TABLE cp_drop_tc ADD COLUMN d int;
TRUNCATE cp_drop_tc;
COPY cp_drop_heap FROM STDIN;
1	one	10
2	\N	\N
\.
COPY cp_drop_tc FROM STDIN;
1	one	10
2	\N	\N
\.
SELECT * FROM cp_drop_tc ORDER BY a;
SELECT h::text FROM cp_drop_heap h EXCEPT ALL SELECT t::text FROM cp_drop_tc t;

-- what the hook leaves to Postgres' COPY (row triggers, generated columns)
-- goes through the FDW's insert path, with the same result
CREATE FUNCTION cp_upper() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN NEW.name := upper(NEW.name); RETURN NEW; END $$;
CREATE FOREIGN TABLE cp_trig (id int NOT NULL, name text) SERVER ts OPTIONS (key 'id');
CREATE TRIGGER cp_trig_upper BEFORE INSERT ON cp_trig FOR EACH ROW EXECUTE FUNCTION cp_upper();
TRUNCATE cp_trig;
COPY cp_trig FROM STDIN;
1	abc
2	\N
\.
SELECT * FROM cp_trig ORDER BY id;
CREATE FOREIGN TABLE cp_gen (id int NOT NULL, a int, doubled int GENERATED ALWAYS AS (a * 2) STORED)
	SERVER ts OPTIONS (key 'id');
TRUNCATE cp_gen;
COPY cp_gen (id, a) FROM STDIN;
1	21
2	\N
\.
SELECT * FROM cp_gen ORDER BY id;

-- a tcopy table as a partition: Postgres routes rows to it
CREATE TABLE cp_part (id int NOT NULL, v text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE cp_part_tc PARTITION OF cp_part FOR VALUES FROM (0) TO (100)
	SERVER ts OPTIONS (key 'id');
CREATE TABLE cp_part_heap PARTITION OF cp_part FOR VALUES FROM (100) TO (200);
TRUNCATE cp_part_tc;
COPY cp_part FROM STDIN;
1	in tcopy
150	in heap
99	in tcopy too
\.
SELECT tableoid::regclass, * FROM cp_part ORDER BY id;

\set QUIET on
SET client_min_messages = warning;
DROP EXTENSION tcopy CASCADE;
DROP TABLE cp_heap, cp_drop_heap, cp_part;
DROP SEQUENCE cp_heap_seq, cp_tc_seq;
DROP FUNCTION cp_upper(), cp_copy_in(regclass);
