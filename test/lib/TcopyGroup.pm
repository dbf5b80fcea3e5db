# TcopyGroup.pm
#	A replica group of tservers for the TAP tests (docs/replication.md):
#	members are TcopyTest servers with --raft-id, --raft-listen (127.0.0.1,
#	free ports), a shared --raft-secret-file, and the raft port's TLS
#	(--raft-tls-cert, --raft-tls-key, --raft-tls-ca: a CA of the group's
#	and a certificate each, made by TcopyTls) unless cleartext => 1 asks
#	for --raft-insecure-cleartext; the first start of each bootstraps the
#	group.  Clients reach the group through the members'
#	addresses, comma-separated (address), as the extension and tserver-cli
#	do: whichever member leads answers.
package TcopyGroup;

use strict;
use warnings;

use Carp;
use File::Temp qw(tempdir);
use IPC::Run;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyTls;

# A group of n members (default 3); extra_args go to every member's starts.
# raft_hosts (one IPv4 address per member, default 127.0.0.1 each, on free
# ports) and exec_prefix (one command prefix per member, such as ip netns
# exec NS) put members on "other machines"; or member, a sub making member
# i (a TcopyTest, or a TcopyNetns::Tserver started by a namespace's runner)
# from its arguments (an array).  cleartext => 1: no TLS on the raft port.
sub new
{
	my ($class, %opts) = @_;
	my $n = $opts{members} // 3;
	my @hosts = @{ $opts{raft_hosts} // [ ('127.0.0.1') x $n ] };
	my $base = tempdir("tgXXXXXX", DIR => "/tmp", CLEANUP => !$ENV{TCOPY_TEST_KEEP});
	my $secret = "$base/secret";
	open(my $fh, '>', $secret) or croak "$secret: $!";
	# as openssl rand -hex 32 makes one (a secret file is text: no NUL)
	print $fh join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32), "\n";
	close $fh;
	chmod(0600, $secret) or croak "chmod $secret: $!";
	my @ports = $opts{raft_hosts} ? ((7100) x $n) : TcopyTest::free_tcp_ports($n);
	my $certs = $opts{cleartext} ? undef : TcopyTls::make_group_certs($base, $n);
	my $self = bless {
		base => $base,
		secret => $secret,
		ports => \@ports,
		hosts => \@hosts,
		cli_args => [],
		members => [],
		bootstrapped => 0,
		certs => $certs,
	}, $class;
	for my $i (1 .. $n)
	{
		my @args = ('--raft-id', $i, '--raft-listen', "$hosts[$i - 1]:$ports[$i - 1]",
			'--raft-secret-file', $secret, $self->raft_tls_args($i),
			@{ $opts{extra_args} // [] });
		my $ts = $opts{member} ? $opts{member}->($i, \@args)
		  : TcopyTest->new(extra_args => \@args,
			exec_prefix => $opts{exec_prefix} ? $opts{exec_prefix}[ $i - 1 ] : []);
		push @{ $self->{members} }, $ts;
	}
	return $self;
}

# Member i's raft TLS options, from its next start on, @args instead of
# the group's (another CA's certificate, --raft-insecure-cleartext).
sub set_raft_tls
{
	my ($self, $i, @args) = @_;
	my $ts = $self->member($i);
	my @kept;
	my @old = @{ $ts->{extra_args} };
	while (@old)
	{
		my $a = shift @old;
		if ($a =~ /^--raft-tls-/) { shift @old; next; }
		next if $a eq '--raft-insecure-cleartext';
		push @kept, $a;
	}
	$ts->{extra_args} = [ @kept, @args ];
}

sub members { @{ $_[0]->{members} } }
sub member { $_[0]->{members}[ $_[1] - 1 ] }

# diag() the last lines (default 40) of each member's log: what a test
# prints when the group did not do what it waited for.
sub diag_logs
{
	my ($self, $lines) = @_;
	for my $i (1 .. scalar @{ $self->{members} })
	{
		my $log = $self->member($i)->log_file;
		my @tail;

		if (defined $log && open(my $fh, '<', $log))
		{
			while (my $line = <$fh>)
			{
				push @tail, $line;
				shift @tail if @tail > ($lines // 40);
			}
		}
		Test::More::diag("member ${i}'s log ($log), its end:\n", @tail);
	}
}
sub secret_file { $_[0]->{secret} }
# TcopyTls::make_group_certs's hash, or undef in the clear
sub certs { $_[0]->{certs} }

# Member i's raft TLS options (--raft-insecure-cleartext in the clear).
sub raft_tls_args
{
	my ($self, $i) = @_;
	my $c = $self->{certs};
	return ('--raft-insecure-cleartext') unless $c;
	return ('--raft-tls-cert', $c->{members}[$i]{crt}, '--raft-tls-key', $c->{members}[$i]{key},
		'--raft-tls-ca', $c->{ca}{crt});
}
sub raft_port { $_[0]->{ports}[ $_[1] - 1 ] }
sub raft_host { $_[0]->{hosts}[ $_[1] - 1 ] }
sub address { join(',', map { $_->address } @{ $_[0]->{members} }) }

# The bootstrap list, "1@127.0.0.1:P1,...".
sub bootstrap_list
{
	my ($self) = @_;
	return join(',', map { "$_\@$self->{hosts}[$_ - 1]:$self->{ports}[$_ - 1]" }
		1 .. scalar @{ $self->{ports} });
}

# Start member i (its first start bootstraps the group); true once ready.
sub start_member
{
	my ($self, $i, @args) = @_;
	my $ts = $self->member($i);
	push @args, '--raft-bootstrap', $self->bootstrap_list unless $ts->{group_started}++;
	return $ts->start(@args);
}

# Start members 1 to k as a group of k (the others join later, with
# group-add); true when all k are ready.
sub start_founders
{
	my ($self, $k) = @_;
	my $boot = join(',', map { "$_\@$self->{hosts}[$_ - 1]:$self->{ports}[$_ - 1]" } 1 .. $k);
	my $ok = 1;
	for my $i (1 .. $k)
	{
		$self->member($i)->{group_started} = 1;
		$ok &&= $self->member($i)->start('--raft-bootstrap', $boot);
	}
	return $ok;
}

# Start every member not running; true when all are ready.
sub start_all
{
	my ($self, @args) = @_;
	my $ok = 1;
	for my $i (1 .. scalar @{ $self->{members} })
	{
		next if $self->member($i)->pid;
		$ok &&= $self->start_member($i, @args);
	}
	return $ok;
}

# tserver-cli against the group (its address), as TcopyTest's against one
# tserver: cli { rc, out, err, cmd }, cli_ok, cli_bg.
sub cli { TcopyTest::cli(@_) }
sub cli_ok { TcopyTest::cli_ok(@_) }
sub cli_bg { TcopyTest::cli_bg(@_) }

# tserver-cli load TABLE ARGS through the group (a test named name), then
# the table's checksum into $expect->{TABLE}.
sub load
{
	my ($self, $expect, $name, $table, @args) = @_;
	$self->cli_ok($name, 'load', $table, @args);
	$expect->{$table} = $self->checksum($table);
}

# scan --format checksum through the group: "rows R sum S hash H", or undef.
sub checksum
{
	my ($self, $table) = @_;
	my $r = $self->cli('scan', $table, '--format', 'checksum');
	return $r->{rc} == 0 ? $r->{out} =~ s/\n\z//r : undef;
}

# Whether member i answers a ping within 3 s (a stopped process does not).
sub answers
{
	my ($self, $i) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($TcopyTest::CLI, '--address', $self->member($i)->address, 'ping');
	my $ok = eval {
		IPC::Run::run(\@cmd, '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(3));
	};
	return $ok && $? == 0;
}

# The prepared sessions and the stats, as TcopyTest's, of the leader.
sub prepared { TcopyTest::prepared(@_) }
sub stats { TcopyTest::stats(@_) }

# The number of the member that leads (answers a ping), waiting up to
# timeout seconds (default 20); undef if none does.
sub leader
{
	my ($self, $timeout) = @_;
	my $deadline = time() + ($timeout // 20);
	while (time() < $deadline)
	{
		for my $i (1 .. scalar @{ $self->{members} })
		{
			my $ts = $self->member($i);
			next unless $ts->pid;
			return $i if $self->answers($i);
		}
		sleep(0.1);
	}
	return undef;
}

# Stop every running member (SIGTERM, asserting a clean exit).
sub stop_all
{
	my ($self) = @_;
	$_->pid && $_->stop for @{ $self->{members} };
}

# Wait up to timeout seconds (default 30) until every running member has
# applied the leader's last entry (group-status says the leader's; a
# follower's refusal of a ping says its own): true then.  A follower gets
# the leader's commit index with the next message, so that one stopped
# right after a write may lack the last entries.
sub settle
{
	my ($self, $timeout) = @_;
	my $deadline = time() + ($timeout // 30);
	my $behind = 'no leader';
	while (time() < $deadline)
	{
		my $s = $self->cli('group-status');
		my ($applied) = $s->{rc} == 0 ? $s->{out} =~ /applied (\d+)/ : ();
		$behind = defined $applied ? '' : 'no leader';
		for my $i (1 .. scalar @{ $self->{members} })
		{
			last unless defined $applied;
			my $ts = $self->member($i);
			next unless $ts->pid;
			my $r = $ts->cli('ping');
			next if $r->{rc} == 0;		# the leader
			my ($own) = $r->{err} =~ /has applied entry (\d+)/;
			$behind .= " member $i at " . ($own // '?') . " of $applied" if !defined $own || $own < $applied;
		}
		return 1 if $behind eq '';
		sleep(0.1);
	}
	diag("the members did not settle: $behind");
	return 0;
}

# Every member's data alone (the group settled, then stopped, each data
# directory opened by a plain tserver in turn): { member => { table =>
# checksum line } }.
sub member_checksums
{
	my ($self, @tables) = @_;
	my %sums;
	$self->settle;
	$self->stop_all;
	for my $i (1 .. scalar @{ $self->{members} })
	{
		my $alone = TcopyTest->new(data => $self->member($i)->data_dir);
		if (!$alone->start)
		{
			fail("member ${i}'s data opens alone");
			$sums{$i}{$_} = 'does not open' for @tables;
			next;
		}
		for my $t (@tables)
		{
			my $c = $alone->checksum($t);
			$sums{$i}{$t} = defined $c ? "rows $c->{rows} sum $c->{sum} hash $c->{hash}" : 'none';
		}
		$alone->stop("member ${i}'s data, opened alone, stops cleanly");
	}
	return \%sums;
}

1;
