# 197_check_tables.pl
#	The consistency check of tcopy tables against their tserver (issue 29):
#	- tcopy.check_tables() lists a foreign table never written to and one
#	  whose tserver table was dropped behind Postgres' back (absent), and a
#	  tserver table made by hand that no foreign table names (owner
#	  unknown: its name does not say which database made it), and nothing
#	  else;
#	- tcopy.drop_orphan() refuses that table without force (55006), drops
#	  it with force (true), then finds it gone (false); refuses a table a
#	  foreign table names (55006), even with force;
#	- both are refused to a non-superuser (42501).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates table_name_of);

my ($node, $ts) = setup_node(name => 'check');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE kept (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE never (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE lost (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	INSERT INTO kept SELECT generate_series(1, 100);
	INSERT INTO lost SELECT generate_series(1, 100);
	CREATE ROLE alice LOGIN;
});
my $kept = table_name_of($node, 'kept');
my $lost = table_name_of($node, 'lost');
my $never = table_name_of($node, 'never');
$ts->cli_ok('the lost table dropped behind Postgres\' back', 'drop', $lost);
$ts->cli_ok('an orphan made on the tserver', 'load', 'orphan_one', '--rows', 10);

my $out = $node->safe_psql('postgres',
	'SELECT server, foreign_table, table_name, split_part(problem, \':\', 1) FROM tcopy.check_tables() ORDER BY 3');
my @rows = sort split /\n/, $out;
is_deeply(\@rows, [ sort("ts|lost|$lost|absent", "ts|never|$never|absent", 'ts||orphan_one|owner unknown') ],
	'check_tables: the table never written and the lost one absent, the table made by hand of unknown owner, nothing else')
  or diag($out);

my ($rc, $o, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET ROLE alice; SELECT * FROM tcopy.check_tables()");
is(join(',', sqlstates($err)), '42501', 'a non-superuser may not check (42501)');
($rc, $o, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET ROLE alice; SELECT tcopy.drop_orphan('ts', 'orphan_one')");
is(join(',', sqlstates($err)), '42501', 'nor drop an orphan');
($rc, $o, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', '$kept')");
is(join(',', sqlstates($err)), '55006', 'a table a foreign table names is no orphan (55006)');
like($err, qr/is not an orphan: a foreign table of this database names it/, '... saying so');
is($node->safe_psql('postgres', 'SELECT count(*) FROM kept'), 100, '... and keeps its rows');

($rc, $o, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', '$kept', force => true)");
is(join(',', sqlstates($err)), '55006', '... even with force');
($rc, $o, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT tcopy.drop_orphan('ts', 'orphan_one')");
is(join(',', sqlstates($err)), '55006', 'a table of unknown owner is refused without force (55006)');
like($err, qr/may be in use by another database/, '... saying another database may use it');
is($node->safe_psql('postgres', "SELECT tcopy.drop_orphan('ts', 'orphan_one', force => true)"), 't',
	'with force it is dropped');
is($node->safe_psql('postgres', "SELECT tcopy.drop_orphan('ts', 'orphan_one', force => true)"), 'f', 'then it is gone');
unlike($ts->cli_ok('tserver-cli tables', 'tables'), qr/orphan_one/, 'the tserver has it no more');
$out = $node->safe_psql('postgres', "SELECT count(*) FROM tcopy.check_tables() WHERE table_name = 'orphan_one'");
is($out, 0, 'check_tables lists it no more');

$node->stop;
$ts->stop;
done_testing();
