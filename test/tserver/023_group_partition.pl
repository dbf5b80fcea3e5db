# 023_group_partition.pl
#	A network partition of a replica group (issue 28; README "Replica
#	groups"): three members, each in a network namespace of its own on a
#	bridge (their raft traffic goes over it; clients reach them by their
#	unix sockets, which no namespace hides), then the leader's link cut:
#	- the two others elect a leader of their own, which takes a load
#	  through the group's addresses;
#	- the old leader, cut off, steps down and refuses clients: a write or
#	  a read sent to it alone fails, none is served stale;
#	- the link back, the old leader follows and catches up: each member's
#	  data the same, row for row.
#	Root only (namespaces, links): skipped otherwise.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;
use TcopyBridge;

plan skip_all => 'network namespaces need root and "ip netns"' unless TcopyBridge::available();

my $bridge = TcopyBridge->new;
my $group = TcopyGroup->new(raft_hosts => [ $bridge->hosts ], exec_prefix => $bridge->exec_prefixes);
$group->start_all or BAIL_OUT('the group did not start');
my $leader = $group->leader;
ok(defined $leader, 'the group elects a leader over the bridge') or BAIL_OUT('no leader');
my %expect;
$group->cli_ok('a load before the partition', 'load', 'before', '--rows', 50_000);
$expect{before} = $group->checksum('before');

# cut the leader off
$bridge->cut($leader);
my $cut = $group->member($leader);
my $new;
my $deadline = time() + 20;
while (time() < $deadline && !defined $new)
{
	for my $i (grep { $_ != $leader } 1 .. 3)
	{
		$new = $i if $group->answers($i);
	}
	sleep(0.1) unless defined $new;
}
ok(defined $new, "the leader cut off: member " . ($new // 'none') . ' leads the other two');
$deadline = time() + 20;
sleep(0.1) until $cut->log_contents =~ /no longer leads/ || time() > $deadline;
like($cut->log_contents, qr/no longer leads/, 'the cut-off leader steps down');
$group->cli_ok('a load through the group during the partition', 'load', 'during', '--rows', 50_000);
$expect{during} = $group->checksum('during');

# the member that stepped down restarts itself (ts_group.c): while it does,
# its socket refuses connections; ask until it answers
sub ask_cut
{
	my @args = @_;
	my $r;
	my $until = time() + 30;
	do
	{
		$r = $cut->cli(@args);
		return $r if $r->{rc} == 0 || $r->{err} !~ /could not connect/;
		sleep(0.2);
	} while (time() < $until);
	return $r;
}
my $r = ask_cut('load', 'minority', '--rows', 100);
isnt($r->{rc}, 0, 'a write sent to the cut-off member alone fails');
like($r->{err}, qr/does not lead it/, '... it says it does not lead');
$r = ask_cut('scan', 'during', '--format', 'count');
isnt($r->{rc}, 0, 'so does a read: no stale rows');
like($r->{err}, qr/does not lead it/, '... it says it does not lead');

# the link back
$bridge->heal($leader);
$deadline = time() + 30;
my $caught = 0;
while (time() < $deadline && !$caught)
{
	$group->cli_ok('a load after the partition', 'load', 'after', '--rows', 1_000, '--start', 1)
	  if !$expect{after};
	$expect{after} //= $group->checksum('after');
	# the old leader follows again once it knows who leads
	my $p = $cut->cli('ping');
	$caught = 1 if $p->{err} =~ /does not lead it: member \d+/ || $p->{rc} == 0;
	sleep(0.2) unless $caught;
}
ok($caught, 'the old leader follows the group again');
sleep(3);	# its log applied

my $sums = $group->member_checksums(sort keys %expect);
is_deeply($sums->{$_}, \%expect, "member $_ holds every table, row for row") for 1 .. 3;

done_testing();
