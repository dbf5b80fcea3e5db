# 003_durability.pl
#	What survives a restart and a crash: committed rows do (after SIGTERM
#	and after kill -9 right after the commit returned), staged rows of an
#	uncommitted session do not (in memory or spilled to disk), and a stale
#	socket file left by a crash does not stop the next start.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

# a small session memory, so that a held session spills to staging files
my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 4 ]);
$ts->start or die "tserver did not start";

# ---- clean restart ----

my $r = $ts->cli('load', 'kept', '--rows', 20_000, '--shuffle', '--seed', 3, '--value', 7);
is($r->{rc}, 0, 'load 20000 rows') or diag($r->{err});
my $before = $ts->checksum('kept');
ok($before, 'checksum before restart');
is($before->{rows}, 20_000, '20000 rows before restart');

ok($ts->restart, 'tserver restarts on the same data');
my $after = $ts->checksum('kept');
is_deeply($after, $before, 'restart keeps every committed row unchanged');
is(($ts->stats // {})->{tables}, 1, 'the table is still there');

# the second instance on the same data directory must not start
{
	my $other = TcopyTest->new(data => $ts->data_dir);
	my ($what, $status) = $other->spawn;
	is($what, 'exited', 'a second tserver on a data directory in use does not start');
	$what eq 'exited' or do { kill 'KILL', $status; waitpid($status, 0) };
	isnt($status, 0, 'and exits with a non-zero status');
	is($ts->count('kept'), 20_000, 'the first tserver still serves its data');
}
# a second tserver on a socket in use must not take it over
{
	my $other = TcopyTest->new(socket => $ts->socket_path);
	my ($what, $status) = $other->spawn;
	is($what, 'exited', 'a second tserver on a socket in use does not start');
	$what eq 'exited' or do { kill 'KILL', $status; waitpid($status, 0) };
	isnt($status, 0, 'and exits with a non-zero status');
	like($other->log_contents, qr/already listening|in use/i, 'saying the socket is in use');
	is($ts->cli('ping')->{rc}, 0, 'the first tserver still answers on its socket');
	ok(-S $ts->socket_path, 'the socket file is still there');
}

# ---- kill -9 while a session is staged in memory ----

my $held = $ts->cli_bg('load', 'lost', '--rows', 10_000, '--hold');
ok($held->wait_for(qr/^staged 10000 rows$/m, 120), 'held load staged 10000 rows')
  or diag("stdout: " . $held->out . "\nstderr: " . $held->err);
$ts->kill9;
$held->send_line('');
isnt($held->finish, 0, 'the held load fails: its tserver died before the commit');
unlike($held->out, qr/committed/, 'the held load never reported a commit');

ok(-S $ts->socket_path, 'kill -9 left the socket file behind');
ok($ts->start, 'tserver starts again over the stale socket file');
like($ts->log_contents, qr/tserver ready/, 'and is ready');
is($ts->cli('ping')->{rc}, 0, 'and answers on the same address');
is($ts->count('lost'), 0, 'nothing of the uncommitted session is there after the crash');
is($ts->count('kept'), 20_000, 'the earlier committed rows are still there');
is_deeply($ts->checksum('kept'), $before, 'and unchanged');

# ---- SIGTERM with a session held open and an idle client connected ----

$held = $ts->cli_bg('load', 'lost', '--rows', 5_000, '--start', 50_000, '--hold');
ok($held->wait_for(qr/^staged 5000 rows$/m, 120), 'held load staged 5000 rows');
my $idle = $ts->connect_ready;
ok($idle, 'an idle client is connected');
$ts->stop('SIGTERM with an open session and an idle client: clean exit 0');
$held->send_line('');
isnt($held->finish, 0, 'the held load fails: the server shut down before the commit');
ok(TcopyTest::wait_closed($idle, 5), 'the idle client was disconnected');
close $idle if $idle;
ok($ts->start, 'tserver starts after the clean shutdown');
is($ts->count('lost'), 0, 'the session open at shutdown left nothing');
is($ts->count('kept'), 20_000, 'the committed rows are there');

# ---- kill -9 while a session has spilled to staging files ----

# shuffled: a sorted load spills compressed SST files, a few MB only
# (007_sorted_spill.pl kills one of those)
my $size_before = dir_size($ts->data_dir);
$held = $ts->cli_bg('load', 'spilled', '--rows', 300_000, '--shuffle', '--seed', 3, '--hold');
ok($held->wait_for(qr/^staged 300000 rows$/m, 300), 'held load staged 300000 rows')
  or diag("stdout: " . $held->out . "\nstderr: " . $held->err);
my $stats = $ts->stats // {};
my $spilled = $stats->{spilled_bytes} // 0;
cmp_ok($spilled, '>', 8 * 1024 * 1024, 'the held session spilled beyond its 4 MB of memory');
cmp_ok($stats->{staged_bytes} // 0, '<=', 8 * 1024 * 1024,
	'and holds no more than its session memory (plus a batch) in memory');
my $size_held = dir_size($ts->data_dir);
cmp_ok($size_held, '>=', $size_before + $spilled * 0.9, 'spilled bytes are in the data directory');
$ts->kill9;
$held->send_line('');
isnt($held->finish, 0, 'the held spilled load fails with its tserver');

ok($ts->start, 'tserver starts after the crash');
is($ts->count('spilled'), 0, 'nothing of the spilled session is visible after the crash');
my $size_after = dir_size($ts->data_dir);
cmp_ok($size_after, '<', $size_before + $spilled / 2,
	'the crashed session\'s staging files are removed at startup')
  or diag("data dir: $size_before bytes before, $size_held held, $size_after after restart");
$stats = $ts->stats // {};
is($stats->{spilled_bytes}, 0, 'stats: nothing spilled after the restart');
is($stats->{sessions_open}, 0, 'stats: no session open after the restart');

# ---- kill -9 right after a commit returned ----

for my $case ([ 'small', 50_000, [] ], [ 'large', 400_000, [ '--shuffle', '--seed', 5 ] ])
{
	my ($name, $rows, $extra) = @$case;
	$r = $ts->cli('load', "durable_$name", '--rows', $rows, '--value', 3, @$extra);
	is($r->{rc}, 0, "$name load of $rows rows commits") or diag($r->{err});
	like($r->{out}, qr/^committed $rows rows/, "$name load printed \"committed\"");
	$ts->kill9;				# at once, before anything else happens
	ok($ts->start, "tserver starts after kill -9 following the $name commit");
	my $c = $ts->checksum("durable_$name", '--columns', 'aid,abalance');
	is($c->{rows}, $rows, "every row of the $name commit survived kill -9");
	is($c->{sum}, aid_sum($rows) + 3 * $rows, "with the right checksum");
	is($ts->checksum("durable_$name", '--columns', 'aid')->{hash},
		fnv1a64_hex(join('', map { "$_\n" } 1 .. $rows)), "each aid once, in order");
}

# a table dropped then the server killed stays dropped; a truncate too
is($ts->cli('drop', 'durable_small')->{rc}, 0, 'drop');
is($ts->cli('truncate', 'kept')->{rc}, 0, 'truncate');
$ts->kill9;
ok($ts->start, 'tserver starts after kill -9 following drop and truncate');
$r = $ts->cli('scan', 'durable_small', '--format', 'count');
is($r->{rc}, 1, 'the dropped table stays dropped');
is($ts->count('kept'), 0, 'the truncated table stays empty');
is($ts->count('durable_large'), 400_000, 'the other table is intact');

$ts->stop;

done_testing();
