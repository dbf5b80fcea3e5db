# 019_in_doubt.pl
#	Writes held back behind an in-doubt prepared session (issue 30,
#	ts_in_doubt.c), with real processes.  A session prepared, then the
#	tserver killed (kill -9) and started again, is in doubt until someone
#	resolves it (Postgres' recovery, here tserver-cli resolve):
#	- another session's one-step COMMIT of its table waits about
#	  --in-doubt-wait-ms, then fails with SERIALIZATION naming the session
#	  and the table; so do its PREPARE (leaving nothing prepared), a
#	  TRUNCATE in a session and one outside any;
#	- a session of another table is not held, nor a DROP;
#	- a RESOLVE during the wait lets the waiting PREPARE through at once,
#	  and its rows land on top of the resolved session's;
#	- a session whose connection closed after PREPARE_OK (no restart)
#	  holds its table the same way; one whose connection is live does not;
#	- the wait ends early when the client goes away, or the tserver is
#	  stopped;
#	- --in-doubt-wait-ms 0 refuses at once.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all request reply_outcome);

my $WAIT_MS = 3000;
my $ts = TcopyTest->new(extra_args => [ '--in-doubt-wait-ms', $WAIT_MS ]);
$ts->start or die 'tserver did not start';

# Run tserver-cli; the result with how long it took (seconds) as {secs}.
sub timed_cli
{
	my (@args) = @_;
	my $start = time();
	my $r = $ts->cli(@args);
	$r->{secs} = time() - $start;
	return $r;
}

# abalance of aid in table ('' when absent).
sub abalance
{
	my ($table, $aid) = @_;
	my $out = $ts->cli('scan', $table, '--columns', 'abalance', '--lower', $aid, '--upper', $aid)->{out};
	chomp $out;
	return $out;
}

# gid => attached of the sessions prepared under tcopy:19:.
sub listed
{
	my $list = $ts->prepared('tcopy:19:') or return undef;
	return { map { my @f = split /\t/, $_->{line}; ($f[0] => $f[4]) } @$list };
}

# Wait until gid is listed orphaned (its connection's end is noticed).
sub wait_orphaned
{
	my ($gid) = @_;
	for (1 .. 100)
	{
		return 1 if (listed()->{$gid} // '') eq 'no';
		sleep(0.1);
	}
	return 0;
}

# A raw connection that wrote row aid of table, prepared under gid and
# stays open (its owner), or undef.
sub raw_prepare
{
	my ($table, $aid, $gid) = @_;
	my $sock = $ts->connect_ready or return undef;
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, $table));
	return undef unless ($type // 0) == FRAME_TABLE_INFO;
	my $table_id = pb_decode($payload)->{1}[0];
	($type) = request($sock, FRAME_BEGIN, '');
	return undef unless ($type // 0) == FRAME_BEGIN_OK;
	my $row = pb_field_packed_sint64(1, $aid, 1, 5) . pb_field_bytes(3, ' ' x 84);
	($type) = request($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $table_id)
		  . pb_field_bytes(3, $row));
	return undef unless ($type // 0) == FRAME_ACK;
	($type, $payload) = request($sock, FRAME_PREPARE, pb_field_varint(1, 1) . pb_field_varint(2, 1)
		  . pb_field_bytes(3, $gid));
	return undef unless ($type // 0) == FRAME_PREPARE_OK;
	return $sock;
}

my $held_re = qr/the prepared session "tcopy:19:old", which changes table "held", is not yet resolved \(waited \d+ ms\): this session's writes could be overwritten when it is/;

# ---- restored after kill -9 ----

$ts->cli_ok('the tables: held', 'load', 'held', '--rows', 100, '--value', 1);
$ts->cli_ok('... and free', 'load', 'free', '--rows', 100, '--value', 1);
$ts->cli_ok('... and dropped', 'load', 'dropped', '--rows', 10, '--value', 1);
$ts->cli_ok('a session of held prepared (aids 1..10, abalance 2)', 'load', 'held', '--rows', 10,
	'--value', 2, '--prepare', 'tcopy:19:old');
$ts->kill9;
ok($ts->start, 'the tserver starts again after kill -9');
is_deeply(listed(), { 'tcopy:19:old' => 'no' }, 'the session is restored, orphaned');

my $r = timed_cli('load', 'held', '--rows', 1, '--start', 5, '--value', 3);
isnt($r->{rc}, 0, 'a COMMIT of another session of held fails');
like($r->{err}, $held_re, '... with the serialization error, naming the session and the table');
cmp_ok($r->{secs}, '>=', $WAIT_MS / 1000 - 0.1, "... after waiting --in-doubt-wait-ms ($r->{secs} s)");
cmp_ok($r->{secs}, '<', $WAIT_MS / 1000 + 3, '... and not much longer');
like($ts->log_contents, qr/holding back this session's writes: the session prepared under "tcopy:19:old", which changes table id \d+, is in doubt; waiting up to \d+ ms/,
	'the tserver logs the wait');
like($ts->log_contents, qr/connection \d+ from .*: the prepared session "tcopy:19:old", which changes table "held"/,
	'... and the refusal');
is(abalance('held', 5), 1, '... nothing of it is stored');

$r = timed_cli('load', 'held', '--rows', 1, '--start', 5, '--value', 3, '--prepare', 'tcopy:19:refused');
isnt($r->{rc}, 0, 'a PREPARE of held fails the same way');
like($r->{err}, $held_re, '... saying why');
is_deeply(listed(), { 'tcopy:19:old' => 'no' }, '... and leaves nothing prepared');
is($ts->stats->{sessions_open}, 0, '... nor open');

$r = timed_cli('load', 'held', '--rows', 1, '--start', 200, '--truncate');
isnt($r->{rc}, 0, 'a session that truncates held fails');
like($r->{err}, $held_re, '... saying why');
$r = timed_cli('truncate', 'held');
isnt($r->{rc}, 0, 'a TRUNCATE outside a session fails');
like($r->{err}, qr/"tcopy:19:old", which changes table "held", is not yet resolved .*: this truncate could be overwritten/,
	'... saying why');
is($ts->count('held'), 100, 'held still has its 100 rows');

$r = timed_cli('load', 'free', '--rows', 1, '--start', 5, '--value', 3);
is($r->{rc}, 0, 'a COMMIT of another table is not held') or diag($r->{err});
cmp_ok($r->{secs}, '<', 1, "... it does not wait ($r->{secs} s)");
$r = timed_cli('drop', 'dropped');
is($r->{rc}, 0, 'nor is a DROP') or diag($r->{err});

# a RESOLVE during the wait lets it through at once
my $bg = $ts->cli_bg('load', 'held', '--rows', 2, '--start', 9, '--value', 4, '--prepare', 'tcopy:19:waiter');
sleep(0.8);
is_deeply(listed(), { 'tcopy:19:old' => 'no' }, 'a PREPARE of held waits (not listed yet)');
my $start = time();
$ts->cli_ok('the restored session is resolved meanwhile (commit)', 'resolve', 'tcopy:19:old', 'commit');
is($bg->finish, 0, 'the waiting PREPARE succeeds') or diag($bg->err);
my $took = time() - $start;
cmp_ok($took, '<', $WAIT_MS / 1000 / 2, "... right after the resolve ($took s), well before the bound");
like($bg->out, qr/^prepared 2 rows under "tcopy:19:waiter"/, '... saying so');
$ts->cli_ok('and is resolved (commit)', 'resolve', 'tcopy:19:waiter', 'commit');
is(abalance('held', 8), 2, "the restored session's rows are there");
is(abalance('held', 9), 4, "... under the later session's, which are on top");
is(abalance('held', 11), 1, '... and the rows neither touched');

# ---- orphaned: the connection closed after PREPARE_OK, no restart ----

my $sock = raw_prepare('held', 50, 'tcopy:19:live');
ok($sock, 'a raw connection prepares a session of held and stays');
$r = timed_cli('load', 'held', '--rows', 1, '--start', 60, '--value', 6);
is($r->{rc}, 0, 'while its connection is live, held is not held') or diag($r->{err});
cmp_ok($r->{secs}, '<', 1, "... no wait ($r->{secs} s)");
close($sock);
ok(wait_orphaned('tcopy:19:live'), 'its connection closed: orphaned');
$r = timed_cli('load', 'held', '--rows', 1, '--start', 61, '--value', 6);
isnt($r->{rc}, 0, 'now a COMMIT of held fails');
like($r->{err}, qr/"tcopy:19:live", which changes table "held", is not yet resolved/, '... naming the orphaned session');
cmp_ok($r->{secs}, '>=', $WAIT_MS / 1000 - 0.1, "... after the wait ($r->{secs} s)");

# the wait ends when the client goes away
$sock = $ts->connect_ready or die 'no connection';
my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'held'));
my $held_id = pb_decode($payload)->{1}[0];
request($sock, FRAME_BEGIN, '');
($type) = request($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $held_id)
	  . pb_field_bytes(3, pb_field_packed_sint64(1, 70, 1, 7) . pb_field_bytes(3, ' ' x 84)));
is($type, FRAME_ACK, 'a raw connection writes to held');
TcopyTest::send_frame($sock, FRAME_COMMIT, pb_field_varint(1, 1) . pb_field_varint(2, 1));
sleep(0.5);
is($ts->stats->{sessions_open}, 1, '... its COMMIT waits');
$start = time();
close($sock);
my $open = 1;
for (1 .. 50)
{
	$open = $ts->stats->{sessions_open};
	last if $open == 0;
	sleep(0.1);
}
$took = time() - $start;
is($open, 0, 'the client closed its connection: the wait ends, the session is gone');
cmp_ok($took, '<', $WAIT_MS / 1000 - 0.5, "... before the bound ($took s)");
like($ts->log_contents, qr/then the client or the server went away/, '... the tserver says why');
is(abalance('held', 70), 1, '... nothing of it is stored');

# a stop ends it too
$bg = $ts->cli_bg('load', 'held', '--rows', 1, '--start', 71, '--value', 7);
sleep(0.5);
$start = time();
ok($ts->stop('a tserver stopped while a COMMIT waits exits with status 0'), 'stopped');
$took = time() - $start;
cmp_ok($took, '<', $WAIT_MS / 1000, "... without waiting for the bound ($took s)");
isnt($bg->finish, 0, 'the waiting COMMIT fails');

# ---- --in-doubt-wait-ms 0 ----

ok($ts->start('--in-doubt-wait-ms', 0), 'started again with --in-doubt-wait-ms 0');
is_deeply(listed(), { 'tcopy:19:live' => 'no' }, 'the orphaned session is restored');
$r = timed_cli('load', 'held', '--rows', 1, '--start', 72, '--value', 8);
isnt($r->{rc}, 0, 'a COMMIT of held fails');
like($r->{err}, qr/"tcopy:19:live", which changes table "held", is not yet resolved \(waited \d+ ms\)/, '... saying why');
cmp_ok($r->{secs}, '<', 1, "... at once ($r->{secs} s)");
$ts->cli_ok('resolved (abort)', 'resolve', 'tcopy:19:live', 'abort');
$ts->cli_ok('then the COMMIT goes through', 'load', 'held', '--rows', 1, '--start', 72, '--value', 8);
is(abalance('held', 72), 8, '... its row is there');
is(abalance('held', 71), 1, '... and nothing of the one the stop ended');
is(abalance('held', 50), 1, '... and nothing of the discarded one');
is($ts->stats->{sessions_prepared}, 0, 'nothing prepared at the end');

$ts->stop;
done_testing();
