# 025_group_restore.pl
#	A replica group restored from a backup (issue 28, item 4; README
#	"Backups of Postgres and its tservers"): a backup of the group (the
#	leader takes it) while a load runs, with a prepared spilled session in
#	it, copied into three new members' data directories that bootstrap a
#	new group:
#	- every table and the prepared session are there, as at the backup;
#	- the new group's log starts again at 1: the backup's applied index,
#	  from the old group's log, is forgotten, so the new group's first
#	  entries are applied, not skipped as replayed (loads after the
#	  restore are on every member, the prepared session is committed);
#	- a member killed, the group goes on; back, it catches up; every
#	  member holds the same rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Test::More;
use TcopyTest;
use TcopyGroup;

my $old = TcopyGroup->new(extra_args => [ '--session-memory-mb', 4 ]);
$old->start_all or BAIL_OUT('the first group did not start');
ok(defined $old->leader, 'the first group elects a leader');
my %expect;
for my $t (1 .. 5)
{
	$old->cli_ok("load $t", 'load', "t$t", '--rows', 3_000);
	$expect{"t$t"} = $old->checksum("t$t");
}
$old->cli_ok('a spilled load', 'load', 'big', '--rows', 150_000, '--shuffle');
$expect{big} = $old->checksum('big');
$old->cli_ok('a prepared spilled load', 'load', 'prep', '--rows', 100_000, '--shuffle',
	'--prepare', 'g-restore');
my $bg = $old->cli_bg('load', 'during', '--rows', 200_000);
my $dir = tempdir('tbXXXXXX', DIR => '/tmp', CLEANUP => !$ENV{TCOPY_TEST_KEEP});
my $backup = "$dir/backup";
$old->cli_ok('a backup of the group during a load', 'backup', $backup);
is($bg->finish, 0, 'the load during the backup commits');
$old->stop_all;

# the backup in three new members' data directories, a new group
my $new = TcopyGroup->new(extra_args => [ '--session-memory-mb', 4 ]);
for my $i (1 .. 3)
{
	is(system('cp', '-a', $backup, $new->member($i)->data_dir), 0,
		"the backup copied for new member $i");
}
ok($new->start_all, 'three members on the backup bootstrap a new group');
ok(defined $new->leader, 'the new group elects a leader');
like($new->member($new->leader)->log_contents,
	qr/a new group begins on this store \(it held another group's log up to entry \d+\)/,
	'the backup\'s applied index is forgotten');
for my $t (sort keys %expect)
{
	is($new->checksum($t), $expect{$t}, "table $t as backed up");
}
my $during = $new->checksum('during');
ok(!defined $during || $during =~ /^rows (0|200000) /,
	'the load during the backup is wholly in or wholly out');
like($new->cli_ok('prepared', 'prepared'), qr/g-restore/, 'the prepared session is restored');

# the new group's first entries are applied on every member
for my $t (1 .. 5)
{
	$new->cli_ok("a load after the restore $t", 'load', "n$t", '--rows', 1_000);
	$expect{"n$t"} = $new->checksum("n$t");
	like($expect{"n$t"}, qr/^rows 1000 /, "table n$t holds its rows");
}
$new->cli_ok('the prepared session is committed', 'resolve', 'g-restore', 'commit');
$expect{prep} = $new->checksum('prep');
like($expect{prep}, qr/^rows 100000 /, 'the prepared rows are published');

my $l = $new->leader;
$new->member($l)->kill9;
ok(defined $new->leader, 'the leader killed: another leads');
$new->cli_ok('a load without the old leader', 'load', 'after', '--rows', 2_000);
$expect{after} = $new->checksum('after');
for my $t (sort keys %expect)
{
	is($new->checksum($t), $expect{$t}, "table $t served by the new leader");
}

# the killed member back: it catches up from the log (a load, then a pause
# for its apply: the leader waits for a majority only)
ok($new->member($l)->start, "member $l restarts");
$new->cli_ok('a last load', 'load', 'last', '--rows', 500);
$expect{last} = $new->checksum('last');
sleep(2);
my $sums = $new->member_checksums(sort keys %expect);
is_deeply($sums->{$_}, \%expect, "member $_ holds every table, row for row") for 1 .. 3;
done_testing();
