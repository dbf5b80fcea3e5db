# 204_two_database_sweep.pl
#	Two databases of one cluster share a tserver, as the README's quick
#	start sets them up (servers without a namespace), and each sweeps for
#	orphans (issue 43, item 6):
#	- each database's tcopy.check_tables() lists its own orphan (a table
#	  whose CREATE rolled back after a write), never the other database's
#	  live tables nor its orphan, and lists a table named before tcopy 1.11
#	  (by hand) that it does not name as "owner unknown";
#	- tcopy.drop_orphan() drops the own orphan, and refuses (55006) the
#	  other database's live table, its orphan and its legacy-named tables;
#	  every live table keeps all its rows;
#	- with force => true it drops a legacy-named table nobody names;
#	- a second server whose tserver is down is one "unreachable" row, and
#	  the first server's tables are still checked; once it is back, the
#	  row is gone.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates table_name_of);

my ($node, $ts) = setup_node(name => 'sweep2');
my $address = $ts->address;
my $ts2 = TcopyTest->new;
$ts2->start or BAIL_OUT('second tserver did not start');
my $address2 = $ts2->address;

# each database: a live table with generated name, a table attached by an
# explicit table_name (as every table was named before 1.11: an old
# 32-hex name in b, a hand-made one in a), and an orphan of its own
my %live = (a => 5000, b => 7000);
my %legacy = (a => 'legacy_by_hand_a', b => '0123456789abcdef0123456789abcdef');
my (%name, %orphan);
for my $db (qw(a b))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{
		CREATE EXTENSION tcopy;
		CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
		CREATE USER MAPPING FOR PUBLIC SERVER ts;
		CREATE FOREIGN TABLE live (id int NOT NULL, note text) SERVER ts OPTIONS (key 'id');
		INSERT INTO live SELECT i, 'row ' || i FROM generate_series(1, $live{$db}) i;
		CREATE FOREIGN TABLE legacy (id int NOT NULL) SERVER ts
			OPTIONS (key 'id', table_name '$legacy{$db}');
		INSERT INTO legacy SELECT generate_series(1, 1000);
	});
	$name{$db} = table_name_of($node, 'live', $db);
	# a load that fails after writing (a restore in one transaction, say):
	# its table's data is on the tserver, its foreign table rolled back
	$orphan{$db} = $node->safe_psql($db, q{
		BEGIN;
		CREATE FOREIGN TABLE scratch (id int NOT NULL) SERVER ts OPTIONS (key 'id');
		INSERT INTO scratch SELECT generate_series(1, 10);
		SELECT option_value FROM pg_options_to_table(
			(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'scratch'::regclass))
		WHERE option_name = 'table_name';
		ROLLBACK;
	});
}
my $sysid = $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my %oid = map { $_ => $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$_'") } qw(a b);
like($name{$_}, qr/^\Q$sysid.$oid{$_}.\E[0-9a-f]{32}$/, "$_: a new table's name carries the cluster's and database's owner tag")
  for qw(a b);
my $tables = $ts->cli_ok('tserver-cli tables', 'tables');
like($tables, qr/\Q$orphan{$_}\E/, "$_: its orphan is on the tserver") for qw(a b);

# a second server of a, whose tserver goes down
$node->safe_psql('a', qq{
	CREATE SERVER far FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address2');
	CREATE USER MAPPING FOR PUBLIC SERVER far;
	CREATE FOREIGN TABLE far_t (id int NOT NULL) SERVER far OPTIONS (key 'id');
	INSERT INTO far_t SELECT generate_series(1, 100);
});
$ts2->stop;

sub check_rows
{
	my ($db) = @_;
	my $out = $node->safe_psql($db, q{
		SELECT server, coalesce(foreign_table::text, ''), coalesce(table_name, ''),
			split_part(problem, ':', 1)
		FROM tcopy.check_tables()});
	return [ sort split /\n/, $out ];
}

my $other = { a => 'b', b => 'a' };
my $t0 = time;
my %rows = map { $_ => check_rows($_) } qw(a b);
is_deeply($rows{a},
	[ sort('far|||unreachable', "ts||$legacy{b}|owner unknown", "ts||$orphan{a}|orphan") ],
	'a: its orphan, b\'s legacy table as owner unknown, the down server as one row; nothing of b\'s live tables')
  or diag(explain($rows{a}));
is_deeply($rows{b}, [ sort("ts||$legacy{a}|owner unknown", "ts||$orphan{b}|orphan") ],
	'b: its orphan, a\'s legacy table as owner unknown; nothing of a\'s live tables')
  or diag(explain($rows{b}));
my $problem = $node->safe_psql('a', "SELECT problem FROM tcopy.check_tables() WHERE server = 'far'");
like($problem, qr/^unreachable: could not connect to tserver at "\Q$address2\E": \S/,
	'the unreachable row says where and why');
cmp_ok(time - $t0, '<', 30, 'checking with a server down takes no long wait');

# every sweep, as a DBA would run it: drop each listed orphan, try the rest
for my $db (qw(a b))
{
	my $o = $other->{$db};
	is($node->safe_psql($db, "SELECT tcopy.drop_orphan('ts', '$orphan{$db}')"), 't',
		"$db: its own orphan is dropped");
	for my $case ([ $name{$o}, "$o\'s live table" ], [ $orphan{$o}, "$o\'s orphan" ],
		[ $legacy{$o}, "$o\'s legacy-named table" ])
	{
		my ($target, $what) = @$case;
		my ($rc, $out, $err) = $node->psql($db,
			"\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', '$target')");
		is(join(',', sqlstates($err)), '55006', "$db: drop_orphan refuses $what (55006)");
		like($err, qr/may be in use by another database/, '... saying it may be another database\'s');
	}
	my ($rc, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', '$legacy{$o}')");
	like($err, qr/HINT:  Make sure that no foreign table of any database using this tserver names it, then call tcopy\.drop_orphan\(server, table_name, force => true\)/,
		"$db: the refusal of a legacy name says how to go on");
}
for my $db (qw(a b))
{
	is($node->safe_psql($db, 'SELECT count(*) FROM live'), $live{$db}, "$db: its live table keeps its $live{$db} rows");
	is($node->safe_psql($db, 'SELECT count(*) FROM legacy'), 1000, "$db: its legacy-named table keeps its rows");
}
$tables = $ts->cli_ok('tserver-cli tables', 'tables');
unlike($tables, qr/\Q$orphan{$_}\E/, "$_: its orphan is gone from the tserver") for qw(a b);

# a table made by hand, which no database names, goes with force
$ts->cli_ok('a table made by hand on the tserver', 'load', 'by_hand', '--rows', 10);
my ($rc, $out, $err) = $node->psql('a', "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', 'by_hand')");
is(join(',', sqlstates($err)), '55006', 'a table of no known owner is refused without force');
is($node->safe_psql('a', "SELECT tcopy.drop_orphan('ts', 'by_hand', force => true)"), 't',
	'and dropped with force => true');
is($node->safe_psql('a', "SELECT tcopy.drop_orphan('ts', 'by_hand', force => true)"), 'f', 'then it is gone');
($rc, $out, $err) = $node->psql('a', "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', 'legacy_by_hand_a', force => true)");
is(join(',', sqlstates($err)), '55006', 'force never drops a table this database names');

# the far tserver back: its table checked again, the row gone
$ts2->start or BAIL_OUT('second tserver did not restart');
is_deeply(check_rows('a'), [ "ts||$legacy{b}|owner unknown" ],
	'a, the far tserver back: only b\'s legacy table, no unreachable row, far_t present');
is($node->safe_psql('a', 'SELECT count(*) FROM far_t'), 100, '... and far_t has its rows');

$node->stop;
$ts->stop;
$ts2->stop;
done_testing();
