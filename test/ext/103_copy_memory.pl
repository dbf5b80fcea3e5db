# 103_copy_memory.pl
#	The backend's private memory stays bounded during a COPY of 5M
#	pgbench_accounts rows (TCOPY_BIG_ROWS overrides) into a tcopy table:
#	its RssAnon, sampled from /proc while the COPY runs, stays under
#	100 MB, through the COPY hook with arena and with malloc messages, and
#	through Postgres' COPY and the FDW's insert path.  Then a COPY
#	cancelled in the middle fails with Postgres' cancel error and leaves
#	nothing.
# pg_tests: alone (it measures the backend's memory and how soon a cancel ends)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum rss_anon_kb
  held_copy_sql);

my $rows = $ENV{TCOPY_BIG_ROWS} // 5_000_000;

# The requirement: a COPY's memory is bounded by window x batch size
# (4 x 1 MB by default), whatever the input size.  A backend that held the
# rows would need more than 500 MB for 5M rows of this shape.
my $RSS_ANON_BOUND_KB = 100 * 1024;

my ($node, $ts) = setup_node();
my $csv = $node->basedir . '/big.csv';
my $expect = write_accounts_csv($csv, 1, $rows);
note("big.csv: $rows rows, $expect->{bytes} bytes");
$node->safe_psql('postgres', accounts_ddl(tcopy => [ 'big_arena', 'big_malloc', 'big_insert', 'big_cancel' ]));

# Run sql in session s and sample the backend's RssAnon until it is done.
# Returns (stdout, stderr, max RssAnon kB, samples).
sub run_sampled
{
	my ($s, $pid, $sql) = @_;
	my ($max, $samples) = (0, 0);
	$s->send($sql);
	until ($s->done)
	{
		my $kb = rss_anon_kb($pid);
		last unless defined $kb;
		$max = $kb if $kb > $max;
		$samples++;
		sleep(0.02);
	}
	my ($out, $err) = $s->result;
	return ($out, $err, $max, $samples);
}

# the COPY hook with arena and with malloc messages, and Postgres' COPY
# through the FDW's insert path
my %settings = (
	arena => 'SET tcopy.alloc_mode = arena;',
	malloc => 'SET tcopy.alloc_mode = malloc;',
	insert => 'SET tcopy.copy_hook = off;');
for my $mode ('arena', 'malloc', 'insert')
{
	my $table = "big_$mode";
	my $s = TcopyPgTest::Session->new($node);
	my $pid = $s->backend_pid;
	$s->run_ok($settings{$mode});
	my $before = rss_anon_kb($pid);
	ok(defined $before, "RssAnon of backend $pid is readable") or next;
	my $t0 = time();
	my ($out, $err, $max, $samples) =
	  run_sampled($s, $pid, "COPY $table FROM '$csv' (FORMAT csv);");
	my $secs = time() - $t0;
	is($out, "COPY $rows", "$mode: COPY of $rows rows") or diag($err);
	is($err, '', "$mode: no error");
	# a load of millions of rows takes seconds: many samples
	cmp_ok($samples, '>=', $rows >= 1_000_000 ? 5 : 1,
		"$mode: RssAnon sampled during the COPY ($samples samples)");
	cmp_ok($max, '<', $RSS_ANON_BOUND_KB,
		"$mode: the backend's RssAnon stayed under 100 MB (max $max kB, $before kB before)");
	note(sprintf("%s: %d rows in %.1f s (%.0f rows/s), RssAnon max %d kB",
		$mode, $rows, $secs, $rows / ($secs || 1), $max));
	is($node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(aid) || ' ' || sum(abalance) FROM $table"),
		"$rows $expect->{aid_sum} $expect->{abalance_sum}", "$mode: every row is there");
	$s->quit;
	# the space is needed no more
	$node->safe_psql('postgres', "TRUNCATE $table");
}

# ---- cancel ----
my $s = TcopyPgTest::Session->new($node);
my $pid = $s->backend_pid;
# after its first 200k rows, the COPY gets one every 20 ms: still running
# when it is cancelled, however fast the machine
$s->send(held_copy_sql($node, 'big_cancel', $csv, 200_000) . ';');
my $seen = 0;
my $deadline = time() + 120;
while (time() < $deadline && !$s->done)
{
	$seen = $node->safe_psql('postgres',
		"SELECT tuples_processed FROM pg_stat_progress_copy WHERE pid = $pid") || 0;
	last if $seen > 100_000;
	sleep(0.02);
}
ok($seen > 100_000 && !$s->done, "the COPY is running ($seen rows) when it is cancelled");
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', "cancel after $seen rows");
my $t0 = time();
my ($out, $err) = $s->result;
like($err, qr/ERROR:  canceling statement due to user request/, 'the COPY fails with the cancel error');
cmp_ok(time() - $t0, '<', 10, 'and stops promptly');
is($node->safe_psql('postgres', 'SELECT count(*) FROM big_cancel'), '0',
	'nothing of the cancelled COPY is in the table');
# the session is usable afterwards
($out, $err) = $s->run("COPY big_cancel FROM STDIN (FORMAT csv);\n1,1,1,x\n\\.");
is($out, 'COPY 1', 'the session copies again after the cancel') or diag($err);
$s->quit;

$node->stop;
$ts->stop;
done_testing();
