# 028_tenants.pl
#	Tenants of one tserver cannot deny each other service nor learn of
#	each other (issue 32), with two scoped tokens (namespaces a. and b.)
#	and a hand-built protocol client:
#	- --max-namespace-connections 4: tenant a's fifth authenticated
#	  connection is refused (TOO_MANY_CONNECTIONS, naming the namespace and
#	  the limit) while tenant b and the admin token still get in; once one
#	  of a's closes, a gets in again;
#	- --idle-timeout 2: an authenticated connection that holds nothing is
#	  closed after 2 s (an Error frame saying why, then the end); one that
#	  holds a snapshot, and one in a write session, are not;
#	- STATS: a scoped token sees its namespace's tables, open sessions and
#	  connections; the server-wide counters (rows committed, bytes
#	  received, ...) are 0 for it, whatever the other tenant does; the
#	  admin token sees them all;
#	- --decode-memory-mb 2: a frame of tenant a that unpacks into more than
#	  half of it is refused, naming the namespace's share; the admin
#	  token's passes; a's smaller batches pass;
#	- --max-namespace-disk-mb 2: tenant a's load that spills past it is
#	  refused at its commit, and so are its loads once its rows in files
#	  pass it; tenant b loads all the while.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);

my $ADMIN = 'tenants admin token 0123456789';
my $TA = 'tenant a token 0123456789';
my $TB = 'tenant b token 0123456789';

my $ts = TcopyTest->new(auth => []);
my $dir = $ts->base_dir;

sub write_file { return TcopyTest::write_private_file($dir, @_) }

my $admin_file = write_file('admin', "$ADMIN\n");
my $a_file = write_file('a', "$TA\n");
my $b_file = write_file('b', "$TB\n");
my $scoped = write_file('scoped', "a. $TA\nb. $TB\n");
$ts->start('--token-file', $admin_file, '--scoped-tokens', $scoped,
	'--max-namespace-connections', 4, '--idle-timeout', 2)
  or die 'tserver did not start';

my $as = sub { my $file = shift; return $ts->cli('--token-file', $file, @_) };


# The HELLO of token on a new connection: (the socket, the reply's type, its message).
sub hello
{
	my ($token) = @_;
	my $sock = $ts->connect_raw or return (undef, -1, '');
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	return ($sock, $type // -1, '') unless defined $type && $type == FRAME_SERVER_HELLO;
	my $server_nonce = pb_decode($payload)->{3}[0] // '';
	my $client_nonce = join('', map { chr(int(rand(256))) } 1 .. 32);
	TcopyTest::send_frame($sock, FRAME_HELLO, pb_field_varint(1, PROTOCOL_VERSION)
		  . pb_field_bytes(3, auth_proof($token, 'client', $server_nonce, $client_nonce))
		  . pb_field_bytes(4, $client_nonce));
	($type, $payload) = TcopyTest::read_frame($sock, 10);
	return ($sock, $type // -1, $type && $type == FRAME_ERROR ? pb_decode($payload) : {});
}

# ---- connections per namespace ----
my @a_socks;
for my $i (1 .. 4)
{
	my ($sock, $type) = hello($TA);
	is($type, FRAME_READY, "tenant a's connection $i is ready");
	push @a_socks, $sock;
}
my ($sock, $type, $m) = hello($TA);
is($type, FRAME_ERROR, "tenant a's fifth connection is refused");
is($m->{1}[0], ERROR_TOO_MANY_CONNECTIONS, '... ERROR_TOO_MANY_CONNECTIONS');
is($m->{2}[0], 'too many connections for namespace "a.": 4 are open (--max-namespace-connections)',
	'... naming the namespace and the limit');
my $r = $as->($b_file, 'ping');
is($r->{rc}, 0, 'tenant b still gets in') or diag($r->{err});
is($as->($admin_file, 'ping')->{rc}, 0, 'the admin token too');
like($as->($a_file, 'ping')->{err}, qr/too many connections for namespace "a\."/,
	"tserver-cli with a's token says why it is refused");
close(shift @a_socks);
my $in = 0;
for (1 .. 50)
{
	last if ($in = $as->($a_file, 'ping')->{rc} == 0);
	sleep(0.1);
}
ok($in, 'one of tenant a\'s closed: a gets in again');
close($_) for @a_socks;
@a_socks = ();

# ---- idle connections ----
{
	my ($idle) = hello($TB);
	my ($snap) = hello($TB);
	my ($t) = TcopyTest::request_decoded($snap, 33, '');
	is($t, 34, 'a connection takes a snapshot');
	is($as->($b_file, 'load', 'b.t', '--rows', 10)->{rc}, 0, 'tenant b makes b.t');
	my ($writer) = hello($TB);
	($t, my $open) = TcopyTest::request_decoded($writer, FRAME_OPEN_TABLE, pb_field_bytes(1, 'b.t'));
	is($t, FRAME_TABLE_INFO, 'a connection opens b.t');
	($t) = TcopyTest::request_decoded($writer, FRAME_BEGIN, '');
	is($t, FRAME_BEGIN_OK, '... and begins a write session');
	my $start = time();
	my ($et, $ep) = TcopyTest::read_frame($idle, 10);
	my $took = time() - $start;
	is($et, FRAME_ERROR, 'the connection that holds nothing is sent an Error frame');
	my $why = pb_decode($ep // '');
	like($why->{2}[0] // '', qr/^closing the connection: idle for 2 s \(--idle-timeout\)$/,
		'... saying it was idle');
	ok($took >= 1.0 && $took < 8, sprintf('... after about 2 s (%.1f s)', $took));
	ok(TcopyTest::wait_closed($idle, 5), '... then closed');
	sleep(1.5);
	($t) = TcopyTest::request_decoded($snap, FRAME_STATS_REQUEST, '');
	is($t, FRAME_STATS, 'the connection holding a snapshot is still served after 3.5 s');
	($t) = TcopyTest::request_decoded($writer, FRAME_ABORT, '');
	is($t, 13, 'the one in a write session too (it aborts)');
	close($snap);
	close($writer);
	like($ts->log_contents, qr/idle for 2 s, closed \(--idle-timeout\)/, 'the log says so');
}

# ---- STATS of a namespace ----
is($as->($a_file, 'load', 'a.x', '--rows', 100)->{rc}, 0, 'tenant a loads 100 rows into a.x');
is($as->($a_file, 'load', 'a.y', '--rows', 5, '--prepare', 'pa')->{rc}, 0, '... and prepares 5 into a.y');
is($as->($b_file, 'load', 'b.u', '--rows', 3000)->{rc}, 0, 'tenant b loads 3000 rows into b.u');
my $held = $ts->cli_bg('--token-file', $b_file, 'load', 'b.v', '--rows', 500, '--hold');
ok($held->wait_for(qr/^staged 500 rows$/m, 60), 'tenant b holds a session open');

sub stats_of
{
	my ($file) = @_;
	my $out = $as->($file, 'stats')->{out};
	return { map { /^(\w+): (.*)$/ ? ($1 => $2) : () } split /\n/, $out };
}
my $sa = stats_of($a_file);
is($sa->{tables}, 2, "tenant a's stats: its 2 tables");
is($sa->{sessions_open}, 0, '... none of its sessions open (b\'s is not counted)');
is($sa->{sessions_prepared}, 1, '... its one prepared session');
is($sa->{staged_bytes}, 0, '... no staged bytes of its own');
is($sa->{connections_open}, 1, '... its one connection, the one asking');
is($sa->{$_}, 0, "... $_: 0, server-wide")
  for qw(rows_committed bytes_received batches_received sessions_committed connections_total sst_bytes disk_free_bytes);
ok($sa->{uptime_ms} > 0, '... the uptime');
like($sa->{version} // '', qr/^\d+\.\d+/, '... the version');
my $sb = stats_of($b_file);
is($sb->{tables}, 3, "tenant b's stats: its 3 tables");
is($sb->{sessions_open}, 1, '... its held session');
ok($sb->{staged_bytes} > 0, "... and that session's bytes ($sb->{staged_bytes})");
is($sb->{sessions_prepared}, 0, '... none prepared (a\'s is not counted)');
my $sadmin = stats_of($admin_file);
ok($sadmin->{rows_committed} >= 3110, "the admin token sees every row committed ($sadmin->{rows_committed})");
ok($sadmin->{tables} >= 5, "... every table ($sadmin->{tables})");
$held->send_line('');
is($held->finish, 0, 'the held session commits');
like($as->($a_file, 'resolve', 'pa', 'abort')->{out}, qr/discarded 5 rows/, 'tenant a discards pa');

$ts->stop;

# ---- decoding memory: a namespace holds at most half ----
$ts->start('--token-file', $admin_file, '--scoped-tokens', $scoped, '--decode-memory-mb', 2)
  or die 'tserver did not start';
$r = $as->($a_file, 'load', 'a.big', '--rows', 10_000, '--batch-rows', 10_000);
isnt($r->{rc}, 0, 'with --decode-memory-mb 2, tenant a\'s batch of 10000 rows is refused');
like($r->{err}, qr/unpacks into more than its namespace may hold: namespace "a\." may hold 1048576 bytes of decoding memory at once \(half of --decode-memory-mb\)/,
	'... as more than a namespace may hold at once');
is($as->($admin_file, 'load', 'big', '--rows', 10_000, '--batch-rows', 10_000)->{rc}, 0,
	'the same batch with the admin token passes (all of it is there for it)');
is($as->($a_file, 'load', 'a.big', '--rows', 10_000, '--batch-rows', 2_000)->{rc}, 0,
	'tenant a in batches of 2000 rows passes');
is($as->($a_file, 'scan', 'a.big', '--format', 'count')->{out}, "10000\n", '... with every row');
$ts->stop;

# ---- disk: a namespace fills at most --max-namespace-disk-mb ----
$ts->start('--token-file', $admin_file, '--scoped-tokens', $scoped, '--max-namespace-disk-mb', 2,
	'--session-memory-mb', 4)
  or die 'tserver did not start';
$r = $as->($a_file, 'load', 'a.spilled', '--rows', 100_000, '--shuffle');
isnt($r->{rc}, 0, "with --max-namespace-disk-mb 2, tenant a's load that spills 8 MB is refused");
like($r->{err}, qr/namespace "a\." is over its disk quota: it holds \d+ MB \(0 MB of rows, \d+ MB of sessions' staging files\) of the 2 MB it may \(--max-namespace-disk-mb\)/,
	'... saying what it holds and may hold');
is($as->($admin_file, 'scan', 'a.spilled', '--format', 'count')->{out}, "0\n", '... and nothing of it is kept');
is($as->($b_file, 'load', 'b.small', '--rows', 1000)->{rc}, 0, 'tenant b loads meanwhile');
# rows: load after load, until the namespace's files pass its quota
my ($loaded, $why) = (0, '');
for my $i (1 .. 60)
{
	$r = $as->($a_file, 'load', "a.m$i", '--rows', 40_000);
	if ($r->{rc} != 0) { $why = $r->{err}; last }
	$loaded++;
}
like($why, qr/namespace "a\." is over its disk quota: it holds \d+ MB \(\d+ MB of rows, \d+ MB of sessions' staging files\) of the 2 MB/,
	"tenant a's loads of 40000 rows are refused once it holds its quota, after $loaded");
ok($loaded >= 1 && $loaded < 60, '... which some loads reached');
is($as->($b_file, 'load', 'b.more', '--rows', 1000)->{rc}, 0, 'tenant b still loads');
is($as->($a_file, 'truncate', 'a.m1')->{rc}, 0, 'tenant a over its quota may still truncate a table');
is($as->($a_file, 'drop', 'a.m2')->{rc}, 0, '... and drop one');
$ts->stop;
done_testing();
