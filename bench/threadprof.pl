#!/usr/bin/perl
# bench/threadprof.pl: the CPU time of every thread of one user's processes
# while a load runs (issue 27): what each thread used, from
# /proc/PID/task/TID/stat (utime + stime), sampled every 50 ms from start
# until STOPFILE exists.
#
#   bench/threadprof.pl USER STOPFILE [--tsv FILE] [--top N] [--roots "PID ..."]
#
# --roots: only those processes and their descendants (a cluster's
# postmaster, a tserver), not every process of the user: another cluster
# or tserver of the same user, run at the same time, is left out.
#
# Prints the busiest threads (at most N, default 12; those under 0.05 s
# left out): CPU seconds, share of the wall time, the process's command
# line and the thread's name; then the wall time, the CPU of all threads
# together, and the busiest thread's.  With --tsv, every thread's figures
# (cpu_s, share, pid, tid, process, thread) go to FILE as well.  A thread
# that ends keeps what the last sample saw of it: up to 50 ms of its CPU
# are missed.  A process keeps the first command line seen (an exiting
# one reads empty).
use strict;
use warnings;
use Time::HiRes qw(time sleep);

my ($user, $stopfile, @rest) = @ARGV;
die "usage: threadprof.pl USER STOPFILE [--tsv FILE] [--top N] [--roots \"PID ...\"]\n"
  unless defined $stopfile;
my ($tsv, $top, %roots) = (undef, 12);
while (@rest)
{
	my $opt = shift @rest;
	if ($opt eq '--tsv') { $tsv = shift @rest }
	elsif ($opt eq '--top') { $top = shift @rest }
	elsif ($opt eq '--roots') { $roots{$_} = 1 for split ' ', shift(@rest) // '' }
	else { die "threadprof.pl: unknown argument $opt\n" }
}
my $uid = getpwnam($user) // die "threadprof.pl: no user $user\n";
my $hz = 100;					# USER_HZ: the unit of utime and stime on Linux
if (open(my $g, '-|', 'getconf', 'CLK_TCK')) { my $v = <$g>; $hz = $v + 0 if $v && $v > 0; close($g) }

my (%first, %last, %name);

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return undef;
	local $/;
	my $s = <$fh>;
	close($fh);
	return $s;
}

# Whether pid is one of the roots or descends from one (none given: every
# process); parents are read from /proc/PID/stat.
sub wanted
{
	my ($pid) = @_;
	return 1 unless %roots;
	for (my $depth = 0; $pid > 1 && $depth < 64; $depth++)
	{
		return 1 if $roots{$pid};
		my $stat = slurp("/proc/$pid/stat") // return 0;
		($pid) = substr($stat, rindex($stat, ')') + 2) =~ /^\S+\s+(\d+)/ or return 0;
	}
	return 0;
}

sub sample
{
	opendir(my $proc, '/proc') or return;
	for my $pid (grep { /^\d+$/ } readdir($proc))
	{
		my @st = stat("/proc/$pid") or next;
		next if $st[4] != $uid || !wanted($pid);
		my $cmd = slurp("/proc/$pid/cmdline") // next;
		$cmd =~ s/\0/ /g;
		$cmd =~ s/\s+$//;
		$cmd = substr($cmd, 0, 60);
		opendir(my $tasks, "/proc/$pid/task") or next;
		for my $tid (grep { /^\d+$/ } readdir($tasks))
		{
			my $stat = slurp("/proc/$pid/task/$tid/stat") // next;
			my ($comm) = $stat =~ /\((.*)\)/s or next;
			my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
			my $ticks = $f[11] + $f[12];
			my $k = "$pid/$tid";
			$first{$k} //= $ticks;
			$last{$k} = $ticks;
			$name{$k} = [ $pid, $tid, $cmd, $comm ] unless $name{$k} && $cmd eq '';
		}
		closedir($tasks);
	}
	closedir($proc);
}

my $t0 = time;
sample();
my %base = %first;
until (-e $stopfile)
{
	sleep(0.05);
	sample();
}
sample();
my $wall = time - $t0;

# threads first seen after the start began at 0
my @rows = sort { $b->[0] <=> $a->[0] }
  map { [ ($last{$_} - ($base{$_} // 0)) / $hz, @{ $name{$_} } ] } keys %last;
my $total = 0;
$total += $_->[0] for @rows;
if (defined $tsv)
{
	open(my $out, '>', $tsv) or die "threadprof.pl: $tsv: $!\n";
	print $out "cpu_s\tshare\tpid\ttid\tprocess\tthread\n";
	printf $out "%.2f\t%.3f\t%s\t%s\t%s\t%s\n", $_->[0], $_->[0] / $wall, @{$_}[ 1 .. 4 ] for @rows;
	close($out);
}
my $shown = 0;
for my $r (@rows)
{
	last if $shown++ >= $top || $r->[0] < 0.05;
	printf "%7.2f s %4.0f%%  %s [%s]\n", $r->[0], 100 * $r->[0] / $wall, $r->[3], $r->[4];
}
printf "wall %.2f s; all threads %.2f s of CPU; the busiest %.2f s (%.0f%% of the wall)\n",
  $wall, $total, @rows ? $rows[0][0] : 0, @rows ? 100 * $rows[0][0] / $wall : 0;
