# 128_snapshot_two_tservers.pl
#	Snapshots across two tservers (issue 26, docs/snapshots.md#several-tservers):
#	"a snapshot must never show half of a transaction that was published
#	on several tservers".  One Postgres node (tcopy.recovery_interval 0:
#	nothing resolves behind the test's back), tservers ts1 and ts2, tcopy
#	tables t1 (on ts1) and t2 (on ts2), key id, one row per id on each.
#	1. A transaction that wrote t1 and t2, committed, and published on ts1
#	   only (paused before its publish, the backend killed -9 and ts1's
#	   session published by tserver-cli): READ COMMITTED statements that
#	   read t1 and t2 apart read all of it (the read of t2, refused while
#	   ts2's session is in doubt, takes a snapshot, which publishes it:
#	   Postgres committed); a REPEATABLE READ transaction reads all of it,
#	   on both tables, whichever it reads first, and so does one READ
#	   COMMITTED statement that reads both, the session on ts2 published
#	   by the reader.
#	2. A transaction paused after its prepare (not committed): a
#	   REPEATABLE READ transaction reads none of it and publishes nothing;
#	   cancelled, it leaves nothing prepared.
#	3. ts2 stopped: a REPEATABLE READ transaction reads t1; ts2 started
#	   again, the transaction's read of t2 is 40001 naming ts2 ("has no
#	   snapshot in this transaction", saying why) with a hint to retry; a
#	   new transaction reads both.
#	4. Transfers under load: pgbench moves 1 from t1's row to t2's row of
#	   one of 20 ids, 2 clients for TCOPY_SNAPSHOT_SECONDS (default 8 s),
#	   while 2 readers sum t1 and t2 in REPEATABLE READ transactions (in
#	   one statement, or two) and in READ COMMITTED statements: every sum
#	   is the total, and the writers' transactions all commit.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use IPC::Run;
use TcopyPgTest qw(twopc_conf start_paused wait_until);

my $SECONDS = $ENV{TCOPY_SNAPSHOT_SECONDS} // 8;
my $IDS = 20;

my $ts1 = TcopyTest->new;
my $ts2 = TcopyTest->new;
$ts1->start or BAIL_OUT('tserver 1 did not start');
$ts2->start or BAIL_OUT('tserver 2 did not start');
my $node = PostgreSQL::Test::Cluster->new('snap2');
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
	CREATE FOREIGN TABLE t1 (id int NOT NULL, v int NOT NULL) SERVER ts1 OPTIONS (key 'id');
	CREATE FOREIGN TABLE t2 (id int NOT NULL, v int NOT NULL) SERVER ts2 OPTIONS (key 'id');
");

sub psql_out
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql);
	return $rc == 0 ? $out : "error: $err";
}

my $RR = 'BEGIN ISOLATION LEVEL REPEATABLE READ';

# Transaction "INSERT id into t1 and t2", committed and paused before its
# publish, its backend killed -9, and its session on ts1 published by
# tserver-cli: on ts1 only.
sub published_on_ts1_only
{
	my ($name, $id) = @_;
	my ($p, $pid) = start_paused($node, 'before-publish',
		[ 'BEGIN', "INSERT INTO t1 VALUES ($id, 100)", "INSERT INTO t2 VALUES ($id, 100)", 'COMMIT' ],
		timeout => 60);
	ok($pid, "$name: the transaction pauses before its publish") or BAIL_OUT('no pause');
	ok(kill('KILL', $pid), "$name: kill -9 of the paused backend (its commit record is written)");
	$p->finish;
	ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
		"$name: Postgres accepts connections again");
	my ($p1, $p2) = ($ts1->prepared, $ts2->prepared);
	ok($p1 && @$p1 == 1 && $p2 && @$p2 == 1, "$name: each tserver holds the session prepared")
	  or BAIL_OUT('not prepared');
	is($ts1->resolve($p1->[0]{gid}, 1)->{rc}, 0, "$name: tserver-cli publishes the session on ts1");
}

# ---- 1. committed, published on ts1 only ----
{
	my $name = 'published on ts1 only';
	published_on_ts1_only($name, 1);
	is(psql_out('SELECT count(*) FROM t1; SELECT count(*) FROM t2'), "1\n1",
		"$name: READ COMMITTED statements that read t1 and t2 apart read its row on both");
	my $p2 = $ts2->prepared;
	ok($p2 && !@$p2, "$name: ... the read of t2 having published its session on ts2 (Postgres committed it)")
	  or diag(explain($p2));
	is(psql_out("$RR; SELECT (SELECT count(*) FROM t2) || ' ' || (SELECT count(*) FROM t1); COMMIT"),
		'1 1', "$name: REPEATABLE READ reads the transaction on t2 and t1");
	is(psql_out('SELECT (SELECT count(*) FROM t1) || \' \' || (SELECT count(*) FROM t2)'), '1 1',
		"$name: READ COMMITTED reads both rows now");
}

# the same, with t1 read first and t2 in a later statement
{
	my $name = 'published on ts1 only, t1 read first';
	published_on_ts1_only($name, 2);
	is(psql_out("$RR; SELECT count(*) FROM t1; SELECT pg_sleep(0.2); SELECT count(*) FROM t2; COMMIT"),
		"2\n\n2", "$name: REPEATABLE READ reads both rows, t2's in a later statement");
}

# the same, read by one READ COMMITTED statement
{
	my $name = 'published on ts1 only, one READ COMMITTED statement';
	published_on_ts1_only($name, 4);
	is(psql_out('SELECT (SELECT count(*) FROM t1) || \' \' || (SELECT count(*) FROM t2)'), '3 3',
		"$name: one statement that reads t1 and t2 reads it on both");
	my $p2 = $ts2->prepared;
	ok($p2 && !@$p2, "$name: ... having published its session on ts2") or diag(explain($p2));
	is(psql_out('SELECT count(*) FROM t2'), '3', "$name: a statement that reads t2 alone reads it then");
}

# ---- 2. prepared, not committed ----
{
	my $name = 'prepared, not committed';
	my ($p, $pid) = start_paused($node, 'after-prepare',
		[ 'BEGIN', 'INSERT INTO t1 VALUES (3, 100)', 'INSERT INTO t2 VALUES (3, 100)', 'COMMIT' ],
		timeout => 60);
	ok($pid, "$name: the transaction pauses after its prepare") or BAIL_OUT('no pause');
	is(psql_out("$RR; SELECT (SELECT count(*) FROM t1) || ' ' || (SELECT count(*) FROM t2); COMMIT"),
		'3 3', "$name: REPEATABLE READ reads none of it");
	my ($p1, $p2) = ($ts1->prepared, $ts2->prepared);
	ok($p1 && @$p1 == 1 && $p2 && @$p2 == 1, "$name: ... and publishes nothing")
	  or diag(explain([ $p1, $p2 ]));
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	my ($rc, $out, $err) = $p->finish;
	like($err, qr/canceling statement due to user request/, "$name: the paused COMMIT is cancelled");
	ok(wait_until(20, sub { my ($a, $b) = ($ts1->prepared, $ts2->prepared); $a && !@$a && $b && !@$b }),
		"$name: ... and nothing is left prepared");
	is(psql_out('SELECT (SELECT count(*) FROM t1) || \' \' || (SELECT count(*) FROM t2)'), '3 3',
		"$name: its rows are nowhere");
}

# ---- 3. a tserver down when the snapshots are taken ----
{
	my $name = 'ts2 down';
	$ts2->stop;
	my $s = TcopyPgTest::Session->new($node, timeout => 60);
	$s->run_ok('\set VERBOSITY verbose');
	my ($out, $err) = $s->run("$RR;\nSELECT count(*) FROM t1;");
	is($out, "BEGIN\n3", "$name: a REPEATABLE READ transaction reads t1") or diag($err);
	$ts2->start or BAIL_OUT('tserver 2 did not start');
	($out, $err) = $s->run('SELECT count(*) FROM t2;');
	like($err, qr/ERROR:  40001: could not serialize access: tserver at "\Q${\ $ts2->address }\E" has no snapshot in this transaction/,
		"$name: its read of t2, back since, is 40001 naming ts2") or diag($err);
	like($err, qr/DETAIL:  It could not be reached when the transaction took its snapshots: /,
		"$name: ... saying why");
	like($err, qr/HINT:  Retry the transaction\./, "$name: ... with a hint to retry");
	$s->run('ROLLBACK;');
	$s->quit;
	is(psql_out("$RR; SELECT (SELECT count(*) FROM t1) || ' ' || (SELECT count(*) FROM t2); COMMIT"),
		'3 3', "$name: a new transaction reads both");
}

# ---- 4. transfers under load ----
{
	my $name = 'transfers';
	$node->safe_psql('postgres', "
		DELETE FROM t1; DELETE FROM t2;
		INSERT INTO t1 SELECT i, 1000 FROM generate_series(1, $IDS) i;
		INSERT INTO t2 SELECT i, 1000 FROM generate_series(1, $IDS) i;");
	my $total = 2 * $IDS * 1000;
	my $script = PostgreSQL::Test::Utils::tempdir() . '/transfer.sql';
	open(my $fh, '>', $script) or die $!;
	print $fh "\\set id random(1, $IDS)\nBEGIN;\nUPDATE t1 SET v = v - 1 WHERE id = :id;\n"
	  . "UPDATE t2 SET v = v + 1 WHERE id = :id;\nEND;\n";
	close($fh);
	my ($bout, $berr) = ('', '');
	my $bench = IPC::Run::start([ $node->installed_command('pgbench'), '-n', '-c', '2', '-j', '2',
			'-T', $SECONDS, '-f', $script, '-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \undef, '>', \$bout, '2>', \$berr);
	my $reads = PostgreSQL::Test::Utils::tempdir() . '/reads.sql';
	open($fh, '>', $reads) or die $!;
	print $fh "$RR;\nSELECT 'sum ' || ((SELECT sum(v) FROM t1) + (SELECT sum(v) FROM t2));\nCOMMIT;\n"
	  . "$RR;\nSELECT sum(v) AS a FROM t2 \\gset\nSELECT 'sum ' || (:a + (SELECT sum(v) FROM t1));\nCOMMIT;\n"
	  . "SELECT 'sum ' || ((SELECT sum(v) FROM t2) + (SELECT sum(v) FROM t1));\n"
	  for 1 .. 30;
	close($fh);
	my $deadline = time + $SECONDS;
	my %sums;
	my ($read_errors, $rounds) = ('', 0);
	while (time < $deadline)
	{
		my @ps = map {
			my %o = (out => '', err => '');
			$o{h} = IPC::Run::start([ $node->installed_command('psql'), '-XAtq', '-v', 'ON_ERROR_STOP=1',
					'-d', $node->connstr('postgres'), '-f', $reads ],
				'<', \undef, '>', \$o{out}, '2>', \$o{err}, IPC::Run::timeout(120));
			\%o;
		} 1 .. 2;
		for my $p (@ps)
		{
			$p->{h}->finish;
			$read_errors .= "exit $?: $p->{err}" if $? != 0 || $p->{err} ne '';
			$sums{$_}++ for $p->{out} =~ /^sum (\d+)$/mg;
		}
		$rounds++;
	}
	$bench->finish;
	is($?, 0, "$name: pgbench exits 0") or diag("$bout\n$berr");
	my ($processed) = $bout =~ /number of transactions actually processed: (\d+)/;
	ok(($processed // 0) > 0, "$name: pgbench moved money (" . ($processed // 0) . ' transactions)');
	is($read_errors, '', "$name: the readers' transactions all succeed");
	my $n = 0;
	$n += $_ for values %sums;
	ok($n >= 180, "$name: the readers took $n sums in $rounds rounds");
	is(join(' ', sort keys %sums), $total,
		"$name: every sum of t1 and t2 (REPEATABLE READ, or one READ COMMITTED statement) is $total")
	  or diag(explain(\%sums));
	is(psql_out('SELECT (SELECT sum(v) FROM t1) + (SELECT sum(v) FROM t2)'), $total,
		"$name: and so is the sum after the load");
}

$ts1->check_log;
$ts2->check_log;
$node->stop;
$ts1->stop;
$ts2->stop;
done_testing();
