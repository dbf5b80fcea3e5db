# 125_twopc_chaos.pl
#	Two-phase commit (issue 11) under a kill loop: for TCOPY_CHAOS_SECONDS
#	(default 30) seconds, TCOPY_CHAOS_CLIENTS (default 3) clients each run
#	one small transaction after another,
#	    BEGIN; INSERT INTO marker VALUES (n); COPY t FROM PROGRAM (1,000
#	    rows, ids n * 1000 + 1 ..); COMMIT;
#	(a one-shot psql each, so that a client whose connection breaks just
#	starts the next one), while at random moments (drawn from
#	TCOPY_CHAOS_SEED, printed) the tserver is killed -9 and restarted, and
#	Postgres is stopped in immediate mode and restarted, each a bounded
#	number of times (one tserver kill per 6 s, one Postgres stop per 12 s
#	of the loop, at least one of each).  Recovery runs every second in the
#	background worker.  Afterwards, once recovery has run to the end:
#	- for every n, marker row n is there exactly when all 1,000 of its rows
#	  are, never a partial set;
#	- every transaction whose COMMIT succeeded is there; every one that
#	  failed with an ERROR (psql exit 1) is not; those whose connection
#	  broke (exit 2) may be either, all or nothing;
#	- nothing is left prepared, and no 08007 anywhere.
#	The counts of committed, failed and broken transactions are reported.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup txn_sql psql_bg recover_all assert_atomic
  assert_tserver_unprepared assert_no_08007 wait_until);

my $seconds = $ENV{TCOPY_CHAOS_SECONDS} // 30;
my $clients = $ENV{TCOPY_CHAOS_CLIENTS} // 3;
my $seed = $ENV{TCOPY_CHAOS_SEED} // 125;
my $TXN_TIMEOUT = 60;		# seconds one transaction's psql may take

srand($seed);
diag("random seed $seed (set TCOPY_CHAOS_SEED=$seed to repeat the schedule)");

my ($node, $ts) = twopc_setup(recovery_interval => '1s');

# the schedule: seconds into the loop, what
my $ts_kills = int($seconds / 6) || 1;
my $pg_stops = int($seconds / 12) || 1;
my @events = sort { $a->[0] <=> $b->[0] }
  (map { [ 1 + rand($seconds - 2 > 0 ? $seconds - 2 : 1), 'tserver' ] } 1 .. $ts_kills),
  (map { [ 1 + rand($seconds - 2 > 0 ? $seconds - 2 : 1), 'postgres' ] } 1 .. $pg_stops);
note('schedule: ' . join(', ', map { sprintf('%.1f s %s', @$_) } @events));

my (@committed, @failed, @broken, @errors);
my @running;				# { p, n }
my $n = 0;
my %done_events;

# Reap the clients that ended.
sub reap
{
	my ($wait) = @_;
	my @still;
	for my $c (@running)
	{
		if (!$wait && !$c->{p}->done)
		{
			push @still, $c;
			next;
		}
		my ($rc, $out, $err) = $c->{p}->finish;
		push @errors, $err if $err ne '';
		if ($rc == 0 && $out =~ /^COMMIT$/m)
		{
			push @committed, $c->{n};
		}
		elsif ($rc == 1)
		{
			push @failed, $c->{n};
		}
		else
		{
			push @broken, $c->{n};
		}
	}
	@running = @still;
}

my $t0 = time();
while (time() - $t0 < $seconds)
{
	while (@events && $events[0][0] <= time() - $t0)
	{
		my (undef, $what) = @{ shift @events };
		if ($what eq 'tserver')
		{
			$ts->kill9;
			sleep(rand(0.5));
			$ts->start or BAIL_OUT('tserver did not start after kill -9');
		}
		else
		{
			$node->stop('immediate');
			sleep(rand(0.5));
			$node->start;
		}
		$done_events{$what}++;
	}
	my $broken_before = @broken;
	reap(0);
	# a client that could not connect: do not spin
	sleep(0.1) if @broken > $broken_before;
	while (@running < $clients)
	{
		$n++;
		push @running, { n => $n,
			p => psql_bg($node, [ txn_sql($node, $n) ], timeout => $TXN_TIMEOUT) };
	}
	sleep(0.02);
}
reap(1);
my $secs = time() - $t0;

note(sprintf('%d transactions in %.1f s: %d committed, %d failed with an error, %d broken connections; '
	  . '%d tserver kills, %d Postgres immediate stops',
	$n, $secs, scalar(@committed), scalar(@failed), scalar(@broken),
	$done_events{tserver} // 0, $done_events{postgres} // 0));
is($done_events{tserver}, $ts_kills, "the tserver was killed -9 $ts_kills times");
is($done_events{postgres}, $pg_stops, "Postgres was stopped in immediate mode $pg_stops times");
cmp_ok(scalar(@committed), '>', 0, 'some transactions committed');
cmp_ok($secs, '<', $seconds + $TXN_TIMEOUT + 10, 'the loop ended in its time');

my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 120);
ok($ok, 'after the loop, recovery leaves nothing prepared') or diag($left);
note("the last recovery calls resolved $resolved sessions");
my $r = assert_atomic($node, 'chaos', committed => \@committed, aborted => \@failed);
is($r->{partial}, 0, 'no transaction has a partial set of rows');
my @broken_there = grep { $r->{present}{$_} } @broken;
note(scalar(@broken_there) . ' of the ' . scalar(@broken) . ' transactions whose connection broke committed');
assert_tserver_unprepared($ts, 'chaos');
assert_no_08007($node, 'chaos', @errors);

$node->stop;
$ts->stop;
done_testing();
