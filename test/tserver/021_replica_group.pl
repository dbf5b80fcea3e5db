# 021_replica_group.pl
#	Three tservers as one replica group (issue 28; docs/replication.md),
#	reached as a client reaches them, by the members' addresses together:
#	- a follower refuses a client and names the leader; the group answers;
#	- loads of every kind (in memory, spilled sorted and shuffled into SST
#	  files, keyless, prepared small and spilled) are on the group, and on
#	  every member alike;
#	- the leader killed -9 while idle: a new leader serves every committed
#	  row, resolves the prepared sessions (commit one, abort the other) and
#	  takes new loads while the old leader is down; restarted, the old
#	  leader catches up from the log;
#	- the leader killed -9 in the middle of a load: the load fails, and
#	  none of its rows is anywhere;
#	- the leader stopped (SIGSTOP) past an election: the others elect a
#	  leader and take a load; woken, the old leader finds itself deposed,
#	  restarts itself (the same pid) and follows;
#	- garbage and a stock-libraft peer on the raft port are refused, and
#	  the group goes on;
#	- every member restarted: the group elects again, nothing lost;
#	- in the end each member's data directory, opened alone, holds the
#	  same rows, checksum for checksum, and no staging directory is left.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;

use constant {
	ROWS_SMALL => 20_000,		# in memory: one WriteBatch through the log
	ROWS_SPILLED => 200_000,	# past 4 MB of session memory: SST files
};

my $group = TcopyGroup->new(extra_args => [ '--session-memory-mb', 4 ]);
$group->start_all or BAIL_OUT('the group did not start');
my $leader = $group->leader;
ok(defined $leader, 'the group elects a leader') or BAIL_OUT('no leader');

# a follower refuses, naming the leader
my $follower = $leader % 3 + 1;
my $r = $group->member($follower)->cli('ping');
isnt($r->{rc}, 0, 'a follower refuses a client');
like($r->{err}, qr/does not lead it: member $leader \(raft address 127\.0\.0\.1:\d+\) does/,
	'... and names the leader');
like($group->cli_ok('the group answers a ping', 'ping'), qr/^ok /, '... with ok');

# what every table should hold: name => expected checksum line
my %expect;

sub load
{
	my ($name, $table, @args) = @_;
	$group->cli_ok($name, 'load', $table, @args);
}

sub expect
{
	my ($table) = @_;
	$expect{$table} = $group->checksum($table);
	ok(defined $expect{$table}, "$table scans through the group");
}

load('a small load', 'small', '--rows', ROWS_SMALL);
load('a spilled sorted load', 'sorted', '--rows', ROWS_SPILLED);
load('a spilled shuffled load', 'shuffled', '--rows', ROWS_SPILLED, '--shuffle', '--seed', 7);
load('a keyless load', 'keyless', '--rows', ROWS_SMALL, '--keyless');
load('a small prepared load', 'prep_small', '--rows', ROWS_SMALL, '--prepare', 'g-small');
load('a spilled prepared load', 'prep_big', '--rows', ROWS_SPILLED, '--shuffle',
	'--prepare', 'g-big');
expect($_) for qw(small sorted shuffled keyless);
like($expect{sorted}, qr/^rows ${\ ROWS_SPILLED} /, 'the spilled load has every row');
is($expect{shuffled}, $expect{sorted}, 'sorted or shuffled, the same rows');

# the leader killed while idle
$group->member($leader)->kill9;
my $new = $group->leader;
ok(defined $new && $new != $leader, "member $leader killed: member " . ($new // 'none') . " leads");
is($group->checksum($_), $expect{$_}, "$_: every committed row on the new leader")
  for qw(small sorted shuffled keyless);
$group->cli_ok('the new leader commits the spilled prepared session', 'resolve', 'g-big', 'commit');
$group->cli_ok('... and aborts the small one', 'resolve', 'g-small', 'abort');
expect('prep_big');
like($expect{prep_big}, qr/^rows ${\ ROWS_SPILLED} /, 'the prepared rows are published');
is($group->checksum('prep_small'), 'rows 0 sum 0 hash cbf29ce484222325',
	'the aborted prepared session left nothing');
$expect{prep_small} = 'rows 0 sum 0 hash cbf29ce484222325';
load('a keyless load on the new leader', 'keyless', '--rows', 100, '--keyless');
expect('keyless');
like($expect{keyless}, qr/^rows ${\ (ROWS_SMALL + 100)} /,
	'keyless row ids go on where the old leader left them');
load('a spilled load while a member is down', 'while_down', '--rows', ROWS_SPILLED);
expect('while_down');
ok($group->start_member($leader), "member $leader restarts");

# the leader killed in the middle of a load
$leader = $group->leader;
my $bg = $group->cli_bg('load', 'cut', '--rows', ROWS_SPILLED, '--shuffle', '--hold');
ok($bg->wait_for(qr/^staged ${\ ROWS_SPILLED} rows$/m, 120), 'a load staged on the leader')
  or diag($bg->err);
$group->member($leader)->kill9;
$bg->send_line('');
isnt($bg->finish, 0, 'a load whose leader is killed fails');
$new = $group->leader;
ok(defined $new, 'a new leader is elected');
my $cut = $group->checksum('cut');
ok(!defined $cut || $cut =~ /^rows 0 /, 'none of the cut load\'s rows is on the group')
  or diag($cut);
ok($group->start_member($leader), "member $leader restarts");

# the leader stopped past an election, then woken
$leader = $group->leader;
my $stopped = $group->member($leader);
my $pid = $stopped->pid;
kill 'STOP', $pid;
$new = $group->leader(30);
ok(defined $new && $new != $leader, "member $leader stopped: member " . ($new // 'none') . ' leads');
load('a load while the old leader sleeps', 'asleep', '--rows', ROWS_SMALL, '--start', 11);
expect('asleep');
kill 'CONT', $pid;
my $deadline = time() + 20;
sleep(0.1) until $stopped->log_contents =~ /restarting, to follow the new leader/ || time() > $deadline;
like($stopped->log_contents, qr/no longer leads.*\n.*restarting/,
	'woken, the deposed leader restarts itself');
$deadline = time() + 20;
sleep(0.1) until $stopped->log_contents =~ /restarting(?s:.*)tserver ready/ || time() > $deadline;
like($stopped->log_contents, qr/restarting(?s:.*)tserver ready/, '... and is ready again');
ok(kill(0, $pid) && waitpid($pid, POSIX::WNOHANG()) == 0, '... as the same process, still running');

# raw bytes and a stock libraft preamble on the raft port
my $port = $group->raft_port($new);
for my $case ([ 'garbage', "GET / HTTP/1.0\r\n\r\n" . ("x" x 100) ],
			  [ 'a stock libraft peer', pack('Q<Q<Q<a16', 1, 77, 16, "127.0.0.1:9") ])
{
	my ($what, $bytes) = @$case;
	my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp', Timeout => 5);
	ok($sock, "connect to the leader's raft port ($what)") or next;
	print $sock $bytes;
	$sock->flush;
	my $closed_at;
	my $start = time();
	$sock->blocking(1);
	my $buf;
	local $SIG{ALRM} = sub { die "timeout\n" };
	alarm(10);
	eval { 1 while sysread($sock, $buf, 4096); $closed_at = time(); 1 };
	alarm(0);
	ok(defined $closed_at && $closed_at - $start < 7, "$what: the member closes the connection");
	close $sock;
}
load('the group still takes loads', 'after_rogues', '--rows', ROWS_SMALL);
expect('after_rogues');

# every member restarted
$group->stop_all;
ok($group->start_all, 'every member starts again');
ok(defined $group->leader, 'the group elects a leader again');
is($group->checksum($_), $expect{$_}, "$_: the same after a restart of every member")
  for sort keys %expect;

# each member alone
my $sums = $group->member_checksums(sort keys %expect);
for my $i (1 .. 3)
{
	is_deeply($sums->{$i}, \%expect, "member $i holds every table, row for row");
	my @staged = glob($group->member($i)->data_dir . '/staging/session-*');
	is(scalar @staged, 0, "member $i keeps no session's files") or diag("@staged");
}

done_testing();
