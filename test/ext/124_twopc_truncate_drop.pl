# 124_twopc_truncate_drop.pl
#	Two-phase commit (issue 11): TRUNCATE and DROP of tcopy tables are
#	operations of the transaction's write session, published with its
#	commit or discarded with its abort, like heap tables':
#	- TRUNCATE in a DO block that raises afterwards, and TRUNCATE h2, f2
#	  whose heap table h2 has an AFTER TRUNCATE trigger that raises: the
#	  tcopy table keeps its rows (and the heap table its);
#	- TRUNCATE inside BEGIN ... ROLLBACK keeps the rows; inside BEGIN ...
#	  COMMIT it commits, and a read right after COMMIT sees an empty table;
#	- TRUNCATE then INSERT in one transaction: the table holds exactly the
#	  new rows; INSERT, TRUNCATE, INSERT of the same table: exactly the rows
#	  after the TRUNCATE (issue 48);
#	- the same spilled to the tserver's staging files (--session-memory-mb
#	  1), the later rows' keys among the discarded ones: the backend paused
#	  after the prepare or before the publish, the tserver killed -9 and
#	  restarted, the backend killed -9: recovery discards the transaction
#	  (the table unchanged) or publishes it (exactly the later rows);
#	- TRUNCATE outside a transaction block still works;
#	- DROP FOREIGN TABLE rolled back (ROLLBACK, or a DO block that raises)
#	  keeps the table and its rows; committed, the data is gone on the
#	  tserver (tserver-cli scan of its table_name finds no rows, and a new
#	  foreign table with the same table_name reads none); DROP SCHEMA ...
#	  CASCADE the same, rolled back then committed; DROP in a transaction
#	  that also writes another table, of a table it wrote, and of a table
#	  never written all commit;
#	- nothing is left prepared, and no 08007 anywhere.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup twopc_ddl rows_copy_sql rows_insert_sql txn_sql psql_bg
  recover_all assert_atomic assert_tserver_unprepared assert_no_08007 sqlstates
  wait_until start_paused);

my ($node, $ts) = twopc_setup(recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
my @outputs;

# Run statements in one psql (ON_ERROR_STOP): (exit, stdout, stderr).
sub run
{
	my (@sql) = @_;
	my ($rc, $out, $err) = psql_bg($node, \@sql, timeout => 60)->finish;
	push @outputs, $out, $err;
	return ($rc, $out, $err);
}

# "count sum(id)" of a tcopy table, through Postgres.
sub state_of
{
	my ($table) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) || ' ' || coalesce(sum(id), 0) FROM $table");
}

# Rows first .. last of a tcopy table (ids, n 0).
sub fill
{
	my ($table, $first, $last) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO $table (id, n, payload) SELECT i, 0, 'row ' || i FROM generate_series($first, $last) i");
}

sub sum_of
{
	my ($first, $last) = @_;
	return ($last - $first + 1) . ' ' . TcopyTest::aid_sum($last - $first + 1, $first);
}

# Rows the tserver holds in a table: a number, or 'no table' when the scan
# fails (the table does not exist there).
sub at_tserver
{
	my ($name) = @_;
	return $ts->count($name) // 'no table';
}

$node->safe_psql('postgres', join("\n",
	twopc_ddl('f1', "table_name 'f1'"),
	twopc_ddl('f2', "table_name 'f2'"),
	twopc_ddl('f3', "table_name 'drop_me'"),
	'CREATE TABLE h2 (id int);',
	'INSERT INTO h2 SELECT generate_series(1, 10);',
	q{CREATE FUNCTION h2_raise() RETURNS trigger LANGUAGE plpgsql AS
		$$BEGIN RAISE EXCEPTION 'h2 trigger raises after TRUNCATE'; END$$;},
	'CREATE TRIGGER h2_truncate AFTER TRUNCATE ON h2 FOR EACH STATEMENT EXECUTE FUNCTION h2_raise();'));
fill('f1', 1, 1000);
fill('f2', 1, 1000);
fill('f3', 1, 300);

# ---- TRUNCATE rolled back ----
my ($rc, $out, $err) = run(q{DO $$BEGIN TRUNCATE f1; RAISE EXCEPTION 'raised after TRUNCATE'; END$$});
is($rc, 1, 'DO block: TRUNCATE then RAISE fails');
like($err, qr/raised after TRUNCATE/, 'DO block: ... with the raised error') or diag($err);
is(state_of('f1'), sum_of(1, 1000), 'DO block: the tcopy table keeps its rows');
is(at_tserver('f1'), 1000, 'DO block: ... on the tserver too');

($rc, $out, $err) = run('TRUNCATE h2, f2');
is($rc, 1, 'TRUNCATE h2, f2 with a trigger on h2 that raises: fails');
like($err, qr/h2 trigger raises after TRUNCATE/, 'TRUNCATE h2, f2: ... with the trigger\'s error') or diag($err);
is(state_of('f2'), sum_of(1, 1000), 'TRUNCATE h2, f2: the tcopy table keeps its rows');
is(at_tserver('f2'), 1000, 'TRUNCATE h2, f2: ... on the tserver too');
is($node->safe_psql('postgres', 'SELECT count(*) FROM h2'), '10', 'TRUNCATE h2, f2: the heap table keeps its rows');

($rc, $out, $err) = run('BEGIN', 'TRUNCATE f1', 'ROLLBACK');
is($out, "BEGIN\nTRUNCATE TABLE\nROLLBACK", 'BEGIN; TRUNCATE; ROLLBACK: TRUNCATE works in a transaction block')
  or diag($err);
is(state_of('f1'), sum_of(1, 1000), 'BEGIN; TRUNCATE; ROLLBACK: the rows are still there');

# ---- TRUNCATE committed ----
($rc, $out, $err) = run('BEGIN', 'TRUNCATE f1', 'COMMIT', 'SELECT count(*) FROM f1');
is($out, "BEGIN\nTRUNCATE TABLE\nCOMMIT\n0", 'BEGIN; TRUNCATE; COMMIT: commits, and a read right after sees no row')
  or diag($err);
is(state_of('f1'), '0 0', 'BEGIN; TRUNCATE; COMMIT: the table is empty');
is(at_tserver('f1'), 0, 'BEGIN; TRUNCATE; COMMIT: ... on the tserver too');

fill('f1', 1, 500);
($rc, $out, $err) = run('BEGIN', 'TRUNCATE f1',
	"INSERT INTO f1 (id, n, payload) SELECT i, 0, 'new' FROM generate_series(1001, 1200) i", 'COMMIT');
is($out, "BEGIN\nTRUNCATE TABLE\nINSERT 0 200\nCOMMIT", 'TRUNCATE then INSERT in one transaction: commits')
  or diag($err);
is(state_of('f1'), sum_of(1001, 1200), 'TRUNCATE then INSERT: the table holds exactly the new rows');

($rc, $out, $err) = run('BEGIN',
	"INSERT INTO f1 (id, n, payload) SELECT i, 0, 'newer' FROM generate_series(2001, 2100) i", 'TRUNCATE f1',
	"INSERT INTO f1 (id, n, payload) SELECT i, 0, 'newest' FROM generate_series(2051, 2060) i", 'COMMIT');
is($out, "BEGIN\nINSERT 0 100\nTRUNCATE TABLE\nINSERT 0 10\nCOMMIT",
	'INSERT, TRUNCATE, INSERT of the same table in one transaction: commits') or diag($err);
is(state_of('f1'), sum_of(2051, 2060), 'INSERT, TRUNCATE, INSERT: exactly the rows after the TRUNCATE');
is(at_tserver('f1'), 10, 'INSERT, TRUNCATE, INSERT: ... on the tserver too');

# spilled, then a crash at the pause point: the prepared session carries
# only the rows after the TRUNCATE, with the TRUNCATE
for my $case ([ 'after-prepare', 'abort' ], [ 'before-publish', 'commit' ])
{
	my ($point, $outcome) = @$case;
	my $name = "spilled INSERT, TRUNCATE, INSERT, crash $point";
	my $before = state_of('f1');
	my ($p, $pid) = start_paused($node, $point, [ 'BEGIN',
		"INSERT INTO f1 (id, n, payload) SELECT i, 0, 'spilled ' || i FROM generate_series(10001, 40000) i",
		"SELECT spilled_bytes > 0 FROM tcopy.server_sessions('ts') WHERE pid = pg_backend_pid()",
		'TRUNCATE f1',
		"INSERT INTO f1 (id, n, payload) SELECT i, 0, 'later' FROM generate_series(20001, 20100) i",
		'COMMIT' ], timeout => 120);
	ok($pid, "$name: the backend pauses");
	next unless $pid;
	$ts->kill9;
	$ts->start or BAIL_OUT('tserver did not start after kill -9');
	ok(kill('KILL', $pid), "$name: kill -9 of the paused backend");
	($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	like($out, qr/^SET\nBEGIN\nINSERT 0 30000\nt\nTRUNCATE TABLE\nINSERT 0 100/, "$name: the session spilled before the TRUNCATE")
	  or diag("$out\n$err");
	ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
		"$name: Postgres accepts connections again after the crash restart");
	my ($ok, $resolved, $why) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: recovery resolves the session") or diag($why);
	if ($outcome eq 'commit')
	{
		is(state_of('f1'), sum_of(20001, 20100), "$name: published, exactly the rows after the TRUNCATE");
		is(at_tserver('f1'), 100, "$name: ... on the tserver too");
	}
	else
	{
		is(state_of('f1'), $before, "$name: discarded, the table unchanged");
	}
}

($rc, $out, $err) = run('TRUNCATE f2');
is($out, 'TRUNCATE TABLE', 'TRUNCATE outside a transaction block works') or diag($err);
is(state_of('f2'), '0 0', '... and empties the table');

# ---- DROP ----
($rc, $out, $err) = run('BEGIN', 'DROP FOREIGN TABLE f3', 'ROLLBACK');
is($out, "BEGIN\nDROP FOREIGN TABLE\nROLLBACK", 'BEGIN; DROP FOREIGN TABLE; ROLLBACK: runs') or diag($err);
is(state_of('f3'), sum_of(1, 300), 'BEGIN; DROP FOREIGN TABLE; ROLLBACK: the table and its rows are still there');
is(at_tserver('drop_me'), 300, 'BEGIN; DROP FOREIGN TABLE; ROLLBACK: ... on the tserver too');

($rc, $out, $err) = run(q{DO $$BEGIN DROP FOREIGN TABLE f3; RAISE EXCEPTION 'raised after DROP'; END$$});
is($rc, 1, 'DO block: DROP then RAISE fails');
is(state_of('f3'), sum_of(1, 300), 'DO block: the table and its rows are still there');

($rc, $out, $err) = run('DROP FOREIGN TABLE f3');
is($out, 'DROP FOREIGN TABLE', 'DROP FOREIGN TABLE committed') or diag($err);
my $left = at_tserver('drop_me');
ok($left eq 'no table' || $left eq '0', 'DROP FOREIGN TABLE committed: the tserver has no row of it')
  or diag("tserver-cli scan drop_me: $left");
note("after DROP: tserver-cli scan drop_me: $left");
$node->safe_psql('postgres', twopc_ddl('f3_again', "table_name 'drop_me'"));
is(state_of('f3_again'), '0 0', 'DROP FOREIGN TABLE committed: a new table of the same table_name reads no row');
$node->safe_psql('postgres', 'DROP FOREIGN TABLE f3_again');

# DROP SCHEMA ... CASCADE
$node->safe_psql('postgres', 'CREATE SCHEMA s; ' . twopc_ddl('s.f5', "table_name 'in_schema'"));
fill('s.f5', 1, 100);
($rc, $out, $err) = run('BEGIN', 'DROP SCHEMA s CASCADE', 'ROLLBACK');
is($out, "BEGIN\nDROP SCHEMA\nROLLBACK", 'BEGIN; DROP SCHEMA CASCADE; ROLLBACK: runs') or diag($err);
is(state_of('s.f5'), sum_of(1, 100), 'DROP SCHEMA CASCADE rolled back: the table and its rows are still there');
($rc, $out, $err) = run('DROP SCHEMA s CASCADE');
is($out, 'DROP SCHEMA', 'DROP SCHEMA CASCADE committed') or diag($err);
$left = at_tserver('in_schema');
ok($left eq 'no table' || $left eq '0', 'DROP SCHEMA CASCADE committed: the tserver has no row of its tcopy table')
  or diag("tserver-cli scan in_schema: $left");

# DROP with other writes of the transaction; of a table it wrote; of a table never written
$node->safe_psql('postgres', join("\n", twopc_ddl('f4', "table_name 'f4'"), twopc_ddl('f6', "table_name 'f6'"),
	twopc_ddl('f7', "table_name 'f7'")));
fill('f4', 1, 50);
my @sql = txn_sql($node, 1);
$sql[-1] = 'DROP FOREIGN TABLE f4';		# before the COMMIT
($rc, $out, $err) = run(@sql, 'COMMIT');
is($out, "BEGIN\nINSERT 0 1\nCOPY 1000\nDROP FOREIGN TABLE\nCOMMIT",
	'COPY into t and DROP FOREIGN TABLE f4 in one transaction: commits') or diag($err);
assert_atomic($node, 'COPY and DROP in one transaction', committed => [1]);
$left = at_tserver('f4');
ok($left eq 'no table' || $left eq '0', 'COPY and DROP in one transaction: the dropped table has no row on the tserver')
  or diag("tserver-cli scan f4: $left");

($rc, $out, $err) = run('BEGIN', "INSERT INTO f6 (id, n, payload) VALUES (1, 0, 'x')", 'DROP FOREIGN TABLE f6', 'COMMIT');
is($out, "BEGIN\nINSERT 0 1\nDROP FOREIGN TABLE\nCOMMIT", 'INSERT then DROP of the same table: commits') or diag($err);
$left = at_tserver('f6');
ok($left eq 'no table' || $left eq '0', 'INSERT then DROP of the same table: the tserver has no row of it')
  or diag("tserver-cli scan f6: $left");

($rc, $out, $err) = run('BEGIN', 'DROP FOREIGN TABLE f7', 'COMMIT');
is($out, "BEGIN\nDROP FOREIGN TABLE\nCOMMIT", 'DROP of a table never written: commits') or diag($err);

# ---- at the end ----
my ($ok, $resolved, $why) = recover_all($node, ts => $ts, timeout => 30);
ok($ok, 'at the end: nothing is left prepared') or diag($why);
is($resolved, 0, 'at the end: ... and recovery resolved nothing');
assert_tserver_unprepared($ts, 'at the end');
assert_no_08007($node, 'truncate and drop', @outputs);

$node->stop;
$ts->stop;
done_testing();
