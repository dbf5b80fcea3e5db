# 112_proxy_faults.pl
#	Connections cut at each step of the wire protocol, by a proxy that
#	understands frames (test/tools/tcopy_proxy.pl) between Postgres and
#	the tserver: the foreign server's address points at the proxy, which
#	cuts the write connection of one COPY (of 50k rows, TCOPY_PROXY_ROWS
#	overrides) once, at the step under test.  Each step must end within 60
#	seconds, leave the table with all or nothing of the COPY (count and
#	checksum), and leave no session open on the tserver:
#
#	  the tserver's READY dropped, BEGIN dropped, the first WRITE dropped,
#	  half of WRITE 3 sent, the ACK of batch 5 dropped, the first COMMIT
#	  (prepare) dropped, sent then cut, or its COMMIT_OK dropped, and the
#	  second COMMIT (publish) dropped:
#	    the COPY fails, naming the tserver; nothing of it is there;
#	  the second COMMIT sent and the connection cut at once, and its
#	  COMMIT_OK dropped: the COPY fails, but the tserver may have published
#	  it (commit_ok: it has): the in-doubt window of a commit, which the
#	  test asserts is all or nothing and reports;
#	  BEGIN; COPY; ROLLBACK: the rollback closes the write connection
#	    (no ABORT is sent: the tserver discards the session), succeeds, and
#	    nothing is there.
#
#	Then a COPY through the proxy with no fault works.
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
  checksum_add wait_until wait_tserver_idle);

my $rows = $ENV{TCOPY_PROXY_ROWS} // 50_000;
my $STEP_TIMEOUT = 60;		# seconds a step's statements may take in all
my $PROXY = "$TcopyTest::TOP/test/tools/tcopy_proxy.pl";

# step, --nth, what the table must hold afterwards: nothing of the COPY,
# either all or nothing, or all of it
my @steps = (
	[ 'hello', 1, 'nothing' ],
	[ 'begin', 1, 'nothing' ],
	[ 'write', 1, 'nothing' ],
	[ 'mid_write', 3, 'nothing' ],
	[ 'ack', 5, 'nothing' ],
	# the commit's first COMMIT prepares: cut there, nothing is published
	[ 'commit', 1, 'nothing' ],
	[ 'commit_sent', 1, 'nothing' ],
	[ 'commit_ok', 1, 'nothing' ],
	# the second publishes
	[ 'commit', 2, 'nothing' ],
	[ 'commit_sent', 2, 'either' ],
	[ 'commit_ok', 2, 'all' ],
	[ 'abort', 1, 'nothing' ],
);

my ($node, $ts) = setup_node();
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
	my ($fault, $nth, $expect) = @$step;
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
		# (a reset when acks were still unread)
		like(proxy_log_text(),
			qr/^connection \d+ closed: client (?:closed|read error: Connection reset by peer)$/m,
			"$name: ROLLBACK closes the write connection")
		  or diag(proxy_log_text());
	}
	else
	{
		like(proxy_log_text(), qr/^fired \Q$fault\E on connection \d+$/m, "$name: the proxy cut the connection there")
		  or diag(proxy_log_text());
	}

	if ($fault eq 'abort')
	{
		is($rc, 0, "$name: ROLLBACK succeeds") or diag($err);
		is($out, "BEGIN\nCOPY $rows\nROLLBACK", "$name: the COPY ran, then the rollback");
	}
	else
	{
		is($rc, 1, "$name: the COPY fails");
		like($err, qr/ERROR:  .*tserver/, "$name: ... with an error naming the tserver");
		unlike($out, qr/^COPY/m, "$name: ... and reports no rows copied");
		note("$name: $err");
	}

	# the tserver learns of the cut when it reads on: a commit it had
	# received may still be under way
	my ($idle, $stats) = wait_tserver_idle($ts, 10);
	ok($idle, "$name: the tserver holds no session afterwards")
	  or diag(explain($stats));

	my $state = table_checksum($node, 'acc');
	my $what = $state eq $expected ? 'nothing' : $state eq $with ? 'all' : 'part';
	$observed{$name} = $what;
	push @order, $name;
	if ($expect eq 'either')
	{
		ok($what ne 'part', "$name: the table holds all or nothing of the COPY (it holds $what of it)")
		  or diag("state $state\nwithout the COPY $expected\nwith it $with");
		note("$name: in-doubt window: the COPY failed and the tserver "
			  . ($what eq 'all' ? 'had committed it' : 'had not committed it'));
	}
	else
	{
		is($state, $expect eq 'all' ? $with : $expected, "$name: the table holds $expect of the COPY")
		  or diag("it holds $what of it");
		note("$name: in-doubt window: the COPY failed though the tserver committed it")
		  if $expect eq 'all';
	}
	if ($what eq 'all')
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
is(table_checksum($node, 'acc'), $expected, '... and the table holds every committed load');
proxy_stop();

$node->stop;
$ts->stop;
done_testing();
