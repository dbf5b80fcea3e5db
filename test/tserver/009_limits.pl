# 009_limits.pl
#	The tserver's resource limits (docs/protocol.md#limits):
#	  - at --max-unauthenticated connections not yet authenticated, a new
#	    one takes the place of the oldest (shut down): 300 idle ones lock
#	    out neither a client with a token over tcp nor one admitted by its
#	    uid on the unix socket (never counted), and the evictions are
#	    logged, a few lines for many;
#	  - unauthenticated connections are cut at --handshake-timeout;
#	  - connections beyond --max-connections in all are refused at accept
#	    with an ERROR frame (ERROR_TOO_MANY_CONNECTIONS) and a log line,
#	    while a load that was already connected goes on and commits;
#	  - the memory all connections' frames unpack into is one budget
#	    (--decode-memory-mb): a frame that alone needs more is refused
#	    with ERROR_TOO_LARGE, smaller ones pass.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use IO::Socket::INET;
use TcopyTest qw(:all);
use TcopyGroup;

my $ts = TcopyTest->new;
$ts->start('--max-connections', 6, '--max-unauthenticated', 3, '--handshake-timeout', 3)
  or die "tserver did not start";

# Connect and read the first frame: (socket, type, decoded payload).
sub first_frame
{
	my $sock = $ts->connect_raw or die "connect: $!";
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	return ($sock, $type // -1, pb_decode($payload // ''));
}

# a load that holds its session open while the flood comes
my $load = $ts->cli_bg('load', 'limits', '--rows', 20000, '--hold');
ok($load->wait_for(qr/staged \d+ rows/, 60), 'a load is connected and has staged its rows')
  or diag($load->err);

# ---- unauthenticated connections: a flood locks no one out ----

# a second tserver: a token on tcp, uid-admitted on its unix socket
my $port = (free_tcp_ports(1))[0];
my $tcp = "tcp:127.0.0.1:$port";
my $fl = TcopyTest->new(token => 'f' x 40);
$fl->start('--listen', $tcp, '--allow-uid', $>, '--max-unauthenticated', 3,
	'--handshake-timeout', 3) or die "tserver did not start";

# 300 idle connections that never authenticate
my @flood;
for my $i (1 .. 300)
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
	  or die "connect $i: $!";
	push @flood, $s;
}
ok(TcopyTest::wait_closed($flood[0], 10), 'the oldest connection of the flood is closed');
my ($t, $p) = TcopyTest::read_frame($flood[-1], 10);
is($t, FRAME_SERVER_HELLO, 'the newest is greeted: each took the place of an older one');
my $t0 = time();
my $r = $fl->cli('--address', $tcp, '--sslmode', 'disable', 'ping');
is($r->{rc}, 0, 'a client with a token gets in over tcp while 300 unauthenticated '
	  . 'connections are open') or diag($r->{err});
cmp_ok(time() - $t0, '<', 5, '... within its connect timeout');
my $u = $fl->connect_raw;
($t) = TcopyTest::read_frame($u, 10);
is($t, FRAME_SERVER_HELLO, 'a connection admitted by its uid on the unix socket is greeted at once');
close $u;
like($fl->log_contents, qr/WARNING: closed \d+ connections? not yet authenticated to make room for newer ones/,
	'the evictions are logged');
my @evicted = $fl->log_contents =~ /to make room for newer ones/g;
cmp_ok(scalar @evicted, '<', 10, '... in a few lines (' . scalar(@evicted) . ')');

# the flood's last connections (the client took the place of a third) are
# cut at the handshake deadline
$t0 = time();
for my $s (@flood[-2 .. -1])
{
	my ($t, $p) = TcopyTest::read_frame($s, 10);
	($t, $p) = TcopyTest::read_frame($s, 10) if defined $t && $t == FRAME_SERVER_HELLO;
	is($t, FRAME_ERROR, 'a silent connection gets an ERROR at the handshake deadline');
	like(pb_decode($p // '')->{2}[0] // '', qr/no handshake within 3 s/, '... saying why');
}
cmp_ok(time() - $t0, '<', 6, 'within the deadline of their accept');
close $_ for @flood;
$fl->stop;

# ---- all connections ----

my @ready;
# the held load is one; five more authenticated ones reach the limit
for my $i (1 .. 5)
{
	my $s = $ts->connect_ready;
	ok($s, "authenticated connection $i");
	push @ready, $s if $s;
}
my ($sock, $type, $error) = first_frame();
is($type, FRAME_ERROR, 'the 7th connection is refused at accept');
is($error->{1}[0], ERROR_TOO_MANY_CONNECTIONS, '... with ERROR_TOO_MANY_CONNECTIONS');
like($error->{2}[0] // '', qr/too many connections: 6 are open \(--max-connections\)/, '... saying why');
close $sock;

# a burst of refusals is logged, but not a line each
for (1 .. 20)
{
	my ($s) = first_frame();
	close $s;
}
my $log = $ts->log_contents;
like($log, qr/WARNING: refused a connection from unix:\S+ \(pid \d+, uid \d+\): too many connections: 6 are open/,
	'the refusal is logged with the peer and the reason');
my @lines = $log =~ /refused a connection/g;
cmp_ok(scalar @lines, '<', 10, 'twenty refusals in a row make only a few log lines (' . scalar(@lines) . ')');

# the load connected before the flood commits
$load->send_line('');
is($load->finish, 0, 'the held load commits despite the flood') or diag($load->err);
close $_ for @ready;
sleep(0.3);
is($ts->count('limits'), 20000, 'with every row');
$ts->stop;

# ---- one decode budget for all connections ----

$ts->start('--decode-memory-mb', 1) or die "tserver did not start";
$r = $ts->cli('load', 'big', '--rows', 20000, '--batch-rows', 20000);
isnt($r->{rc}, 0, 'with --decode-memory-mb 1, a batch of 20000 rows is refused');
like($r->{err}, qr/unpacks into more than the 1048576 bytes of memory all connections share for decoding/,
	'... because it alone needs more than all connections share');
$ts->cli_ok('a load in batches of 500 rows passes', 'load', 'small', '--rows', 20000, '--batch-rows', 500);
is($ts->count('small'), 20000, '... with every row');
$ts->stop;

done_testing();
