# 123_twopc_crash.pl
#	Two-phase commit (issue 11): Postgres stopped in immediate mode between
#	the prepare and the commit record (test pause point after-prepare), and
#	between the commit record and the publish (before-publish), alone and
#	with the tserver killed -9 too, with sessions kept in memory (2,000
#	rows, TCOPY_2PC_ROWS) and spilled to staging files (60,000 rows,
#	TCOPY_2PC_BIG_ROWS; the tserver runs with --session-memory-mb 1).
#	Each transaction n is BEGIN; INSERT INTO marker VALUES (n); COPY of its
#	rows into t; COMMIT.  Asserted:
#	- while a backend is paused, tcopy.prepared_sessions() lists its
#	  session, attached, with a gid tcopy:<system identifier>:<database
#	  oid>:<xid>:<server oid>:<user oid> naming its xid, decision "in
#	  progress" before the commit record and "commit" after it; the tserver
#	  lists the same gid; neither tcopy.recover_prepared_sessions() nor
#	  the background worker (recovery every second) resolves it;
#	- after the restart, before recovery, the session is listed detached
#	  with the decision recovery will take (commit exactly when the
#	  commit record was written);
#	- after recovery (the function; later only the background worker):
#	  the transactions paused after-prepare have neither marker nor rows,
#	  those paused before-publish have both, every transaction all or
#	  nothing, nothing is left prepared in Postgres' view or the tserver's;
#	- two transactions paused at once, one at each point, end one each way;
#	- no 08007 anywhere.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup txn_sql prepared_sessions recover_all assert_atomic
  assert_tserver_unprepared assert_no_08007 wait_until start_paused);

my $small = $ENV{TCOPY_2PC_ROWS} // 2_000;
my $big = $ENV{TCOPY_2PC_BIG_ROWS} // 60_000;
my $per = $big;

# the first cases resolve by the function alone: recovery_interval 0
my ($node, $ts) = twopc_setup(
	recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
my $sysid = $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my $dboid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $srvoid = $node->safe_psql('postgres', "SELECT oid FROM pg_foreign_server WHERE srvname = 'ts'");
my $useroid = $node->safe_psql('postgres', 'SELECT oid FROM pg_roles WHERE rolname = current_user');

my @outputs;
my (%sizes, @committed, @aborted);
my $n = 0;

# While transaction n's backend is paused at point: its session is listed
# once, attached, with its gid and decision, at the tserver too.
sub check_paused
{
	my ($name, $point) = @_;
	my ($sessions, $err) = prepared_sessions($node);
	ok($sessions && @$sessions == 1, "$name: tcopy.prepared_sessions() lists one session")
	  or diag($sessions ? explain($sessions) : $err);
	my $s = $sessions && $sessions->[0] or return;
	like($s->{gid}, qr/^tcopy:\Q$sysid\E:\Q$dboid\E:\d+:\Q$srvoid\E:(?:\Q$useroid\E|0)$/,
		"$name: its gid is tcopy:<system identifier>:<database oid>:<xid>:<server oid>:<user oid>");
	my ($gid_xid) = $s->{gid} =~ /^tcopy:\d+:\d+:(\d+):/;
	is($gid_xid, $s->{xid}, "$name: ... naming its xid");
	is($s->{attached}, 't', "$name: it is attached (the paused backend holds it)");
	is($s->{decision}, $point eq 'after-prepare' ? 'in progress' : 'commit',
		"$name: its decision is " . ($point eq 'after-prepare' ? '"in progress"' : '"commit"'));
	my $at_ts = $ts->prepared;
	ok($at_ts && grep({ $_->{gid} eq $s->{gid} } @$at_ts), "$name: the tserver lists it prepared")
	  or diag($at_ts ? explain($at_ts) : 'tserver-cli prepared failed');
	return $s;
}

# The paused transaction's psql after the stop: connection lost.
sub finish_lost
{
	my ($name, $p) = @_;
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	is($rc, 2, "$name: psql reports the connection lost") or diag("$out\n$err");
	unlike($out, qr/^COMMIT$/m, "$name: ... and no COMMIT");
}

# One case: transaction n of rows rows paused at point; the tserver killed
# -9 before (ts_kill 'before') or after ('after') the immediate stop, or
# not; recovery by the function (manual) or by the worker alone.
sub crash_case
{
	my (%c) = @_;
	$n++;
	$sizes{$n} = $c{rows};
	my $name = "immediate stop at $c{point}, $c{rows} rows"
	  . ($c{ts_kill} ? ", tserver killed -9 $c{ts_kill} it" : '')
	  . ($c{manual} ? '' : ', recovered by the worker') . " (transaction $n)";
	my ($p, $pid) = start_paused($node, $c{point}, [ txn_sql($node, $n, per => $per, last => $c{rows}) ]);
	ok($pid, "$name: the backend pauses at $c{point}");
	if (!$pid)
	{
		my ($rc, $out, $err) = $p->finish;
		diag("exit $rc\n$out\n$err");
	}
	my $s = $pid ? check_paused($name, $c{point}) : undef;
	if ($s && $c{manual})
	{
		my ($rc, $out, $err) = $node->psql('postgres', 'SELECT tcopy.recover_prepared_sessions()');
		is($out, '0', "$name: tcopy.recover_prepared_sessions() leaves the paused session alone") or diag($err);
	}
	elsif ($s)
	{
		sleep(2.5);
		my ($sessions) = prepared_sessions($node);
		ok($sessions && grep({ $_->{gid} eq $s->{gid} } @$sessions),
			"$name: 2.5 s later (recovery every 1 s) the worker has left it prepared");
	}
	if (($c{ts_kill} // '') eq 'before')
	{
		$ts->kill9;
	}
	$node->stop('immediate');
	finish_lost($name, $p) if $pid;
	if ($c{ts_kill})
	{
		$ts->kill9 if $c{ts_kill} eq 'after';
		$ts->start or BAIL_OUT('tserver did not start after kill -9');
	}
	$node->start;

	if ($s && $c{manual})
	{
		my ($sessions, $err);
		wait_until(10, sub {
			($sessions, $err) = prepared_sessions($node);
			$sessions && @$sessions == 1 && $sessions->[0]{attached} eq 'f';
		});
		ok($sessions && @$sessions == 1 && $sessions->[0]{gid} eq $s->{gid} && $sessions->[0]{attached} eq 'f',
			"$name: after the restart, before recovery, the session is listed, detached")
		  or diag($sessions ? explain($sessions) : $err);
		is($sessions && @$sessions && $sessions->[0]{decision}, $c{point} eq 'after-prepare' ? 'abort' : 'commit',
			"$name: ... with the decision recovery will take");
	}
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, manual => $c{manual}, timeout => 60);
	ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
	is($resolved, 1, "$name: tcopy.recover_prepared_sessions() resolved the session") if $c{manual};
	$c{point} eq 'after-prepare' ? push(@aborted, $n) : push(@committed, $n);
	assert_atomic($node, $name, per => $per, sizes => \%sizes, committed => \@committed, aborted => \@aborted);
	assert_tserver_unprepared($ts, $name);
}

crash_case(point => 'after-prepare', rows => $small, manual => 1);
crash_case(point => 'before-publish', rows => $small, manual => 1);
crash_case(point => 'after-prepare', rows => $big, manual => 1, ts_kill => 'before');
crash_case(point => 'before-publish', rows => $big, manual => 1, ts_kill => 'before');
crash_case(point => 'after-prepare', rows => $small, manual => 1, ts_kill => 'after');
crash_case(point => 'before-publish', rows => $big, manual => 1, ts_kill => 'after');

# ---- two at once ----
{
	my $name = 'two paused transactions, one immediate stop';
	my ($ta, $tb) = ($n + 1, $n + 2);
	$n += 2;
	$sizes{$ta} = $sizes{$tb} = $small;
	my ($pa, $pida) = start_paused($node, 'after-prepare', [ txn_sql($node, $ta, per => $per, last => $small) ]);
	my ($pb, $pidb) = start_paused($node, 'before-publish', [ txn_sql($node, $tb, per => $per, last => $small) ]);
	ok($pida && $pidb, "$name: both backends pause");
	my ($sessions, $err) = prepared_sessions($node);
	is(join(' ', sort map { $_->{decision} } @{ $sessions // [] }), 'commit in progress',
		"$name: both sessions are listed, one to commit, one in progress")
	  or diag($sessions ? explain($sessions) : $err);
	$node->stop('immediate');
	finish_lost("$name, after-prepare", $pa);
	finish_lost("$name, before-publish", $pb);
	$node->start;
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
	is($resolved, 2, "$name: recovery resolved both");
	push @aborted, $ta;
	push @committed, $tb;
	assert_atomic($node, $name, per => $per, sizes => \%sizes, committed => \@committed, aborted => \@aborted);
}

# ---- the background worker alone ----
$node->append_conf('postgresql.conf', "tcopy.recovery_interval = '1s'\n");
$node->restart;
crash_case(point => 'before-publish', rows => $small, manual => 0);
crash_case(point => 'after-prepare', rows => $small, manual => 0);
crash_case(point => 'before-publish', rows => $big, manual => 0, ts_kill => 'after');

assert_no_08007($node, 'crash', @outputs);
$node->stop;
$ts->stop;
done_testing();
