# 029_flood.pl
#	A flood of connections that never authenticate, reopening each one as
#	soon as the tserver closes it (issue 32, item 2), against a tserver
#	with a token (no uid admitted), on a unix socket and on tcp with TLS:
#	- from one process on the unix socket: a client with the token gets in
#	  every time (the flood only ever takes its own places: the tserver
#	  evicts the oldest connection of the source holding the most);
#	- from another address (127.0.0.2) on tcp with TLS: the same;
#	- from the client's own address: the tserver cannot tell them apart,
#	  and a refused client is told what happened, never "TLS error with no
#	  reason given".
#	--max-connections is raised: the threads of the flood's closed
#	connections take a moment to end, and this test is about the places
#	of the connections not yet authenticated, not about the total.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);
use TcopyTls qw(make_certs);

my $ts = TcopyTest->new(token => 'flood test token 0123456789abcdef');
my $certs = make_certs($ts->base_dir);
my $port = (free_tcp_ports(1))[0];
$ts->start('--listen', "tcp:127.0.0.1:$port", '--listen', "tcp:127.0.0.2:$port",
	'--tls-cert', $certs->{server}{crt}, '--tls-key', $certs->{server}{key},
	'--max-unauthenticated', 16, '--max-connections', 2000)
  or die 'tserver did not start';

# A child that keeps 40 connections open that never say HELLO, for
# $seconds, opening a new one as soon as one is closed; its pid.
sub flood
{
	my ($open, $seconds) = @_;
	my $pid = fork() // die "fork: $!";
	return $pid if $pid;
	my $sel = IO::Select->new;
	my $end = time() + $seconds;
	while (time() < $end)
	{
		while ($sel->count < 40)
		{
			my $c = $open->() or last;
			$sel->add($c);
		}
		for my $c ($sel->can_read(0.05))
		{
			my $got = sysread($c, my $buf, 4096);
			next if $got;
			$sel->remove($c);
			close($c);
		}
	}
	exit 0;
}

# n pings with the token at address: (successes, the failures' messages).
sub pings
{
	my ($address, $n) = @_;
	my ($ok, @why) = (0);
	for (1 .. $n)
	{
		my $r = $ts->cli('--address', $address, 'ping');
		if ($r->{rc} == 0) { $ok++ }
		else { push @why, $r->{err} }
	}
	return ($ok, @why);
}

sub stop_flood
{
	my ($pid) = @_;
	kill 'TERM', $pid;
	waitpid($pid, 0);
}

my $before = $ts->stats->{connections_total};
my $pid = flood(sub { IO::Socket::UNIX->new(Peer => $ts->socket_path) }, 30);
sleep(1);
my ($ok, @why) = pings($ts->address, 10);
is($ok, 10, 'unix: a client with the token gets in 10 times of 10 during the flood')
  or diag(join("\n", @why));
stop_flood($pid);
my $opened = $ts->stats->{connections_total} - $before;
ok($opened > 100, "... a flood that reopened what was closed ($opened connections)");
like($ts->log_contents, qr/closed \d+ connections? not yet authenticated to make room/,
	'the log says the flood\'s connections were closed');

$pid = flood(sub { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", LocalAddr => '127.0.0.2') },
	30);
sleep(1);
($ok, @why) = pings("tcp:127.0.0.1:$port", 10);
is($ok, 10, 'tcp with TLS, the flood from 127.0.0.2: the client from 127.0.0.1 gets in every time')
  or diag(join("\n", @why));
stop_flood($pid);

$pid = flood(sub { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", LocalAddr => '127.0.0.1') },
	30);
sleep(1);
($ok, @why) = pings("tcp:127.0.0.1:$port", 10);
stop_flood($pid);
note("the flood from the client's own address: $ok of 10 got in");
my @unclear = grep { !/closed the (TLS )?connection.*--max-unauthenticated/s } @why;
is(scalar @unclear, 0, "tcp with TLS, the flood from the client's own address: each of the "
	  . scalar(@why) . " refused says what happened") or diag(join("\n", @unclear));
is($ts->cli('--address', "tcp:127.0.0.1:$port", 'ping')->{rc}, 0, 'the flood over, it gets in');

$ts->stop;
done_testing();
