# 007_sorted_spill.pl
#	Sessions whose keys arrive in order spill straight to SST files (no
#	run files): with 1 MB of session memory, a sorted load spills many
#	times and its rows are exact, a later sorted load over part of the
#	range wins, the staging directory is empty after every commit and
#	abort, and a tserver killed while such a session holds SST files
#	comes back with none of its rows and no staging files.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

my $rows = 100_000;		# about 11 MB staged: about ten spills of 1 MB

my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 1 ]);
$ts->start or die "tserver did not start";
my $staging = $ts->data_dir . "/staging";

# Names under the staging directory, recursively, relative to it.
sub staging_files
{
	my @found;
	my @dirs = ($staging);
	while (my $dir = shift @dirs)
	{
		opendir(my $dh, $dir) or next;
		for my $name (grep { $_ ne '.' && $_ ne '..' } readdir $dh)
		{
			my $path = "$dir/$name";
			push @found, substr($path, length($staging) + 1);
			push @dirs, $path if -d $path;
		}
		closedir $dh;
	}
	return sort @found;
}

# ---- a sorted load many times the session memory ----

my $r = $ts->cli('load', 'acc', '--rows', $rows, '--batch-rows', 1000);
is($r->{rc}, 0, "sorted load of $rows rows with 1 MB of session memory") or diag($r->{err});
like($r->{out}, qr/^committed $rows rows/, "it committed $rows rows");
is_deeply([ staging_files() ], [], 'the staging directory is empty after the commit');
is($ts->count('acc'), $rows, "count is $rows");
my $c = $ts->checksum('acc', '--columns', 'aid,abalance');
is($c->{sum}, aid_sum($rows), 'aid 1..N once each, abalance 0');
is($ts->checksum('acc', '--columns', 'aid')->{hash},
	fnv1a64_hex(join('', map { "$_\n" } 1 .. $rows)), 'every aid, in key order');
my $stats = $ts->stats // {};
is($stats->{spilled_bytes}, 0, 'stats: nothing spilled after the commit');
is($stats->{staged_bytes}, 0, 'stats: nothing staged after the commit');

# ---- a later sorted load over the upper half wins ----

my $half = $rows / 2;
$r = $ts->cli('load', 'acc', '--rows', $rows, '--start', $half + 1, '--value', 7,
	'--batch-rows', 1000);
is($r->{rc}, 0, 'sorted load over the upper half and beyond, abalance 7') or diag($r->{err});
is($ts->count('acc'), $rows + $half, 'count: the overlap replaced rows, the rest added');
$c = $ts->checksum('acc', '--columns', 'aid,abalance');
is($c->{sum}, aid_sum($rows + $half) + 7 * $rows, 'abalance 7 from the second load on, 0 below');
is($ts->cli('scan', 'acc', '--columns', 'abalance', '--lower', $half - 1, '--upper', $half + 2)->{out},
	"0\n0\n7\n7\n", 'the boundary rows have the right abalance');
is_deeply([ staging_files() ], [], 'the staging directory is empty again');

# ---- a keyless table: generated row ids are ascending, so sorted too ----

$r = $ts->cli('load', 'heap', '--keyless', '--rows', $rows, '--batch-rows', 1000);
is($r->{rc}, 0, 'keyless load') or diag($r->{err});
is($ts->count('heap'), $rows, "keyless table has $rows rows");

# ---- abort of a spilled sorted session ----

$r = $ts->cli('load', 'acc', '--rows', $rows, '--start', 1_000_000, '--abort');
is($r->{rc}, 0, 'aborted sorted load runs');
like($r->{out}, qr/^aborted $rows rows/, 'it reports the abort');
is($ts->count('acc'), $rows + $half, 'the abort added nothing');
is_deeply([ staging_files() ], [], 'the abort left no staging files');

# ---- kill -9 while a sorted session holds SST files ----

my $held = $ts->cli_bg('load', 'killed', '--rows', $rows, '--hold');
ok($held->wait_for(qr/^staged $rows rows$/m, 120), "held load staged $rows rows")
  or diag("stdout: " . $held->out . "\nstderr: " . $held->err);
my @held_files = staging_files();
ok((grep { /\.sst$/ } @held_files), 'the held sorted session spilled SST files')
  or diag("staging: @held_files");
is((scalar grep { m{/run-} } @held_files), 0, 'and no run files');
$stats = $ts->stats // {};
cmp_ok($stats->{spilled_bytes} // 0, '>', 0, 'stats: the held session has spilled bytes');
$ts->kill9;
$held->send_line('');
isnt($held->finish, 0, 'the held load fails with its tserver');
ok($ts->start, 'tserver starts after the crash');
is($ts->count('killed') // 0, 0, 'nothing of the killed session is visible');
is_deeply([ staging_files() ], [], 'its staging files are removed at startup');
is($ts->count('acc'), $rows + $half, 'the committed rows are all there');

$ts->stop;

done_testing();
