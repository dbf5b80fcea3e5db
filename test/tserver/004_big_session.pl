# 004_big_session.pl
#	One session far larger than the tserver's session memory: 5M
#	pgbench_accounts rows (TCOPY_BIG_ROWS overrides) committed at once with
#	the tserver's memory bounded, and every row there afterwards, also
#	after a restart.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);

my $rows = $ENV{TCOPY_BIG_ROWS} // 5_000_000;
my $session_memory_mb = 64;		# the tserver's default, stated explicitly

# Why 512 MB: the tserver stages at most --session-memory-mb (64 MB) of a
# session in memory and spills the rest to sorted run files; add RocksDB's
# memtables and block cache (well under 200 MB by the store's options), up
# to a window of received frames and the commit's merge buffers, and
# allocator slack: a bounded server stays far below 512 MB.  5M rows of
# this shape are about 5M x (12-byte key + ~100-byte value) = ~560 MB of
# encoded data, so a server that held the session in memory could not stay
# under 512 MB.  (With a smaller TCOPY_BIG_ROWS the bound still holds but
# proves less.)
my $VMHWM_BOUND_KB = 512 * 1024;

my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', $session_memory_mb ]);
$ts->start or die "tserver did not start";

my $hwm_start = $ts->vmhwm_kb;
ok(defined $hwm_start, 'VmHWM of the tserver is readable') or diag("pid " . $ts->pid);
diag("tserver VmHWM at start: " . ($hwm_start // '?') . " kB");

# load in the background and watch the server's staging while it runs
my $started = time();
my $load = $ts->cli_bg('load', 'big', '--rows', $rows, '--batch-rows', 2000, '--window', 8);
my ($max_staged, $max_spilled, $samples) = (0, 0, 0);
while ($load->{h}->pumpable)
{
	eval { $load->{h}->pump_nb; 1 } or last;
	my $stats = $ts->stats;
	if ($stats)
	{
		$samples++;
		$max_staged = $stats->{staged_bytes} if ($stats->{staged_bytes} // 0) > $max_staged;
		$max_spilled = $stats->{spilled_bytes} if ($stats->{spilled_bytes} // 0) > $max_spilled;
	}
	last if $load->out =~ /committed|aborted/ || time() - $started > 900;
	sleep(0.2);
}
my $rc = $load->finish;
my $elapsed = time() - $started;
is($rc, 0, "load of $rows rows in one session succeeds") or diag($load->err);
like($load->out, qr/^committed $rows rows/, "the session committed $rows rows");
diag(sprintf("load: %.1f s; %s", $elapsed, $load->out =~ s/\n//r));
diag("staging seen in $samples stats samples: max staged $max_staged bytes, "
	  . "max spilled $max_spilled bytes");

cmp_ok($max_staged, '<=', 2 * $session_memory_mb * 1024 * 1024,
	'staged bytes in memory stayed within about --session-memory-mb');
SKIP:
{
	skip 'too few rows to spill', 1 if $rows * 100 < 4 * $session_memory_mb * 1024 * 1024;
	cmp_ok($max_spilled, '>', 0, 'the session spilled to staging files');
}

my $hwm = $ts->vmhwm_kb;
ok(defined $hwm, 'VmHWM after the commit is readable');
cmp_ok($hwm // 1e12, '<', $VMHWM_BOUND_KB, "tserver peak RSS (VmHWM) stays under 512 MB");
diag("tserver VmHWM after the load: " . ($hwm // '?') . " kB");
my $stats = $ts->stats // {};
cmp_ok($stats->{peak_rss_kb} // 1e12, '<', $VMHWM_BOUND_KB, 'stats: peak_rss_kb agrees');
is($stats->{rows_committed}, $rows, "stats: $rows rows committed");
is($stats->{staged_bytes}, 0, 'stats: nothing staged after the commit');
is($stats->{spilled_bytes}, 0, 'stats: no staging files left after the commit');

is($ts->count('big'), $rows, "count is $rows");
my $c = $ts->checksum('big', '--columns', 'aid,abalance');
is($c->{rows}, $rows, 'checksum: rows');
is($c->{sum}, aid_sum($rows), 'checksum: aid sum n(n+1)/2, abalance 0');
is($ts->count('big', '--lower', $rows - 999, '--upper', $rows + 5), 1000, 'the last rows are there');
is($ts->count('big', '--lower', int($rows / 2), '--upper', int($rows / 2) + 99), 100,
	'rows in the middle are there');

ok($ts->restart, 'tserver restarts');
is($ts->count('big'), $rows, "count is still $rows after the restart");

$ts->stop;

done_testing();
