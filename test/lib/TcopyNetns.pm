# TcopyNetns.pm
#	Tservers "on other machines" for the TAP tests: each in a network
#	namespace that test/tools/netns.sh set up (test/pg_tests.sh does, as
#	root, and names its directory in TCOPY_NETNS_DIR), reached through a
#	test/tools/delay_relay on this host that adds the links' latency when
#	the kernel has no netem (netns.sh's DIR/netem says whether netem
#	delays the links already).
#
#	The test user cannot enter a namespace: a tserver is started by
#	writing its command line to the namespace's runner (DIR/nsK.cmd), which
#	runs it there as the same user and writes its pid to a file; the test
#	can then signal it as its own.  TcopyNetns::Tserver is a TcopyTest
#	whose address is the relay's (tcp:127.0.0.1:PORT), so that
#	TcopyTest's cli, stats, prepared, count and checksum go the same way
#	the Postgres server does; start, stop and kill9 go through the runner.
package TcopyNetns;

use strict;
use warnings;

use Carp;
use Exporter qw(import);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);
use TcopyTest;

our @EXPORT_OK = qw(netns_dir netem_delays link_delay_us relay_binary start_relay stop_relay);

my @live_relays;

# The directory of netns.sh up, or undef.
sub netns_dir
{
	my $dir = $ENV{TCOPY_NETNS_DIR};
	return defined $dir && -p "$dir/ns1.cmd" ? $dir : undef;
}

# Whether netem delays the links (netns.sh wrote "yes").
sub netem_delays
{
	my ($dir) = @_;
	open(my $fh, '<', "$dir/netem") or return 0;
	my $what = <$fh> // '';
	return $what =~ /^yes$/ ? 1 : 0;
}

# The one-way delay the links are to have (netns.sh's DELAY_US), in
# microseconds, or default when netns.sh was given none.
sub link_delay_us
{
	my ($dir, $default) = @_;
	my $us = slurp("$dir/delay_us");
	return $us =~ /^([1-9]\d*)$/ ? $1 : $default;
}

sub relay_binary
{
	return $ENV{TCOPY_DELAY_RELAY} // "$TcopyTest::TOP/build/delay_relay";
}

# Start a delay_relay (listen and upstream HOST:PORT, one-way delay in
# microseconds) with its output in log; its pid, once it says "relay ready".
sub start_relay
{
	my ($listen, $upstream, $delay_us, $log) = @_;
	my $pid = fork();
	croak "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec(relay_binary(), '--listen', $listen, '--upstream', $upstream, '--delay-us', $delay_us)
		  or POSIX::_exit(127);
	}
	push @live_relays, $pid;
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		return $pid if slurp($log) =~ /^relay ready$/m;
		croak "delay_relay exited: " . slurp($log) if waitpid($pid, WNOHANG) == $pid;
		sleep(0.02);
	}
	croak "delay_relay not ready after 10 s: " . slurp($log);
}

# SIGTERM and reap a relay; its exit status (0 when it ended cleanly).
sub stop_relay
{
	my ($pid) = @_;
	kill 'TERM', $pid;
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		if (waitpid($pid, WNOHANG) == $pid)
		{
			@live_relays = grep { $_ != $pid } @live_relays;
			return $?;
		}
		sleep(0.02);
	}
	kill 'KILL', $pid;
	waitpid($pid, 0);
	@live_relays = grep { $_ != $pid } @live_relays;
	return -1;
}

sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	local $/;
	return <$fh> // '';
}

END
{
	for my $pid (@live_relays)
	{
		kill 'KILL', $pid;
		waitpid($pid, 0);
	}
}

package TcopyNetns::Tserver;

use strict;
use warnings;

use Carp;
use Test::More;
use Time::HiRes qw(sleep time);
use parent -norequire, 'TcopyTest';

# new(dir => netns dir, k => namespace number, port => the tserver's port
# in its namespace, relay_port => the relay's on 127.0.0.1, args => the
# tserver's arguments beside --data and --listen (authentication, TLS),
# cli_args => what tserver-cli needs to reach it (TLS options), and
# TcopyTest's options (token).  With unix => 1 it listens on its unix
# socket instead (no namespace hides it; no port, no relay): a replica
# group's member, whose raft port (in args) is what the namespace is for.
sub new
{
	my ($class, %opts) = @_;
	my %mine = map { $_ => delete $opts{$_} } qw(dir k port relay_port args unix);
	my $cli_args = delete $opts{cli_args} // [];
	my $self = TcopyTest::new($class, %opts);
	@$self{ keys %mine } = values %mine;
	$self->{ns_address} = "10.231.$mine{k}.2";
	push @{ $self->{cli_args} }, @$cli_args;
	return $self;
}

sub address { $_[0]->{unix} ? TcopyTest::address($_[0]) : 'tcp:127.0.0.1:' . $_[0]->{relay_port} }
sub ns_host_port { $_[0]->{ns_address} . ':' . $_[0]->{port} }

# Whether pid is gone (a zombie counts: the runner reaps it soon).
sub gone
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return 1;
	my $stat = <$fh> // '';
	return $stat =~ /^\d+ \(.*\) Z /s ? 1 : 0;
}

# Start the tserver in its namespace through the runner (extra arguments
# after args); true once ready.
sub start
{
	my ($self, @extra) = @_;
	croak "tserver already running" if $self->{pid};
	$self->{starts}++;
	my $log = "$self->{base}/tserver.$self->{starts}.log";
	my $pidfile = "$self->{base}/tserver.$self->{starts}.pid";
	my @cmd = ($TcopyTest::TSERVER, '--data', $self->{data}, '--listen',
		$self->{unix} ? $self->address : 'tcp:' . $self->ns_host_port, @{ $self->{args} // [] }, @extra);
	croak "a space in the tserver's command: @cmd" if grep { /[\s'"\\]/ } @cmd, $log, $pidfile;
	open(my $fifo, '>>', "$self->{dir}/ns$self->{k}.cmd") or croak "runner $self->{k}: $!";
	print $fifo "$pidfile @cmd >$log 2>&1\n";
	close($fifo) or croak "runner $self->{k}: $!";
	$self->{log} = $log;
	my $deadline = time() + $TcopyTest::READY_TIMEOUT;
	my $pid;
	while (time() < $deadline)
	{
		$pid //= TcopyNetns::slurp($pidfile) =~ /^(\d+)$/ ? $1 : undef;
		if ($pid && $self->log_contents =~ /tserver ready/)
		{
			$self->{pid} = $pid;
			return 1;
		}
		last if $pid && gone($pid);
		sleep(0.05);
	}
	kill 'KILL', $pid if $pid;
	diag("tserver in namespace $self->{k} did not start; log:\n" . $self->log_contents);
	return 0;
}

# Wait up to timeout seconds for the tserver to be gone: 0 then (its exit
# status is the runner's to see), undef on timeout.
sub wait_exit
{
	my ($self, $timeout) = @_;
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		if (gone($self->{pid}))
		{
			$self->{pid} = undef;
			return 0;
		}
		sleep(0.05);
	}
	return undef;
}

1;
