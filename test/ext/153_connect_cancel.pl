# 153_connect_cancel.pl
#	A backend connecting to a tserver that stops accepting can be
#	cancelled and terminated at once, and tcopy.connect_timeout bounds it.
#	The "tserver" is a unix socket listening with a backlog of 1 that
#	never accepts, its backlog filled by dangling connections: a connect
#	to it fails with EAGAIN on Linux and is retried.  A SELECT and a COPY
#	against a server pointing at it wait on the tserver
#	(wait_event Extension), pg_cancel_backend ends them within a couple
#	of seconds with Postgres' own error (57014), pg_terminate_backend
#	ends the session, and with tcopy.connect_timeout the connect gives up
#	by itself; other sessions are unaffected.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Handle;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Socket qw(AF_UNIX SOCK_STREAM pack_sockaddr_un);
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node wait_until psql_bg);

my $SLACK_S = 2;				# how long a cancel or terminate may take

my ($node, $ts) = setup_node();

# The listener that never accepts, and connections filling its backlog.
my $path = PostgreSQL::Test::Utils::tempdir_short() . '/stuck.sock';
socket(my $listener, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
bind($listener, pack_sockaddr_un($path)) or die "bind $path: $!";
listen($listener, 1) or die "listen: $!";
my @dangling;
for (1 .. 16)
{
	socket(my $c, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
	$c->blocking(0);
	if (!connect($c, pack_sockaddr_un($path)))
	{
		last if $!{EAGAIN};
		die "connect $path: $!";
	}
	push @dangling, $c;
}
ok(@dangling >= 1 && @dangling < 16, 'the listener\'s backlog is full after ' . scalar(@dangling) . ' connections');

$node->safe_psql('postgres', qq{
	CREATE SERVER stuck FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$path');
	CREATE USER MAPPING FOR PUBLIC SERVER stuck;
	CREATE FOREIGN TABLE st (id int NOT NULL, v text) SERVER stuck OPTIONS (key 'id');
});
my $csv = $node->basedir . '/rows.csv';
PostgreSQL::Test::Utils::append_to_file($csv, join('', map { "$_,row $_\n" } 1 .. 100));

my $watch = TcopyPgTest::Session->new($node, timeout => 120);
my $s = TcopyPgTest::Session->new($node, timeout => 120);
my $pid = $s->backend_pid;
$s->run_ok('\set VERBOSITY verbose');
$s->run_ok('SET tcopy.connect_timeout = 0;');

# Whether backend pid is waiting on the tserver (the client's wait hook).
sub waits_on_tserver
{
	my ($pid) = @_;
	return wait_until(5, sub {
		$watch->run_ok("SELECT wait_event_type || ' ' || wait_event FROM pg_stat_activity WHERE pid = $pid;")
		  eq 'Extension Extension';
	});
}

# Send sql in $s, check it waits on the tserver, cancel it; the error and
# the seconds the cancel took.
sub cancel_case
{
	my ($name, $sql) = @_;
	$s->send($sql);
	ok(waits_on_tserver($pid), "$name: waits on the tserver that does not accept");
	sleep(1);
	ok(!$s->done, "$name: ... still, a second later");
	my $t0 = time();
	is($watch->run_ok("SELECT pg_cancel_backend($pid);"), 't', "$name: pg_cancel_backend");
	my ($out, $err) = $s->result;
	my $secs = time() - $t0;
	like($err, qr/ERROR:  57014: canceling statement due to user request/,
		"$name: cancelled with Postgres' error (57014)");
	cmp_ok($secs, '<', $SLACK_S, sprintf("$name: ... within %d s (it took %.1f s)", $SLACK_S, $secs));
}

cancel_case('SELECT', 'SELECT count(*) FROM st;');
cancel_case('COPY', "COPY st FROM '$csv' (FORMAT csv);");
cancel_case('COPY in a transaction block', "BEGIN; COPY st FROM '$csv' (FORMAT csv);");
$s->run('ROLLBACK;');
is($s->run_ok('SELECT 1;'), '1', 'the session works after the cancels');

# ---- tcopy.connect_timeout ----
$s->run_ok('SET tcopy.connect_timeout = 2;');
my $t0 = time();
my ($out, $err) = $s->run('SELECT count(*) FROM st;');
my $secs = time() - $t0;
like($err, qr/ERROR:  08006: could not connect to tserver at "unix:\Q$path\E"/,
	'connect_timeout: the connect gives up by itself (08006)');
like($err, qr/DETAIL:  timed out connecting to tserver after 2 s \(tcopy.connect_timeout\)/, '... saying why');
cmp_ok($secs, '>=', 1.9, sprintf('... not before the timeout (%.1f s)', $secs));
cmp_ok($secs, '<', 2 + $SLACK_S, sprintf('... soon after it (%.1f s)', $secs));

# ---- pg_terminate_backend ----
my $p = psql_bg($node, [ 'SET tcopy.connect_timeout = 0', "COPY st FROM '$csv' (FORMAT csv)" ], timeout => 60);
my $victim;
wait_until(10, sub {
	$victim = $watch->run_ok(q{SELECT pid FROM pg_stat_activity WHERE query LIKE 'COPY st FROM%' AND wait_event = 'Extension';});
	return $victim =~ /^\d+$/;
});
ok($victim =~ /^\d+$/, 'terminate: the COPY waits on the tserver');
sleep(1);
$t0 = time();
is($watch->run_ok("SELECT pg_terminate_backend($victim);"), 't', 'pg_terminate_backend');
my ($rc, $pout, $perr) = $p->finish;
$secs = time() - $t0;
like($perr, qr/FATAL:  57P01: terminating connection due to administrator command/,
	'terminate: the backend ends with Postgres\' FATAL (57P01)');
cmp_ok($secs, '<', $SLACK_S, sprintf("... within %d s (it took %.1f s)", $SLACK_S, $secs));
ok(wait_until(5, sub { $watch->run_ok("SELECT count(*) FROM pg_stat_activity WHERE pid = $victim;") eq '0' }),
	'... and the backend is gone');

# ---- nothing else was affected ----
is($s->run_ok('SELECT 1;'), '1', 'the cancelled session still works');
$node->safe_psql('postgres', 'CREATE FOREIGN TABLE ok_t (id int NOT NULL) SERVER ts OPTIONS (key \'id\')');
is($node->safe_psql('postgres', 'INSERT INTO ok_t VALUES (1); SELECT count(*) FROM ok_t'), '1',
	'a table on a tserver that accepts works meanwhile');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal/, 'no backend was terminated by a signal');

close($_) for @dangling;
close($listener);
$s->quit;
$watch->quit;
$node->stop;
$ts->stop;
done_testing();
