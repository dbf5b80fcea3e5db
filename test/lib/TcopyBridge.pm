# TcopyBridge.pm
#	Members of a replica group on "other machines" for the TAP tests: one
#	network namespace per member, each with a veth link to a bridge in the
#	root namespace and an address 10.231.X.i/24 on it.  A group started
#	with raft_hosts => hosts and exec_prefix => exec_prefixes speaks Raft
#	over the bridge; clients still reach the members by their unix
#	sockets, which no network namespace hides.  cut(i) takes member i's
#	link down (a partition of that member from the others), heal(i) brings
#	it back.  Root only, and "ip netns": available says whether this
#	machine can.  Everything made is removed when the test exits.
package TcopyBridge;

use strict;
use warnings;

use Carp;

my @made;	# [ namespaces, bridge ] of every bridge made, for END

sub available
{
	return $> == 0 && system('ip netns list >/dev/null 2>&1') == 0;
}

sub run
{
	my ($cmd) = @_;
	system($cmd) == 0 or croak "$cmd: exit " . ($? >> 8);
}

# A bridge and n namespaces (default 3) named after this process.
sub new
{
	my ($class, %opts) = @_;
	my $n = $opts{members} // 3;
	my $id = $$ % 10000;
	my $self = bless {
		id => $id,
		n => $n,
		net => '10.231.' . ($id % 250),
		bridge => "tgb$id",
		namespaces => [],
	}, $class;
	push @made, $self;
	run("ip link add $self->{bridge} type bridge");
	run("ip link set $self->{bridge} up");
	for my $i (1 .. $n)
	{
		my $ns = "tg$id-$i";
		run("ip netns add $ns");
		push @{ $self->{namespaces} }, $ns;
		run("ip link add tgh$id$i type veth peer name tgn$id$i");
		run("ip link set tgn$id$i netns $ns");
		run("ip link set tgh$id$i master $self->{bridge} up");
		run("ip netns exec $ns ip addr add $self->{net}.$i/24 dev tgn$id$i");
		run("ip netns exec $ns ip link set tgn$id$i up");
		run("ip netns exec $ns ip link set lo up");
	}
	return $self;
}

# Member i's address on the bridge; all of them, in member order.
sub host { "$_[0]->{net}.$_[1]" }
sub hosts { my ($self) = @_; map { $self->host($_) } 1 .. $self->{n} }

# The command prefixes that run member i in its namespace, in member order.
sub exec_prefixes
{
	my ($self) = @_;
	return [ map { [ 'ip', 'netns', 'exec', $_ ] } @{ $self->{namespaces} } ];
}

# Partition member i from the others (its link down), and back.
sub cut { run("ip link set tgh$_[0]->{id}$_[1] down") }
sub heal { run("ip link set tgh$_[0]->{id}$_[1] up") }

sub remove
{
	my ($self) = @_;
	system("ip netns del $_ 2>/dev/null") for @{ $self->{namespaces} };
	system("ip link del $self->{bridge} 2>/dev/null");
	$self->{namespaces} = [];
}

END
{
	$_->remove for @made;
}

1;
