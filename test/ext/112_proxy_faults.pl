# 112_proxy_faults.pl
#	Connections cut at each step of the wire protocol, by a proxy that
#	understands frames (test/tools/tcopy_proxy.pl) between Postgres and
#	the tserver: the foreign server's address points at the proxy, which
#	cuts the write connection of one COPY (of 50k rows, TCOPY_PROXY_ROWS
#	overrides) once, at the step under test.  Each step must end within 60
#	seconds, leave the table with all or nothing of the COPY (count and
#	checksum), and leave no session open on the tserver, nor a prepared
#	one once recovery (tcopy.recover_prepared_sessions()) has run:
#
#	  the tserver's READY dropped, BEGIN dropped, the first WRITE dropped,
#	  half of WRITE 3 sent, the ACK of batch 5 dropped, the commit's
#	  PREPARE dropped:
#	    the COPY fails, naming the tserver; nothing of it is there; the
#	    tserver holds no session, prepared or not, without recovery;
#	  PREPARE_OK dropped (the tserver prepared the session, Postgres
#	  never heard of it):
#	    the COPY fails, naming the tserver; nothing of it is there, before
#	    recovery nor after it (recovery discards the orphaned session);
#	  the publish's RESOLVE (commit) dropped, after Postgres' commit
#	  record:
#	    the COPY succeeds (a WARNING at most); all or nothing of it is
#	    there before recovery, all of it after;
#	  the RESOLVE_OK of the publish dropped (the tserver published):
#	    the COPY succeeds (a WARNING at most); all of it is there at once;
#	  BEGIN; COPY; ROLLBACK: the rollback closes the write connection
#	    (no ABORT is sent: the tserver discards the session), succeeds, and
#	    nothing is there.
#
#	The other cuts of the two-phase commit (PREPARE sent then cut, RESOLVE
#	sent then cut, the discard's RESOLVE), and the tserver killed at each
#	of them, are 122_twopc_faults.pl's.  Then a COPY through the proxy with
#	no fault works.  The background recovery worker is off
#	(tcopy.recovery_interval 0): its connections would go through the
#	proxy, where the one fault must hit the COPY's connection.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use POSIX qw(:sys_wait_h);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum
  checksum_add wait_until wait_tserver_idle recover_all assert_tserver_unprepared);

my $rows = $ENV{TCOPY_PROXY_ROWS} // 50_000;
my $STEP_TIMEOUT = 60;		# seconds a step's statements may take in all
my $PROXY = "$TcopyTest::TOP/test/tools/tcopy_proxy.pl";

# step, --nth, what the COPY does (fails, commits), what the table holds of
# it before recovery (nothing, all, either: all or nothing) and after it,
# and whether the tserver may hold the session prepared until recovery
my @steps = (
	[ 'hello', 1, 'fails', 'nothing', 'nothing', 0 ],
	[ 'begin', 1, 'fails', 'nothing', 'nothing', 0 ],
	[ 'write', 1, 'fails', 'nothing', 'nothing', 0 ],
	[ 'mid_write', 3, 'fails', 'nothing', 'nothing', 0 ],
	[ 'ack', 5, 'fails', 'nothing', 'nothing', 0 ],
	# the commit prepares first: cut there, the COPY fails
	[ 'prepare', 1, 'fails', 'nothing', 'nothing', 0 ],
	[ 'prepare_ok', 1, 'fails', 'nothing', 'nothing', 1 ],
	# then, after Postgres' commit record, it publishes
	[ 'resolve_commit', 1, 'commits', 'either', 'all', 1 ],
	[ 'resolve_commit_ok', 1, 'commits', 'all', 'all', 0 ],
	[ 'abort', 1, 'fails', 'nothing', 'nothing', 0 ],
);

my ($node, $ts) = setup_node(conf => "tcopy.recovery_interval = 0\n");
my $proxy_socket = $ts->base_dir . '/proxy.sock';
$node->safe_psql('postgres', accounts_ddl(heap => ['reference'], tcopy => ['acc']));
$node->safe_psql('postgres', "ALTER SERVER ts OPTIONS (SET address 'unix:$proxy_socket')");

# ---- the proxy ----
my ($proxy_pid, $proxy_log);
my $proxy_starts = 0;

sub proxy_log_text
{
	open(my $fh, '<', $proxy_log) or return '';
	local $/;
	return <$fh> // '';
}

# Start the proxy (with a fault, when given); BAIL_OUT when it does not come up.
sub proxy_start
{
	my (@fault) = @_;
	$proxy_log = $ts->base_dir . '/proxy.' . ++$proxy_starts . '.log';
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $proxy_log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec($^X, $PROXY, '--listen', $proxy_socket, '--upstream', $ts->socket_path, @fault)
		  or POSIX::_exit(127);
	}
	$proxy_pid = $pid;
	wait_until(10, sub { proxy_log_text() =~ /^proxy ready$/m || waitpid($pid, WNOHANG) == $pid })
	  and proxy_log_text() =~ /^proxy ready$/m
	  or BAIL_OUT("the proxy did not start: " . proxy_log_text());
}

sub proxy_stop
{
	return unless $proxy_pid;
	kill 'TERM', $proxy_pid;
	wait_until(10, sub { waitpid($proxy_pid, WNOHANG) == $proxy_pid })
	  or do { kill 'KILL', $proxy_pid; waitpid($proxy_pid, 0) };
	$proxy_pid = undef;
}

END { kill 'KILL', $proxy_pid if $proxy_pid }

# ---- the steps ----
my $expected = '0 0 0 0';	# checksum of the loads committed so far
my $next_load = 0;
my (%observed, @order);

for my $step (@steps)
{
	my ($fault, $nth, $copy_does, $before, $after, $may_prepare) = @$step;
	my $name = "$fault" . ($nth > 1 ? " $nth" : '');
	my $file = $node->basedir . "/load.$next_load.csv";
	write_accounts_csv($file, $next_load * $rows + 1, $rows);
	$node->safe_psql('postgres', "TRUNCATE reference; COPY reference FROM '$file' (FORMAT csv)");
	my $with = checksum_add($expected, table_checksum($node, 'reference'));

	proxy_start('--fault', $fault, '--nth', $nth);
	my $copy = "COPY acc FROM '$file' (FORMAT csv)";
	my @sql = $fault eq 'abort' ? ('BEGIN', $copy, 'ROLLBACK') : ($copy);
	my ($rc, $out, $err, $secs) =
	  TcopyPgTest::Psql->start($node, \@sql, timeout => $STEP_TIMEOUT)->finish;
	isnt($rc, -1, "$name: the statements end within $STEP_TIMEOUT s (took " . sprintf('%.1f', $secs) . " s)");
	if ($fault eq 'abort')
	{
		# a rollback closes the session's connection rather than wait for
		# ABORT_OK: the tserver discards a session whose connection closes
		# (a reset when acks were still unread; a broken pipe when the proxy
		# was forwarding an ack to the client as it closed)
		like(proxy_log_text(),
			qr/^connection \d+ closed: client (?:closed|read error: Connection reset by peer|write error: Broken pipe)$/m,
			"$name: ROLLBACK closes the write connection")
		  or diag(proxy_log_text());
	}
	else
	{
		like(proxy_log_text(), qr/^fired \Q$fault\E on connection \d+$/m, "$name: the proxy cut the connection there")
		  or diag(proxy_log_text());
	}
	unlike($err, qr/could not learn whether|\b08007\b/, "$name: the outcome is never unknown (no 08007)");

	if ($fault eq 'abort')
	{
		is($rc, 0, "$name: ROLLBACK succeeds") or diag($err);
		is($out, "BEGIN\nCOPY $rows\nROLLBACK", "$name: the COPY ran, then the rollback");
	}
	elsif ($copy_does eq 'commits')
	{
		# the commit record is written: a failed publish is recovery's
		is($rc, 0, "$name: the COPY succeeds, its publish left to recovery") or diag($err);
		is($out, "COPY $rows", "$name: ... and reports every row copied");
		unlike($err, qr/\b(?:ERROR|FATAL):/, "$name: ... with a WARNING at most");
		note("$name: $err") if $err ne '';
	}
	else
	{
		is($rc, 1, "$name: the COPY fails");
		like($err, qr/ERROR:  .*tserver/, "$name: ... with an error naming the tserver");
		unlike($out, qr/^COPY/m, "$name: ... and reports no rows copied");
		note("$name: $err");
	}

	# the tserver learns of the cut when it reads on: a prepare or publish
	# it had received may still be under way.  Where no session can be
	# left prepared, the tserver must be idle without recovery.
	if (!$may_prepare)
	{
		my ($idle, $stats) = wait_tserver_idle($ts, 10);
		ok($idle, "$name: the tserver holds no session afterwards, prepared or not, without recovery")
		  or diag(explain($stats));
	}

	my $state = table_checksum($node, 'acc');
	my $what = $state eq $expected ? 'nothing' : $state eq $with ? 'all' : 'part';
	if ($before eq 'either')
	{
		ok($what ne 'part', "$name: before recovery the table holds all or nothing of the COPY (it holds $what of it)")
		  or diag("state $state\nwithout the COPY $expected\nwith it $with");
	}
	else
	{
		is($state, $before eq 'all' ? $with : $expected, "$name: before recovery the table holds $before of the COPY")
		  or diag("it holds $what of it");
	}

	# recovery: through the proxy, whose fault has fired
	my ($idle, $stats, $resolved, $rerr) = wait_tserver_idle($ts, 30, recover => $node);
	ok($idle, "$name: after recovery the tserver holds no session, prepared or not")
	  or diag(explain($stats), $rerr);
	my ($ok, undef, $left) = recover_all($node, ts => $ts, timeout => 30);
	ok($ok, "$name: ... and nothing is left prepared") or diag($left);
	$state = table_checksum($node, 'acc');
	my $what_after = $state eq $expected ? 'nothing' : $state eq $with ? 'all' : 'part';
	is($state, $after eq 'all' ? $with : $expected, "$name: after recovery the table holds $after of the COPY")
	  or diag("it holds $what_after of it");
	$observed{$name} = $what eq $what_after ? $what : "$what, after recovery $what_after";
	push @order, $name;
	if ($what_after eq 'all')
	{
		$expected = $with;
	}
	$next_load++;
	proxy_stop();
}
note("the table held, of each cut COPY: " . join(', ', map { "$_: $observed{$_}" } @order));

# ---- no fault ----
proxy_start();
my $file = $node->basedir . "/load.$next_load.csv";
write_accounts_csv($file, $next_load * $rows + 1, $rows);
$node->safe_psql('postgres', "TRUNCATE reference; COPY reference FROM '$file' (FORMAT csv)");
$expected = checksum_add($expected, table_checksum($node, 'reference'));
my ($rc, $out, $err) =
  TcopyPgTest::Psql->start($node, "COPY acc FROM '$file' (FORMAT csv)", timeout => $STEP_TIMEOUT)->finish;
is($out, "COPY $rows", 'through the proxy without a fault, a COPY succeeds') or diag($err);
is($err, '', '... without a warning');
is(table_checksum($node, 'acc'), $expected, '... and the table holds every committed load');
proxy_stop();
assert_tserver_unprepared($ts, 'in the end');

$node->stop;
$ts->stop;
done_testing();
