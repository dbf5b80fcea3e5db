# 009_limits.pl
#	The tserver's resource limits (docs/protocol.md#limits):
#	  - connections beyond --max-unauthenticated not yet authenticated, or
#	    beyond --max-connections in all, are refused at accept with an
#	    ERROR frame (ERROR_TOO_MANY_CONNECTIONS) and a log line, while a
#	    load that was already connected goes on and commits;
#	  - unauthenticated connections are cut at --handshake-timeout, which
#	    frees their places;
#	  - the memory all connections' frames unpack into is one budget
#	    (--decode-memory-mb): a frame that alone needs more is refused
#	    with ERROR_TOO_LARGE, smaller ones pass.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);

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

# ---- unauthenticated connections ----

my @flood;
for my $i (1 .. 3)
{
	my ($sock, $type) = first_frame();
	is($type, FRAME_SERVER_HELLO, "unauthenticated connection $i is greeted");
	push @flood, $sock;
}
my ($sock, $type, $error) = first_frame();
is($type, FRAME_ERROR, 'the 4th connection not yet authenticated is refused at accept');
is($error->{1}[0], ERROR_TOO_MANY_CONNECTIONS, '... with ERROR_TOO_MANY_CONNECTIONS');
like($error->{2}[0] // '', qr/too many connections not yet authenticated: 3 are \(--max-unauthenticated\)/,
	'... saying why');
ok(TcopyTest::wait_closed($sock, 10), '... and closed');
my $r = $ts->cli('ping');
isnt($r->{rc}, 0, 'tserver-cli is refused too while the flood holds every place');
like($r->{err}, qr/too many connections not yet authenticated/, '... and told why');

# the flood's connections time out at the handshake deadline, 3 s after
# their accept; then there is room again
my $t0 = time();
for my $s (@flood)
{
	my ($t, $p) = TcopyTest::read_frame($s, 10);
	is($t, FRAME_ERROR, 'a silent connection gets an ERROR at the handshake deadline');
	like(pb_decode($p // '')->{2}[0] // '', qr/no handshake within 3 s/, '... saying why');
	close $s;
}
cmp_ok(time() - $t0, '<', 6, 'within the deadline of their accept');
sleep(0.3);
$ts->cli_ok('once they are cut, tserver-cli connects again', 'ping');

# ---- all connections ----

my @ready;
# the held load is one; five more authenticated ones reach the limit
for my $i (1 .. 5)
{
	my $s = $ts->connect_ready;
	ok($s, "authenticated connection $i");
	push @ready, $s if $s;
}
($sock, $type, $error) = first_frame();
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
