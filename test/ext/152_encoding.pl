# 152_encoding.pl
#	Text read from a tserver is verified against the database encoding.
#	Two databases of one cluster, one LATIN1 and one UTF8, have foreign
#	tables on the same tserver table; 'café' written from LATIN1 is the
#	byte 0xe9 after "caf", invalid UTF-8.  Read from UTF8, it raises
#	Postgres' own error (22021, invalid byte sequence for encoding "UTF8":
#	0xe9) naming the column and the table, for text, json, name and a text
#	array alike; CREATE TABLE AS fails rather than storing it; columns not
#	read, rows not reached, bytea and valid UTF-8 read fine.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node);

my ($node, $ts) = setup_node();
my $address = $ts->address;
$node->safe_psql('postgres', q{
	CREATE DATABASE latin TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C';
	CREATE DATABASE utf TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C';
});
for my $db ('latin', 'utf')
{
	$node->safe_psql($db, qq{
		CREATE EXTENSION tcopy;
		CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
		CREATE USER MAPPING FOR PUBLIC SERVER ts;
		CREATE FOREIGN TABLE t (id int NOT NULL, v text, j json, n name, a text[], b bytea)
			SERVER ts OPTIONS (key 'id', table_name 'shared_t');
	});
}
is($node->safe_psql('utf', 'SHOW server_encoding'), 'UTF8', 'database utf is UTF8');
is($node->safe_psql('latin', 'SHOW server_encoding'), 'LATIN1', 'database latin is LATIN1');

# Row 1 from LATIN1 (chr(233) is é there: the byte 0xe9) in one column at a
# time (rows 11 .. 14), row 2 from UTF8 (é is 0xc3 0xa9 there).
$node->safe_psql('latin', q{
	INSERT INTO t (id, v, b) VALUES (1, 'caf' || chr(233), '\xe9');
	INSERT INTO t (id, j) VALUES (11, ('"caf' || chr(233) || '"')::json);
	INSERT INTO t (id, n) VALUES (12, ('caf' || chr(233))::name);
	INSERT INTO t (id, a) VALUES (13, ARRAY['caf' || chr(233)]);
	INSERT INTO t (id, b) VALUES (14, '\xe9');
});
$node->safe_psql('utf', q{INSERT INTO t (id, v) VALUES (2, 'caf' || chr(233))});

# Run sql in database utf with VERBOSITY verbose; (stdout, stderr).
sub utf_psql
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('utf', "\\set VERBOSITY verbose\n$sql");
	return ($out, $err);
}

my ($out, $err) = utf_psql('SELECT id, v FROM t WHERE id = 1');
like($err, qr/ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xe9\n/,
	'text written from LATIN1, read from UTF8: Postgres\' error, 22021');
like($err, qr/CONTEXT:  column "v" of foreign table "t"/, '... naming the column and the table');
is($out, '', '... and no row');

($out, $err) = utf_psql('SELECT * FROM t');
like($err, qr/ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xe9/, 'a scan of every column fails the same way');

($out, $err) = utf_psql('CREATE TABLE copied AS SELECT * FROM t');
like($err, qr/ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xe9/, 'CREATE TABLE AS fails');
($out, $err) = utf_psql(q{SELECT count(*) FROM pg_class WHERE relname = 'copied'});
is($out, '0', '... and leaves no table');

for my $case ([ 11, 'j', 'json' ], [ 12, 'n', 'name' ], [ 13, 'a', 'text[]' ])
{
	my ($id, $column, $type) = @$case;
	($out, $err) = utf_psql("SELECT $column FROM t WHERE id = $id");
	like($err, qr/ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xe9.*\nCONTEXT:  column "$column" of foreign table "t"/s,
		"$type: the same error, naming column $column");
}

($out, $err) = utf_psql('SELECT count(*), sum(id) FROM t');
is("$out$err", '6|53', 'a scan that reads no text column works');
($out, $err) = utf_psql('SELECT id, b FROM t WHERE b IS NOT NULL ORDER BY id');
is("$out$err", "1|\\xe9\n14|\\xe9", 'bytea holding 0xe9 reads as bytes');
($out, $err) = utf_psql('SELECT v, length(v), octet_length(v) FROM t WHERE id = 2');
is("$out$err", "caf\x{c3}\x{a9}|4|5", 'valid UTF-8 reads fine');
($out, $err) = utf_psql('CREATE TABLE copied AS SELECT id, v FROM t WHERE id = 2; SELECT v FROM copied');
like("$out$err", qr/^SELECT 1\ncaf\x{c3}\x{a9}$|^caf\x{c3}\x{a9}$/, '... and CREATE TABLE AS of it works');

# LATIN1 reads the UTF-8 bytes as two valid LATIN1 characters
is($node->safe_psql('latin', 'SELECT length(v), octet_length(v) FROM t WHERE id = 2'), '5|5',
	'LATIN1 reads UTF-8 bytes as LATIN1 characters (every byte is valid there)');

$node->stop;
$ts->stop;
done_testing();
