# 115_restart.pl
#	Restarts around statements and transactions:
#	- the tserver restarted between statements: the next COPY, INSERT and
#	  scan of a session whose cached connection died reconnect on their
#	  own;
#	- the tserver restarted inside a transaction (BEGIN; COPY; restart;
#	  then another COPY, a read of the table, or COMMIT; or a first read
#	  under REPEATABLE READ, then another): that statement fails loudly
#	  (a read: 08006, the write session or the snapshot lost; COMMIT:
#	  in its PREPARE, before Postgres' commit record), the transaction
#	  cannot commit, nothing of it is in the table, and the tserver holds
#	  nothing prepared (the restart lost the unprepared session);
#	- Postgres stopped with pg_ctl -m immediate in the middle of a COPY
#	  whose session has spilled to staging files (the tserver runs with
#	  --session-memory-mb 1): the tserver notices the dead connection and
#	  drops the session (no session, nothing staged or spilled, staging/
#	  empty), and after restarting both, nothing of the COPY is visible and
#	  the next COPY works.
#	Every check of a table compares its count and checksum with those of
#	the loads that committed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum
  checksum_add wait_until wait_tserver_idle staging_entries held_copy_sql
  assert_tserver_unprepared);

my $rows = 20_000;			# rows of each small load
my $big_rows = 500_000;		# the COPY cut by the immediate stop
my $IDLE_TIMEOUT = 5;		# seconds the tserver may take to drop a dead session

my ($node, $ts) = setup_node(tserver => { extra_args => [ '--session-memory-mb', '1' ] });
$node->safe_psql('postgres', accounts_ddl(heap => ['reference'], tcopy => ['acc']));

# Load k: aids k * rows + 1 .., and its checksum (from a heap table).
sub load_file
{
	my ($k) = @_;
	my $file = $node->basedir . "/load.$k.csv";
	write_accounts_csv($file, $k * $rows + 1, $rows);
	$node->safe_psql('postgres', "TRUNCATE reference; COPY reference FROM '$file' (FORMAT csv)");
	return ($file, table_checksum($node, 'reference'));
}

my $expected = '0 0 0 0';
my $s = TcopyPgTest::Session->new($node, timeout => 120);

# ---- restart between statements ----
my ($f0, $sum0) = load_file(0);
my ($out, $err) = $s->run("COPY acc FROM '$f0' (FORMAT csv);");
is($out, "COPY $rows", 'between: a COPY before the restart') or diag($err);
$expected = checksum_add($expected, $sum0);
$ts->restart or BAIL_OUT('tserver did not restart');

my ($f1, $sum1) = load_file(1);
($out, $err) = $s->run("COPY acc FROM '$f1' (FORMAT csv);");
is($out, "COPY $rows", 'between: the next COPY in the session reconnects on its own') or diag($err);
is($err, '', '... without an error or a warning');
$expected = checksum_add($expected, $sum1);
is($s->run_ok("SELECT count(*) || ' ' || sum(aid) FROM acc;"),
	(2 * $rows) . ' ' . TcopyTest::aid_sum(2 * $rows), 'between: a scan in the same session sees both loads');
is(table_checksum($node, 'acc'), $expected, 'between: the table holds both loads');

$ts->restart or BAIL_OUT('tserver did not restart');
($out, $err) = $s->run("INSERT INTO acc VALUES (0, 0, 0, 'inserted');");
is($out, 'INSERT 0 1', 'between: an INSERT after another restart reconnects on its own') or diag($err);
$expected = checksum_add($expected, $node->safe_psql('postgres', q{
	SELECT count(*) || ' ' || sum(aid) || ' ' || sum(abalance) || ' ' || sum(hashtext(a::text)::bigint)
	FROM (VALUES (0, 0, 0, 'inserted'::char(84))) a(aid, bid, abalance, filler)}));
$ts->restart or BAIL_OUT('tserver did not restart');
is(table_checksum($node, 'acc'), $expected, 'between: the table holds the loads and the inserted row');

# ---- restart inside a transaction ----
my ($f2, $sum2) = load_file(2);
my ($f3, $sum3) = load_file(3);
($out, $err) = $s->run("BEGIN; COPY acc FROM '$f2' (FORMAT csv);");
is($out, "BEGIN\nCOPY $rows", 'in a transaction, then COPY: the first COPY') or diag($err);
$ts->restart or BAIL_OUT('tserver did not restart');
($out, $err) = $s->run("COPY acc FROM '$f3' (FORMAT csv);");
like($err, qr/ERROR:  .*tserver/, 'in a transaction, then COPY: the COPY after the restart fails, naming the tserver');
is($out, '', '... reporting no rows copied');
note("in a transaction, then COPY: $err");
($out, $err) = $s->run('COMMIT;');
is($out, 'ROLLBACK', '... and COMMIT rolls the transaction back');
is(table_checksum($node, 'acc'), $expected, 'in a transaction, then COPY: nothing of the transaction is there');

# a read of the table the transaction wrote: the lost write session, in
# the words and SQLSTATE of a lost connection, never an internal error
($out, $err) = $s->run("\\set VERBOSITY verbose\nBEGIN; COPY acc FROM '$f2' (FORMAT csv);");
is($out, "BEGIN\nCOPY $rows", 'in a transaction, then a read: the COPY') or diag($err);
$ts->restart or BAIL_OUT('tserver did not restart');
($out, $err) = $s->run('SELECT count(*) FROM acc;');
like($err, qr/ERROR:  08006: could not read foreign table "acc": this transaction's write session on the tserver was lost/,
	'in a transaction, then a read: the read fails with 08006, naming the table and the lost session');
like($err, qr/HINT:  Roll the transaction back and run it again\./, '... with a hint to retry');
unlike($err, qr/XX000|[0-9a-f]{32}/, '... and no internal error or tserver table name');
($out, $err) = $s->run("ROLLBACK;\n\\set VERBOSITY default");
is(table_checksum($node, 'acc'), $expected, 'in a transaction, then a read: nothing of the transaction is there');

# REPEATABLE READ: the snapshot the first read took is lost with the restart
($out, $err) = $s->run("\\set VERBOSITY verbose\nBEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM acc;");
like($out, qr/^BEGIN\n\d+$/, 'repeatable read: the first read') or diag($err);
$ts->restart or BAIL_OUT('tserver did not restart');
($out, $err) = $s->run('SELECT count(*) FROM acc;');
like($err, qr/ERROR:  08006: could not read foreign table "acc": this transaction's snapshot on the tserver was lost/,
	"repeatable read: the next read fails with 08006, naming the lost snapshot");
($out, $err) = $s->run("ROLLBACK;\n\\set VERBOSITY default");

($out, $err) = $s->run("BEGIN; COPY acc FROM '$f2' (FORMAT csv);");
is($out, "BEGIN\nCOPY $rows", 'in a transaction, then COMMIT: the COPY') or diag($err);
$ts->restart or BAIL_OUT('tserver did not restart');
($out, $err) = $s->run('COMMIT;');
like($err, qr/ERROR:  .*tserver/, 'in a transaction, then COMMIT: COMMIT fails, naming the tserver');
is($out, '', '... and reports no COMMIT');
note("in a transaction, then COMMIT: $err");
is(table_checksum($node, 'acc'), $expected, 'in a transaction, then COMMIT: nothing of the transaction is there');
assert_tserver_unprepared($ts, 'in a transaction, then COMMIT');

($out, $err) = $s->run("COPY acc FROM '$f2' (FORMAT csv);");
is($out, "COPY $rows", 'after the failed transactions, the session copies again') or diag($err);
$expected = checksum_add($expected, $sum2);
is(table_checksum($node, 'acc'), $expected, '... and the table holds every committed load');
$s->quit;

# ---- Postgres stopped in the middle of a COPY ----
my $big = $node->basedir . '/big.csv';
write_accounts_csv($big, 10_000_001, $big_rows);
# after its first 200k rows, the COPY gets one every 20 ms: still running
# when Postgres stops, however fast the machine
my $p = TcopyPgTest::Psql->start($node, held_copy_sql($node, 'acc', $big, 200_000), timeout => 120);
my $spilled = wait_until(30, sub {
	return -1 if $p->done;
	my $stats = $ts->stats;
	return $stats && $stats->{spilled_bytes} > 0 ? $stats->{spilled_bytes} : 0;
});
ok($spilled > 0, 'immediate stop: the COPY is running and the tserver has spilled part of its session');
note("the tserver spilled $spilled bytes; staging holds " . scalar(staging_entries($ts)) . " entries");
$node->stop('immediate');
my ($rc, $pout, $perr) = $p->finish;
is($rc, 2, 'immediate stop: psql reports the connection lost') or diag($perr);
unlike($pout, qr/^COPY/m, '... and no rows copied');
my ($idle, $stats) = wait_tserver_idle($ts, $IDLE_TIMEOUT);
ok($idle, "immediate stop: within $IDLE_TIMEOUT s the tserver drops the dead connection's session (none is prepared)")
  or diag(explain($stats));
ok(wait_until($IDLE_TIMEOUT, sub { !staging_entries($ts) }), 'immediate stop: the staging directory is empty')
  or diag(join("\n", staging_entries($ts)));

$ts->restart or BAIL_OUT('tserver did not restart');
$node->start;
($idle, $stats) = wait_tserver_idle($ts, 1);
ok($idle, 'after restarting both: the tserver holds no session, prepared or not') or diag(explain($stats));
is(scalar(staging_entries($ts)), 0, 'after restarting both: the staging directory is empty');
is(table_checksum($node, 'acc'), $expected, 'after restarting both: nothing of the cut COPY is visible');
my ($f4, $sum4) = load_file(4);
(undef, $out, $err) = TcopyPgTest::Psql->start($node, "COPY acc FROM '$f4' (FORMAT csv)", timeout => 60)->finish;
is($out, "COPY $rows", 'after restarting both: the next COPY works') or diag($err);
$expected = checksum_add($expected, $sum4);
is(table_checksum($node, 'acc'), $expected, '... and the table holds every committed load');

$node->stop;
$ts->stop;
done_testing();
