# 024_group_catchup.pl
#	A member too far behind the group's log catches up from another
#	member's state (issue 28, item 1; docs/replication.md#catching-up),
#	with the log kept short (--raft-log-entries 8: a snapshot every 8
#	entries, 16 kept behind it):
#	- member 3 killed; the group goes on without it, past the entries it
#	  kept: small loads, spilled loads, a prepared spilled session left in
#	  doubt, a truncate, a drop; member 3 restarted fetches the leader's
#	  state, restarts itself, and applies the rest;
#	- the prepared session, fetched with its files, is committed through
#	  the group once member 3 has caught up; then member 3 leads (the two
#	  others restarted in turn), and serves every row;
#	- a new member with an empty data directory (no backup) joins, catches
#	  up the same way, and is promoted;
#	- a stranger without the secret is refused a fetch;
#	- in the end every member holds the same rows, checksum for checksum.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;

my $group = TcopyGroup->new(members => 4,
	extra_args => [ '--session-memory-mb', 4, '--raft-log-entries', 8 ]);
$group->start_founders(3) or BAIL_OUT('members 1 to 3 did not start');
my %expect;

sub load { $group->load(\%expect, @_) }

# Wait until member i's log says it fetched a state and restarted, and it
# applied the group's entries up to the leader's (a barrier: a load).
sub wait_log
{
	my ($ts, $re, $timeout) = @_;
	my $deadline = time() + ($timeout // 60);
	while (time() < $deadline)
	{
		return 1 if $ts->log_contents =~ $re;
		sleep(0.2);
	}
	diag("no line matching $re; the log:\n" . TcopyTest::tail($ts->log_contents, 40));
	return 0;
}

ok(defined $group->leader, 'members 1 to 3 elect a leader');
load('a first load', 'a', '--rows', 20_000);

# member 3 away while the group moves far past its log
my $m3 = $group->member(3);
my $l = $group->leader;
my $away = $l == 3 ? 1 : 3;
$away = 2 if $away == $l;
my $mv = $group->member($away);
$mv->kill9;
ok(defined $group->leader, "member $away killed: the two others lead on");
load("small load $_", "s$_", '--rows', 500) for 1 .. 12;
load('a spilled load', 'big', '--rows', 150_000, '--shuffle');
$group->cli_ok('a prepared spilled load, left in doubt', 'load', 'prep', '--rows', 120_000,
	'--shuffle', '--prepare', 'g-catchup');
$group->cli_ok('a truncate', 'truncate', 's1');
$expect{s1} = $group->checksum('s1');
$group->cli_ok('a drop', 'drop', 's2');
delete $expect{s2};
load("more small load $_", "t$_", '--rows', 200) for 1 .. 6;

ok($mv->start, "member $away restarts");
ok(wait_log($mv, qr/fetching another member's state/), "member $away is too far behind the log");
ok(wait_log($mv, qr/state fetched from another member is in place/),
	"member $away fetched a state and put it in place");
# a load goes through all: the leader waits for no one, so wait for member's apply
load('a load after the catch-up', 'after', '--rows', 1_000);
like($group->cli_ok('the prepared session survives', 'prepared'), qr/g-catchup/,
	'the prepared session is listed');
$group->cli_ok('the prepared session is committed', 'resolve', 'g-catchup', 'commit');
$expect{prep} = $group->checksum('prep');
like($expect{prep}, qr/^rows 120000 /, 'the prepared rows are published');

# the member that caught up leads, the two others restarted in turn
for my $i (grep { $_ != $away } 1 .. 3)
{
	my $ts = $group->member($i);
	$ts->kill9;
	ok(defined $group->leader, "member $i killed: a leader");
	ok($ts->start, "member $i restarts");
}
my $deadline = time() + 60;
while (time() < $deadline && ($group->leader // 0) != $away)
{
	my $other = $group->leader // last;
	$group->member($other)->kill9;
	sleep(1.5);
	$group->member($other)->start;
}
is($group->leader, $away, "member $away, which caught up from a state, leads");
for my $t (sort keys %expect)
{
	is($group->checksum($t), $expect{$t}, "table $t as it was, served by member $away");
}

# a new member, empty: no backup, it fetches a state
my $m4 = $group->member(4);
ok($m4->start, 'member 4 starts empty, bootstrapping nothing');
my $p4 = '127.0.0.1:' . $group->raft_port(4);
$group->cli_ok('group-add 4', 'group-add', "4\@$p4");
ok(wait_log($m4, qr/state fetched from another member is in place/),
	'member 4 fetched a state');
$group->cli_ok('group-promote 4', 'group-promote', 4);
like($group->cli_ok('group-status', 'group-status'), qr/^member\t4\t\Q$p4\E\tvoter$/m,
	'member 4 is a voter');
load('a load with four members', 'four', '--rows', 2_000);

# a stranger asks for a state on a member's raft port
{
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $group->raft_port(1),
		Proto => 'tcp', Timeout => 3);
	ok($sock, 'a stranger connects to the raft port');
	my $addr = "fetch/127.0.0.1:1\0\0\0\0\0\0\0";
	print $sock 'tcRAFTc1' . pack('Q<', 9) . ('x' x 32) . pack('Q<', length $addr) . $addr
		. ('y' x 32);
	my $got = '';
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		my $n = sysread($sock, my $buf, 65536);
		last unless $n;
		$got .= $buf;
	}
	unlike($got, qr/tcCATCH1/, 'a stranger is sent no state');
}

# every member alike
my @tables = sort keys %expect;
my $sums = $group->member_checksums(@tables);
for my $i (1 .. 4)
{
	is_deeply($sums->{$i}, \%expect, "member ${i}'s data alone holds every table, alike");
}
ok(!-e $group->member($away)->data_dir . '/catchup', 'nothing of the fetch is left');
done_testing();
