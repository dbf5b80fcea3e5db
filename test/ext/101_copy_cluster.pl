# 101_copy_cluster.pl
#	A pgbench_accounts-shaped load of 1M rows (TCOPY_TAP_ROWS overrides)
#	into a tcopy table, by COPY FROM a server file and by psql's \copy,
#	gives the rows the same load gives a heap table; they survive a tserver
#	restart; a session's first statement, if a COPY, goes through the COPY
#	hook; a COPY while the tserver is down fails with an error naming it,
#	and the next one works once it is back, in a fresh session and in one
#	that had a connection cached; a tserver killed in the middle of a COPY
#	leaves nothing of it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum held_copy_sql
  release_held_copy);

my $rows = $ENV{TCOPY_TAP_ROWS} // 1_000_000;

my ($node, $ts) = setup_node();
my $csv = $node->basedir . '/accounts.csv';
my $expect = write_accounts_csv($csv, 1, $rows);
my $expected_sum = "$rows $expect->{aid_sum} $expect->{abalance_sum}";
note("accounts.csv: $rows rows, $expect->{bytes} bytes");

$node->safe_psql('postgres',
	accounts_ddl(heap => ['accounts_heap'], tcopy => [ 'accounts', 'accounts_client', 'accounts_crash' ]));

my $s = TcopyPgTest::Session->new($node);

# ---- COPY FROM a server file, and \copy ----
my ($out, $err) = $s->run("COPY accounts_heap FROM '$csv' (FORMAT csv);");
is($out, "COPY $rows", 'heap: COPY FROM file') or diag($err);
my $t0 = time();
($out, $err) = $s->run("COPY accounts FROM '$csv' (FORMAT csv);");
is($out, "COPY $rows", 'tcopy: COPY FROM file reports every row') or diag($err);
is($err, '', 'tcopy: COPY FROM file: no error or warning');
note(sprintf("tcopy COPY FROM file: %.1f s", time() - $t0));
$t0 = time();
($out, $err) = $s->run("\\copy accounts_client FROM '$csv' (FORMAT csv)");
is($out, "COPY $rows", 'tcopy: \copy reports every row') or diag($err);
is($err, '', 'tcopy: \copy: no error or warning');
note(sprintf("tcopy \\copy: %.1f s", time() - $t0));

my $heap_sum = table_checksum($node, 'accounts_heap');
like($heap_sum, qr/^\Q$expected_sum\E -?\d+$/, 'heap table holds the rows of the file');
is(table_checksum($node, 'accounts'), $heap_sum, 'COPY FROM file: same rows as the heap table');
is(table_checksum($node, 'accounts_client'), $heap_sum, '\copy: same rows as the heap table');
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM (SELECT * FROM accounts_heap EXCEPT ALL SELECT * FROM accounts) a)
		|| ' ' || (SELECT count(*) FROM (SELECT * FROM accounts EXCEPT ALL SELECT * FROM accounts_heap) b)}),
	'0 0', 'EXCEPT ALL both ways: no difference');

# a key range and a qual on another column, through the scan's bounds
my $range = 'aid BETWEEN 1000 AND 1999 AND abalance > 0';
is(table_checksum($node, 'accounts', $range), table_checksum($node, 'accounts_heap', $range),
	"a key range scan returns the heap's rows ($range)");
my $last = "aid > " . ($rows - 10);
is(table_checksum($node, 'accounts', $last), table_checksum($node, 'accounts_heap', $last),
	"the last rows by key ($last)");

# ---- a tserver restart loses nothing ----
$ts->restart or BAIL_OUT("tserver did not restart");
is(table_checksum($node, 'accounts'), $heap_sum, 'after a tserver restart: same rows');
is(table_checksum($node, 'accounts_client'), $heap_sum, 'after a tserver restart: same rows (\copy table)');

# ---- COPY while the tserver is down ----
my $small = $node->basedir . '/small.csv';
write_accounts_csv($small, $rows + 1, 1000);
my $small_heap = do {
	$s->run_ok("CREATE TABLE small_heap (LIKE accounts_heap); COPY small_heap FROM '$small' (FORMAT csv);");
	table_checksum($node, 'small_heap');
};
$s->run_ok(accounts_ddl(tcopy => ['side']));
# this session caches its write connection
($out, $err) = $s->run("INSERT INTO side VALUES (0, 0, 0, 'before');");
is($err, '', 'insert before the tserver goes down');

# ---- the COPY hook in a session that has not loaded the library ----
# The hook is installed when the library is loaded, which CREATE EXTENSION
# or a first query on a tcopy table does; a session's first statement may
# be the COPY.  The hook and Postgres' own COPY refuse FREEZE on a foreign
# table in different words, which tells which of them ran.
my (undef, undef, $fresh_freeze) =
  $node->psql('postgres', "COPY side FROM '$small' (FORMAT csv, FREEZE)");
my (undef, undef, $loaded_freeze) =
  $node->psql('postgres', "LOAD 'tcopy';\nCOPY side FROM '$small' (FORMAT csv, FREEZE)");
s/^psql:[^:]*:\d+: //mg for $fresh_freeze, $loaded_freeze;
like($loaded_freeze, qr/ERROR:  .*FREEZE/, 'COPY FREEZE fails (after LOAD)');
is($fresh_freeze, $loaded_freeze,
	"a session's first COPY is taken by the COPY hook as after LOAD 'tcopy'");

$ts->stop('tserver stops');
my $socket = quotemeta($ts->address);
my ($rc, $fresh_out, $fresh_err) = $node->psql('postgres', "COPY side FROM '$small' (FORMAT csv)");
isnt($rc, 0, 'COPY in a fresh session fails while the tserver is down');
like($fresh_err, qr/ERROR:  could not connect to tserver at "$socket"/,
	'... with an error naming the tserver');
($out, $err) = $s->run("COPY side FROM '$small' (FORMAT csv);");
like($err, qr/ERROR:  .*tserver at "$socket"/,
	'COPY in a session with a cached connection fails, naming the tserver');
($out, $err) = $s->run("INSERT INTO side VALUES (1, 0, 0, 'down');");
like($err, qr/ERROR:  .*tserver at "$socket"/, 'INSERT fails as well');
($rc, $fresh_out, $fresh_err) = $node->psql('postgres', 'SELECT count(*) FROM side');
like($fresh_err, qr/ERROR:  could not connect to tserver at "$socket"/, 'a scan fails as well');

$ts->start or BAIL_OUT("tserver did not start again");
($out, $err) = $s->run("COPY side FROM '$small' (FORMAT csv);");
is($out, 'COPY 1000', 'the same session copies again once the tserver is back') or diag($err);
is($err, '', '... without an error');
is(table_checksum($node, 'side', "aid > $rows"), $small_heap, '... and its rows are there');
($rc, $fresh_out, $fresh_err) = $node->psql('postgres',
	"TRUNCATE side; COPY side FROM '$small' (FORMAT csv)");
is($rc, 0, 'a fresh session copies again') or diag($fresh_err);
is(table_checksum($node, 'side'), $small_heap, '... and its rows are there');

# ---- a tserver killed in the middle of a COPY ----
my $pid = $s->backend_pid;
# the COPY's rows after the first 20k come one every 20 ms: still running
# when the tserver dies, however fast the machine
$s->send(held_copy_sql($node, 'accounts_crash', $csv, 20_000) . ';');
my $seen = 0;
my $deadline = time() + 120;
while (time() < $deadline && !$s->done)
{
	$seen = $node->safe_psql('postgres',
		"SELECT tuples_processed FROM pg_stat_progress_copy WHERE pid = $pid") || 0;
	last if $seen > 1000;
	sleep(0.02);
}
ok($seen > 1000 && !$s->done, "the COPY is running ($seen rows) when the tserver is killed");
$ts->kill9;
# the rest at full speed: the COPY meets the dead connection at its next
# batch, not a batch of 20 ms rows later
release_held_copy($node);
($out, $err) = $s->result;
like($err, qr/ERROR:  .*tserver/, "a COPY whose tserver is killed after $seen rows fails, naming the tserver")
  or diag("stdout: $out");
unlike($out, qr/^COPY \d+/m, '... and does not report rows copied');
$ts->start or BAIL_OUT("tserver did not start after kill -9");
is($node->safe_psql('postgres', 'SELECT count(*) FROM accounts_crash'), '0',
	'nothing of the killed COPY is in the table');
($out, $err) = $s->run("COPY accounts_crash FROM '$csv' (FORMAT csv);");
is($out, "COPY $rows", 'the same session copies the file again') or diag($err);
is(table_checksum($node, 'accounts_crash'), $heap_sum, '... completely');

is(table_checksum($node, 'accounts'), $heap_sum, 'in the end the first table is intact');

$s->quit;
$node->stop;
$ts->stop;
done_testing();
