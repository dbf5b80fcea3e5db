# 156_concurrent_keys.pl
#	Duplicate keys between concurrent transactions (issue 14: "across
#	concurrent transactions, the one that commits second fails"), on table
#	t (key id, on_conflict 'error' as new keyed tables have it) of the
#	two-phase commit tests, the tserver with --session-memory-mb 1 so that
#	the big loads (TCOPY_2PC_BIG_ROWS, default 60,000 rows) spill.
#	Asserted, with two psql sessions whose transactions overlap:
#	- small COPYs or INSERTs sharing a key: the second COMMIT fails with
#	  23505 and the key in DETAIL, whichever commits first; the first's
#	  rows stay, the second's are not there;
#	- the first paused after its PREPARE (prepared on the tserver, not yet
#	  committed in Postgres): the second COMMIT fails with 23505 all the
#	  same, under 'ignore' with 40001; once the first is cancelled and
#	  recovered, the second's retry commits;
#	- small loads of disjoint keys, in the same key range: both commit;
#	- on_conflict 'ignore': the second keeps the first's row and commits;
#	- spilled loads of overlapping key ranges: the second COMMIT fails with
#	  40001 (could not serialize access), and its retry with 23505;
#	- spilled loads of disjoint key ranges: both commit;
#	- no 08007 anywhere.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(twopc_setup rows_copy_sql start_paused recover_all assert_no_08007);

my $big = $ENV{TCOPY_2PC_BIG_ROWS} // 60_000;
my ($node, $ts) = twopc_setup(
	recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
my @outputs;

# Two interactive sessions, errors with their SQLSTATE.
my @s = map { TcopyPgTest::Session->new($node) } 1 .. 2;
$_->run_ok('\set VERBOSITY verbose') for @s;

# Run sql in session i; (stdout, stderr), kept for assert_no_08007.
sub run
{
	my ($i, $sql) = @_;
	my ($out, $err) = $s[$i]->run($sql);
	push @outputs, $out, $err;
	return ($out, $err);
}

# Run sql in session i, failing the test on any error.
sub ok_run
{
	my ($i, $sql, $name) = @_;
	my ($out, $err) = run($i, $sql);
	is($err, '', $name) or diag("$sql\n$err");
	return $out;
}

# A COPY of t's rows (id, n, payload) from inline data, ids @ids of n.
sub copy_ids
{
	my ($n, $options, @ids) = @_;
	my $data = join('', map { "$_,$n,row $n/$_\n" } @ids);
	return "COPY t (id, n, payload) FROM STDIN (FORMAT csv$options);\n$data\\.";
}

sub payloads
{
	my ($where) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || n, ' ' ORDER BY id) FROM t WHERE $where");
}

# ---- small loads sharing a key: the second to commit fails ----
for my $first (0, 1)
{
	my $second = 1 - $first;
	my $name = "small COPYs sharing key 3, session " . ($first + 1) . " commits first";
	my $base = 100 * ($first + 1);
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, copy_ids(1, '', $base + 1, $base + 2, $base + 3), "$name: session 1 copies");
	ok_run(1, copy_ids(2, '', $base + 3, $base + 4), "$name: session 2 copies");
	ok_run($first, 'COMMIT;', "$name: the first COMMIT succeeds");
	my ($out, $err) = run($second, 'COMMIT;');
	like($err, qr/ERROR:  23505: duplicate key value violates unique constraint "t_key"/,
		"$name: the second COMMIT fails with 23505");
	like($err, qr/DETAIL:  Key \(id\)=\(${\($base + 3)}\) already exists\./,
		"$name: ... naming the key");
	my $want = $first == 0
	  ? join(' ', map { ($base + $_) . ':1' } 1 .. 3)
	  : join(' ', ($base + 3) . ':2', ($base + 4) . ':2');
	is(payloads("id BETWEEN $base AND $base + 99"), $want, "$name: only the first's rows are there");
}

# ---- INSERT follows the same rule ----
{
	my $name = 'INSERTs of one key';
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, "INSERT INTO t VALUES (300, 1, 'a');", "$name: session 1 inserts");
	ok_run(1, "INSERT INTO t VALUES (300, 2, 'b');", "$name: session 2 inserts");
	ok_run(0, 'COMMIT;', "$name: the first COMMIT succeeds");
	my ($out, $err) = run(1, 'COMMIT;');
	like($err, qr/ERROR:  23505: .*\n.*DETAIL:  Key \(id\)=\(300\) already exists\./,
		"$name: the second fails with 23505");
	is(payloads('id = 300'), '300:1', "$name: the first's row is there");
}

# ---- the first prepared on the tserver, not yet committed ----
for my $policy ('error', 'ignore')
{
	my $name = "first paused after its prepare, on_conflict '$policy'";
	my $base = $policy eq 'error' ? 700 : 800;
	# psql -c cannot carry COPY data: the first inserts
	my ($p, $pid) = start_paused($node, 'after-prepare',
		[ 'BEGIN', "INSERT INTO t VALUES (${\($base + 1)}, 1, 'a'), (${\($base + 2)}, 1, 'a')", 'COMMIT' ]);
	ok($pid, "$name: the first pauses after its prepare") or diag(join("\n", $p->finish));
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(1, copy_ids(2, ", on_conflict '$policy'", $base + 2, $base + 3), "$name: the second copies");
	my ($out, $err) = run(1, 'COMMIT;');
	if ($policy eq 'error')
	{
		like($err, qr/ERROR:  23505: .*\n.*DETAIL:  Key \(id\)=\(${\($base + 2)}\) already exists\./,
			"$name: the second COMMIT fails with 23505");
	}
	else
	{
		like($err, qr/ERROR:  40001: could not serialize access due to concurrent load into table "t"/,
			"$name: the second COMMIT fails with 40001");
		like($err, qr/DETAIL:  .*prepared and not yet resolved/, "$name: ... saying why");
	}
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	my @r = $p->finish;
	push @outputs, @r[1, 2];
	isnt($r[0], 0, "$name: the first, cancelled, fails");
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: recovery resolves the first") or diag($left);
	ok_run(1, 'BEGIN;', "$name: begin again");
	ok_run(1, copy_ids(2, ", on_conflict '$policy'", $base + 2, $base + 3), "$name: the second copies again");
	ok_run(1, 'COMMIT;', "$name: ... and commits");
	is(payloads("id BETWEEN $base AND $base + 99"), join(' ', ($base + 2) . ':2', ($base + 3) . ':2'),
		"$name: the second's rows, none of the first's");
}

# ---- disjoint keys in one range: both commit ----
{
	my $name = 'small COPYs of interleaved keys';
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, copy_ids(1, '', 401, 403, 405), "$name: session 1 copies");
	ok_run(1, copy_ids(2, '', 402, 404, 406), "$name: session 2 copies");
	ok_run(1, 'COMMIT;', "$name: session 2 commits");
	ok_run(0, 'COMMIT;', "$name: session 1 commits");
	is(payloads('id BETWEEN 400 AND 499'), '401:1 402:2 403:1 404:2 405:1 406:2',
		"$name: every row is there");
}

# ---- ignore: the second keeps the first's row ----
{
	my $name = "on_conflict 'ignore'";
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, copy_ids(1, ", on_conflict 'ignore'", 501, 502), "$name: session 1 copies");
	ok_run(1, copy_ids(2, ", on_conflict 'ignore'", 502, 503), "$name: session 2 copies");
	ok_run(0, 'COMMIT;', "$name: session 1 commits");
	ok_run(1, 'COMMIT;', "$name: session 2 commits");
	is(payloads('id BETWEEN 500 AND 599'), '501:1 502:1 503:2', "$name: the first row of 502 stays");
}

# ---- spilled loads ----
# rows_copy_sql(n, per, first, last): ids n * per + first .. n * per + last
{
	my $name = 'spilled COPYs of overlapping ranges';
	my $half = int($big / 2);
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, rows_copy_sql($node, 10, per => $big, first => 1, last => $big) . ';',
		"$name: session 1 copies");
	ok_run(1, rows_copy_sql($node, 10, per => $big, first => $half, last => $big + $half) . ';',
		"$name: session 2 copies");
	ok_run(0, 'COMMIT;', "$name: session 1 commits");
	my ($out, $err) = run(1, 'COMMIT;');
	like($err, qr/ERROR:  40001: could not serialize access due to concurrent load into table "t"/,
		"$name: the second COMMIT fails with 40001");
	like($err, qr/HINT:  The transaction might succeed if retried\./, "$name: ... and a hint");
	($out, $err) = run(1, rows_copy_sql($node, 10, per => $big, first => $half, last => $big + $half) . ';');
	like($err, qr/ERROR:  23505: .*\n.*DETAIL:  Key \(id\)=\(\d+\) already exists\./,
		"$name: the retry meets the stored keys: 23505");
	is($node->safe_psql('postgres', "SELECT count(*), min(id) - 10 * $big, max(id) - 10 * $big FROM t WHERE n = 10"),
		"$big|1|$big", "$name: the first's rows, and only those");
}
{
	my $name = 'spilled COPYs of disjoint ranges';
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, rows_copy_sql($node, 20, per => $big) . ';', "$name: session 1 copies");
	ok_run(1, rows_copy_sql($node, 21, per => $big) . ';', "$name: session 2 copies");
	ok_run(1, 'COMMIT;', "$name: session 2 commits");
	ok_run(0, 'COMMIT;', "$name: session 1 commits");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE n IN (20, 21)'),
		2 * $big, "$name: every row is there");
}

$_->quit for @s;
assert_no_08007($node, 'concurrent keys', @outputs);
$node->stop;
$ts->stop;
done_testing();
