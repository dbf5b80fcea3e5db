# 193_replica_group.pl
#	A tcopy table on a replica group of three tservers (issue 28;
#	docs/replication.md): the foreign server's address lists the members,
#	and Postgres reaches whichever leads.  Against a heap table loaded with
#	the same rows, after each step:
#	1. COPY, then SELECT: the same rows;
#	2. the leader killed -9 while idle: SELECT on the new leader, the same
#	   rows; a COPY after it lands;
#	3. the leader killed -9 in the middle of a COPY: the COPY fails with an
#	   ERROR (not 08007), and none of its rows is anywhere; the next COPY
#	   lands;
#	4. two-phase commit across a change of leader: a transaction (heap
#	   marker row + COPY) paused after its prepare, the leader and the
#	   backend killed -9: recovery, on the new leader, discards it; paused
#	   after Postgres' commit record (before-publish), the same: recovery
#	   publishes it;
#	5. every member, opened alone, holds the same rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;
use TcopyPgTest qw(setup_node twopc_conf write_accounts_csv table_checksum held_copy_sql copy_progress
  psql_bg start_paused recover_all sqlstates wait_until rows_copy_sql table_name_of);

my $ROWS = 1000;

my $group = TcopyGroup->new(extra_args => [ '--session-memory-mb', 4 ]);
$group->start_all or BAIL_OUT('the group did not start');
ok(defined $group->leader, 'the group elects a leader') or BAIL_OUT('no leader');

my ($node) = setup_node(name => 'group', group => $group,
	conf => twopc_conf(recovery_interval => '1s'));
$node->safe_psql('postgres', qq{
	CREATE TABLE h (aid int NOT NULL, bid int, abalance int, filler char(84));
	CREATE FOREIGN TABLE t (aid int NOT NULL, bid int, abalance int, filler char(84))
		SERVER ts OPTIONS (key 'aid');
	CREATE TABLE marker (n int PRIMARY KEY);
	CREATE FOREIGN TABLE m (id int NOT NULL, n int NOT NULL, payload text)
		SERVER ts OPTIONS (key 'id');
});

my $dir = $node->basedir;
my $csv1 = "$dir/a1.csv";
my $csv2 = "$dir/a2.csv";
my $csv3 = "$dir/a3.csv";
my $csv4 = "$dir/a4.csv";
write_accounts_csv($csv1, 1, 150_000);			# spills: SST files shipped
write_accounts_csv($csv2, 150_001, 20_000);		# in memory: one batch
write_accounts_csv($csv3, 200_001, 400_000);	# the COPY cut by a kill
write_accounts_csv($csv4, 170_001, 30_000);

sub same_rows
{
	my ($name) = @_;
	is(table_checksum($node, 't'), table_checksum($node, 'h'), "$name: t holds h's rows");
}

# ---- 1 ----
$node->safe_psql('postgres', "COPY t FROM '$csv1' (FORMAT csv); COPY h FROM '$csv1' (FORMAT csv);");
same_rows('a spilled COPY');
$node->safe_psql('postgres', "COPY t FROM '$csv2' (FORMAT csv); COPY h FROM '$csv2' (FORMAT csv);");
same_rows('a small COPY');

# ---- 2 ----
my $leader = $group->leader;
$group->member($leader)->kill9;
same_rows("member $leader killed while idle, the new leader");
$node->safe_psql('postgres', "COPY t FROM '$csv4' (FORMAT csv); COPY h FROM '$csv4' (FORMAT csv);");
same_rows('a COPY after the change of leader');
ok($group->start_member($leader), "member $leader restarts");

# ---- 3 ----
$leader = $group->leader;
my $p = psql_bg($node, [ held_copy_sql($node, 't', $csv3, 50_000) ], timeout => 120);
ok(wait_until(60, sub { my @pr = copy_progress($node, 't'); @pr && $pr[1] > 45_000 }),
	'the held COPY is under way');
$group->member($leader)->kill9;
TcopyPgTest::release_held_copy($node);
my ($rc, $out, $err) = $p->finish;
isnt($rc, 0, "member $leader killed in the middle of a COPY: the COPY fails");
like($err, qr/ERROR:/, '... with an ERROR') or diag($err);
note("the COPY's error: $err");
ok(!grep({ $_ eq '08007' } sqlstates($err)), '... which is not 08007') or diag($err);
same_rows('none of the cut COPY\'s rows');
$node->safe_psql('postgres', "COPY t FROM '$csv3' (FORMAT csv); COPY h FROM '$csv3' (FORMAT csv);");
same_rows('the COPY again, on the new leader');
ok($group->start_member($leader), "member $leader restarts");

# ---- 4 ----
sub txn
{
	my ($n) = @_;
	return ('BEGIN', "INSERT INTO marker VALUES ($n)",
		rows_copy_sql($node, $n, per => $ROWS, table => 'm'), 'COMMIT');
}

sub state_of
{
	my ($n) = @_;
	my ($lo, $hi) = ($n * $ROWS + 1, $n * $ROWS + $ROWS);
	return $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM marker WHERE n = $n) || ' '
		  || (SELECT count(*) FROM m WHERE id BETWEEN $lo AND $hi)});
}

for my $case ([ 1, 'after-prepare', '0 0' ], [ 2, 'before-publish', "1 $ROWS" ])
{
	my ($n, $point, $want) = @$case;
	my $name = "paused at $point, the leader and the backend killed -9";
	$leader = $group->leader;
	my ($pp, $pid) = start_paused($node, $point, [ txn($n) ], timeout => 60);
	ok($pid, "$name: the backend pauses") or next;
	$group->member($leader)->kill9;
	ok(kill('KILL', $pid), "$name: kill -9 of the backend");
	$pp->finish;
	ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
		"$name: Postgres accepts connections again");
	my ($ok, $resolved, $left) = recover_all($node, timeout => 60);
	ok($ok, "$name: recovery on the new leader leaves nothing prepared") or diag($left);
	is(state_of($n), $want, "$name: the marker and the rows, " . ($want eq '0 0' ? 'neither' : 'both'));
	ok($group->start_member($leader), "member $leader restarts");
}
same_rows('after the two-phase cases');

# ---- 5 ----
my @tables = (table_name_of($node, 't'), table_name_of($node, 'm'));
my $sums = $group->member_checksums(@tables);
is_deeply($sums->{2}, $sums->{1}, 'members 1 and 2 hold the same rows');
is_deeply($sums->{3}, $sums->{1}, 'members 1 and 3 hold the same rows');
like($sums->{1}{ $tables[0] }, qr/^rows 600000 /, 'every row of t on each member');

$node->stop;
done_testing();
