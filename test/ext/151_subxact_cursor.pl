# 151_subxact_cursor.pl
#	A scan's connection belongs to the (sub)transaction that began the scan,
#	as a portal does: a savepoint that is released hands it to its parent,
#	and only the rollback of the one that owns it closes it.  On a table of
#	300,000 rows: the reported sequence (a cursor declared in a savepoint
#	that is released, then another savepoint rolled back, then FETCH
#	200000) returns ids 2 .. 200001 with no backend crash; a cursor whose
#	savepoint rolls back is gone ("cursor does not exist", Postgres' own);
#	a cursor fetched in a savepoint that rolls back goes on where it was;
#	a PL/pgSQL cursor fetched in an exception block that fails goes on too;
#	WITH HOLD cursors are materialized at commit; a cursor closed in
#	another savepoint; writes in released and rolled-back savepoints.
#	No connection to the tserver is left behind, no backend was
#	terminated by a signal, and a session opened at the start survives.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node wait_until);

my $rows = 300_000;

my ($node, $ts) = setup_node();
$node->safe_psql('postgres', qq{
	CREATE FOREIGN TABLE t (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id');
	INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, $rows) g;
	CREATE FOREIGN TABLE w (id int NOT NULL) SERVER ts OPTIONS (key 'id');
});
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM t'),
	"$rows|" . ($rows * ($rows + 1) / 2), "the table holds $rows rows");

my $bystander = TcopyPgTest::Session->new($node, timeout => 300);
my $bystander_pid = $bystander->backend_pid;
my $s = TcopyPgTest::Session->new($node, timeout => 300);

# The tserver's open connections.
sub connections_open
{
	my $stats = $ts->stats;
	return $stats ? $stats->{connections_open} : -1;
}

# The tserver's open connections once back to the baseline or below (its
# threads see a close a moment later; the session keeps one idle scan
# connection, counted in the baseline, which a scan stopped midway takes
# and closes), or what they are after 10 s: the baseline when none is left
# over.
sub connections_settled
{
	my ($baseline) = @_;
	my $now;
	wait_until(10, sub { ($now = connections_open()) <= $baseline });
	return $now <= $baseline ? $baseline : $now;
}

# The ids a FETCH printed: (count, first, last, sum), from psql's lines
# that are numbers only.
sub ids_of
{
	my ($out) = @_;
	my @ids = grep { /^\d+$/ } split /\n/, $out;
	my $sum = 0;
	$sum += $_ for @ids;
	return (scalar(@ids), $ids[0] // -1, $ids[-1] // -1, $sum);
}

# Sum of the integers a .. b.
sub range_sum
{
	my ($a, $b) = @_;
	return ($a + $b) * ($b - $a + 1) / 2;
}

# Run sql in $s; the ids of its output and its stderr.
sub fetch_ids
{
	my ($sql) = @_;
	my ($out, $err) = $s->run($sql);
	return (ids_of($out), $err);
}

# a scan read to its end leaves the session's idle scan connection
$s->run_ok('SELECT count(*) FROM t WHERE id = 1;');
my $baseline = connections_open();

# ---- the reported sequence ----
my ($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 1 FROM c;
	RELEASE a;
	SAVEPOINT b;
	ROLLBACK TO b;
	FETCH 200000 FROM c;
});
is($err, '', 'reported sequence: no error');
is("$n $first $last", '200001 1 200001', 'reported sequence: FETCH 1 then FETCH 200000 return ids 1 .. 200001');
is($sum, range_sum(1, 200_001), '... every one of them');
($n, $first, $last, $sum, $err) = fetch_ids('FETCH ALL FROM c; COMMIT;');
is("$n $first $last $err", "99999 200002 $rows ", '... and FETCH ALL the rest');
is(connections_settled($baseline), $baseline, '... and no connection to the tserver is left after COMMIT');

# ---- a cursor declared in a savepoint that rolls back ----
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 5 FROM c;
	ROLLBACK TO a;
	FETCH 5 FROM c;
});
is("$n $first $last", '5 1 5', 'rolled-back cursor: the FETCH in its savepoint returns rows');
like($err, qr/ERROR:  cursor "c" does not exist/, '... the FETCH after the rollback: Postgres\' "cursor does not exist"');
$s->run('ROLLBACK;');
is(connections_settled($baseline), $baseline, '... and its connection is closed');

# ---- nested savepoints: released inner, rolled-back sibling, then the outer ----
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	SAVEPOINT b;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 3 FROM c;
	RELEASE b;
	SAVEPOINT x;
	SAVEPOINT y;
	ROLLBACK TO x;
	FETCH 3 FROM c;
});
is("$n $first $last $err", '6 1 6 ', 'nested: the cursor of a released savepoint survives a rolled-back sibling');
($n, $first, $last, $sum, $err) = fetch_ids('ROLLBACK TO a; FETCH 3 FROM c;');
like($err, qr/cursor "c" does not exist/, '... and goes with the outer savepoint it now belongs to');
$s->run('COMMIT;');
is(connections_settled($baseline), $baseline, '... its connection closed');

# ---- a cursor fetched in a savepoint that rolls back ----
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 10 FROM c;
	SAVEPOINT s;
	FETCH 10 FROM c;
	ROLLBACK TO s;
	FETCH 10 FROM c;
	COMMIT;
});
is("$n $first $last $err", '30 1 30 ', 'fetched in a rolled-back savepoint: the cursor goes on where it was');
is($sum, range_sum(1, 30), '... every row once');

# ---- a cursor closed in a savepoint ----
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 2 FROM c;
	RELEASE a;
	SAVEPOINT b;
	CLOSE c;
	ROLLBACK TO b;
	FETCH 2 FROM c;
});
like($err, qr/cursor "c" does not exist/, 'closed in a rolled-back savepoint: the cursor stays closed, as Postgres keeps it');
$s->run('ROLLBACK;');
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	DECLARE c CURSOR FOR SELECT id FROM t;
	FETCH 2 FROM c;
	RELEASE a;
	SAVEPOINT b;
	CLOSE c;
	RELEASE b;
	SAVEPOINT d;
	ROLLBACK TO d;
	COMMIT;
});
is("$n $err", '2 ', 'closed in a released savepoint, then another rolled back: no error');
is(connections_settled($baseline), $baseline, '... no connection left');

# ---- PL/pgSQL: a cursor fetched in an exception block that fails ----
my ($out, $plerr) = $s->run(q{
DO $$
DECLARE
	c refcursor;
	r record;
	n int := 0;
	total bigint := 0;
BEGIN
	OPEN c FOR SELECT id FROM t;
	FETCH c INTO r;
	BEGIN
		FETCH c INTO r;
		PERFORM 1 / 0;
	EXCEPTION WHEN division_by_zero THEN
		NULL;
	END;
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		n := n + 1;
		total := total + r.id;
	END LOOP;
	RAISE NOTICE 'rest % %', n, total;
END $$;
});
like($plerr, qr/NOTICE:  rest 299998 ${\ range_sum(3, $rows)}/,
	'PL/pgSQL: a cursor fetched in a failed exception block goes on after it');

# ---- WITH HOLD ----
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	DECLARE h CURSOR WITH HOLD FOR SELECT id FROM t;
	FETCH 1 FROM h;
	COMMIT;
	FETCH 200000 FROM h;
});
is("$n $first $last $err", '200001 1 200001 ', 'WITH HOLD: the cursor is materialized at COMMIT and goes on');
is($sum, range_sum(1, 200_001), '... every row once');
($n, $first, $last, $sum, $err) = fetch_ids('FETCH ALL FROM h; CLOSE h;');
is("$n $first $last $err", "99999 200002 $rows ", '... to the end');
($n, $first, $last, $sum, $err) = fetch_ids(q{
	BEGIN;
	SAVEPOINT a;
	DECLARE h CURSOR WITH HOLD FOR SELECT id FROM t;
	FETCH 1 FROM h;
	RELEASE a;
	SAVEPOINT b;
	ROLLBACK TO b;
	COMMIT;
	FETCH 5 FROM h;
	CLOSE h;
});
is("$n $first $last $err", '6 1 6 ', 'WITH HOLD declared in a released savepoint: materialized at COMMIT');
is(connections_settled($baseline), $baseline, '... no connection left');

# ---- writes in savepoints ----
($out, $err) = $s->run(q{
	BEGIN;
	SAVEPOINT a;
	INSERT INTO w SELECT g FROM generate_series(1, 1000) g;
	RELEASE a;
	SAVEPOINT b;
	ROLLBACK TO b;
	INSERT INTO w SELECT g FROM generate_series(1001, 2000) g;
	COMMIT;
});
is($err, '', 'writes: a released savepoint\'s rows, then a rolled-back empty savepoint: COMMIT works');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM w'), '2000|' . range_sum(1, 2000),
	'... and every row is there');
($out, $err) = $s->run(q{
	BEGIN;
	SAVEPOINT a;
	INSERT INTO w SELECT g FROM generate_series(2001, 3000) g;
	ROLLBACK TO a;
	COMMIT;
});
is($err, '', 'writes: a rolled-back savepoint that wrote is taken back, and the COMMIT works');
is($node->safe_psql('postgres', 'SELECT count(*) FROM w'), '2000', '... and nothing of it is there');

# ---- nothing crashed ----
is($bystander->run_ok('SELECT pg_backend_pid();'), $bystander_pid,
	'a session opened at the start is still there');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated/, 'no backend was terminated by a signal');
unlike($log, qr/all server processes terminated; reinitializing/, 'the postmaster did not restart');

$s->quit;
$bystander->quit;
$node->stop;
$ts->stop;
done_testing();
