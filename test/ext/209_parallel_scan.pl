# 209_parallel_scan.pl
#	Parallel scans of tcopy tables (docs/scans.md, "Parallel scans"), with
#	the costs of parallelism set to 0 so that the planner gathers even a
#	small table, against a heap twin holding the same rows (written in
#	four transactions, so four sets of files on the tserver):
#	- EXPLAIN shows Gather over a Parallel Foreign Scan, and Gather over a
#	  Parallel Seq Scan for the twin, and no parallel plan for UPDATE,
#	  DELETE or SELECT FOR UPDATE; EXPLAIN ANALYZE shows the workers
#	  launched, and, with the leader out, both workers reading parts, every
#	  row once;
#	- the rows read, with and without a WHERE, equal the serial scan's and
#	  the twin's; in the key's order (ORDER BY aid, with and without a
#	  LIMIT), a Gather Merge over the Parallel Foreign Scan, no Sort;
#	- in a transaction that wrote the table (rows inserted, updated,
#	  deleted, not committed), the parallel scan reads those writes;
#	- under REPEATABLE READ, a parallel scan after another session
#	  committed rows reads the rows of the transaction's snapshot;
#	- a cursor and a PL/pgSQL loop (a plan with Gather run without
#	  workers) read every row;
#	- a rescan: a Gather on the inner side of a nested loop, run once per
#	  outer row, reads every row each time;
#	- a parallel worker terminated in the middle of the scan fails the
#	  query with an error, never fewer rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node parallel_worker_pids wait_until);

my ($node, $ts) = setup_node(conf => <<'CONF');
max_parallel_workers_per_gather = 2
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
CONF

my $N = 20000;
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE t (aid int NOT NULL, bid int, abalance int, filler text)
		SERVER ts OPTIONS (key 'aid');
	CREATE TABLE h (aid int PRIMARY KEY, bid int, abalance int, filler text);
});
# four transactions, each of keys all over the range
for my $part (0 .. 3)
{
	for my $table ('t', 'h')
	{
		$node->safe_psql('postgres', qq{
			INSERT INTO $table SELECT i, i % 7, (i * 37) % 1000 - 500, md5(i::text)
			FROM generate_series(1, $N) i WHERE i % 4 = $part});
	}
}
$node->safe_psql('postgres', 'ANALYZE h; ANALYZE t');

my $agg = 'SELECT count(*), sum(abalance), sum(aid::bigint * bid), '
  . "sum(hashtext(filler)::bigint) FROM";
my $where = 'WHERE bid IN (1, 3) AND aid > 1234';

sub sql { return $node->safe_psql('postgres', $_[0]) }

my $plan = sql("EXPLAIN (COSTS OFF) $agg t");
like($plan, qr/Gather.*\n.*Partial Aggregate.*\n.*Parallel Foreign Scan on t/s,
	'EXPLAIN: Gather over a Parallel Foreign Scan') or diag($plan);
like(sql("EXPLAIN (COSTS OFF) $agg h"), qr/Parallel Seq Scan on h/, '... as the heap twin gets a Parallel Seq Scan');

unlike(sql("EXPLAIN (COSTS OFF) UPDATE t SET abalance = abalance + 1 WHERE abalance + 0 > 400"),
	qr/Gather|Parallel/, 'an UPDATE\'s scan is never parallel');
unlike(sql("EXPLAIN (COSTS OFF) DELETE FROM t WHERE abalance + 0 > 400"), qr/Gather|Parallel/,
	'... nor a DELETE\'s');
unlike(sql("EXPLAIN (COSTS OFF) SELECT * FROM t WHERE abalance > 400 FOR UPDATE"), qr/Gather|Parallel/,
	'... nor a SELECT FOR UPDATE\'s');

my $analyze = sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $agg t");
like($analyze, qr/Workers Launched: 2/, 'EXPLAIN ANALYZE: two workers launched') or diag($analyze);

# the workers alone, slowed down: both take parts, and together read every row once
my $split = sql("SET parallel_leader_participation = off; "
	  . "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "SELECT count(*) FROM t WHERE pg_sleep(0.0001) IS NOT NULL");
my ($scan_part) = $split =~ /(Parallel Foreign Scan on public\.t.*)/s;
my @worker_rows = ($scan_part // '') =~ /Worker \d+:\s+actual rows=(\d+)/g;
diag("rows read by each worker: @worker_rows");
is(scalar(grep { $_ > 0 } @worker_rows), 2, 'with the leader out, both workers read parts') or diag($split);
my $sum = 0;
$sum += $_ for @worker_rows;
is($sum, $N, '... every row once');

my $expected = sql("$agg h");
is(sql("$agg t"), $expected, 'a parallel scan reads the rows of the heap twin');
is(sql("SET max_parallel_workers_per_gather = 0; $agg t"), $expected, '... and of a serial scan');
is(sql("$agg t $where"), sql("$agg h $where"), '... with a WHERE too');
is(sql("SELECT count(*) FROM (SELECT aid FROM t GROUP BY aid HAVING count(*) > 1) d"), '0',
	'no row is read twice');
is(sql("SELECT md5(string_agg(aid || ':' || filler, ',' ORDER BY aid)) FROM t WHERE bid = 2"),
	sql("SELECT md5(string_agg(aid || ':' || filler, ',' ORDER BY aid)) FROM h WHERE bid = 2"),
	'the rows read are the twin\'s, column for column');

# a pushed-down aggregate and the serial scans never run whole in a worker
my $grouped = 'SELECT count(*), sum(s.c) FROM h JOIN (SELECT bid, count(*) c FROM %s GROUP BY bid) s USING (bid)';
is(sql(sprintf($grouped, 't')), sql(sprintf($grouped, 'h')),
	'a parallel join with an aggregate of the table reads its rows');
is(sql("SET force_parallel_mode = on; SELECT bid, count(*) FROM t GROUP BY bid ORDER BY bid; "
		  . "SELECT aid FROM t WHERE aid = 77"),
	sql("SELECT bid, count(*) FROM h GROUP BY bid ORDER BY bid; SELECT aid FROM h WHERE aid = 77"),
	'... and so do an aggregate and a key lookup under force_parallel_mode');

# in the key's order: each participant's parts ascend, and a Gather Merge merges them
my $ordered = 'SELECT aid, abalance FROM %s WHERE bid = 3 ORDER BY aid';
my $gm = sql("SET cpu_operator_cost = 0; EXPLAIN (COSTS OFF) " . sprintf($ordered, 't'));
like($gm, qr/Gather Merge\n\s+Workers Planned: \d\n\s+->  Parallel Foreign Scan on t/,
	'ORDER BY the key: a Gather Merge over a Parallel Foreign Scan, no Sort') or diag($gm);
is(sql("SET cpu_operator_cost = 0; " . sprintf($ordered, 't')), sql(sprintf($ordered, 'h')),
	'... whose rows come in the key\'s order');
is(sql("SET cpu_operator_cost = 0; " . sprintf($ordered, 't') . ' LIMIT 300'),
	sql(sprintf($ordered, 'h') . ' LIMIT 300'), '... also under a LIMIT (the tserver stops each part)');

# the transaction's own writes
my $writes = 'INSERT INTO %s SELECT i, 9, 1, \'new\' FROM generate_series(%d, %d) i; '
  . 'UPDATE %s SET abalance = abalance + 1000 WHERE aid %% 5 = 0; DELETE FROM %s WHERE aid %% 11 = 0;';
my $mine = sql("BEGIN; " . sprintf($writes, 't', $N + 1, $N + 500, 't', 't')
	  . sprintf($writes, 'h', $N + 1, $N + 500, 'h', 'h')
	  . "$agg t; $agg h; "
	  . "SELECT count(*), sum(t.abalance - h.abalance) FROM h JOIN t USING (aid); "
	  . "SELECT count(*), sum(h2.abalance - h.abalance) FROM h JOIN h h2 USING (aid); "
	  . "EXPLAIN (COSTS OFF) $agg t; ROLLBACK");
my @mine = split /\n/, $mine;
is($mine[0], $mine[1], 'in a transaction that wrote the table, a parallel scan reads its writes');
isnt($mine[0], $expected, '... (which changed the rows)');
is($mine[2], $mine[3], '... and so does a join with the heap twin (never a serial scan in a worker)');
like($mine, qr/Parallel Foreign Scan on t/, '... (a parallel plan)');
is(sql("$agg t"), $expected, '... and they are gone after its rollback');

# REPEATABLE READ: the workers read as of the transaction's snapshot
my $rr = TcopyPgTest::Psql->start($node, [
	'BEGIN ISOLATION LEVEL REPEATABLE READ',
	"SELECT 'first', count(*) FROM t",
	'SELECT pg_sleep(3)',
	"SELECT 'second', count(*), sum(abalance) FROM t",
	"SET LOCAL max_parallel_workers_per_gather = 0",
	"SELECT 'serial', count(*), sum(abalance) FROM t",
	'COMMIT' ]);
sleep(1.5);
sql("INSERT INTO t SELECT i, 1, 1, 'late' FROM generate_series($N + 1, $N + 100) i");
my ($rc, $out, $err) = $rr->finish;
is($rc, 0, 'REPEATABLE READ: the transaction runs') or diag($err);
my ($first) = $out =~ /^first\|(\d+)$/m;
my ($second, $second_sum) = $out =~ /^second\|(\d+)\|(-?\d+)$/m;
my ($serial, $serial_sum) = $out =~ /^serial\|(\d+)\|(-?\d+)$/m;
is($first, $N, '... its first parallel scan reads the rows');
is($second, $N, '... and after another session committed rows, so does the second');
is("$second|$second_sum", "$serial|$serial_sum", '... as its serial scan does');
is(sql("SELECT count(*) FROM t"), $N + 100, 'the committed rows are read after it');
sql("DELETE FROM t WHERE aid > $N");

# a cursor; a PL/pgSQL loop over a parallel plan run without workers
my $cursor = 'BEGIN; DECLARE c CURSOR FOR SELECT aid, abalance FROM %s WHERE bid = 4 ORDER BY aid; '
  . 'FETCH 10 FROM c; FETCH ALL FROM c; COMMIT';
my $cursor_rows = sql(sprintf($cursor, 't'));
is($cursor_rows, sql(sprintf($cursor, 'h')), 'a cursor reads the rows');
is(scalar(() = $cursor_rows =~ /\n/g) + 1, sql('SELECT count(*) FROM h WHERE bid = 4'), '... all of them');
$node->safe_psql('postgres', q{
	CREATE FUNCTION loop_sum(tab regclass) RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE
		r record;
		s bigint := 0;
	BEGIN
		FOR r IN EXECUTE format('SELECT aid, abalance FROM %s', tab) LOOP
			s := s + r.aid * 3 + r.abalance;
		END LOOP;
		RETURN s;
	END $$});
is(sql("SELECT loop_sum('t')"), sql("SELECT loop_sum('h')"), 'a PL/pgSQL loop reads every row');

# a rescan: Gather on the inner side of a nested loop, once per outer row
# (cpu_tuple_cost up: rescanning the CTE for each of the table's rows must
# cost more than reading the table seven times, as tcopy's scans cost the
# rows the tserver reads)
my $nl = "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
  . "SET cpu_tuple_cost = 0.1; "
  . "WITH x AS MATERIALIZED (SELECT generate_series(0, 6) AS b) "
  . "SELECT x.b, count(*), sum(%s.abalance) FROM x JOIN %s ON %s.bid = x.b GROUP BY x.b ORDER BY x.b";
my $nl_plan = sql("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; "
	  . "SET cpu_tuple_cost = 0.1; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
	  . "WITH x AS MATERIALIZED (SELECT generate_series(0, 6) AS b) "
	  . "SELECT x.b, count(*) FROM x JOIN t ON t.bid = x.b GROUP BY x.b");
like($nl_plan, qr/Nested Loop.*CTE Scan on x.*Gather \(actual rows=\d+ loops=7\).*Parallel Foreign Scan on t/s,
	'a nested loop rescans a Gather over a Parallel Foreign Scan, once per outer row')
  or diag($nl_plan);
is(sql(sprintf($nl, 't', 't', 't')), sql(sprintf($nl, 'h', 'h', 'h')), '... which reads every row each time');

# a worker terminated in the middle of the scan
my $slow = TcopyPgTest::Psql->start($node, [
	'SET parallel_leader_participation = off',
	"SELECT count(*) FROM t WHERE pg_sleep(0.0005) IS NOT NULL" ], timeout => 120);
my @workers;
wait_until(30, sub { @workers = parallel_worker_pids($node); @workers > 0 })
  or diag('no parallel worker seen');
sleep(0.5);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($workers[0])") if @workers;
($rc, $out, $err) = $slow->finish;
isnt($rc, 0, 'a parallel worker terminated in the middle of the scan fails the query');
like($err, qr/ERROR:  terminating background worker "parallel worker" due to administrator command/,
	'... with the worker\'s error') or diag("stdout: $out\nstderr: $err");
is(sql("$agg t"), $expected, 'the next parallel scan reads every row');

$node->stop;
$ts->stop;
done_testing();
