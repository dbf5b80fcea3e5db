# 008_prepared.pl
#	Prepared sessions (two-phase commit) with real processes.  Sessions
#	prepared by tserver-cli load --prepare outlive their connection and a
#	kill -9 of the tserver, are listed orphaned, and are published
#	(commit: every row exactly once) or discarded (abort: nothing).  A
#	kill -9 at each test crash point of prepare, publish and discard
#	(TSERVER_TEST_CRASH_AT), a restart and a second resolve leave the rows
#	exactly once (count and checksum against a table loaded the ordinary
#	way), a staged TRUNCATE applied once; a later session of the table is
#	held back until then (019_in_doubt.pl).  A live connection's prepared
#	session is busy for others, cannot be followed by BEGIN, and is
#	orphaned when its connection ends; a gid is prepared once at a time.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use POSIX qw(:sys_wait_h);
use Test::More;
use TcopyTest qw(:all);

# 4 MB of session memory: 100000 rows spill to SST files; a write held
# back behind an orphaned session fails after 1 s (019_in_doubt.pl)
my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 4, '--in-doubt-wait-ms', 1000 ]);
$ts->start or die "tserver did not start";

my $BIG = 100_000;
my $SMALL = 2_000;

sub cli_ok
{
	my ($name, @args) = @_;
	my $r = $ts->cli(@args);
	is($r->{rc}, 0, $name) or diag("$r->{cmd}: exit $r->{rc}\nstdout: $r->{out}\nstderr: $r->{err}");
	return $r;
}

# gid => attached ('yes'/'no') of what `tserver-cli prepared` lists.
sub listed
{
	my ($prefix) = @_;
	my $list = $ts->prepared($prefix // 'tcopy:8:') or return undef;
	return { map { my @f = split /\t/, $_->{line}; ($f[0] => $f[4]) } @$list };
}

sub staging_entries
{
	my $dir = $ts->data_dir . '/staging';
	opendir(my $dh, $dir) or return -1;
	my @e = grep { !/^\.\.?$/ } readdir $dh;
	closedir $dh;
	return scalar @e;
}

# the load arguments of a session of kind small or big
sub session_args
{
	my ($kind, @more) = @_;
	return ('--rows', $kind eq 'big' ? $BIG : $SMALL, '--value', 7,
		$kind eq 'big' ? ('--shuffle', '--seed', 8) : (), @more);
}

# ---- reference tables, loaded the ordinary way ----

cli_ok('reference: small', 'load', 'ref_small', session_args('small'));
cli_ok('reference: big', 'load', 'ref_big', session_args('big'));
cli_ok('reference: the seed rows', 'load', 'ref_seed', '--rows', 1000, '--value', 1);
my %ref = map { $_ => $ts->checksum("ref_$_") } qw(small big seed);
is($ref{big}{rows}, $BIG, "the big reference has $BIG rows");

# ---- prepared, kill -9, restart, listed orphaned, resolved ----

my $r = cli_ok('load --prepare a small session', 'load', 'p_small', session_args('small'),
	'--prepare', 'tcopy:8:small');
like($r->{out}, qr/^prepared $SMALL rows under "tcopy:8:small"/, 'it says it prepared');
cli_ok('load --prepare a big (spilled) session', 'load', 'p_big', session_args('big'),
	'--prepare', 'tcopy:8:big');
# (into a table of its own: tcopy:8:big, orphaned, holds p_big back)
cli_ok('load --prepare one more, to discard', 'load', 'p_discard', '--rows', 50_000, '--start', 500_001,
	'--prepare', 'tcopy:8:discard');
is_deeply(listed(), { 'tcopy:8:small' => 'no', 'tcopy:8:big' => 'no', 'tcopy:8:discard' => 'no' },
	'listed: three prepared sessions, orphaned (their cli has exited)');
$r = $ts->cli('prepared', '--prefix', 'tcopy:8:b');
like($r->{out}, qr/\A# gid\trows\tbytes\tprepared_at\tattached\n/, 'prepared prints a header');
like($r->{out}, qr/^tcopy:8:big\t$BIG\t\d+\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\tno$/m,
	'and a line: gid, rows, bytes, prepared at, attached');
unlike($r->{out}, qr/tcopy:8:small/, '--prefix filters');
is($ts->stats->{sessions_prepared}, 3, 'stats: sessions_prepared 3');
is($ts->count('p_small'), 0, 'nothing of the small session is visible');
is($ts->count('p_big'), 0, 'nothing of the big session is visible');

$ts->kill9;
ok($ts->start, 'the tserver starts again after kill -9');
is_deeply(listed(), { 'tcopy:8:small' => 'no', 'tcopy:8:big' => 'no', 'tcopy:8:discard' => 'no' },
	'after kill -9 and a restart: the same three, orphaned');
is(staging_entries(), 2, 'the two spilled sessions kept their staging directories');

$r = cli_ok('resolve the small session: commit', 'resolve', 'tcopy:8:small', 'commit');
is($r->{out}, "committed $SMALL rows prepared under \"tcopy:8:small\"\n", 'resolve says so');
is_deeply($ts->checksum('p_small'), $ref{small}, 'the small session\'s rows, exactly');
cli_ok('resolve the big session: commit', 'resolve', 'tcopy:8:big', 'commit');
is_deeply($ts->checksum('p_big'), $ref{big}, 'the big session\'s rows, exactly');
$r = cli_ok('resolve the third: abort', 'resolve', 'tcopy:8:discard', 'abort');
like($r->{out}, qr/^discarded 50000 rows/, 'resolve says discarded');
is($ts->count('p_discard'), 0, 'nothing of the discarded session');
$r = cli_ok('resolve again: exit 0', 'resolve', 'tcopy:8:big', 'commit');
like($r->{out}, qr/^not found: nothing is prepared under "tcopy:8:big"/, 'resolve again: not found');
is_deeply(listed(), {}, 'nothing is listed');
is($ts->stats->{sessions_prepared}, 0, 'stats: sessions_prepared 0');
is(staging_entries(), 0, 'the staging directory is empty');

# ---- a SIGTERM keeps prepared sessions too ----

cli_ok('load --prepare before a SIGTERM', 'load', 'p_term', session_args('big'),
	'--prepare', 'tcopy:8:term');
ok($ts->restart, 'SIGTERM and start');
is_deeply(listed(), { 'tcopy:8:term' => 'no' }, 'still prepared after a clean restart');
cli_ok('and resolved', 'resolve', 'tcopy:8:term', 'commit');
is_deeply($ts->checksum('p_term'), $ref{big}, 'its rows, exactly');

# ---- kill -9 at each crash point ----

# Restart the tserver with TSERVER_TEST_CRASH_AT=$point.
sub arm
{
	my ($point) = @_;
	$ts->stop("tserver exits with status 0 on SIGTERM before arming $point");
	local $ENV{TSERVER_TEST_CRASH_AT} = $point;
	return $ts->start;
}

# The armed tserver killed itself at $point: reap it, start it unarmed.
sub crashed
{
	my ($name, $point) = @_;
	my $status = $ts->wait_exit(30);
	ok(defined $status && ($status & 127) == 9, "$name: the tserver died of SIGKILL")
	  or diag("status " . ($status // 'none (still running)') . "\n"
		  . TcopyTest::tail($ts->log_contents, 20));
	if (!defined $status)
	{
		kill 'KILL', $ts->pid;
		$ts->wait_exit(30);
	}
	like($ts->log_contents, qr/TSERVER_TEST_CRASH_AT=\Q$point\E: the tserver kills itself here/,
		"$name: at the crash point");
	$ts->check_log;
	return $ts->start;
}

my @cases = (
	# point, session kind, resolve by, a later write after the crash
	[ 'after-prepare-record', 'small', 'commit' ],
	[ 'after-prepare-record', 'big', 'commit' ],
	[ 'after-truncates', 'big', 'commit' ],
	[ 'after-ingest', 'big', 'commit', 1 ],
	[ 'before-record-delete', 'small', 'commit' ],
	[ 'before-record-delete', 'big', 'commit' ],
	[ 'after-record-delete', 'small', 'commit' ],
	[ 'after-record-delete', 'big', 'commit' ],
	[ 'before-record-delete', 'big', 'abort' ],
	[ 'after-record-delete', 'big', 'abort' ],
);
my $n = 0;
for my $case (@cases)
{
	my ($point, $kind, $decision, $later) = @$case;
	my $table = 'crash_' . ++$n;
	my $gid = "tcopy:8:crash:$n";
	my $name = "$point, $kind session, $decision";

	# the table holds 1000 rows; the session truncates it, then loads
	cli_ok("$name: seed rows", 'load', $table, '--rows', 1000, '--value', 1);
	if ($point eq 'after-prepare-record')
	{
		ok(arm($point), "$name: armed");
		$r = $ts->cli('load', $table, session_args($kind, '--truncate', '--prepare', $gid));
		isnt($r->{rc}, 0, "$name: load --prepare fails: the tserver died");
		ok(crashed($name, $point), "$name: restarted");
	}
	else
	{
		cli_ok("$name: load --prepare", 'load', $table, session_args($kind, '--truncate', '--prepare', $gid));
		ok(arm($point), "$name: armed");
		$r = $ts->resolve($gid, $decision eq 'commit');
		isnt($r->{rc}, 0, "$name: resolve fails: the tserver died");
		ok(crashed($name, $point), "$name: restarted");
	}
	if ($point eq 'after-record-delete')
	{
		is_deeply(listed("tcopy:8:crash:$n"), {}, "$name: no longer prepared");
	}
	else
	{
		is_deeply(listed("tcopy:8:crash:$n"), { $gid => 'no' }, "$name: still prepared, orphaned");
	}
	if ($point eq 'after-truncates' || $point eq 'after-ingest')
	{
		$r = $ts->resolve($gid, 0);
		is($r->{rc}, 1, "$name: half published: an abort is refused");
		like($r->{err}, qr/only a commit can resolve it/, "$name: saying why");
	}
	# after the ingestion, a later session that would overwrite one of the
	# session's rows is held back until the session is resolved
	if ($later)
	{
		$r = $ts->cli('load', $table, '--rows', 1, '--start', 1, '--value', 99);
		isnt($r->{rc}, 0, "$name: a later session is held back, then refused");
		like($r->{err}, qr/"\Q$gid\E", which changes table "$table", is not yet resolved/,
			"$name: saying by which session");
	}

	$r = $ts->resolve($gid, $decision eq 'commit');
	is($r->{rc}, 0, "$name: resolved again") or diag($r->{err});
	chomp(my $said = $r->{out});
	like($said, $point eq 'after-record-delete' ? qr/^not found/
		: $decision eq 'commit' ? qr/^committed/ : qr/^discarded/, "$name: $said");
	if ($later)
	{
		cli_ok("$name: the later session, once the session is resolved", 'load', $table,
			'--rows', 1, '--start', 1, '--value', 99);
		is($ts->count($table), $BIG, "$name: $BIG rows, once");
		is($ts->cli('scan', $table, '--columns', 'abalance', '--lower', 1, '--upper', 2)->{out},
			"99\n7\n", "$name: the later session's row is on top");
	}
	else
	{
		is_deeply($ts->checksum($table), $decision eq 'commit' ? $ref{$kind} : $ref{seed},
			"$name: " . ($decision eq 'commit' ? 'the session\'s rows exactly, the old ones truncated'
				: 'the table as it was'));
	}
	is(staging_entries(), 0, "$name: the staging directory is empty");
}
is($ts->stats->{sessions_prepared}, 0, 'after the crashes: nothing prepared');

# ---- a live owner ----

# a session prepared on a raw connection, which stays open
sub raw_prepare
{
	my ($gid, $aid) = @_;
	my $sock = $ts->connect_ready or return undef;
	TcopyTest::send_frame($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'p_small'));
	my ($type, $payload) = TcopyTest::read_frame($sock);
	return undef unless ($type // 0) == FRAME_TABLE_INFO;
	my $table_id = pb_decode($payload)->{1}[0];
	TcopyTest::send_frame($sock, FRAME_BEGIN, '');
	($type) = TcopyTest::read_frame($sock);
	return undef unless ($type // 0) == FRAME_BEGIN_OK;
	my $row = pb_field_packed_sint64(1, $aid, 1, 3) . pb_field_bytes(3, ' ' x 84);
	TcopyTest::send_frame($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $table_id)
		  . pb_field_bytes(3, $row));
	($type) = TcopyTest::read_frame($sock);
	return undef unless ($type // 0) == FRAME_ACK;
	TcopyTest::send_frame($sock, FRAME_PREPARE, pb_field_varint(1, 1) . pb_field_varint(2, 1)
		  . pb_field_bytes(3, $gid));
	($type) = TcopyTest::read_frame($sock);
	return undef unless ($type // 0) == FRAME_PREPARE_OK;
	return $sock;
}

my $sock = raw_prepare('tcopy:8:live', 900_001);
ok($sock, 'a raw connection prepares a session and stays');
is_deeply(listed(), { 'tcopy:8:live' => 'yes' }, 'listed as attached');
$r = $ts->resolve('tcopy:8:live', 1);
is($r->{rc}, 1, 'resolve by another connection: exit 1');
like($r->{out}, qr/^busy: another connection owns the session prepared under "tcopy:8:live"/,
	'it is busy');
$r = $ts->cli('load', 'p_small', '--rows', 1, '--prepare', 'tcopy:8:live');
isnt($r->{rc}, 0, 'a second session prepared under the same gid is refused');
like($r->{err}, qr/already prepared/, 'saying so');

TcopyTest::send_frame($sock, FRAME_LIST_PREPARED, pb_field_bytes(1, 'tcopy:8:live'));
my ($type, $payload) = TcopyTest::read_frame($sock);
is($type, FRAME_PREPARED_LIST, 'LIST_PREPARED on the owner\'s connection');
my $sessions = pb_decode($payload // '')->{1} // [];
is(scalar @$sessions, 1, 'one session listed');
my $s = pb_decode($sessions->[0] // '');
is($s->{1}[0], 'tcopy:8:live', 'its gid');
is($s->{2}[0], 1, 'its rows');
is($s->{5}[0], 1, 'attached');

TcopyTest::send_frame($sock, FRAME_BEGIN, '');
($type, $payload) = TcopyTest::read_frame($sock);
is($type, FRAME_ERROR, 'BEGIN before resolving: ERROR');
my $e = pb_decode($payload // '');
is($e->{1}[0], ERROR_PROTOCOL, 'a protocol error');
like($e->{2}[0] // '', qr/must be resolved first/, 'saying why');
ok(TcopyTest::wait_closed($sock, 5), 'and the connection is closed');
close $sock;

my $orphaned;
for (1 .. 50)
{
	$orphaned = listed();
	last if ($orphaned->{'tcopy:8:live'} // '') eq 'no';
	select(undef, undef, undef, 0.1);
}
is_deeply($orphaned, { 'tcopy:8:live' => 'no' }, 'once its connection ended, orphaned');
cli_ok('and anyone resolves it', 'resolve', 'tcopy:8:live', 'commit');
is($ts->cli('scan', 'p_small', '--columns', 'abalance', '--lower', 900_001)->{out}, "3\n",
	'its row is there');

# the owner resolves its own session, then may begin again
$sock = raw_prepare('tcopy:8:own', 900_002);
ok($sock, 'another raw connection prepares a session');
TcopyTest::send_frame($sock, FRAME_RESOLVE, pb_field_bytes(1, 'tcopy:8:own') . pb_field_varint(2, 0));
($type, $payload) = TcopyTest::read_frame($sock);
is($type, FRAME_RESOLVE_OK, 'it resolves its own session (abort)');
my $ok = pb_decode($payload // '');
is($ok->{1}[0], RESOLVE_DONE, 'RESOLVE_DONE');
is($ok->{2}[0], 1, 'of 1 row');
TcopyTest::send_frame($sock, FRAME_RESOLVE, pb_field_bytes(1, 'tcopy:8:own') . pb_field_varint(2, 0));
($type, $payload) = TcopyTest::read_frame($sock);
is(pb_decode($payload // '')->{1}[0], RESOLVE_NOT_FOUND, 'once more: RESOLVE_NOT_FOUND');
TcopyTest::send_frame($sock, FRAME_BEGIN, '');
($type) = TcopyTest::read_frame($sock);
is($type, FRAME_BEGIN_OK, 'then it may begin again');
TcopyTest::send_frame($sock, FRAME_ABORT, '');
($type) = TcopyTest::read_frame($sock);
is($type, 13, 'and abort (ABORT_OK)');
close $sock;
is($ts->count('p_small'), $SMALL + 1, 'nothing of the discarded session');
is($ts->stats->{sessions_prepared}, 0, 'nothing prepared at the end');
is(staging_entries(), 0, 'and nothing staged');

$ts->stop;
done_testing();
