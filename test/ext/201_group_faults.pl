# 201_group_faults.pl
#	Postgres on a replica group of three through the faults issue 28
#	names, each followed by the check that the group holds exactly what
#	Postgres committed (assert_atomic: transaction n's marker row in a heap
#	table exactly when all its rows are in the tcopy table; those psql saw
#	commit are there, those that failed are not):
#	1. the leader killed -9 between prepare and publish while the backend
#	   lives on (the pause of tcopy.test_pause_at ends after
#	   tcopy.test_pause_ms): at after-prepare and at before-publish, the
#	   COMMIT succeeds and the backend's next SELECT reads every row, with
#	   the recovery worker off (the new leader holds the session prepared,
#	   in doubt; the scan is refused, and the statement's snapshot
#	   publishes it, as Postgres committed);
#	2. the leader killed -9 while a spilled session's COMMIT runs, at
#	   moments from its start to past its end: Postgres and the group
#	   agree, whichever way each went;
#	3. every member killed -9 in the middle of a COPY, then all restarted:
#	   the COPY failed and nothing of it is there; what was committed is;
#	4. the leader's data directory deleted (its disk died) while Postgres
#	   loads transactions in a loop, and the member replaced by a new one
#	   with an empty directory (tserver-cli group-replace: added, it fetches
#	   a state and catches up under the load, then is promoted, and the
#	   dead one removed): the load goes on, transactions commit after the
#	   replacement, none is partial;
#	5. no 08007 anywhere; every member's data, opened alone, alike.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Path qw(remove_tree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;
use TcopyPgTest qw(setup_node twopc_conf twopc_ddl txn_sql commit_txn assert_atomic assert_no_08007
  start_paused psql_bg wait_until held_copy_sql copy_progress table_name_of start_txn_loop stop_txn_loop);

my $per = 1000;			# rows of a transaction
my $big = 200_000;		# rows of a spilled one (--session-memory-mb 4)
my (@committed, @aborted, %pers);

# a snapshot every 16 entries, 32 kept: a member away for a while, and a
# new one, fetch a member's state
my $group = TcopyGroup->new(members => 4,
	extra_args => [ '--session-memory-mb', 4, '--raft-log-entries', 16 ]);
$group->start_founders(3) or BAIL_OUT('the group did not start');
ok(defined $group->leader, 'the group elects a leader') or BAIL_OUT('no leader');
my ($node) = setup_node(name => 'faults', group => $group, conf => twopc_conf(recovery_interval => '1s'));
$node->safe_psql('postgres', twopc_ddl());

sub commit_ok
{
	my ($n) = @_;
	commit_txn($node, $n, per => $per);
	push @committed, $n;
}

sub check
{
	my ($name) = @_;
	my $r = assert_atomic($node, $name, per => $per, pers => \%pers,
		committed => \@committed, aborted => \@aborted);
	is($r->{partial}, 0, "$name: no transaction is there in part");
}

sub restart_member
{
	my ($i) = @_;
	ok($group->member($i)->start, "member $i restarts");
}

commit_ok($_) for 1 .. 3;
check('before any fault');

# ---- 1 ----
# the recovery worker off: the reads themselves publish what Postgres committed
sub recovery_interval
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET tcopy.recovery_interval = '$_[0]'; SELECT pg_reload_conf();");
}
recovery_interval('0');
for my $case ([ 10, 'after-prepare' ], [ 11, 'before-publish' ])
{
	my ($n, $point) = @$case;
	my $name = "the leader killed -9 at $point, the backend living on";
	my $leader = $group->leader;
	my ($p, $pid) = start_paused($node, $point,
		[ 'SET tcopy.test_pause_ms = 3000', txn_sql($node, $n, per => $per),
		  "SELECT count(*) FROM t WHERE n = $n" ], timeout => 120);
	ok($pid, "$name: the backend pauses") or next;
	$group->member($leader)->kill9;
	my ($rc, $out, $err) = $p->finish;
	is($rc, 0, "$name: the COMMIT succeeds") or diag($err);
	like($out, qr/^\Q$per\E$/m, "$name: the backend's next SELECT reads every row") or diag("$out\n$err");
	note("psql said: $err") if $err ne '';
	push @committed, $n;
	check($name);
	restart_member($leader);
}

recovery_interval('1s');

# ---- 2 ----
# A session of $big rows spills: its files go to the members during the
# COPY, and its COMMIT prepares (the group's log) then publishes.  The
# watcher returns as soon as the COMMIT is running.
my $watch = TcopyPgTest::Session->new($node, load => 0);
for my $k (0 .. 3)
{
	my $n = 20 + $k;
	my $delay = (0, 0.05, 0.15, 0.4)[$k];
	$pers{$n} = $big;
	my $name = "the leader killed -9 ${delay}s into a spilled session's COMMIT";
	my $leader = $group->leader;
	my $p = psql_bg($node, [ txn_sql($node, $n, per => $big) ], timeout => 120);
	$watch->run_ok(q{DO $$ BEGIN
		FOR i IN 1 .. 20000 LOOP
			PERFORM pg_stat_clear_snapshot();
			EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE query = 'COMMIT' AND state = 'active');
			PERFORM pg_sleep(0.001);
		END LOOP;
	END $$;});
	sleep($delay);
	$group->member($leader)->kill9;
	my ($rc, $out, $err) = $p->finish;
	note("$name: psql exit $rc" . ($err ne '' ? ", said: $err" : ''));
	push @{ $rc == 0 ? \@committed : \@aborted }, $n;
	check($name);
	restart_member($leader);
}
$watch->quit;

# ---- 3 ----
{
	my $n = 30;
	my $csv = $node->basedir . '/t30.csv';
	open(my $fh, '>', $csv) or die "$csv: $!";
	print $fh join('', map { ($n * $per + $_) . ",$n,row $n/$_\n" } 1 .. $per);
	close $fh;
	my $p = psql_bg($node, [ 'BEGIN', "INSERT INTO marker VALUES ($n)",
		held_copy_sql($node, 't', $csv, 500), 'COMMIT' ], timeout => 120);
	ok(wait_until(60, sub { my @pr = copy_progress($node, 't'); @pr && $pr[1] >= 450 }),
		'the held COPY is under way');
	$_->kill9 for map { $group->member($_) } 1 .. 3;
	TcopyPgTest::release_held_copy($node);
	my ($rc, $out, $err) = $p->finish;
	isnt($rc, 0, 'every member killed -9 in the middle of a COPY: the COPY fails');
	note("the COPY's error: $err");
	push @aborted, $n;
	ok($group->member($_)->start, "member $_ restarts") for 1 .. 3;
	ok(defined $group->leader, 'the members restarted elect a leader');
	check('every member killed and restarted');
	commit_ok(31);
	check('a transaction after the restart of all');
}

# ---- 4 ----
{
	my $load = start_txn_loop($node, per => $per);
	my $committed = sub { $node->safe_psql('postgres', 'SELECT count(*) FROM marker WHERE n >= 100') };
	ok(wait_until(60, sub { $committed->() >= 3 }), 'the load commits transactions');

	my $dead = $group->leader;
	$group->member($dead)->kill9;
	remove_tree($group->member($dead)->data_dir);
	my $m4 = $group->member(4);
	ok($m4->start, "member ${dead}'s disk died: member 4 starts, empty");
	my $p4 = '127.0.0.1:' . $group->raft_port(4);
	my $replace = $group->cli('group-replace', $dead, "4\@$p4");
	is($replace->{rc}, 0, "group-replace $dead 4\@...")
	  or diag("$replace->{err}\nmember 4's log:\n" . TcopyTest::tail($m4->log_contents, 30));
	like($replace->{out}, qr/added as a standby\n.*promoted to a voter\n.*removed\n/s, '... saying each step');
	like($m4->log_contents, qr/state fetched from another member is in place/, 'member 4 fetched a state');
	my $status = $group->cli_ok('group-status', 'group-status');
	like($status, qr/^member\t4\t\Q$p4\E\tvoter$/m, 'member 4 is a voter');
	unlike($status, qr/^member\t$dead\t/m, "member $dead is out of the group");
	my $after = $committed->();
	ok(wait_until(60, sub { $committed->() >= $after + 3 }), 'the load commits after the replacement');
	my ($out, $err) = stop_txn_loop($node, $load);
	my @errors = grep { /ERROR/ } split /\n/, $err;
	note(scalar(@errors) . ' errors in the load: ' . join(' | ', @errors[ 0 .. ($#errors < 4 ? $#errors : 4) ]));
	my @loaded = split /\n/, $node->safe_psql('postgres', 'SELECT n FROM marker WHERE n >= 100 ORDER BY n');
	push @committed, @loaded;
	check('the load across the replacement of a member');
	$group->{replaced} = $dead;
}

# ---- 5 ----
assert_no_08007($node, 'the faults');
my @tables = (table_name_of($node, 't'));
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
my $dead = $group->{replaced};
my $sums = $group->member_checksums(@tables);
my @alive = grep { $_ != $dead } 1 .. 4;
my $first = shift @alive;
is_deeply($sums->{$_}, $sums->{$first}, "members $first and $_ hold the same rows") for @alive;
like($sums->{$first}{ $tables[0] }, qr/^rows $rows /, "every row of t on member $first");

$node->stop;
done_testing();
