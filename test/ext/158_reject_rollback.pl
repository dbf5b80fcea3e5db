# 158_reject_rollback.pl
#	COPY ... (ON_ERROR ignore, reject_table 'rj') (issue 14, bad rows): the
#	reject table is written in the COPY's transaction, so it holds the
#	skipped rows of a load exactly when the load's rows are on the tserver.
#	A load of N rows (TCOPY_REJECT_ROWS, default 20,000), every 100th with
#	a bad field, into tcopy table t (key id), each time with other ids:
#	- committed: t holds the good rows, rj the bad ones with their lines;
#	- rolled back, the backend terminated before COMMIT, the tserver killed
#	  -9 before COMMIT (the COMMIT fails): neither t nor rj changes;
#	- the COMMIT fails on a duplicate key met at prepare (a load out of key
#	  order, on_conflict 'error'): neither changes;
#	- no 08007 anywhere.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node wait_until assert_no_08007);

my $rows = $ENV{TCOPY_REJECT_ROWS} // 20_000;
my $bad = int($rows / 100);
my ($node, $ts) = setup_node(
	conf => "log_line_prefix = '%m [%p] %e %q%a '\ntcopy.recovery_interval = '1s'\n");
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE t (id int NOT NULL, v int) SERVER ts OPTIONS (key 'id');
	CREATE TABLE rj (copy_table text, line_number bigint, raw_line text,
		column_name text, sqlstate text, message text);
});
my @outputs;

# Load n's CSV: ids n * rows + 1 .. n * rows + rows, every 100th v = 'x';
# shuffled (a duplicate of the first id appended): for the duplicate case.
sub write_load
{
	my ($n, %opts) = @_;
	my $file = $node->basedir . "/load_$n.csv";
	my @ids = map { $n * $rows + $_ } 1 .. $rows;
	@ids = reverse @ids if $opts{reversed};
	push @ids, $ids[0] if $opts{duplicate};
	open my $fh, '>', $file or die "$file: $!";
	my $line = 0;
	for my $id (@ids)
	{
		$line++;
		print $fh $id, ',', ($line % 100 == 0 ? 'x' : $id), "\n";
	}
	close $fh;
	return $file;
}

sub copy_sql
{
	my ($file) = @_;
	return "COPY t FROM '$file' (FORMAT csv, ON_ERROR ignore, LOG_VERBOSITY silent, reject_table 'rj');";
}

sub state
{
	return $node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM t) || \' \' || (SELECT count(*) FROM rj)');
}

# ---- committed ----
my $file = write_load(1);
my ($rc, $out, $err) = $node->psql('postgres', copy_sql($file));
push @outputs, $out, $err;
is($rc, 0, 'committed: the COPY succeeds') or diag($err);
is(state(), ($rows - $bad) . " $bad", 'committed: t holds the good rows, rj the bad ones');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM rj WHERE line_number % 100 = 0 AND sqlstate = '22P02'
	  AND column_name = 'v' AND raw_line LIKE '%,x'}),
	$bad, 'committed: each reject has its line, column, SQLSTATE and raw line');
my $committed = state();

# ---- rolled back ----
$file = write_load(2);
($rc, $out, $err) = $node->psql('postgres', "BEGIN;\n" . copy_sql($file) . "\nROLLBACK;");
push @outputs, $out, $err;
is($rc, 0, 'rollback: BEGIN, COPY, ROLLBACK succeed') or diag($err);
is(state(), $committed, 'rollback: neither t nor rj changed');

# ---- the backend terminated before COMMIT ----
{
	my $s = TcopyPgTest::Session->new($node);
	my $pid = $s->backend_pid;
	$s->run_ok('BEGIN;');
	$s->run_ok(copy_sql(write_load(3)));
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't',
		'terminated: the backend is terminated inside the transaction');
	$s->quit;
	ok(wait_until(10, sub { state() eq $committed }), 'terminated: neither t nor rj changed')
	  or diag(state());
}

# ---- the tserver killed -9 before COMMIT ----
{
	my $s = TcopyPgTest::Session->new($node);
	$s->run_ok('BEGIN;');
	$s->run_ok(copy_sql(write_load(4)));
	$ts->kill9;
	my ($o, $e) = $s->run('COMMIT;');
	push @outputs, $o, $e;
	like($e, qr/ERROR/, 'tserver killed: the COMMIT fails');
	$s->quit;
	$ts->start or BAIL_OUT('tserver did not start after kill -9');
	is(state(), $committed, 'tserver killed: neither t nor rj changed');
}

# ---- the COMMIT fails on a duplicate key ----
{
	$file = write_load(5, reversed => 1, duplicate => 1);
	($rc, $out, $err) = $node->psql('postgres', "BEGIN;\n" . copy_sql($file) . "\nCOMMIT;");
	push @outputs, $out, $err;
	like($err, qr/ERROR:  duplicate key value violates unique constraint "t_key"/,
		'duplicate at COMMIT: the COMMIT fails with the duplicate');
	is(state(), $committed, 'duplicate at COMMIT: neither t nor rj changed');
}

assert_no_08007($node, 'reject rollback', @outputs);
$node->stop;
$ts->stop;
done_testing();
