# 198_sessions_files.pl
#	More of what a tserver stores and does, seen from SQL (issue 29):
#	- tcopy.server_sessions(server): during a held COPY by alice, her
#	  session is listed with her backend's pid, database, role and the
#	  rows received so far; bob (USAGE on the server, no privileges of
#	  alice's role) sees the backend but not what it holds; an open
#	  transaction's INSERT is listed too, and nothing once both ended;
#	- tcopy.copy_progress: the held COPY beside pg_stat_progress_copy, with
#	  its rate;
#	- tcopy.table_files(regclass): no files while the rows are in memtables,
#	  files by level once the tserver flushed them (a restart), a
#	  partitioned table's partitions each;
#	- tcopy.server_version(server): what tserver --version says;
#	- tcopy.server_stats: connections not yet authenticated, counted.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Socket::UNIX;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv held_copy_sql release_held_copy wait_until
  sqlstates);

# a token, not the uid: a raw connection of this user then counts as not
# yet authenticated until it proves one
my $TOKEN = 'sessions-token-0123456789';
my ($node, $ts) = setup_node(name => 'sessions', tserver => { token => $TOKEN });
$node->safe_psql('postgres', qq{
	ALTER USER MAPPING FOR PUBLIC SERVER ts OPTIONS (ADD token '$TOKEN');
});
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE t (aid int NOT NULL, bid int, abalance int, filler text)
		SERVER ts OPTIONS (key 'aid');
	CREATE TABLE p (id int NOT NULL, v text) PARTITION BY HASH (id);
	CREATE FOREIGN TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 0)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE p1 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 1)
		SERVER ts OPTIONS (key 'id');
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT SELECT, INSERT ON t, p TO alice;
	GRANT SELECT ON p TO bob;
	GRANT USAGE ON FOREIGN SERVER ts TO alice, bob;
	GRANT pg_read_server_files, pg_execute_server_program TO alice;
});

sub sessions
{
	my ($role) = @_;
	my $sql = "SELECT session_id, state, rows, pid, datname, usesysid::regrole, "
	  . "backend_xid IS NOT NULL, staged_bytes + spilled_bytes, tables "
	  . "FROM tcopy.server_sessions('ts') ORDER BY session_id";
	$sql = "SET ROLE $role; $sql" if $role;
	return [ map { [ split /\|/, $_, -1 ] } split /\n/, $node->safe_psql('postgres', $sql) ];
}

is_deeply(sessions(), [], 'no session open: none listed');
is($node->safe_psql('postgres', "SELECT tcopy.server_version('ts')"),
	(split ' ', `$ENV{TSERVER_BIN} --version`)[1] // 'unknown',
	'server_version: what tserver --version says');

# ---- a held COPY by alice ----
my $csv = $node->basedir . '/accounts.csv';
write_accounts_csv($csv, 1, 60_000);
my $s = TcopyPgTest::Session->new($node, user => 'alice', load => 0);
my $pid = $s->backend_pid;
$s->send(held_copy_sql($node, 't', $csv, 20_000) . ';');
my $list;
ok(wait_until(60, sub {
	$list = sessions();
	return @$list == 1 && $list->[0][2] > 0;
}), 'a held COPY: its session is listed, with rows received') or diag(explain($list));
my ($row) = @$list;
is($row->[1], 'writing', '... writing');
is($row->[3], $pid, "... its backend's pid");
is($row->[4], 'postgres', '... its database');
is($row->[5], 'alice', '... its role');
ok($row->[7] > 0, "... the bytes it holds ($row->[7])");
is($row->[8], 1, '... one table');

my $bobs = sessions('bob');
is(scalar @$bobs, 1, 'bob sees the session too');
is($bobs->[0][3], $pid, '... its backend');
is($bobs->[0][2], '', '... but not its rows (no privileges of alice)');
is($bobs->[0][7], '', '... nor its bytes');
is(sessions('alice')->[0][3], $pid, 'alice sees her own');
ok(sessions('alice')->[0][2] > 0, '... with its rows');

my $progress = $node->safe_psql('postgres',
	"SELECT relation, tuples_processed > 0, rows_per_second > 0, bytes_per_second > 0, "
	  . "elapsed > '0'::interval FROM tcopy.copy_progress WHERE pid = $pid");
is($progress, 't|t|t|t|t', 'copy_progress: the COPY, its rows, its rates');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tcopy.copy_progress WHERE pid <> ' . $pid),
	'0', '... and no other');

release_held_copy($node);
my ($out, $err) = $s->result;
is($out, 'COPY 60000', 'the COPY ends') or diag($err);
ok(wait_until(30, sub { @{ sessions() } == 0 }), 'its session is gone from the list');

# ---- an open transaction's INSERT ----
$s->run_ok("BEGIN; INSERT INTO t VALUES (100001, 1, 0, 'x');");
$list = sessions();
is(scalar @$list, 1, 'an open transaction that inserted: its session listed');
is($list->[0][3], $pid, '... with its pid');
my $xid = $node->safe_psql('postgres', "SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = $pid");
is($list->[0][6], $xid, "... and its transaction id as pg_stat_activity shows it ($xid)");
$s->run_ok('COMMIT;');
ok(wait_until(30, sub { @{ sessions() } == 0 }), 'committed: gone from the list');

# ---- files by level ----
$node->safe_psql('postgres', "INSERT INTO p SELECT g, 'x' FROM generate_series(1, 3000) g");
$ts->restart;	# recovery flushes the write-ahead log's rows to SST files
my $files = $node->safe_psql('postgres',
	"SELECT relation, sum(files), sum(bytes) > 0, min(level) >= 0 FROM tcopy.table_files('t') GROUP BY 1");
like($files, qr/^t\|[1-9]\d*\|t\|t$/, "table_files: t's rows in SST files ($files)");
$files = $node->safe_psql('postgres',
	"SELECT string_agg(DISTINCT relation::text, ',' ORDER BY relation::text) FROM tcopy.table_files('p')");
is($files, 'p0,p1', 'a partitioned table: each partition');
my ($rc, $out2, $err2) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET ROLE bob; SELECT * FROM tcopy.table_files('t')");
is(join(',', sqlstates($err2)), '42501', 'a role that may not SELECT from it is refused (42501)');

# ---- connections not yet authenticated ----
my @idle = map { IO::Socket::UNIX->new(Peer => $ts->socket_path) } 1 .. 3;
ok(scalar(grep { defined } @idle) == 3, 'three connections that never say hello');
my $unauth;
ok(wait_until(10, sub {
	$unauth = $node->safe_psql('postgres',
		"SELECT value FROM tcopy.server_stats('ts') WHERE stat = 'connections_unauthenticated'");
	return $unauth >= 3;
}), "server_stats: connections not yet authenticated ($unauth)");
close($_) for @idle;

$s->quit;
$node->stop;
$ts->stop;
done_testing();
