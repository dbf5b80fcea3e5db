# 022_group_membership.pl
#	A replica group's membership (issue 28, item 3; README "Replacing a
#	member"): a member whose disk died replaced with no pause for clients:
#	- a backup of the group (tserver-cli backup, through the group's
#	  addresses: the leader takes it) seeds a fourth tserver, started as a
#	  member that bootstraps nothing;
#	- group-add makes it a standby, group-promote a voter, while loads go
#	  on; group-status lists it so;
#	- member 1 killed and its data directory deleted, group-remove takes it
#	  out: three voters again, and the group survives the loss of one more;
#	- the refusals: a scoped credential, a change of an unknown member, a
#	  tserver not in a group;
#	- in the end the three members hold the same rows, checksum for
#	  checksum.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Path qw(remove_tree);
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;

my $group = TcopyGroup->new(members => 4, extra_args => [ '--session-memory-mb', 4 ]);
# members 1-3 form the group; member 4 is the replacement, not bootstrapped
$group->start_founders(3) or BAIL_OUT('members 1 to 3 did not start');
my %expect;

sub load { $group->load(\%expect, @_) }

# (the group's address lists member 4 too: a client skips it while it is down)
ok(defined $group->leader, 'members 1 to 3 elect a leader');
load('a spilled load', 'a', '--rows', 150_000, '--shuffle');
load('a small load', 'b', '--rows', 5_000);

# a backup seeds member 4
my $seed = $group->member(4)->data_dir;
my $r = $group->cli('backup', $seed);
is($r->{rc}, 0, 'a backup of the group into member 4\'s data directory') or diag($r->{err});
ok(!-e "$seed/raft", 'the backup holds no raft log (member 4 starts its own)');
ok($group->member(4)->start, 'member 4 starts on the backup, bootstrapping nothing');
$r = $group->member(4)->cli('ping');
like($r->{err}, qr/does not lead it/, 'member 4 is no leader yet');

# a load goes on while member 4 joins
my $bg = $group->cli_bg('load', 'during', '--rows', 150_000);
my $p4 = '127.0.0.1:' . $group->raft_port(4);
$group->cli_ok('group-add 4', 'group-add', "4\@$p4");
like($group->cli_ok('group-status', 'group-status'), qr/^member\t4\t\Q$p4\E\tstandby$/m,
	'member 4 is a standby');
$group->cli_ok('group-promote 4', 'group-promote', 4);
is($bg->finish, 0, 'the load during the change commits');
$expect{during} = $group->checksum('during');
like($group->cli_ok('group-status', 'group-status'), qr/^member\t4\t\Q$p4\E\tvoter$/m,
	'member 4 is a voter');

# member 1's disk dies
my $dead = $group->member(1);
$dead->kill9;
remove_tree($dead->data_dir);
$group->cli_ok('group-remove 1', 'group-remove', 1);
my $status = $group->cli_ok('group-status', 'group-status');
unlike($status, qr/^member\t1\t/m, 'member 1 is out of the group');
is(scalar(() = $status =~ /^member\t\d+\t\S+\tvoter$/mg), 3, 'three voters');
load('a load after the replacement', 'after', '--rows', 150_000, '--shuffle', '--seed', 3);

# the group survives the loss of one more (the leader)
my $leader = $group->leader;
$group->member($leader)->kill9;
isnt($group->leader, undef, "member $leader killed: the other two elect a leader");
is($group->checksum($_), $expect{$_}, "$_: every row on the new leader") for sort keys %expect;
ok($group->member($leader)->start, "member $leader restarts");

# refusals
$r = $group->cli('group-remove', 9);
isnt($r->{rc}, 0, 'removing an unknown member fails');
like($r->{err}, qr/refused the change of member 9/, '... and says so');
$r = $group->cli('group-replace', 9, '5@127.0.0.1:1');
is($r->{rc}, 1, 'replacing an unknown member fails');
like($r->{err}, qr/group-replace: member 9 is not in the group/, '... and says so');
like($group->cli_ok('group-status', 'group-status'), qr/\A(?:(?!member\t5\t).)*\z/s, '... adding nothing');
$r = $group->cli('group-replace', 2, '2@127.0.0.1:1');
is($r->{rc}, 2, 'replacing a member by itself is a usage error');
like($r->{err}, qr/needs a new member id/, '... and says so');
my $alone = TcopyTest->new;
$alone->start or BAIL_OUT('a plain tserver did not start');
$r = $alone->cli('group-status');
like($r->{err}, qr/not a member of a replica group/, 'a tserver alone has no group');
$alone->stop;

# the three members alike
my $sums = $group->member_checksums(sort keys %expect);
delete $sums->{1};
is_deeply($sums->{$_}, \%expect, "member $_ holds every table, row for row") for 2 .. 4;

done_testing();
