# 002_sessions.pl
#	Write sessions: upserts by key, overlapping loads, isolation until
#	commit, abort, concurrent sessions, keyless tables, schema checks.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

# Load and assert success; returns the result.
sub load_ok
{
	my ($name, @args) = @_;
	my $r = $ts->cli('load', @args);
	is($r->{rc}, 0, $name) or diag("stdout: $r->{out}\nstderr: $r->{err}");
	return $r;
}

# ---- upsert: the same keys again replace the rows ----

my $r = load_ok('load 1..1000 with abalance 1', 'up', '--rows', 1000, '--value', 1);
like($r->{out}, qr/^committed 1000 rows/, 'reports 1000 rows committed');
is($ts->count('up'), 1000, '1000 rows');
is($ts->checksum('up', '--columns', 'abalance')->{sum}, 1000, 'abalance sums to 1000');

load_ok('load 1..1000 again with abalance 2', 'up', '--rows', 1000, '--value', 2);
is($ts->count('up'), 1000, 'still 1000 rows: the second load replaced the first');
my $c = $ts->checksum('up', '--columns', 'abalance');
is($c->{sum}, 2000, 'abalance sums to 2000');
is($c->{hash}, fnv1a64_hex("2\n" x 1000), 'abalance is 2 in every row');
is($ts->checksum('up', '--columns', 'aid')->{sum}, aid_sum(1000), 'aid 1..1000 once each');

# overlapping range, shuffled: 501..1500 with abalance 3
load_ok('load 501..1500 shuffled with abalance 3', 'up', '--rows', 1000, '--start', 501,
	'--value', 3, '--shuffle', '--seed', 11, '--batch-rows', 64);
is($ts->count('up'), 1500, '1500 rows after the overlapping load');
$c = $ts->checksum('up', '--columns', 'aid,abalance');
is($c->{sum}, aid_sum(1500) + 500 * 2 + 1000 * 3, 'aid 1..1500, abalance 2 below 501, 3 from 501');
is($ts->cli('scan', 'up', '--columns', 'abalance', '--lower', 499, '--upper', 502)->{out},
	"2\n2\n3\n3\n", 'the boundary rows have the right abalance');
is($ts->checksum('up', '--columns', 'aid')->{hash},
	fnv1a64_hex(join('', map { "$_\n" } 1 .. 1500)), 'scan order is key order after a shuffled load');

# ---- isolation: staged rows are invisible until commit ----

my $held = $ts->cli_bg('load', 'iso', '--rows', 5000, '--hold');
ok($held->wait_for(qr/^staged 5000 rows$/m, 120), 'held load staged 5000 rows')
  or diag("stdout: " . $held->out . "\nstderr: " . $held->err);
is($ts->count('iso'), 0, 'staged rows are not visible before commit');
my $stats = $ts->stats // {};
is($stats->{sessions_open}, 1, 'stats: one session open');
cmp_ok($stats->{staged_bytes} // 0, '>', 0, 'stats: the held session has staged bytes');
$held->send_line('');
is($held->finish, 0, 'held load commits after a line on stdin') or diag($held->err);
like($held->out, qr/^committed 5000 rows/m, 'held load reports its commit');
is($ts->count('iso'), 5000, 'committed rows are visible');

# ---- abort leaves nothing ----

$stats = $ts->stats // {};
my $aborted_before = $stats->{sessions_aborted} // 0;
$r = load_ok('aborted load runs', 'up', '--rows', 5000, '--start', 10_000, '--value', 9, '--abort');
like($r->{out}, qr/^aborted 5000 rows\n\z/, 'load reports the abort');
is($ts->count('up'), 1500, 'abort added no rows');
is($ts->checksum('up', '--columns', 'abalance')->{sum}, 500 * 2 + 1000 * 3,
	'abort changed no rows');
$r = load_ok('aborted load over existing keys', 'up', '--rows', 1500, '--value', 9, '--abort');
is($ts->checksum('up', '--columns', 'abalance')->{sum}, 500 * 2 + 1000 * 3,
	'an aborted overwrite changed nothing');
$stats = $ts->stats // {};
is($stats->{sessions_aborted}, $aborted_before + 2, 'stats: two more sessions aborted');
is($stats->{sessions_open}, 0, 'stats: no session left open');

# abort of a session held open, then more sessions on the same table work
$held = $ts->cli_bg('load', 'up', '--rows', 3000, '--start', 20_000, '--hold', '--abort');
ok($held->wait_for(qr/^staged 3000 rows$/m, 120), 'held session to abort staged its rows');
$held->send_line('');
is($held->finish, 0, 'held session aborts') or diag($held->err);
is($ts->count('up'), 1500, 'the aborted held session left nothing');

# ---- a client that goes away without commit leaves nothing ----

$held = $ts->cli_bg('load', 'up', '--rows', 2000, '--start', 30_000, '--hold');
ok($held->wait_for(qr/^staged 2000 rows$/m, 120), 'held session staged its rows');
$held->{h}->kill_kill;
eval { $held->{h}->finish };
my $gone = 0;
for (1 .. 100)
{
	$stats = $ts->stats // {};
	last if ($gone = ($stats->{sessions_open} // -1) == 0);
	select(undef, undef, undef, 0.1);
}
ok($gone, 'the session of a killed client is closed');
is($ts->count('up'), 1500, 'a killed client committed nothing');

# ---- concurrent sessions on disjoint ranges of a new table ----

my $per = 25_000;
my @loads;
for my $i (0 .. 3)
{
	push @loads, $ts->cli_bg('load', 'conc', '--rows', $per, '--start', 1 + $i * $per,
		'--shuffle', '--seed', $i + 1, '--batch-rows', 500);
}
for my $i (0 .. 3)
{
	my $rc = $loads[$i]->finish;
	is($rc, 0, "concurrent load $i succeeds") or diag($loads[$i]->err);
	like($loads[$i]->out, qr/^committed $per rows/, "concurrent load $i committed $per rows");
}
is($ts->count('conc'), 4 * $per, 'every row of the concurrent loads is there');
$c = $ts->checksum('conc', '--columns', 'aid');
is($c->{sum}, aid_sum(4 * $per), 'concurrent loads: aid sum');
is($c->{hash}, fnv1a64_hex(join('', map { "$_\n" } 1 .. 4 * $per)),
	'concurrent loads: each aid exactly once, in order');
$stats = $ts->stats // {};
is($stats->{tables}, 3, 'stats: concurrent creates made one table');

# ---- keyless tables keep every row ----

load_ok('keyless load', 'kl', '--rows', 1000, '--keyless', '--value', 1);
load_ok('keyless load of the same aids', 'kl', '--rows', 1000, '--keyless', '--value', 2);
is($ts->count('kl'), 2000, 'keyless table holds both loads: no overwrite');
$c = $ts->checksum('kl', '--columns', 'aid,abalance');
is($c->{sum}, 2 * aid_sum(1000) + 1000 * 1 + 1000 * 2, 'keyless rows keep their values');
my @kl = sort { $a <=> $b } split /\n/, $ts->cli('scan', 'kl', '--columns', 'aid')->{out};
is_deeply(\@kl, [ map { ($_, $_) } 1 .. 1000 ], 'keyless table holds every aid twice');
$r = $ts->cli('load', 'kl', '--rows', 10);
isnt($r->{rc}, 0, 'a keyed load into a keyless table fails (schema differs)');
is($ts->count('kl'), 2000, 'and adds nothing');

# ---- schemas ----

$r = $ts->cli('create', 'small', '--columns', 'x:int,y:bytes', '--key', 'x');
is($r->{rc}, 0, 'create succeeds') or diag($r->{err});
like($r->{out}, qr/^created table "small"/, 'create reports a new table');
$r = $ts->cli('create', 'small', '--columns', 'x:int,y:bytes', '--key', 'x');
is($r->{rc}, 0, 'create with the same schema again succeeds');
like($r->{out}, qr/^found table "small"/, 'and finds the table');
$r = $ts->cli('create', 'small', '--columns', 'x:int,y:float', '--key', 'x');
is($r->{rc}, 1, 'create with another schema fails');
like($r->{err}, qr/schema|differ|mismatch|column/i, 'with a schema error');
$r = $ts->cli('load', 'small', '--rows', 10);
is($r->{rc}, 1, 'loading pgbench rows into another shape fails');
like($r->{err}, qr/schema|differ|mismatch|column/i, 'with a schema error');
is($ts->count('small'), 0, 'nothing was written');

$ts->stop;

done_testing();
