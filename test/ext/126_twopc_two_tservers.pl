# 126_twopc_two_tservers.pl
#	Two-phase commit (issue 11) across two tservers: "all sessions are
#	prepared before Postgres commits, so a transaction that wrote through
#	several servers is published everywhere or nowhere".  One Postgres
#	node (tcopy.recovery_interval 0: only tcopy.recover_prepared_sessions()
#	resolves), two tservers, servers ts1 and ts2, a heap table marker(n),
#	tcopy tables t1 (on ts1) and t2 (on ts2).  Transaction n is BEGIN;
#	INSERT INTO marker VALUES (n); COPY of 1000 rows (ids n * 1000 + 1 ..)
#	into t1; the same into t2; COMMIT.  Cases:
#	1. no fault: both tables have the rows right after COMMIT;
#	2. paused after-prepare, ts2 killed -9, the backend killed -9, ts2
#	   restarted: before recovery both tservers list the session prepared;
#	   after recovery neither table has the rows, no marker, nothing
#	   prepared anywhere;
#	3. paused before-publish, ts1 killed -9, the backend killed -9, ts1
#	   restarted: after recovery both tables have the rows and the marker;
#	4. ts2 killed -9 after the COPY into t2, before COMMIT: COMMIT fails
#	   (not with 08007), ts1 holds nothing of it, nor ts2 once restarted.
#	After every case, for every transaction so far: its marker is there
#	exactly when all of its rows are on both tables; no 08007.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_conf rows_copy_sql psql_bg start_paused prepared_sessions
  recover_all assert_tserver_unprepared assert_no_08007 sqlstates wait_until);

my $ROWS = 1000;

my $ts1 = TcopyTest->new;
my $ts2 = TcopyTest->new;
$ts1->start or BAIL_OUT('tserver 1 did not start');
$ts2->start or BAIL_OUT('tserver 2 did not start');
my $node = PostgreSQL::Test::Cluster->new('two');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n"
	  . twopc_conf(recovery_interval => '0'));
$node->start;
$node->safe_psql('postgres', "
	CREATE EXTENSION tcopy;
	CREATE SERVER ts1 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts1->address . "');
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts2->address . "');
	CREATE USER MAPPING FOR PUBLIC SERVER ts1;
	CREATE USER MAPPING FOR PUBLIC SERVER ts2;
	CREATE TABLE marker (n int PRIMARY KEY);
	CREATE FOREIGN TABLE t1 (id int NOT NULL, n int NOT NULL, payload text) SERVER ts1 OPTIONS (key 'id');
	CREATE FOREIGN TABLE t2 (id int NOT NULL, n int NOT NULL, payload text) SERVER ts2 OPTIONS (key 'id');
");

my @outputs;
my (@committed, @aborted);

sub txn
{
	my ($n) = @_;
	return ('BEGIN', "INSERT INTO marker VALUES ($n)",
		rows_copy_sql($node, $n, per => $ROWS, table => 't1'),
		rows_copy_sql($node, $n, per => $ROWS, table => 't2'), 'COMMIT');
}

# "marker rows_t1 rows_t2" of transaction n, rows counted in its id range
sub state_of
{
	my ($n) = @_;
	my ($lo, $hi) = ($n * $ROWS + 1, $n * $ROWS + $ROWS);
	my ($rc, $out, $err) = $node->psql('postgres', qq{
		SELECT (SELECT count(*) FROM marker WHERE n = $n) || ' '
		  || (SELECT count(*) FROM t1 WHERE id BETWEEN $lo AND $hi) || ' '
		  || (SELECT count(*) FROM t2 WHERE id BETWEEN $lo AND $hi)});
	return $rc == 0 ? $out : "error: $err";
}

# every transaction so far: marker present <=> all rows on both tables
# (and none otherwise); the committed ones there, the others not
sub check_all
{
	my ($name) = @_;
	my @bad;
	for my $n (@committed)
	{
		my $s = state_of($n);
		push @bad, "committed $n: $s" unless $s eq "1 $ROWS $ROWS";
	}
	for my $n (@aborted)
	{
		my $s = state_of($n);
		push @bad, "aborted $n: $s" unless $s eq '0 0 0';
	}
	ok(!@bad, "$name: each transaction has its marker exactly when all its rows are on t1 and t2 ("
		  . 'committed ' . join(',', @committed) . '; aborted ' . join(',', @aborted) . ')')
	  or diag(join("\n", @bad));
	assert_tserver_unprepared($ts1, "$name, ts1");
	assert_tserver_unprepared($ts2, "$name, ts2");
	assert_no_08007($node, $name, @outputs);
}

# ---- 1. no fault ----
{
	my $n = 1;
	my $name = 'no fault';
	my ($rc, $out, $err) = psql_bg($node, [ txn($n) ], timeout => 60)->finish;
	push @outputs, $out, $err;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $ROWS\nCOPY $ROWS\nCOMMIT", "$name: the transaction commits")
	  or diag($err);
	is(state_of($n), "1 $ROWS $ROWS", "$name: right after COMMIT, the marker and all rows on t1 and t2");
	push @committed, $n;
	check_all($name);
}

# A transaction paused at point with both sessions prepared; kill -9 the
# tserver victim, then the backend; restart victim; wait for Postgres.
# Returns the gids both tservers list before recovery.
sub paused_crash
{
	my ($name, $n, $point, $victim) = @_;
	my ($p, $pid) = start_paused($node, $point, [ txn($n) ], timeout => 60);
	ok($pid, "$name: the backend pauses at $point") or do {
		my ($rc, $out, $err) = $p->finish;
		diag("exit $rc\n$out\n$err");
		return;
	};
	my ($sessions, $perr) = prepared_sessions($node);
	is(join(' ', sort map { $_->{server} } @{ $sessions // [] }), 'ts1 ts2',
		"$name: while paused, tcopy.prepared_sessions() lists one session on each server")
	  or diag($sessions ? explain($sessions) : $perr);
	my ($p1, $p2) = ($ts1->prepared, $ts2->prepared);
	ok($p1 && @$p1 == 1 && $p2 && @$p2 == 1, "$name: while paused, each tserver lists one prepared session")
	  or diag(explain([ $p1, $p2 ]));
	$victim->kill9;
	ok(kill('KILL', $pid), "$name: kill -9 of the paused backend");
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	is($rc, 2, "$name: psql reports the connection lost") or diag("$out\n$err");
	unlike($out, qr/^COMMIT$/m, "$name: ... and no COMMIT");
	$victim->start or BAIL_OUT('tserver did not start after kill -9');
	ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
		"$name: Postgres accepts connections again after the crash restart");
	($p1, $p2) = ($ts1->prepared, $ts2->prepared);
	ok($p1 && @$p1 == 1 && $p2 && @$p2 == 1,
		"$name: after the restarts, before recovery, both tservers still list the session prepared")
	  or diag(explain([ $p1, $p2 ]));
	my ($ok, $resolved, $left) = recover_all($node, timeout => 30);
	ok($ok, "$name: after recovery nothing is left prepared in Postgres' view") or diag($left);
	is($resolved, 2, "$name: tcopy.recover_prepared_sessions() resolved both sessions");
	($ok, undef, $left) = recover_all($node, ts => $ts1, timeout => 20);
	ok($ok, "$name: ... nor on ts1") or diag($left);
	($ok, undef, $left) = recover_all($node, ts => $ts2, timeout => 20);
	ok($ok, "$name: ... nor on ts2") or diag($left);
}

# ---- 2. after-prepare, ts2 killed ----
{
	my $n = 2;
	my $name = 'paused after-prepare, ts2 and the backend killed -9';
	paused_crash($name, $n, 'after-prepare', $ts2);
	is(state_of($n), '0 0 0', "$name: after recovery, no marker, no rows on t1 nor t2");
	push @aborted, $n;
	check_all($name);
}

# ---- 3. before-publish, ts1 killed ----
{
	my $n = 3;
	my $name = 'paused before-publish, ts1 and the backend killed -9';
	paused_crash($name, $n, 'before-publish', $ts1);
	is(state_of($n), "1 $ROWS $ROWS", "$name: after recovery, the marker and all rows on t1 and t2");
	push @committed, $n;
	check_all($name);
}

# ---- 4. ts2 killed before COMMIT ----
{
	my $n = 4;
	my $name = 'ts2 killed -9 before COMMIT';
	my $s = TcopyPgTest::Session->new($node, timeout => 60);
	$s->run_ok('\set VERBOSITY verbose');
	my @stmts = txn($n);
	my $commit = pop @stmts;
	my ($out, $err) = $s->run(join(";\n", @stmts) . ';');
	push @outputs, $out, $err;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $ROWS\nCOPY $ROWS", "$name: the COPYs into t1 and t2 succeed")
	  or diag($err);
	$ts2->kill9;
	($out, $err) = $s->run("$commit;");
	push @outputs, $out, $err;
	unlike($out, qr/^COMMIT$/m, "$name: COMMIT does not commit");
	my @states = sqlstates($err);
	ok(@states && $err =~ /\bERROR:  [0-9A-Z]{5}: /, "$name: ... it fails with an ERROR") or diag($err);
	ok(@states && !grep({ $_ eq '08007' } @states), "$name: ... whose SQLSTATE is not 08007") or diag($err);
	$s->quit;
	my $p1;
	ok(wait_until(10, sub { $p1 = $ts1->prepared; $p1 && !@$p1 }),
		"$name: ts1 lists nothing prepared (the abort discarded its session)")
	  or diag($p1 ? explain($p1) : 'tserver-cli prepared failed');
	my ($rc, $cnt) = $node->psql('postgres',
		"SELECT count(*) FROM t1 WHERE id BETWEEN " . ($n * $ROWS + 1) . " AND " . ($n * $ROWS + $ROWS));
	is($cnt, '0', "$name: none of its rows on t1");
	is($node->safe_psql('postgres', "SELECT count(*) FROM marker WHERE n = $n"), '0', "$name: no marker");
	$ts2->start or BAIL_OUT('tserver 2 did not start after kill -9');
	my $p2 = $ts2->prepared;
	ok($p2 && !@$p2, "$name: restarted, ts2 lists nothing prepared")
	  or diag($p2 ? explain($p2) : 'tserver-cli prepared failed');
	is(state_of($n), '0 0 0', "$name: no marker, no rows on t1 nor t2");
	push @aborted, $n;
	check_all($name);
}

$node->stop;
$ts1->stop;
$ts2->stop;
done_testing();
