# 018_synced.pl
#	What the tserver syncs before it answers a two-phase commit (issue 30),
#	counted by RocksDB's statistics (tserver --statistics: the Stats field
#	wal_syncs, RocksDB's rocksdb.wal.synced):
#	- PREPARE_OK comes after a sync of the write-ahead log (the prepared
#	  record);
#	- RESOLVE_OK (commit) comes after another, also when the connection
#	  that prepared the session resolves it (the backend, right after
#	  Postgres' commit record): its publish once went unsynced, so that a
#	  power loss could bring a committed session back prepared;
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

sub resolve_own
{
	my ($ts, $sock, $gid) = @_;
	my $before = wal_syncs($ts);
	my ($type, $payload) = request($sock, FRAME_RESOLVE, pb_field_bytes(1, $gid) . pb_field_varint(2, 1));
	is(reply_outcome(FRAME_RESOLVE_OK, $type, $payload), '', "$gid: resolved (commit) by its own connection");
	close($sock);
	return wal_syncs($ts) - $before;
}

# 4 MB of session memory: 100000 rows spill to SST files
my $ts = TcopyTest->new(extra_args => [ '--statistics', '--session-memory-mb', 4 ]);
$ts->start or die 'tserver did not start';
is($ts->cli('load', 'synced', '--rows', 1)->{rc}, 0, 'a table is made');

my ($sock, $synced) = prepare_session($ts, 'synced', 'tcopy:18:small', 10, 2000);
cmp_ok($synced, '>=', 1, 'PREPARE_OK came after a sync of the write-ahead log');
cmp_ok(resolve_own($ts, $sock, 'tcopy:18:small'), '>=', 1,
	"RESOLVE_OK by the session's own connection came after another");

($sock, $synced) = prepare_session($ts, 'synced', 'tcopy:18:big', 100_000, 100_000);
cmp_ok($synced, '>=', 1, 'a spilled session: PREPARE_OK after a sync');
cmp_ok(resolve_own($ts, $sock, 'tcopy:18:big'), '>=', 1, '... and RESOLVE_OK after another');
is($ts->checksum('synced')->{rows}, 1 + 2000 + 100_000, 'every row of both sessions is there');
$ts->stop;

my $ns = TcopyTest->new(extra_args => [ '--statistics', '--no-sync' ]);
$ns->start or die 'tserver did not start';
is($ns->cli('load', 'synced', '--rows', 1)->{rc}, 0, '--no-sync: a table is made');
($sock, $synced) = prepare_session($ns, 'synced', 'tcopy:18:nosync', 10, 2000);
is($synced + resolve_own($ns, $sock, 'tcopy:18:nosync'), 0, '--no-sync: nothing is synced');
like($ns->log_contents, qr/--no-sync: nothing is synced; a machine crash may lose committed and prepared transactions/,
	'--no-sync says what it gives up');
$ns->stop;
done_testing();
