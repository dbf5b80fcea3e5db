# 001_basic.pl
#	One tserver, one table: ping, stats, a 100000-row load, what scans
#	return (counts, checksums, key ranges, projections), truncate and drop.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

my $N = 100_000;

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

# ---- ping and stats on an empty server ----

my $r = $ts->cli('ping');
is($r->{rc}, 0, 'ping succeeds');
like($r->{out}, qr/^ok \S+/, 'ping prints "ok <server name>"');

my $stats = $ts->stats;
ok($stats, 'stats succeeds') or diag($ts->cli('stats')->{err});
$stats //= {};
for my $field (qw(uptime_ms connections_open connections_total sessions_open
	sessions_committed sessions_aborted rows_committed batches_received bytes_received
	tables staged_bytes spilled_bytes peak_rss_kb))
{
	ok(exists $stats->{$field}, "stats has $field");
}
is($stats->{tables}, 0, 'no tables yet');
is($stats->{rows_committed}, 0, 'no rows committed yet');
is($stats->{connections_open}, 1, 'only the stats connection is open');
cmp_ok($stats->{connections_total} // 0, '>=', 2, 'ping and stats connections counted');
cmp_ok($stats->{peak_rss_kb} // 0, '>', 0, 'peak_rss_kb is reported');

# ---- load ----

$r = $ts->cli('load', 'accounts', '--rows', $N);
is($r->{rc}, 0, "load of $N rows succeeds") or diag($r->{err});
like($r->{out}, qr/^committed $N rows in [0-9.]+ s \([0-9]+ rows\/s\)\n\z/,
	'load reports the rows committed');

$stats = $ts->stats // {};
is($stats->{tables}, 1, 'stats: one table');
is($stats->{rows_committed}, $N, "stats: $N rows committed");
is($stats->{sessions_committed}, 1, 'stats: one session committed');
is($stats->{sessions_open}, 0, 'stats: no session open after the commit');
is($stats->{staged_bytes}, 0, 'stats: nothing staged after the commit');
is($stats->{spilled_bytes}, 0, 'stats: nothing spilled after the commit');
cmp_ok($stats->{batches_received} // 0, '>=', $N / 1000, 'stats: every batch received');
cmp_ok($stats->{bytes_received} // 0, '>', $N * 84, 'stats: bytes received cover the rows');

# ---- what the rows imply ----

is($ts->count('accounts'), $N, "count is $N");

my $aid_csv = join('', map { "$_\n" } 1 .. $N);
my $c = $ts->checksum('accounts', '--columns', 'aid');
ok($c, 'checksum of aid succeeds');
is($c->{rows}, $N, 'checksum of aid: row count');
is($c->{sum}, aid_sum($N), 'checksum of aid: sum of aid is n(n+1)/2');
is($c->{hash}, fnv1a64_hex($aid_csv), 'checksum of aid: every aid once, in key order');

$c = $ts->checksum('accounts', '--columns', 'abalance');
is($c->{rows}, $N, 'checksum of abalance: row count');
is($c->{sum}, 0, 'checksum of abalance: every abalance is 0');
is($c->{hash}, fnv1a64_hex("0\n" x $N), 'checksum of abalance: every line is "0"');

# the whole rows as CSV, and the checksum of the same rows
$r = $ts->cli('scan', 'accounts');
is($r->{rc}, 0, 'csv scan succeeds');
my @lines = split /\n/, $r->{out};
is(scalar @lines, $N, "csv scan prints $N lines");
my ($in_order, $bad_lines, $int_sum) = (1, 0, 0);
for my $i (0 .. $#lines)
{
	if ($lines[$i] =~ /^(\d+),(-?\d+),(-?\d+),(.+)$/)
	{
		$in_order = 0 if $1 != $i + 1;
		$bad_lines++ if $3 != 0;
		$int_sum += $1 + $2 + $3;
	}
	else
	{
		$bad_lines++;
	}
}
ok($in_order, 'csv rows come in key order, aid 1..N');
is($bad_lines, 0, 'every csv line is aid,bid,0,filler');
$c = $ts->checksum('accounts');
is($c->{rows}, $N, 'full checksum: row count');
is($c->{sum}, $int_sum, 'full checksum: sum equals the sum of the csv int columns');
is($c->{hash}, fnv1a64_hex($r->{out}), 'full checksum: hash is FNV-1a of the csv lines');

# projection order is the order asked for
$r = $ts->cli('scan', 'accounts', '--columns', 'abalance,aid', '--limit', '2');
is($r->{out}, "0,1\n0,2\n", 'projection abalance,aid in that order, limit 2');

# ---- key ranges ----

my @ranges = (
	[ [ '--lower', 1000, '--upper', 2000 ], 1001 ],
	[ [ '--lower', 1000, '--upper', 2000, '--exclusive' ], 999 ],
	[ [ '--lower', $N - 9 ], 10 ],
	[ [ '--lower', $N - 10, '--exclusive' ], 10 ],
	[ [ '--upper', 10 ], 10 ],
	[ [ '--upper', 10, '--exclusive' ], 9 ],
	[ [ '--lower', 50, '--upper', 50 ], 1 ],
	[ [ '--lower', 50, '--upper', 50, '--exclusive' ], 0 ],
	[ [ '--lower', 50, '--upper', 51, '--exclusive' ], 0 ],
	[ [ '--lower', 0, '--upper', 0 ], 0 ],
	[ [ '--lower', -5, '--upper', 3 ], 3 ],
	[ [ '--lower', $N + 1 ], 0 ],
	[ [ '--upper', 0 ], 0 ],
	[ [ '--lower', 2000, '--upper', 1000 ], 0 ],
	[ [ '--lower', '-9223372036854775808' ], $N ],
	[ [ '--upper', '9223372036854775807' ], $N ],
	[ [ '--upper', '-9223372036854775808' ], 0 ],
	[ [ '--lower', '9223372036854775807', '--exclusive' ], 0 ],
	[ [ '--limit', 7 ], 7 ],
	[ [ '--lower', 99_990, '--limit', 100 ], 11 ],
	[ [ '--batch-rows', 7 ], $N ],
	[ [ '--lower', 10, '--upper', 30, '--batch-rows', 1 ], 21 ],
	[ [ '--lower', 10, '--upper', 30, '--batch-rows', 20 ], 21 ],
	[ [ '--lower', 10, '--upper', 30, '--batch-rows', 21 ], 21 ],
);
for my $range (@ranges)
{
	my ($args, $want) = @$range;
	is($ts->count('accounts', @$args), $want, "count with @$args is $want");
}

$c = $ts->checksum('accounts', '--columns', 'aid', '--lower', 1000, '--upper', 2000);
is($c->{rows}, 1001, 'checksum of aid in [1000, 2000]: rows');
is($c->{sum}, aid_sum(1001, 1000), 'checksum of aid in [1000, 2000]: sum');
is($ts->cli('scan', 'accounts', '--columns', 'aid', '--lower', 5, '--upper', 9)->{out},
	"5\n6\n7\n8\n9\n", 'csv of aid in [5, 9]');
is($ts->cli('scan', 'accounts', '--columns', 'aid', '--lower', 500, '--limit', 3)->{out},
	"500\n501\n502\n", 'csv of aid from 500, limit 3');
is($ts->cli('scan', 'accounts', '--columns', 'aid', '--lower', 5, '--upper', 9,
		'--exclusive', '--batch-rows', 1)->{out},
	"6\n7\n8\n", 'csv of aid in (5, 9), one row per batch');

# ---- truncate ----

$r = $ts->cli('truncate', 'accounts');
is($r->{rc}, 0, 'truncate succeeds') or diag($r->{err});
is($ts->count('accounts'), 0, 'count is 0 after truncate');
is($ts->count('accounts', '--lower', 1, '--upper', 10), 0, 'range count is 0 after truncate');
is(($ts->stats // {})->{tables}, 1, 'the truncated table still exists');
$r = $ts->cli('load', 'accounts', '--rows', 10, '--value', 4);
is($r->{rc}, 0, 'load into the truncated table succeeds') or diag($r->{err});
$c = $ts->checksum('accounts', '--columns', 'aid,abalance');
is($c->{rows}, 10, 'only the new rows are there');
is($c->{sum}, aid_sum(10) + 40, 'new rows have their aid and abalance');

# ---- drop ----

$r = $ts->cli('drop', 'accounts');
is($r->{rc}, 0, 'drop succeeds') or diag($r->{err});
$r = $ts->cli('scan', 'accounts', '--format', 'count');
is($r->{rc}, 1, 'scan of a dropped table fails');
like($r->{err}, qr/does not exist|unknown table/i, 'with an unknown-table error');
$r = $ts->cli('truncate', 'accounts');
isnt($r->{rc}, 0, 'truncate of a dropped table fails');
$r = $ts->cli('drop', 'accounts');
isnt($r->{rc}, 0, 'drop of a dropped table fails');
is(($ts->stats // {})->{tables}, 0, 'stats: no tables after the drop');

# a table of the same name starts empty: no row of the dropped one returns
$r = $ts->cli('load', 'accounts', '--rows', 5, '--start', 20);
is($r->{rc}, 0, 'load recreates the table') or diag($r->{err});
$c = $ts->checksum('accounts', '--columns', 'aid');
is($c->{rows}, 5, 'the recreated table holds only its own rows');
is($c->{sum}, aid_sum(5, 20), 'and they are the new ones');

# ---- errors the cli reports ----

$r = $ts->cli('scan', 'no_such_table');
is($r->{rc}, 1, 'scan of a table never created fails');
like($r->{err}, qr/does not exist|unknown table/i, 'with an unknown-table error');

$ts->stop;

done_testing();
