# 114_backend_death.pl
#	The backend running a COPY dies while the tserver holds part of its
#	session spilled to staging files (the tserver runs with
#	--session-memory-mb 1; the COPY's first 200k rows come at once, the
#	rest one every 20 ms, so it is still running when it dies): by
#	pg_terminate_backend, and by kill -9 (after which the postmaster
#	restarts every backend).  Each time psql reports the lost connection
#	and no rows copied; within a few seconds the tserver holds no session,
#	no session data in memory or in staging files (its stats, and its
#	staging/ directory), and no prepared session (the COPY never reached
#	its commit's PREPARE: nothing is left for recovery); the table has
#	nothing of the COPY (count and checksum); and the next COPY works.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum
  checksum_add wait_until copy_progress wait_tserver_idle staging_entries held_copy_sql
  assert_tserver_unprepared);

my $rows = 500_000;			# the backend dies long before the end
my $fast = 200_000;			# rows sent at once: the tserver spills them
my $IDLE_TIMEOUT = 5;		# seconds the tserver may take to drop the session

# PostgreSQL::Test::Cluster turns restart_after_crash off; the kill -9 case
# needs the postmaster to restart the backends
my ($node, $ts) = setup_node(
	tserver => { extra_args => [ '--session-memory-mb', '1' ] },
	conf => "restart_after_crash = on\n");
$node->safe_psql('postgres', accounts_ddl(heap => ['reference'], tcopy => ['acc']));
my $big = $node->basedir . '/big.csv';
write_accounts_csv($big, 1, $rows);
my $small = $node->basedir . '/small.csv';
write_accounts_csv($small, $rows + 1, 10_000);
$node->safe_psql('postgres', "COPY reference FROM '$small' (FORMAT csv)");
my $small_sum = table_checksum($node, 'reference');
my $expected = '0 0 0 0';

# Start the big COPY; once the tserver has spilled some of its session,
# return (psql, backend pid); the pid is undef if the COPY ended or the
# tserver did not spill within 30 s.
sub copy_until_spilled
{
	my ($name) = @_;
	my $p = TcopyPgTest::Psql->start($node, held_copy_sql($node, 'acc', $big, $fast), timeout => 120);
	my $spilled = wait_until(30, sub {
		return -1 if $p->done;
		my $stats = $ts->stats;
		return $stats && $stats->{spilled_bytes} > 0 ? $stats->{spilled_bytes} : 0;
	});
	my ($pid, $done) = $spilled > 0 ? copy_progress($node, 'acc') : ();
	ok($pid, "$name: the COPY is running and the tserver has spilled part of its session")
	  or diag('the COPY ' . ($p->done ? 'ended: ' . join(' | ', $p->finish) : 'never spilled'));
	note("the tserver spilled $spilled bytes after $done rows; staging holds "
		  . scalar(staging_entries($ts)) . " entries") if $pid;
	return ($p, $pid);
}

# After the backend died: the tserver is clean, the table unchanged, and the
# next COPY works.
sub check_after_death
{
	my ($name) = @_;
	my ($idle, $stats) = wait_tserver_idle($ts, $IDLE_TIMEOUT);
	ok($idle, "$name: within $IDLE_TIMEOUT s the tserver holds no session, prepared or not, nothing staged or spilled")
	  or diag(explain($stats));
	assert_tserver_unprepared($ts, $name);
	ok(wait_until($IDLE_TIMEOUT, sub { !staging_entries($ts) }), "$name: the tserver's staging directory is empty")
	  or diag(join("\n", staging_entries($ts)));
	is(table_checksum($node, 'acc'), $expected, "$name: nothing of the COPY is in the table");
	my ($rc, $out, $err) = TcopyPgTest::Psql->start($node,
		[ 'TRUNCATE acc', "COPY acc FROM '$small' (FORMAT csv)" ], timeout => 60)->finish;
	is($out, "TRUNCATE TABLE\nCOPY 10000", "$name: the next COPY works") or diag($err);
	$expected = $small_sum;
	is(table_checksum($node, 'acc'), $expected, "$name: ... and its rows are there");
}

# ---- pg_terminate_backend ----
my ($p, $pid) = copy_until_spilled('terminate');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't',
	'pg_terminate_backend of the COPYing backend');
my ($rc, $out, $err) = $p->finish;
is($rc, 2, 'terminate: psql reports the connection lost');
like($err, qr/FATAL:  terminating connection due to administrator command/,
	'terminate: ... with the reason') or diag($err);
check_after_death('terminate');

# ---- kill -9 of the backend ----
($p, $pid) = copy_until_spilled('kill -9');
ok(kill('KILL', $pid), 'kill -9 of the COPYing backend');
($rc, $out, $err) = $p->finish;
is($rc, 2, 'kill -9: psql reports the connection lost') or diag($err);
unlike($out, qr/^COPY/m, 'kill -9: ... and no rows copied');
# the postmaster restarts every backend
ok(wait_until(60, sub { (eval { ($node->psql('postgres', 'SELECT 1'))[0] } // -1) == 0 }),
	'kill -9: the server accepts connections again after the crash restart');
check_after_death('kill -9');

$node->stop;
$ts->stop;
done_testing();
