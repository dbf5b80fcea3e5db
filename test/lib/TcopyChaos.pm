# TcopyChaos.pm
#	The two-phase commit chaos loop of test/ext/125_twopc_chaos.pl (one
#	tserver) and 194_group_chaos.pl (a replica group): for a number of
#	seconds, clients each run one small transaction after another,
#	    BEGIN; INSERT INTO marker VALUES (n); COPY t FROM PROGRAM (1,000
#	    rows, ids n * 1000 + 1 ..); COMMIT;
#	(a one-shot psql each, so that a client whose connection breaks just
#	starts the next one), while at random moments (drawn from the seed,
#	printed) the caller's tserver fault strikes (kill -9 and restart) and
#	Postgres is stopped in immediate mode and restarted, each a bounded
#	number of times.  Afterwards, once recovery has run to the end, the
#	checks of the header of 125.
package TcopyChaos;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyPgTest qw(txn_sql psql_bg recover_all assert_atomic
  assert_tserver_unprepared assert_no_08007);

our @EXPORT_OK = qw(run_chaos);

# run_chaos(node => , ts => (what prepared and stats are asked of: a
# TcopyTest, or a TcopyGroup), fault => sub { kill and restart },
# seconds, clients, seed, fault_every (seconds per fault, default 6),
# fault_name)
sub run_chaos
{
	my (%o) = @_;
	my ($node, $ts) = ($o{node}, $o{ts});
	my $seconds = $o{seconds};
	my $clients = $o{clients};
	my $TXN_TIMEOUT = 60;		# seconds one transaction's psql may take
	my $fault_name = $o{fault_name} // 'tserver';

	srand($o{seed});
	diag("random seed $o{seed} (set TCOPY_CHAOS_SEED=$o{seed} to repeat the schedule)");

	# the schedule: seconds into the loop, what
	my $ts_kills = int($seconds / ($o{fault_every} // 6)) || 1;
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
	my $reap = sub {
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
	};

	my $t0 = time();
	while (time() - $t0 < $seconds)
	{
		while (@events && $events[0][0] <= time() - $t0)
		{
			my (undef, $what) = @{ shift @events };
			if ($what eq 'tserver')
			{
				$o{fault}->();
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
		$reap->(0);
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
	$reap->(1);
	my $secs = time() - $t0;

	note(sprintf('%d transactions in %.1f s: %d committed, %d failed with an error, %d broken '
		  . 'connections; %d %s faults, %d Postgres immediate stops',
		$n, $secs, scalar(@committed), scalar(@failed), scalar(@broken),
		$done_events{tserver} // 0, $fault_name, $done_events{postgres} // 0));
	is($done_events{tserver}, $ts_kills, "the $fault_name fault struck $ts_kills times");
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
	return { committed => \@committed, failed => \@failed, broken => \@broken };
}

1;
