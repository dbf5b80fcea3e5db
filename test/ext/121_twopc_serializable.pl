# 121_twopc_serializable.pl
#	Two-phase commit (issue 11) where Postgres itself decides against a
#	transaction after its sessions were prepared:
#	- the serializable write skew of the PostgreSQL manual (13.2.3): two
#	  SERIALIZABLE transactions each read the class of heap rows the other
#	  inserts into; the second also COPYs 50,000 rows (TCOPY_SSI_ROWS) into
#	  a tcopy table and INSERTs 5 more, and commits second: its COMMIT fails
#	  with SQLSTATE 40001 (Postgres checks serializability after the
#	  pre-commit callbacks, so after the tserver prepared), and NONE of its
#	  rows are in the tcopy table afterwards (before two-phase commit, all
#	  of them were), its heap rows neither; no session stays prepared, in
#	  Postgres' view (tcopy.prepared_sessions()) or the tserver's, without
#	  any recovery run (the background worker is off: the abort discards);
#	- the same with the COPYing transaction committing first: it commits,
#	  its rows are there as soon as COMMIT returns, and the other fails;
#	- reading right after COMMIT, in the same session and in another one,
#	  sees the rows of a COPY and of an INSERT, in a transaction block and
#	  alone;
#	- PREPARE TRANSACTION after a COPY, an INSERT or a TRUNCATE of a tcopy
#	  table works (issue 48), and ROLLBACK PREPARED then leaves nothing
#	  prepared and nothing of the transaction, without any recovery run
#	  (213_prepare_transaction.pl checks COMMIT PREPARED); a transaction
#	  that only read the tcopy table can be prepared and committed;
#	- no 08007 anywhere.
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
  prepared_sessions recover_all assert_atomic assert_tserver_unprepared assert_no_08007
  sqlstates wait_until);

my $copy_rows = $ENV{TCOPY_SSI_ROWS} // 50_000;
my $insert_rows = 5;
my $per = $copy_rows + $insert_rows;	# rows of a skew transaction: ids n * per + 1 ..
my %pers = (1 => $per, 2 => $per);	# the skew transactions; the others have 1000 rows

# recovery off: whatever is left prepared, the transaction's own commit or
# abort left it
my ($node, $ts) = twopc_setup(recovery_interval => '0', max_prepared_transactions => 5);
$node->safe_psql('postgres', q{
	CREATE TABLE mytab (class int, value int);
	INSERT INTO mytab VALUES (1, 10), (1, 20), (2, 100), (2, 200);
});
my @outputs;				# every psql output, for the 08007 check

# A session that shows SQLSTATEs.
sub session
{
	my $s = TcopyPgTest::Session->new($node, timeout => 300);
	$s->run_ok('\set VERBOSITY verbose');
	return $s;
}

# run on a session, keeping the output
sub run
{
	my ($s, $sql) = @_;
	my ($out, $err) = $s->run($sql);
	push @outputs, $out, $err;
	return ($out, $err);
}

# No session left prepared, without recovery: the transaction's commit or
# abort resolved its sessions itself.
sub nothing_prepared
{
	my ($name) = @_;
	my ($sessions, $err);
	wait_until(5, sub { ($sessions, $err) = prepared_sessions($node); $sessions && !@$sessions });
	ok($sessions && !@$sessions, "$name: tcopy.prepared_sessions() is empty without any recovery run")
	  or diag($sessions ? join("\n", map { "$_->{gid} $_->{decision}" } @$sessions) : $err);
	assert_tserver_unprepared($ts, $name);
}

# The write skew; the COPYing transaction n commits second unless
# copy_first.  Returns (COMMIT output and error of the COPYing one, of the
# other one).
sub write_skew
{
	my ($name, $n, $copy_first) = @_;
	my $reader = session();		# reads class 1, inserts into class 2; no tcopy table
	my $copier = session();		# reads class 2, inserts into class 1, writes the tcopy table
	my ($out, $err);
	for my $s ([ $reader, 1 ], [ $copier, 2 ])
	{
		($out, $err) = run($s->[0], "BEGIN ISOLATION LEVEL SERIALIZABLE;\n"
			  . "SELECT sum(value) FROM mytab WHERE class = $s->[1];");
		like($out, qr/^BEGIN\n\d+$/, "$name: a SERIALIZABLE transaction reads class $s->[1]") or diag($err);
	}
	($out, $err) = run($reader, 'INSERT INTO mytab VALUES (2, 30);');
	is($out, 'INSERT 0 1', "$name: the first one inserts into class 2") or diag($err);
	($out, $err) = run($copier, "INSERT INTO mytab VALUES (1, 300);\n"
		  . "INSERT INTO marker VALUES ($n);\n"
		  . rows_copy_sql($node, $n, per => $per, last => $copy_rows) . ";\n"
		  . rows_insert_sql($n, per => $per, first => $copy_rows + 1) . ';');
	is($out, "INSERT 0 1\nINSERT 0 1\nCOPY $copy_rows\nINSERT 0 $insert_rows",
		"$name: the second inserts into class 1, COPYs $copy_rows rows into the tcopy table and INSERTs $insert_rows")
	  or diag($err);
	my @first = $copy_first ? ($copier, $reader) : ($reader, $copier);
	my @first_result = run($first[0], 'COMMIT;');
	my @second_result = run($first[1], 'COMMIT;');
	$_->quit for $reader, $copier;
	return $copy_first ? (@first_result, @second_result) : (@second_result, @first_result);
}

# ---- the COPYing transaction commits second and fails ----
{
	my $name = 'write skew, COPY committed second';
	my ($out, $err, $other_out, $other_err) = write_skew($name, 1, 0);
	is($other_out, 'COMMIT', "$name: the transaction that committed first commits") or diag($other_err);
	is($out, '', "$name: the COPYing transaction's COMMIT does not commit");
	is((sqlstates($err))[0], '40001', "$name: ... it fails with SQLSTATE 40001") or diag($err);
	like($err, qr/could not serialize access/, "$name: ... as a serialization failure");
	note("$name: $err");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '0',
		"$name: none of the failed transaction's $per rows are in the tcopy table");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE n = 1'), '0',
		"$name: ... neither the COPYed nor the INSERTed ones");
	is($node->safe_psql('postgres', "SELECT string_agg(class || ':' || value, ' ' ORDER BY class, value) FROM mytab"),
		'1:10 1:20 2:30 2:100 2:200', "$name: the heap holds the first transaction's row, not the failed one's");
	nothing_prepared($name);
	assert_atomic($node, $name, pers => \%pers, aborted => [1]);
}

# ---- the COPYing transaction commits first and wins ----
{
	my $name = 'write skew, COPY committed first';
	$node->safe_psql('postgres', 'DELETE FROM mytab WHERE value = 30');
	my ($out, $err, $other_out, $other_err) = write_skew($name, 2, 1);
	is($out, 'COMMIT', "$name: the COPYing transaction commits") or diag($err);
	is($other_out, '', "$name: the other one does not");
	is((sqlstates($other_err))[0], '40001', "$name: ... it fails with SQLSTATE 40001") or diag($other_err);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE n = 2'), $per,
		"$name: all $per rows of the committed transaction are there");
	nothing_prepared($name);
	assert_atomic($node, $name, pers => \%pers, committed => [2], aborted => [1]);
}

# ---- reading right after COMMIT ----
{
	my $s = session();
	my $n = 3;
	for my $how ('COPY in a block', 'INSERT in a block', 'COPY alone', 'INSERT alone')
	{
		for my $i (1 .. 3)
		{
			my $write = $how =~ /COPY/ ? rows_copy_sql($node, $n) : rows_insert_sql($n);
			my $sql = $how =~ /block/
			  ? "BEGIN;\nINSERT INTO marker VALUES ($n);\n$write;\nCOMMIT;\n"
			  : "INSERT INTO marker VALUES ($n);\n$write;\n";
			my ($out, $err) = run($s, $sql . "SELECT count(*) FROM t WHERE n = $n;");
			like($out, qr/(?:COPY|INSERT 0) 1000\n(?:COMMIT\n)?1000$/,
				"read after commit, $how ($i): the same session sees all 1000 rows right after COMMIT")
			  or diag("$out\n$err");
			is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE n = $n"), '1000',
				"read after commit, $how ($i): so does another session");
			$n++;
		}
	}
	$s->quit;
	assert_atomic($node, 'read after commit', pers => \%pers, committed => [ 3 .. $n - 1 ]);
}

# ---- PREPARE TRANSACTION ----
$node->safe_psql('postgres', twopc_ddl('f_prep', "table_name 'f_prep'"));
$node->safe_psql('postgres', 'INSERT INTO f_prep (id, n, payload) SELECT i, 0, \'kept\' FROM generate_series(1, 100) i');
for my $case ([ 'COPY', 30 ], [ 'INSERT', 31 ], [ 'TRUNCATE', 32 ])
{
	my ($how, $n) = @$case;
	my $name = "PREPARE TRANSACTION after $how";
	my $write = $how eq 'COPY' ? rows_copy_sql($node, $n)
	  : $how eq 'INSERT' ? rows_insert_sql($n) : 'TRUNCATE f_prep';
	my ($rc, $out, $err) = psql_bg($node,
		[ 'BEGIN', "INSERT INTO marker VALUES ($n)", $write, "PREPARE TRANSACTION 'tcopy_test_$n'" ],
		timeout => 60)->finish;
	push @outputs, $out, $err;
	is($rc, 0, "$name: PREPARE TRANSACTION works") or diag("$out\n$err");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '1',
		"$name: ... the transaction is prepared");
	($rc, $out, $err) = psql_bg($node, "ROLLBACK PREPARED 'tcopy_test_$n'", timeout => 60)->finish;
	push @outputs, $out, $err;
	is($rc, 0, "$name: ROLLBACK PREPARED works") or diag("$out\n$err");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
		"$name: no transaction is prepared in Postgres");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM f_prep'), '100',
		"$name: the tcopy table that was not written keeps its rows");
	nothing_prepared($name);
	assert_atomic($node, $name, pers => \%pers, aborted => [$n]);
}
{
	my $name = 'PREPARE TRANSACTION of a transaction that only read a tcopy table';
	my ($rc, $out, $err) = psql_bg($node,
		[ 'BEGIN', 'SELECT count(*) FROM f_prep', 'INSERT INTO mytab VALUES (9, 9)',
		  "PREPARE TRANSACTION 'tcopy_test_read'", "COMMIT PREPARED 'tcopy_test_read'" ],
		timeout => 60)->finish;
	push @outputs, $out, $err;
	is($out, "BEGIN\n100\nINSERT 0 1\nPREPARE TRANSACTION\nCOMMIT PREPARED", "$name: works")
	  or diag("exit $rc\n$err");
}

# ---- at the end ----
my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 30);
ok($ok, 'at the end: recovery finds nothing left prepared') or diag($left);
is($resolved, 0, 'at the end: ... and resolves nothing (every transaction resolved its own sessions)');
assert_no_08007($node, 'serializable', @outputs);

$node->stop;
$ts->stop;
done_testing();
