# 018_synced.pl
#	What the tserver syncs before it answers a two-phase commit (issue 30),
#	counted by RocksDB's statistics (tserver --statistics: the Stats field
#	wal_syncs, RocksDB's rocksdb.wal.synced):
#	- PREPARE_OK comes after a sync of the write-ahead log (the prepared
#	  record);
#	- RESOLVE_OK (commit) does not wait for one (issue 46): the publish is
#	  a lazy write (Stats.lazy_writes), its record standing for it, made
#	  durable by the next sync: the background syncer's within 100 ms when
#	  nothing else syncs (Stats.wal_background_syncs), or the next
#	  PREPARE's;
#	- LIST_PREPARED, after which recovery forgets the records of sessions
#	  not listed, and a RESOLVE answered NOT_FOUND sync what is pending
#	  first, and the next PREPARE's sync covers it (a tserver without the
#	  background syncer, TSERVER_TEST_NO_WAL_SYNCER, so that each sync is
#	  counted where it happens);
#	- a spilled session (SST files in its staging directory) prepares and
#	  commits the same way, its rows all there;
#	- with --no-sync nothing is synced (for measurements only).
#	What a power loss drops is not simulated here: the syncs are counted.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all request reply_outcome);

sub wal_syncs
{
	my ($ts) = @_;
	my $stats = $ts->stats or die 'tserver-cli stats failed';
	return $stats->{wal_syncs} // die 'no wal_syncs in the stats';
}

# a session of n rows of table on a new connection, prepared under gid:
# the connection, which stays open
sub prepare_session
{
	my ($ts, $table, $gid, $first, $n) = @_;
	my $sock = $ts->connect_ready or die 'no connection';
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, $table));
	die 'OPEN_TABLE failed' unless ($type // 0) == FRAME_TABLE_INFO;
	my $table_id = pb_decode($payload)->{1}[0];
	($type) = request($sock, FRAME_BEGIN, '');
	die 'BEGIN failed' unless ($type // 0) == FRAME_BEGIN_OK;
	my $seq = 0;
	for (my $i = $first; $i < $first + $n; $i += 1000)
	{
		my $rows = join('', map { pb_field_bytes(3, pb_field_packed_sint64(1, $_, 1, 3) . pb_field_bytes(3, ' ' x 84)) }
			$i .. ($i + 999 < $first + $n - 1 ? $i + 999 : $first + $n - 1));
		($type, $payload) = request($sock, FRAME_WRITE, pb_field_varint(1, ++$seq) . pb_field_varint(2, $table_id) . $rows);
		die 'WRITE failed: ' . reply_outcome(FRAME_ACK, $type, $payload) unless ($type // 0) == FRAME_ACK;
	}
	my $before = wal_syncs($ts);
	($type, $payload) = request($sock, FRAME_PREPARE, pb_field_varint(1, $seq) . pb_field_varint(2, $n)
		  . pb_field_bytes(3, $gid));
	is(reply_outcome(FRAME_PREPARE_OK, $type, $payload), '', "$gid: prepared");
	return ($sock, wal_syncs($ts) - $before);
}

# resolve (commit) gid on its own connection; the lazy writes it made
sub resolve_own
{
	my ($ts, $sock, $gid) = @_;
	my $before = $ts->stats->{lazy_writes} // die 'no lazy_writes in the stats';
	my ($type, $payload) = request($sock, FRAME_RESOLVE, pb_field_bytes(1, $gid) . pb_field_varint(2, 1));
	is(reply_outcome(FRAME_RESOLVE_OK, $type, $payload), '', "$gid: resolved (commit) by its own connection");
	close($sock);
	return $ts->stats->{lazy_writes} - $before;
}

# wait (10 s at most) until the background syncer has synced more than n times
sub background_syncs_above
{
	my ($ts, $n) = @_;
	for (1 .. 100)
	{
		my $stats = $ts->stats;
		return 1 if $stats->{wal_background_syncs} > $n;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# 4 MB of session memory: 100000 rows spill to SST files
my $ts = TcopyTest->new(extra_args => [ '--statistics', '--session-memory-mb', 4 ]);
$ts->start or die 'tserver did not start';
is($ts->cli('load', 'synced', '--rows', 1)->{rc}, 0, 'a table is made');

my ($sock, $synced) = prepare_session($ts, 'synced', 'tcopy:18:small', 10, 2000);
cmp_ok($synced, '>=', 1, 'PREPARE_OK came after a sync of the write-ahead log');
my $background = $ts->stats->{wal_background_syncs};
is(resolve_own($ts, $sock, 'tcopy:18:small'), 1,
	"RESOLVE_OK by the session's own connection: its publish is one lazy write");
ok(background_syncs_above($ts, $background), 'the background syncer synced the log after it');

($sock, $synced) = prepare_session($ts, 'synced', 'tcopy:18:big', 100_000, 100_000);
cmp_ok($synced, '>=', 1, 'a spilled session: PREPARE_OK after a sync');
cmp_ok(resolve_own($ts, $sock, 'tcopy:18:big'), '>=', 1, '... and its last step is a lazy write');
is($ts->checksum('synced')->{rows}, 1 + 2000 + 100_000, 'every row of both sessions is there');
$ts->stop;

# without the background syncer: every sync counted where it is made
{
	local $ENV{TSERVER_TEST_NO_WAL_SYNCER} = 1;
	my $lz = TcopyTest->new(extra_args => [ '--statistics' ]);
	$lz->start or die 'tserver did not start';
	is($lz->cli('load', 'synced', '--rows', 1)->{rc}, 0, 'no syncer: a table is made');
	my $check_pending = sub {
		my ($what, $request) = @_;
		my ($s) = prepare_session($lz, 'synced', "tcopy:18:$what", 10_000, 10);
		my $before = wal_syncs($lz);
		is(resolve_own($lz, $s, "tcopy:18:$what"), 1, "$what: the publish is a lazy write");
		is(wal_syncs($lz) - $before, 0, "$what: ... not synced by RESOLVE_OK");
		my $c = $lz->connect_ready or die 'no connection';
		my ($type) = $request->($c, "tcopy:18:$what");
		close($c);
		is(wal_syncs($lz) - $before, 1, "$what: synced before it is answered ($type)");
	};
	$check_pending->('listed', sub { request($_[0], FRAME_LIST_PREPARED, '') });
	$check_pending->('not_found', sub {
		request($_[0], FRAME_RESOLVE, pb_field_bytes(1, $_[1]) . pb_field_varint(2, 1))
	});
	my ($s) = prepare_session($lz, 'synced', 'tcopy:18:covered', 20_000, 10);
	resolve_own($lz, $s, 'tcopy:18:covered');
	my $before = wal_syncs($lz);
	($s, $synced) = prepare_session($lz, 'synced', 'tcopy:18:next', 30_000, 10);
	is($synced, 1, 'the next PREPARE syncs once, and so covers the pending publish');
	my $c = $lz->connect_ready or die 'no connection';
	request($c, FRAME_LIST_PREPARED, '');
	close($c);
	is(wal_syncs($lz) - $before, 1, '... which LIST_PREPARED then need not sync');
	close($s);
	like($lz->log_contents, qr/TSERVER_TEST_NO_WAL_SYNCER/, 'the test switch says so in the log');
	$lz->stop;
}

my $ns = TcopyTest->new(extra_args => [ '--statistics', '--no-sync' ]);
$ns->start or die 'tserver did not start';
is($ns->cli('load', 'synced', '--rows', 1)->{rc}, 0, '--no-sync: a table is made');
($sock, $synced) = prepare_session($ns, 'synced', 'tcopy:18:nosync', 10, 2000);
my $before = wal_syncs($ns);
resolve_own($ns, $sock, 'tcopy:18:nosync');
is($synced + wal_syncs($ns) - $before, 0, '--no-sync: nothing is synced');
like($ns->log_contents, qr/--no-sync: nothing is synced; a machine crash may lose committed and prepared transactions/,
	'--no-sync says what it gives up');
$ns->stop;
done_testing();
