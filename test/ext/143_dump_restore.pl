# 143_dump_restore.pl
#	pg_dump and pg_restore of a database with tcopy tables (issue 12):
#	pg_dump writes each table's table_name (and column options), so a
#	restore re-attaches each table to its own data:
#	- pg_dump -Fc of database src, pg_restore as a superuser into a new
#	  database on the same cluster and tserver: every table (keyed, with a
#	  renamed column, in a renamed schema, a partition) reads the same rows
#	  as in src (count and checksum), and writes through one are seen by
#	  the other;
#	- a non-superuser's restore (the extension and server already made by
#	  a superuser, the role owning the database): every CREATE FOREIGN
#	  TABLE fails with the attach error (42501), and no table is made;
#	- the two databases' tables share data: DROP of one drops it for the
#	  other too (the README says so);
#	- tcopy.enum_label's rows (enum values renamed since tcopy stored
#	  them) are dumped with the type's name, and restored as the new
#	  database's type, whose OID differs.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run ();
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates);

my ($node, $ts) = setup_node(name => 'dump');
my $address = $ts->address;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE SCHEMA s;
	CREATE FOREIGN TABLE s.keyed (id int NOT NULL, v text, n numeric) SERVER ts OPTIONS (key 'id');
	INSERT INTO s.keyed SELECT i, 'v' || i, i * 1.5 FROM generate_series(1, 2000) i;
	CREATE FOREIGN TABLE s.cols (k int NOT NULL, label text) SERVER ts OPTIONS (key 'k');
	INSERT INTO s.cols SELECT i, 'l' || i FROM generate_series(1, 300) i;
	ALTER FOREIGN TABLE s.cols RENAME COLUMN k TO id;
	ALTER FOREIGN TABLE s.cols RENAME COLUMN label TO v;
	CREATE FOREIGN TABLE s.nokey (id int, v text) SERVER ts;
	INSERT INTO s.nokey SELECT i % 7, 'x' FROM generate_series(1, 500) i;
	CREATE TABLE s.parted (id int NOT NULL, v text) PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE s.part1 PARTITION OF s.parted FOR VALUES FROM (0) TO (1000)
		SERVER ts OPTIONS (key 'id');
	INSERT INTO s.parted SELECT i, 'p' FROM generate_series(1, 999) i;
	CREATE TYPE s.mood AS ENUM ('sad', 'ok');
	CREATE FOREIGN TABLE s.typed (id int NOT NULL, m s.mood, ms s.mood[], r regclass, rt regtype)
		SERVER ts OPTIONS (key 'id');
	INSERT INTO s.typed VALUES (1, 'sad', '{sad,ok}', NULL, NULL);
	CREATE TYPE s.c3 AS (a int, b text, c int);
	CREATE FOREIGN TABLE s.comp (id int NOT NULL, x s.c3) SERVER ts OPTIONS (key 'id');
	INSERT INTO s.comp VALUES (1, ROW(1, 'two', 3));
	ALTER TYPE s.c3 DROP ATTRIBUTE b;
	INSERT INTO s.comp VALUES (2, ROW(10, 30));
	ALTER TYPE s.c3 ADD ATTRIBUTE d int;
	INSERT INTO s.comp VALUES (3, ROW(100, 300, 400));
	ALTER TYPE s.mood RENAME VALUE 'sad' TO 'unhappy';
	ALTER SCHEMA s RENAME TO s_renamed;
});
# reg* values name objects by OID in the database that wrote them, by
# their qualified name anywhere else: dst reads these by name
$node->safe_psql('src', q{
	INSERT INTO s_renamed.typed VALUES
		(2, 'unhappy', '{ok,unhappy}', 's_renamed.keyed', 's_renamed.mood');
});
my @tables = ('s_renamed.keyed', 's_renamed.cols', 's_renamed.nokey', 's_renamed.part1',
	's_renamed.typed', 's_renamed.comp');

sub checksum
{
	my ($db, $table) = @_;
	return $node->safe_psql($db, qq{
		SELECT count(*) || ' ' || coalesce(sum(id), 0) || ' ' || coalesce(sum(hashtext(t::text)::bigint), 0)
		FROM $table t});
}
my %before = map { $_ => checksum('src', $_) } @tables;
like($before{'s_renamed.keyed'}, qr/^2000 /, 'src: the keyed table holds its 2000 rows');

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $dump ], 'pg_dump -Fc src');
my $script = `pg_restore -f - $dump`;
like($script, qr/CREATE FOREIGN TABLE s_renamed\.keyed .*table_name '\d+\.\d+\.[0-9a-f]{32}'/s,
	'the dump creates the foreign tables with their table_name');
like($script, qr/column_name 'k'/, '... and their column options');
like($script, qr/COPY tcopy\.enum_label .*\ns_renamed\.mood\tsad\tunhappy\n/s,
	'... and the renamed enum value, by the type\'s name');

# ---- a superuser's restore ----
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into dst as a superuser');
for my $t (@tables)
{
	is(checksum('dst', $t), $before{$t}, "dst: $t reads the same rows as in src");
}
is(checksum('dst', 's_renamed.parted'), checksum('src', 's_renamed.parted'),
	'dst: the partitioned table too');
my $enum_label = q{SELECT enumtype = 's_renamed.mood'::regtype, stored, label FROM tcopy.enum_label};
is($node->safe_psql('dst', $enum_label), 't|sad|unhappy',
	'dst: the enum rename is recorded for dst\'s type');
isnt($node->safe_psql('dst', q{SELECT 's_renamed.mood'::regtype::oid}),
	$node->safe_psql('src', q{SELECT 's_renamed.mood'::regtype::oid}),
	'... whose OID is not src\'s');
my $typed = q{SELECT m, ms, r, rt, r = 's_renamed.keyed'::regclass, rt = 's_renamed.mood'::regtype
	FROM s_renamed.typed ORDER BY id};
is($node->safe_psql('dst', $typed),
	"unhappy|{unhappy,ok}||||\nunhappy|{ok,unhappy}|s_renamed.keyed|s_renamed.mood|t|t",
	'dst: a stored enum label reads as renamed, reg* values name dst\'s own objects');
is($node->safe_psql('src', $typed), $node->safe_psql('dst', $typed), '... as they read in src');
# records: by attribute number in src, by name in dst (a restore renumbers
# the attributes around the dropped one)
is($node->safe_psql('dst', 'SELECT x FROM s_renamed.comp ORDER BY id'), "(1,3,)\n(10,30,)\n(100,300,400)",
	'dst: records written before and after a dropped attribute read as on heap');
$node->safe_psql('dst', "INSERT INTO s_renamed.cols VALUES (301, 'from dst')");
is($node->safe_psql('src', 'SELECT v FROM s_renamed.cols WHERE id = 301'), 'from dst',
	'a row written through dst is read through src: the tables share their data');

# ---- a non-superuser's restore ----
$node->safe_psql('postgres', q{
	CREATE ROLE restorer LOGIN;
	CREATE DATABASE dst2 OWNER restorer;});
$node->safe_psql('dst2', qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	GRANT USAGE ON FOREIGN SERVER ts TO restorer;});
my ($stdout, $stderr) = ('', '');
IPC::Run::run([ 'pg_restore', '--no-owner', '--no-privileges', '-d', $node->connstr('dst2'), '-U', 'restorer', $dump ],
	'>', \$stdout, '2>', \$stderr);
like($stderr, qr/permission denied to set option "table_name" of foreign table "keyed"/,
	'a non-superuser restore: CREATE FOREIGN TABLE fails with the attach error') or diag($stderr);
note("restorer's pg_restore: $stderr");
is($node->safe_psql('dst2', q{SELECT count(*) FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
	WHERE c.relnamespace::regnamespace::text = 's_renamed'}), '0',
	'... and no foreign table is made');

# ---- shared data: a DROP in one database drops it for the other ----
$node->safe_psql('dst', 'DROP FOREIGN TABLE s_renamed.nokey');
is($node->safe_psql('src', 'SELECT count(*) FROM s_renamed.nokey'), '0',
	'DROP in dst drops the data src\'s table reads (documented)');
is(checksum('src', 's_renamed.keyed'), $before{'s_renamed.keyed'}, 'the other tables keep theirs');

$node->stop;
$ts->stop;
done_testing();
