# 162_read_own_writes.pl
#	A transaction reads its own writes to tcopy tables, and nobody else
#	does before its COMMIT; concurrent UPDATEs of a row wait for each other
#	(issue 15).  The tserver runs with --session-memory-mb 4: a session
#	spills past 2 MB staged, and a scan reads at most 4 MB of a session's
#	spilled rows in its key range.  Asserted, with psql sessions whose
#	transactions overlap:
#	- a small COPY (nothing spilled) is read back whole in its transaction;
#	- a COPY that spilled once, in key order and shuffled (the tserver's
#	  direct SST files, and its runs), under on_conflict 'error' and
#	  'ignore', then UPDATEs, DELETEs, moves and inserts again on both sides
#	  of the spill: every read in the transaction and the committed table
#	  hold the rows computed here;
#	- a COPY that spilled far past the limit: a key range read works, a
#	  whole-table read fails with 54000 "too many of its writes to it
#	  spilled"; committed, the rows are all there;
#	- a second session sees none of the first's uncommitted UPDATE, DELETE
#	  and INSERT, then all of them after its COMMIT; its read of a table the
#	  first truncated waits for the TRUNCATE's lock, as on a heap table, and
#	  then reads the first's rows;
#	- two UPDATEs of one key (WHERE k = const: a key lock) and of the
#	  table's rows (another predicate: a table lock), done whole by the
#	  tserver (direct modify) or through a scan: the second waits, seen in
#	  pg_locks, until the first commits, then reads its value (+2); an
#	  UPDATE waiting on a DELETE finds no row once the DELETE commits;
#	- lock_timeout ends such a wait with 55P03;
#	- two transactions that wrote the table, then UPDATE it with other
#	  predicates, deadlock (each holds the lock the other's table lock
#	  waits for; a heap table's row locks would not): Postgres' detector
#	  ends one with 40P01, the other commits;
#	- 4 sessions incrementing one row, direct and through a scan, WHERE k
#	  = const and its generic plan of k = $1 (the key lock), a key range and
#	  k + 0 = const (the table lock): every transaction commits, no update
#	  is lost.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node wait_until staging_entries);

my ($node, $ts) = setup_node(tserver => { extra_args => [ '--session-memory-mb', '4' ] });

# Rows "k<TAB>v<TAB>pad" for keys first .. last (v = k, a 100-byte pad), in
# key order or shuffled (a fixed permutation).
my $script = $node->basedir . '/rows.pl';
PostgreSQL::Test::Utils::append_to_file($script, <<'PERL');
my ($first, $last, $shuffle) = @ARGV;
my @k = ($first .. $last);
if ($shuffle)
{
	srand(162);
	for (my $i = $#k; $i > 0; $i--)
	{
		my $j = int(rand($i + 1));
		@k[ $i, $j ] = @k[ $j, $i ];
	}
}
my $pad = 'p' x 100;
print "$_\t$_\t$pad\n" for @k;
PERL

sub copy_sql
{
	my ($table, $first, $last, $order) = @_;
	my $shuffle = $order eq 'shuffled' ? 1 : 0;
	return "COPY $table FROM PROGRAM 'perl $script $first $last $shuffle';";
}

sub create_table
{
	my ($table, $policy) = @_;
	$node->safe_psql('postgres',
		"CREATE FOREIGN TABLE $table (k int NOT NULL, v int, pad text) SERVER ts OPTIONS (key 'k'"
		  . ($policy ? ", on_conflict '$policy'" : '') . ')');
}

# "count|sum(v)" of a table, as session i (or a new connection) reads it.
sub count_sum_sql
{
	my ($table, $where) = @_;
	return "SELECT count(*) || '|' || coalesce(sum(v), 0) FROM $table"
	  . ($where ? " WHERE $where" : '') . ';';
}

my @s = map { TcopyPgTest::Session->new($node, timeout => 180) } 1 .. 2;
$_->run_ok('\set VERBOSITY verbose') for @s;
my @pid = map { $_->backend_pid } @s;

# Run sql in session i, failing the test on any error; its stdout.
sub ok_run
{
	my ($i, $sql, $name) = @_;
	my ($out, $err) = $s[$i]->run($sql);
	is($err, '', $name) or diag("$sql\n$err");
	return $out;
}

sub spilled_bytes
{
	my $stats = $ts->stats or return -1;
	return $stats->{spilled_bytes} // -1;
}

# Whether an open session spilled: files in the tserver's staging directory
# (a spill runs in the background, and a sorted one's SST file is counted
# in spilled_bytes only as it grows).
sub spilled
{
	return wait_until(10, sub { scalar(staging_entries($ts)) > 0 });
}

# Wait until session i's backend waits for a lock of locktype; true when it does.
sub waits_for_lock
{
	my ($i, $locktype) = @_;
	return wait_until(10, sub {
		$node->safe_psql('postgres',
			"SELECT count(*) FROM pg_locks WHERE pid = $pid[$i] AND NOT granted AND locktype = '$locktype'") eq '1';
	});
}

# ---- a small transaction reads its rows ----
{
	my $name = 'small COPY';
	create_table('small');
	ok_run(0, 'BEGIN;', "$name: begin");
	is(ok_run(0, copy_sql('small', 1, 5000, 'sorted'), "$name: copy"), 'COPY 5000', "$name: 5000 rows");
	is(spilled_bytes(), 0, "$name: nothing spilled");
	is(scalar(staging_entries($ts)), 0, "$name: ... nothing in the staging directory");
	is(ok_run(0, count_sum_sql('small'), "$name: read"), '5000|12502500', "$name: the transaction reads them all");
	is(ok_run(1, count_sum_sql('small'), "$name: other session"), '0|0', "$name: another session reads none");
	ok_run(0, 'COMMIT;', "$name: commit");
	is(ok_run(1, count_sum_sql('small'), "$name: other session"), '5000|12502500', "$name: committed, all are there");
}

# ---- a COPY that spilled once, then updates and deletes ----
for my $case ([ 'sorted', 'error' ], [ 'shuffled', 'error' ], [ 'sorted', 'ignore' ], [ 'shuffled', 'ignore' ])
{
	my ($order, $policy) = @$case;
	my $name = "COPY of 20000 rows $order, on_conflict '$policy', spilled once";
	my $t = "once_${order}_$policy";
	create_table($t, $policy);
	my %v = map { $_ => $_ } 1 .. 20000;
	my $want = sub {
		my ($lo, $hi) = @_;
		my @keys = grep { $_ >= $lo && $_ <= $hi } keys %v;
		my $sum = 0;
		$sum += $v{$_} for @keys;
		return scalar(@keys) . "|$sum";
	};
	ok_run(0, 'BEGIN;', "$name: begin");
	is(ok_run(0, copy_sql($t, 1, 20000, $order), "$name: copy"), 'COPY 20000', "$name: 20000 rows");
	ok(spilled(), "$name: the session spilled");
	is(ok_run(0, count_sum_sql($t), "$name: read"), $want->(1, 20000), "$name: read whole");
	# keys on both sides of what spilled (in key order: the first 2 MB)
	is(ok_run(0, "UPDATE $t SET v = -v WHERE k BETWEEN 100 AND 199 OR k BETWEEN 19800 AND 19899;",
			"$name: update"), 'UPDATE 200', "$name: UPDATE 200");
	$v{$_} = -$v{$_} for 100 .. 199, 19800 .. 19899;
	is(ok_run(0, "DELETE FROM $t WHERE k BETWEEN 5000 AND 5099 OR k > 19950;", "$name: delete"),
		'DELETE 150', "$name: DELETE 150");
	delete @v{ 5000 .. 5099, 19951 .. 20000 };
	is(ok_run(0, "UPDATE $t SET k = k + 100000 WHERE k BETWEEN 300 AND 309;", "$name: move"),
		'UPDATE 10', "$name: 10 rows moved");
	$v{ $_ + 100000 } = delete $v{$_} for 300 .. 309;
	is(ok_run(0, "INSERT INTO $t SELECT g, g, 'new' FROM generate_series(5000, 5009) g;", "$name: insert"),
		'INSERT 0 10', "$name: 10 deleted keys inserted again");
	$v{$_} = $_ for 5000 .. 5009;
	is(ok_run(0, count_sum_sql($t), "$name: read"), $want->(0, 1 << 30), "$name: the transaction reads its changes");
	is(ok_run(0, count_sum_sql($t, 'k BETWEEN 90 AND 5050'), "$name: range read"), $want->(90, 5050),
		"$name: ... also in a key range");
	is(ok_run(1, count_sum_sql($t), "$name: other session"), '0|0', "$name: another session reads none");
	ok_run(0, 'COMMIT;', "$name: commit");
	is(ok_run(1, count_sum_sql($t), "$name: other session"), $want->(0, 1 << 30), "$name: committed as read");
	is(ok_run(1, "SELECT string_agg(k || ':' || v, ' ' ORDER BY k) FROM $t WHERE k IN (99, 100, 199, 200, 5000, 5010, 100305, 19950, 19951);",
			"$name: rows"), '99:99 100:-100 199:-199 200:200 5000:5000 19950:19950 100305:305',
		"$name: the rows, one by one");
}

# ---- a COPY that spilled past what a scan reads ----
for my $order ('sorted', 'shuffled')
{
	my $name = "COPY of 100000 rows $order";
	my $t = "big_$order";
	create_table($t);
	ok_run(0, 'BEGIN;', "$name: begin");
	is(ok_run(0, copy_sql($t, 1, 100000, $order), "$name: copy"), 'COPY 100000', "$name: 100000 rows");
	is(ok_run(0, count_sum_sql($t, 'k BETWEEN 500 AND 1499'), "$name: range read"), '1000|999500',
		"$name: a key range is read");
	is(ok_run(0, "UPDATE $t SET v = 0 WHERE k = 700;", "$name: update"), 'UPDATE 1', "$name: a key is updated");
	is(ok_run(0, "SELECT v FROM $t WHERE k = 700;", "$name: read"), '0', "$name: ... and read back");
	my ($out, $err) = $s[0]->run(count_sum_sql($t));
	like($err,
		qr/ERROR:  54000: cannot read foreign table "$t" in this transaction: too many of its writes to it spilled to the tserver's disk/,
		"$name: a whole-table read fails with 54000");
	like($err, qr/HINT:  .*--session-memory-mb/, "$name: ... with a hint");
	ok_run(0, 'ROLLBACK;', "$name: rollback");
	is(ok_run(1, count_sum_sql($t), "$name: read"), '0|0', "$name: rolled back, nothing is there");

	ok_run(0, 'BEGIN;', "$name: begin again");
	ok_run(0, copy_sql($t, 1, 100000, $order), "$name: copy again");
	is(ok_run(0, count_sum_sql($t, 'k > 99990'), "$name: range read"), '10|999955', "$name: the last keys are read");
	ok_run(0, 'COMMIT;', "$name: commit");
	is(ok_run(1, count_sum_sql($t), "$name: read"), '100000|5000050000', "$name: committed, all are there");
}

# ---- another session sees nothing before the COMMIT ----
create_table('t');
create_table('t2');
$node->safe_psql('postgres', q{
	INSERT INTO t SELECT g, g, 'row' FROM generate_series(1, 10) g;
	INSERT INTO t2 SELECT g, g, 'row' FROM generate_series(1, 3) g;
});
my $rows_sql = "SELECT string_agg(k || ':' || v, ' ' ORDER BY k) FROM t;";
{
	my $name = 'visibility';
	my $before = '1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9 10:10';
	my $after = '1:100 3:3 4:4 5:5 6:6 7:7 8:8 9:9 10:10 11:11';
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(0, 'TRUNCATE t2;', "$name: truncate t2");
	ok_run(0, "INSERT INTO t2 VALUES (7, 7, 'after truncate');", "$name: insert into t2");
	ok_run(0, 'UPDATE t SET v = 100 WHERE k = 1;', "$name: update");
	ok_run(0, 'DELETE FROM t WHERE k = 2;', "$name: delete");
	ok_run(0, "INSERT INTO t VALUES (11, 11, 'new');", "$name: insert");
	is(ok_run(0, $rows_sql, "$name: read"), $after, "$name: the writer reads its changes");
	is(ok_run(0, count_sum_sql('t2'), "$name: read t2"), '1|7', "$name: ... and its truncate");
	is(ok_run(1, $rows_sql, "$name: other session"), $before, "$name: another session reads none of them");
	ok_run(1, 'BEGIN;', "$name: the other begins");
	is(ok_run(1, $rows_sql, "$name: other session"), $before, "$name: ... in a transaction too");
	# TRUNCATE holds its ACCESS EXCLUSIVE lock to the end, as on a heap table
	$s[1]->send(count_sum_sql('t2'));
	ok(waits_for_lock(1, 'relation'), "$name: a read of the truncated table waits for the writer");
	ok_run(0, 'COMMIT;', "$name: commit");
	my ($out, $err) = $s[1]->result;
	is($err, '', "$name: the waiting read runs");
	is($out, '1|7', "$name: ... and reads the truncated table");
	is(ok_run(1, $rows_sql, "$name: other session"), $after, "$name: after the COMMIT, all of them");
	ok_run(1, 'COMMIT;', "$name: the other commits");
}

sub value_of
{
	my ($k) = @_;
	return $node->safe_psql('postgres', "SELECT v FROM t WHERE k = $k");
}

# ---- two UPDATEs of one row: the second waits, then reads the first's ----
# SET v = v + 1 with key bounds is done whole by the tserver (direct
# modify); with pad = pad || '' it is a scan and one record per row.
my %set = (direct => 'v = v + 1', scan => "v = v + 1, pad = pad || ''");
for my $case ([ 'one key', 'k = 1', 'k = 1', 'advisory' ],
			  [ 'the table', 'k = 3', 'pad LIKE \'row%\'', 'advisory' ])
{
	my ($what, $first_where, $second_where, $locktype) = @$case;
	for my $path ('direct', 'scan')
	{
		my $name = "concurrent UPDATEs ($path) locking $what";
		my $k = $first_where =~ /(\d+)/ ? $1 : die;
		my $v0 = value_of($k);
		ok_run(0, 'BEGIN;', "$name: begin");
		is(ok_run(0, "UPDATE t SET $set{$path} WHERE $first_where;", "$name: the first updates"),
			'UPDATE 1', "$name: the first updates one row");
		ok_run(1, 'BEGIN;', "$name: the second begins");
		$s[1]->send("UPDATE t SET $set{$path} WHERE $second_where;");
		ok(waits_for_lock(1, $locktype), "$name: the second waits for a $locktype lock");
		sleep(0.5);
		ok(!$s[1]->done, "$name: ... and is still waiting");
		ok_run(0, 'COMMIT;', "$name: the first commits");
		my ($out, $err) = $s[1]->result;
		is($err, '', "$name: the second's UPDATE then runs");
		like($out, qr/^UPDATE [1-9]\d*$/, "$name: ... and updates");
		is(ok_run(1, "SELECT v FROM t WHERE k = $k;", "$name: read"), $v0 + 2,
			"$name: the second read the first's value");
		ok_run(1, 'COMMIT;', "$name: the second commits");
		is(value_of($k), $v0 + 2, "$name: both increments are there");
	}
}
for my $path ('direct', 'scan')
{
	my $name = "an UPDATE ($path) waiting on a DELETE";
	my $k = $path eq 'direct' ? 4 : 7;
	ok_run(0, 'BEGIN;', "$name: begin");
	is(ok_run(0, "DELETE FROM t WHERE k = $k;", "$name: delete"), 'DELETE 1', "$name: the first deletes");
	$s[1]->send("UPDATE t SET $set{$path} WHERE k = $k;");
	ok(waits_for_lock(1, 'advisory'), "$name: the UPDATE waits");
	ok_run(0, 'COMMIT;', "$name: the DELETE commits");
	my ($out, $err) = $s[1]->result;
	is($err, '', "$name: the UPDATE runs");
	is($out, 'UPDATE 0', "$name: ... and finds no row, as on a heap table");
	is(value_of($k), '', "$name: the row is gone");
}

# ---- lock_timeout ----
for my $case ([ 'one key', 'k = 5' ], [ 'the table', 'v > 0' ])
{
	my ($what, $where) = @$case;
	my $name = "lock_timeout, locking $what";
	my $v0 = value_of(5);
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(0, 'UPDATE t SET v = v + 1 WHERE k = 5;', "$name: the first updates");
	my $start = time();
	my ($out, $err) = $s[1]->run("SET lock_timeout = '300ms'; UPDATE t SET v = v + 1 WHERE $where;");
	my $waited = time() - $start;
	like($err, qr/ERROR:  55P03: canceling statement due to lock timeout/, "$name: 55P03");
	cmp_ok($waited, '>=', 0.29, "$name: ... after the timeout");
	ok_run(1, 'RESET lock_timeout;', "$name: reset");
	ok_run(0, 'COMMIT;', "$name: the first commits");
	is(value_of(5), $v0 + 1, "$name: the first's update only");
}

# ---- two range UPDATEs wait for each other, never deadlock ----
{
	my $name = 'two range UPDATEs';
	ok_run(0, "INSERT INTO t VALUES (30, 30, 'r');", "$name: a row of their own");
	my $v0 = value_of(30);
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, "UPDATE t SET v = v + 1 WHERE k + 0 = 30;", "$name: the first updates");
	$s[1]->send("UPDATE t SET v = v + 1 WHERE k + 0 = 30;");
	ok(waits_for_lock(1, 'advisory'), "$name: the second waits");
	ok_run(0, 'COMMIT;', "$name: the first commits");
	my ($out, $err) = $s[1]->result;
	is("$out$err", 'UPDATE 1', "$name: the second then updates, no deadlock");
	ok_run(1, 'COMMIT;', "$name: the second commits");
	is(value_of(30), $v0 + 2, "$name: both increments are there");
}

# ---- a deadlock: each holds a key, then wants the whole table ----
{
	my $name = 'deadlock';
	ok_run(0, 'BEGIN;', "$name: begin");
	ok_run(1, 'BEGIN;', "$name: begin");
	ok_run(0, "INSERT INTO t VALUES (20, 20, 'a');", "$name: the first inserts");
	ok_run(1, "INSERT INTO t VALUES (21, 21, 'b');", "$name: the second inserts");
	ok_run(0, "UPDATE t SET v = v WHERE k = 20;", "$name: the first updates its key");
	ok_run(1, "UPDATE t SET v = v WHERE k = 21;", "$name: the second updates its key");
	$s[0]->send("UPDATE t SET v = v + 1 WHERE pad IN ('a', 'b');");
	ok(waits_for_lock(0, 'advisory'), "$name: the first's UPDATE waits for the second");
	my ($out1, $err1) = $s[1]->run("UPDATE t SET v = v + 1 WHERE pad IN ('a', 'b');");
	my ($out0, $err0) = $s[0]->result;
	my @failed = grep { $_ =~ /ERROR:  40P01: deadlock detected/ } ($err0, $err1);
	is(scalar(@failed), 1, "$name: one of them fails with 40P01") or diag("first: $err0\nsecond: $err1");
	my $survivor = $err0 =~ /40P01/ ? 1 : 0;
	my $out = $survivor ? $out1 : $out0;
	is($out, 'UPDATE 1', "$name: the other updates its own row");
	ok_run($_, 'COMMIT;', "$name: commit") for 0, 1;
	my $row = $survivor ? '21:22' : '20:21';
	is($node->safe_psql('postgres', "SELECT string_agg(k || ':' || v, ' ' ORDER BY k) FROM t WHERE k BETWEEN 20 AND 29"),
		$row, "$name: the survivor's rows, updated");
}

# ---- 4 sessions increment one row, 25 transactions each ----
# WHERE k = 6, also as the generic plan of k = $1 (a parameter key bound),
# takes the key lock; a range and k + 0 = 6 take the table lock.  Every
# transaction must commit (a heap table's row locks make them wait, never
# fail), and every committed increment must be there.
my $generic = 'SET plan_cache_mode = force_generic_plan;';
for my $case ([ 'WHERE k = 6, direct', '', "UPDATE t SET $set{direct} WHERE k = 6;" ],
			  [ 'WHERE k = 6, scan', '', "UPDATE t SET $set{scan} WHERE k = 6;" ],
			  [ 'a generic plan of WHERE k = $1, direct',
				"$generic\nPREPARE inc(int) AS UPDATE t SET $set{direct} WHERE k = \$1;", 'EXECUTE inc(6);' ],
			  [ 'a generic plan of WHERE k = $1, scan',
				"$generic\nPREPARE inc(int) AS UPDATE t SET $set{scan} WHERE k = \$1;", 'EXECUTE inc(6);' ],
			  [ 'WHERE k BETWEEN 6 AND 7, direct', '', "UPDATE t SET $set{direct} WHERE k BETWEEN 6 AND 7;" ],
			  [ 'WHERE k + 0 = 6, scan', '', "UPDATE t SET $set{scan} WHERE k + 0 = 6;" ])
{
	my ($what, $setup, $statement) = @$case;
	my $name = "4 sessions incrementing one row, $what";
	my @c = map { TcopyPgTest::Session->new($node, timeout => 180) } 1 .. 4;
	$_->run_ok("\\set VERBOSITY verbose\n$setup") for @c;
	my $v0 = value_of(6);
	my $script = join('', map { "BEGIN;\n$statement\nCOMMIT;\n" } 1 .. 25);
	$_->send($script) for @c;
	my $committed = 0;
	my %errors;
	for my $c (@c)
	{
		my ($out, $err) = $c->result;
		$committed += () = $out =~ /^COMMIT$/mg;
		$errors{$_}++ for $err =~ /ERROR:  (\w{5}): /g;
	}
	$_->quit for @c;
	is(value_of(6), $v0 + $committed, "$name: every committed increment is there");
	is($committed, 100, "$name: every transaction committed")
	  or diag('errors by SQLSTATE: ' . join(', ', map { "$_ x $errors{$_}" } sort keys %errors));
}

$_->quit for @s;
$node->stop;
$ts->stop;
done_testing();
