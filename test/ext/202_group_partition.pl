# 202_group_partition.pl
#	Postgres on a replica group whose leader is cut off from the other two
#	members by a network partition (issue 28): each member in a network
#	namespace of its own (test/tools/netns.sh, set up by test/pg_tests.sh
#	as root; the namespaces route to each other through the host), its
#	raft port on the namespace's address, its unix socket reached by
#	Postgres as always.  While Postgres commits transactions in a loop (a
#	marker row in a heap table, 1000 rows COPYed into a tcopy table, one
#	COMMIT):
#	- the leader's link is cut: it steps down, the two others elect a
#	  leader, and the loop goes on committing on it; the cut-off member,
#	  asked alone, refuses a read (no stale rows);
#	- the link back: the old leader follows the group, and the loop goes
#	  on;
#	- in the end, after recovery, exactly the transactions Postgres
#	  committed are on the group (assert_atomic), nothing is left prepared,
#	  no 08007, and every member holds the same rows.
#	Without TCOPY_NETNS_DIR (not root, no `ip netns`) the test skips.  It
#	cuts a namespace's link, which 173's tservers use too: it runs alone.
# pg_tests: alone
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
use TcopyNetns qw(netns_dir);
use TcopyPgTest qw(setup_node twopc_conf twopc_ddl assert_atomic assert_no_08007
  recover_all wait_until table_name_of start_txn_loop stop_txn_loop);

my $dir = netns_dir();
plan skip_all => 'no network namespaces: TCOPY_NETNS_DIR is not set (test/pg_tests.sh sets them up '
  . 'when run as root with `ip netns` working)'
  unless defined $dir && -p "$dir/ns3.cmd" && -p "$dir/links.cmd";

my $per = 1000;
my $group = TcopyGroup->new(raft_hosts => [ map { "10.231.$_.2" } 1 .. 3 ],
	member => sub {
		my ($i, $args) = @_;
		return TcopyNetns::Tserver->new(dir => $dir, k => $i, unix => 1,
			args => [ @$args, '--allow-uid', $>, '--session-memory-mb', 4 ]);
	});
$group->start_all or BAIL_OUT('the group did not start');
my $leader = $group->leader(30);
ok(defined $leader, 'the group elects a leader across the namespaces') or BAIL_OUT('no leader');

# Namespace k's link down or up, by netns.sh's link runner (root).
sub link_set
{
	my ($how, $k) = @_;
	my $line = "$how $k";
	my $before = () = TcopyNetns::slurp("$dir/links.done") =~ /^\Q$line\E$/mg;
	open(my $fifo, '>>', "$dir/links.cmd") or BAIL_OUT("links.cmd: $!");
	print $fifo "$line\n";
	close($fifo);
	return wait_until(10, sub { (() = TcopyNetns::slurp("$dir/links.done") =~ /^\Q$line\E$/mg) > $before });
}

my ($node) = setup_node(name => 'partition', group => $group, conf => twopc_conf(recovery_interval => '1s'));
$node->safe_psql('postgres', twopc_ddl());

my $load = start_txn_loop($node, per => $per);
my $committed = sub { $node->safe_psql('postgres', 'SELECT count(*) FROM marker') };
ok(wait_until(60, sub { $committed->() >= 5 }), 'the load commits transactions');

# cut the leader off
my $cut = $group->member($leader);
ok(link_set('down', $leader), "member ${leader}'s link, the leader's, is cut");
ok(wait_until(20, sub { $cut->log_contents =~ /no longer leads/ }), "member $leader, cut off, steps down");
my $before = $committed->();
ok(wait_until(60, sub { $committed->() >= $before + 5 }),
	'the load goes on committing on the leader the other two elect');
my $r;
ok(wait_until(30, sub {
	$r = $cut->cli('scan', table_name_of($node, 't'), '--format', 'count');
	$r->{rc} != 0 && $r->{err} =~ /does not lead it/ }),
	'the cut-off member, asked alone, refuses a read') or diag(explain($r));

# the link back
ok(link_set('up', $leader), "member ${leader}'s link is back");
ok(wait_until(30, sub { my $p = $cut->cli('ping'); $p->{rc} == 0 || $p->{err} =~ /does not lead it: member \d+/ }),
	'the old leader follows the group again');
$before = $committed->();
ok(wait_until(60, sub { $committed->() >= $before + 5 }), 'the load commits after the partition');
my ($out, $err) = stop_txn_loop($node, $load);
my @errors = grep { /ERROR/ } split /\n/, $err;
note(scalar(@errors) . ' errors in the load: ' . join(' | ', @errors[ 0 .. ($#errors < 4 ? $#errors : 4) ]));

my ($ok, $resolved, $left) = recover_all($node, timeout => 60);
ok($ok, 'recovery leaves nothing prepared') or diag($left);
my @marked = split /\n/, $node->safe_psql('postgres', 'SELECT n FROM marker ORDER BY n');
my $check = assert_atomic($node, 'the partition', per => $per, committed => \@marked);
is($check->{partial}, 0, 'no transaction is there in part');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $per * @marked,
	'the tcopy table holds the rows of every committed transaction, and no other');
assert_no_08007($node, 'the partition', $err);

my @tables = (table_name_of($node, 't'));
my $sums = $group->member_checksums(@tables);
is_deeply($sums->{$_}, $sums->{1}, "members 1 and $_ hold the same rows") for 2 .. 3;
my $rows = $per * @marked;
like($sums->{1}{ $tables[0] }, qr/^rows $rows /, 'every committed row on member 1');

$node->stop;
done_testing();
