#!/usr/bin/env perl
# bench/group_chunks_contended.pl: a spilled load into a replica group of
# three while another client commits small loads in a loop, so that other
# sessions' BATCH entries come between the load's FILE chunks on every
# member: what syncing a staged file before a later entry records its
# index (issue 43, session/ts_group.c sync_staged) costs where it happens.
# Two tserver builds, rounds alternating A and B.
#
#   bench/group_chunks_contended.pl A_BINARY B_BINARY [ROUNDS] [ROWS]
#
# Prints per round: build, the big load's wall seconds, the small loads
# committed meanwhile; then medians.  Uses test/lib (TcopyGroup); the
# members on this machine's one disk.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../test/lib";
use Time::HiRes qw(time sleep);
use POSIX ();
use TcopyGroup;
use Test::More;

my ($bin_a, $bin_b, $rounds, $rows) = @ARGV;
die "usage: $0 A_BINARY B_BINARY [ROUNDS] [ROWS]\n" unless $bin_a && $bin_b;
$rounds //= 3;
$rows //= 1_000_000;
my %walls = (A => [], B => []);
my %smalls = (A => [], B => []);

sub median { my @s = sort { $a <=> $b } @_; return @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2 }

for my $round (1 .. $rounds)
{
	for my $build ('A', 'B')
	{
		$TcopyTest::TSERVER = $build eq 'A' ? $bin_a : $bin_b;
		my $g = TcopyGroup->new(extra_args => [ '--session-memory-mb', '16' ]);
		$g->start_all or die "the group did not start";
		defined $g->leader or die "no leader";
		my $count = "/tmp/group_chunks_contended.$$";
		unlink $count;
		my $pid = fork();
		if ($pid == 0)
		{
			# the small commits, until killed: each a BATCH entry
			my $n = 0;
			open(STDOUT, '>', '/dev/null');
			open(STDERR, '>', '/dev/null');
			while (1)
			{
				system($TcopyTest::CLI, '--address', $g->address, 'load', 'small' . ($n % 50),
					'--rows', 10) == 0 or next;
				$n++;
				open(my $fh, '>', "$count.tmp"); print $fh "$n\n"; close $fh;
				rename("$count.tmp", $count);
			}
		}
		sleep(1);
		my $t0 = time();
		$g->cli_ok("round $round $build: the big load", 'load', 'big', '--rows', $rows);
		my $wall = time() - $t0;
		kill 'KILL', $pid;
		waitpid($pid, 0);
		my $n = 0;
		if (open(my $fh, '<', $count))
		{
			$n = <$fh> + 0;
			close $fh;
		}
		unlink $count, "$count.tmp";
		printf "round %d build %s: big load %.2f s, %d small loads committed (from 1 s before)\n",
			$round, $build, $wall, $n;
		push @{ $walls{$build} }, $wall;
		push @{ $smalls{$build} }, $n;
		$g->stop_all;
	}
}
printf "median: A %.2f s (%d small loads), B %.2f s (%d small loads), A / B %.3f\n",
	median(@{ $walls{A} }), median(@{ $smalls{A} }), median(@{ $walls{B} }),
	median(@{ $smalls{B} }), median(@{ $walls{A} }) / median(@{ $walls{B} });
done_testing();
