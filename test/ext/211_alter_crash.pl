# 211_alter_crash.pl
#	ADD and DROP COLUMN on a tcopy table with rows, around its commit (issue 48):
#	BEGIN; ALTER FOREIGN TABLE a ADD COLUMN ... DEFAULT; INSERT a row
#	holding the column; COMMIT, with the backend paused after the prepare
#	(no commit record yet) or before the publish (commit record written),
#	then Postgres stopped in immediate mode and the tserver killed -9.  By
#	then the tserver already stores the schema with the column (the INSERT
#	opened the table with it).  Asserted, after restarts and recovery:
#	- after-prepare: the old definition, its 100 rows readable, the row of
#	  the transaction absent, and the table writable (a row of the old
#	  definition goes in);
#	- before-publish: the new definition, the 100 old rows read the
#	  default, the transaction's row its value, and the table writable;
#	- the column added again after the first case, of another type, works;
#	- a session whose connection opened the table before an ADD COLUMN
#	  that wrote it and rolled back writes on;
#	- DROP COLUMN likewise: the column and its values there after the
#	  first point, gone (the other columns read as before) after the second;
#	- ALTER COLUMN TYPE of the key column (a rewrite into a new tserver
#	  table): the old type and rows after the first point, the new type,
#	  the rewritten rows and the transaction's row after the second.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(twopc_setup recover_all wait_until start_paused);

my ($node, $ts) = twopc_setup(recovery_interval => '0');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE a (k int NOT NULL, v int) SERVER ts OPTIONS (key 'k');
	INSERT INTO a SELECT g, g FROM generate_series(1, 100) g;
});

sub sql1 { return $node->safe_psql('postgres', $_[0]) }

# Another session's connection opened the table before an ADD COLUMN that
# wrote the table and was rolled back: its writes go on as they were laid
# out (the tserver keeps each connection's schema), none fails.
{
	my $b = TcopyPgTest::Session->new($node);
	my ($out, $err) = $b->result($b->send("INSERT INTO a VALUES (-1, 0);\n"));
	is($err, '', 'a session writes the table');
	sql1(q{BEGIN; ALTER FOREIGN TABLE a ADD COLUMN z int DEFAULT 3;
		INSERT INTO a VALUES (-2, 0, 3); ROLLBACK});
	($out, $err) = $b->result($b->send("INSERT INTO a VALUES (-3, 0);\n"));
	is($err, '', 'after an ADD COLUMN rolled back, its connection writes on');
	is(sql1('SELECT string_agg(k::text, \',\' ORDER BY k) FROM a WHERE k < 0'), '-3,-1',
		'its rows are there, the rolled-back one is not');
	$b->result($b->send("DELETE FROM a WHERE k < 0;\n"));
	$b->quit;
}

# One case: the ALTER's transaction paused at point, then both killed.
sub crash_case
{
	my ($point, $column, $type, $default, $value, $k) = @_;
	my $name = "ADD COLUMN $column, immediate stop at $point, tserver killed -9";
	return crash_alter($point, $name, "ALTER FOREIGN TABLE a ADD COLUMN $column $type DEFAULT $default",
		"INSERT INTO a (k, v, $column) VALUES ($k, 0, $value)");
}

sub crash_alter
{
	my ($point, $name, $alter, $insert) = @_;
	my ($p, $pid) = start_paused($node, $point, [ 'BEGIN', $alter, $insert, 'COMMIT' ]);
	ok($pid, "$name: the backend pauses at $point") or return;
	$ts->kill9;
	$node->stop('immediate');
	$p->finish;
	$ts->start or BAIL_OUT('tserver did not start after kill -9');
	$node->start;
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
	return $name;
}

my $name = crash_case('after-prepare', 'x', 'int', '7', '8', 1000);
is(sql1("SELECT count(*) FROM pg_attribute WHERE attrelid = 'a'::regclass AND attname = 'x'"), '0',
	"$name: the old definition");
is(sql1('SELECT count(*), sum(k), sum(v) FROM a'), '100|5050|5050', "$name: its 100 rows read");
is(sql1('SELECT count(*) FROM a WHERE k = 1000'), '0', "$name: the transaction's row is absent");
sql1('INSERT INTO a VALUES (1001, 1)');
is(sql1('SELECT count(*) FROM a'), '101', "$name: a row of the old definition goes in");

$name = crash_case('before-publish', 'y', 'text', "'d'", "'w'", 2000);
is(sql1("SELECT count(*) FROM pg_attribute WHERE attrelid = 'a'::regclass AND attname = 'y'"), '1',
	"$name: the new definition");
is(sql1("SELECT count(*), count(*) FILTER (WHERE y = 'd') FROM a"), '102|101',
	"$name: the old rows read the default");
is(sql1('SELECT y FROM a WHERE k = 2000'), 'w', "$name: the transaction's row holds its value");
sql1(q{INSERT INTO a (k, v) VALUES (2001, 1); INSERT INTO a (k, v, y) VALUES (2002, 1, 'z')});
is(sql1("SELECT string_agg(coalesce(y, 'null'), ',' ORDER BY k) FROM a WHERE k > 1000"), 'd,w,d,z',
	"$name: the table is writable, the default given to new rows");

# the column the first case rolled back, again, of another type
sql1('ALTER FOREIGN TABLE a ADD COLUMN x text DEFAULT \'t\'');
is(sql1("SELECT count(*) FILTER (WHERE x = 't'), count(*) FROM a"), '104|104',
	'x added again as text: every row reads its default');

# DROP COLUMN v (whose values the rows hold) around its commit
$name = crash_alter('after-prepare', 'DROP COLUMN v, immediate stop at after-prepare, tserver killed -9',
	'ALTER FOREIGN TABLE a DROP COLUMN v', "INSERT INTO a (k, y) VALUES (3000, 'p')");
is(sql1('SELECT count(*), sum(v) FROM a'), '104|5053', "$name: v and its values are there");
is(sql1('SELECT count(*) FROM a WHERE k = 3000'), '0', "$name: the transaction's row is absent");
$name = crash_alter('before-publish', 'DROP COLUMN v, immediate stop at before-publish, tserver killed -9',
	'ALTER FOREIGN TABLE a DROP COLUMN v', "INSERT INTO a (k, y) VALUES (3001, 'p')");
is(sql1("SELECT count(*) FROM pg_attribute WHERE attrelid = 'a'::regclass AND attname = 'v'"), '0',
	"$name: v is gone");
is(sql1("SELECT count(*), count(*) FILTER (WHERE y = 'd'), sum(k) FILTER (WHERE k <= 100) FROM a"),
	'105|102|5050', "$name: the rows read, their other columns as before");
is(sql1("SELECT y, x FROM a WHERE k = 3001"), 'p|t', "$name: the transaction's row is there");
sql1(q{INSERT INTO a (k, y) VALUES (3002, 'q')});
is(sql1('SELECT count(*) FROM a'), '106', "$name: the table is writable");

# ALTER COLUMN TYPE of the key column: the rows rewritten into a new
# tserver table inside the transaction, the old one dropped at the commit
$name = crash_alter('after-prepare', 'ALTER COLUMN k TYPE bigint, immediate stop at after-prepare, '
	  . 'tserver killed -9', 'ALTER FOREIGN TABLE a ALTER COLUMN k TYPE bigint',
	"INSERT INTO a (k, y) VALUES (4000, 'p')");
is(sql1("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'a'::regclass "
		  . "AND attname = 'k'"), 'integer', "$name: the old type");
is(sql1('SELECT count(*), sum(k) FILTER (WHERE k <= 100) FROM a'), '106|5050', "$name: the old rows read");
is(sql1('SELECT count(*) FROM a WHERE k = 4000'), '0', "$name: the transaction's row is absent");
sql1(q{INSERT INTO a (k, y) VALUES (4001, 'q')});
is(sql1('SELECT count(*) FROM a'), '107', "$name: the table is writable");
$name = crash_alter('before-publish', 'ALTER COLUMN k TYPE bigint, immediate stop at before-publish, '
	  . 'tserver killed -9', 'ALTER FOREIGN TABLE a ALTER COLUMN k TYPE bigint',
	"INSERT INTO a (k, y) VALUES (4002, 'p')");
is(sql1("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'a'::regclass "
		  . "AND attname = 'k'"), 'bigint', "$name: the new type");
is(sql1('SELECT count(*), sum(k) FILTER (WHERE k <= 100), count(*) FILTER (WHERE k = 4002) FROM a'),
	'108|5050|1', "$name: the rows were rewritten, the transaction's row is there");
is(sql1('SELECT y FROM a WHERE k = 50'), 'd', "$name: a row read by its key in the new storage");
sql1(q{INSERT INTO a (k, y) VALUES (5000000000, 'q')});
is(sql1('SELECT count(*) FROM a WHERE k > 4000000000'), '1', "$name: the table takes a bigint key");
is(sql1(q{SELECT count(*) FROM tcopy.check_tables() WHERE foreign_table = 'a'::regclass}), '0',
	'check_tables finds the tserver table a names now');

$node->stop;
$ts->stop;
done_testing();
