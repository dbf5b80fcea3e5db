# 113_stall_cancel.pl
#	A tserver that stops answering (SIGSTOP) in the middle of a COPY of 500k
#	rows does not hang Postgres:
#	statement_timeout ends the COPY within a few seconds of the timeout,
#	and so does pg_cancel_backend from another session, each with
#	Postgres' own error; after SIGCONT the tserver holds no session,
#	nothing of the cancelled COPYs is in the table, and the next COPY in
#	the same session works.  A COMMIT stalled the same way (in its
#	two-phase commit's PREPARE, before Postgres' commit record) is
#	cancelled too, which rolls the transaction back: nothing of it is in
#	the table once the tserver resumes, nor after recovery, although the
#	tserver may prepare the session from the PREPARE it finds in its
#	socket (orphaned: the connection is gone), which recovery
#	(tcopy.recover_prepared_sessions()) must then discard; after it the
#	tserver holds no session, prepared or not.  A ROLLBACK while the
#	tserver is stopped succeeds, bounded by the abort cleanup's timeout
#	(30 s, the time it waits for the tserver's answer to ABORT).
# pg_tests: alone (it times timeouts and cancels, with seconds of slack)
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
  checksum_add wait_until wait_tserver_idle held_copy_sql
  release_held_copy);

my $rows = 500_000;			# the COPY is stalled long before its end
my $TIMEOUT_S = 4;			# statement_timeout of the first case
my $SLACK_S = 4;			# how long after the timeout or the cancel the COPY may take to end

my ($node, $ts) = setup_node();
$node->safe_psql('postgres', accounts_ddl(heap => ['reference'], tcopy => ['acc']));
my $big = $node->basedir . '/big.csv';
write_accounts_csv($big, 1, $rows);
my $small = $node->basedir . '/small.csv';
write_accounts_csv($small, $rows + 1, 10_000);
$node->safe_psql('postgres', "COPY reference FROM '$small' (FORMAT csv)");
my $small_sum = table_checksum($node, 'reference');

my $s = TcopyPgTest::Session->new($node, timeout => 120);
my $watch = TcopyPgTest::Session->new($node, timeout => 120);
my $pid = $s->backend_pid;
my $expected = '0 0 0 0';

END { kill 'CONT', $ts->pid if $ts && $ts->pid }

# The state letter of /proc/PID/task/TID/stat ('T': stopped), or '?'.
sub thread_state
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '?';
	my $line = <$fh> // '';
	return $line =~ /^\d+ \(.*\) (\S)/ ? $1 : '?';
}

# SIGSTOP the tserver and wait until every thread of it has stopped.
sub stop_tserver
{
	my $pid = $ts->pid;
	kill 'STOP', $pid;
	wait_until(5, sub {
		my @states = map { thread_state($_) } glob("/proc/$pid/task/*/stat");
		return @states && !grep { $_ ne 'T' } @states;
	}) or diag("tserver $pid: not every thread stopped");
}

# Start a COPY of the big file in $s, held after its first 100k rows (see
# held_copy_sql); once it has processed 20k rows, stop the tserver and
# release the rest of the rows, which then wait on the tserver.  Returns
# the time the statement was sent.
sub copy_and_stall
{
	my ($name) = @_;
	my $t0 = time();
	$s->send(held_copy_sql($node, 'acc', $big, 100_000) . ';');
	my $seen = wait_until(30, sub {
		return -1 if $s->done;
		my $n = $watch->run_ok("SELECT tuples_processed FROM pg_stat_progress_copy WHERE pid = $pid;");
		return $n ne '' && $n > 20_000 ? $n : 0;
	});
	ok($seen > 0, "$name: the COPY is running ($seen rows) when the tserver is stopped");
	stop_tserver();
	release_held_copy($node);
	note("tserver stopped after $seen rows");
	return $t0;
}

# Whether the backend is waiting on the tserver (the client's wait hook).
sub waits_on_tserver
{
	# a parallel COPY's workers send the rows themselves: one of them waits
	return wait_until(3, sub {
		$watch->run_ok("SELECT bool_or(wait_event_type || ' ' || wait_event = 'Extension Extension') "
			  . "FROM pg_stat_activity WHERE pid = $pid OR leader_pid = $pid;") eq 't';
	});
}

# After SIGCONT: no session left, and the table as expected.
sub check_after_resume
{
	my ($name) = @_;
	kill 'CONT', $ts->pid;
	my ($idle, $stats) = wait_tserver_idle($ts, 10);
	ok($idle, "$name: after SIGCONT the tserver holds no session, prepared or not") or diag(explain($stats));
	is(table_checksum($node, 'acc'), $expected, "$name: nothing of the cancelled COPY is in the table");
}

# The next COPY in the same session works.
sub next_copy_works
{
	my ($name) = @_;
	$s->run_ok('TRUNCATE acc;');
	$expected = '0 0 0 0';
	my ($out, $err) = $s->run("COPY acc FROM '$small' (FORMAT csv);");
	is($out, 'COPY 10000', "$name: the next COPY in the session works") or diag($err);
	$expected = $small_sum;
	is(table_checksum($node, 'acc'), $expected, "$name: ... and its rows are there");
}

# ---- statement_timeout ----
$s->run_ok("SET statement_timeout = '${TIMEOUT_S}s';");
my $t0 = copy_and_stall('statement_timeout');
ok(waits_on_tserver(), 'statement_timeout: the stalled COPY waits on the tserver');
my ($out, $err) = $s->result;
my $secs = time() - $t0;
like($err, qr/ERROR:  canceling statement due to statement timeout/,
	'statement_timeout ends the COPY stalled on a stopped tserver');
is($out, '', '... which reports no rows copied');
cmp_ok($secs, '<', $TIMEOUT_S + $SLACK_S,
	sprintf("... within %d s of the timeout (it ended %.1f s after it started)", $SLACK_S, $secs));
check_after_resume('statement_timeout');
$s->run_ok('RESET statement_timeout;');
next_copy_works('statement_timeout');

# ---- pg_cancel_backend ----
$t0 = copy_and_stall('pg_cancel_backend');
{
	ok(waits_on_tserver(), 'pg_cancel_backend: the stalled COPY waits on the tserver');
	my $t1 = time();
	is($watch->run_ok("SELECT pg_cancel_backend($pid);"), 't', 'pg_cancel_backend from another session');
	my ($out, $err) = $s->result;
	my $secs = time() - $t1;
	like($err, qr/ERROR:  canceling statement due to user request/,
		'pg_cancel_backend ends the COPY stalled on a stopped tserver');
	cmp_ok($secs, '<', $SLACK_S, sprintf("... within %d s (it took %.1f s)", $SLACK_S, $secs));
	check_after_resume('pg_cancel_backend');
}
next_copy_works('pg_cancel_backend');

# ---- a stalled COMMIT, cancelled ----
# BEGIN and a COPY whose batches are all acknowledged; then the COMMIT's
# PREPARE finds the tserver stopped.
my $before = $expected;
($out, $err) = $s->run("BEGIN; COPY acc FROM '$big' (FORMAT csv) WHERE aid % 10 = 0;");
is($out, "BEGIN\nCOPY " . ($rows / 10), 'commit: a COPY in a transaction block') or diag($err);
$node->safe_psql('postgres', "TRUNCATE reference; COPY reference FROM '$big' (FORMAT csv) WHERE aid % 10 = 0");
my $with = checksum_add($before, table_checksum($node, 'reference'));
stop_tserver();
$s->send('COMMIT;');
ok(waits_on_tserver(), 'commit: the COMMIT waits on the stopped tserver');
my $t1 = time();
is($watch->run_ok("SELECT pg_cancel_backend($pid);"), 't', 'commit: pg_cancel_backend from another session');
($out, $err) = $s->result;
$secs = time() - $t1;
like($err, qr/ERROR:  canceling statement due to user request/, 'commit: the cancel ends the stalled COMMIT with an error');
unlike($err, qr/could not learn whether/, '... not one of an unknown outcome (08007)');
is($out, '', '... and reports no COMMIT');
cmp_ok($secs, '<', $SLACK_S, sprintf("... within %d s (it took %.1f s)", $SLACK_S, $secs));
is($s->run_ok('SELECT 1;'), '1', '... and the session is out of the failed transaction');
kill 'CONT', $ts->pid;
# the cancel came before the commit record: the transaction rolled back,
# and a session the tserver prepares from the PREPARE in its socket is
# never published
my $state = table_checksum($node, 'acc');
is($state, $before, 'commit: after SIGCONT nothing of the cancelled transaction is in the table')
  or diag('it holds ' . ($state eq $with ? 'all' : 'part') . ' of it');
my ($idle, $stats, $resolved, $rerr) = wait_tserver_idle($ts, 30, recover => $node);
ok($idle, 'commit: after SIGCONT and recovery the tserver holds no session, prepared or not')
  or diag(explain($stats), $rerr);
note("commit: recovery resolved $resolved prepared sessions");
$state = table_checksum($node, 'acc');
is($state, $before, 'commit: after recovery nothing of the cancelled transaction is in the table')
  or diag('it holds ' . ($state eq $with ? 'all' : 'part') . ' of it');

# ---- a ROLLBACK while the tserver is stopped ----
# The abort's cleanup waits for the tserver's answer to ABORT with
# interrupts held, up to connection.c's TCOPY_CLEANUP_TIMEOUT_MS (30 s),
# then closes the connection.
$before = table_checksum($node, 'acc');
($out, $err) = $s->run("BEGIN; COPY acc FROM '$small' (FORMAT csv) WHERE aid % 2 = 0;");
is($out, "BEGIN\nCOPY 5000", 'rollback: a COPY in a transaction block') or diag($err);
stop_tserver();
$t1 = time();
($out, $err) = $s->run('ROLLBACK;');
$secs = time() - $t1;
is($out, 'ROLLBACK', 'rollback: ROLLBACK succeeds while the tserver is stopped') or diag($err);
cmp_ok($secs, '<', 30 + $SLACK_S, sprintf("... within the cleanup timeout (it took %.1f s)", $secs));
kill 'CONT', $ts->pid;
($idle, $stats) = wait_tserver_idle($ts, 10);
ok($idle, 'rollback: after SIGCONT the tserver holds no session, prepared or not') or diag(explain($stats));
is(table_checksum($node, 'acc'), $before, 'rollback: nothing of the rolled-back COPY is in the table');
($out, $err) = $s->run("COPY acc FROM '$small' (FORMAT csv, on_conflict 'replace');");
is($out, 'COPY 10000', 'rollback: the next COPY in the session works') or diag($err);

$s->quit;
$watch->quit;
$node->stop;
$ts->stop;
done_testing();
