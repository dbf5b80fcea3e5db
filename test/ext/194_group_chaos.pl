# 194_group_chaos.pl
#	The two-phase commit chaos loop of 125_twopc_chaos.pl (TcopyChaos.pm)
#	against a replica group of three tservers (issue 28): clients commit
#	transactions of a heap marker row and 1,000 rows of a tcopy table on
#	the group while, at random moments (TCOPY_CHAOS_SEED), a member is
#	killed -9 and restarted (the leader every other time: a change of
#	leader in the middle of loads, prepares and resolutions) and Postgres
#	is stopped in immediate mode and restarted.  Afterwards: every
#	transaction all or nothing, every one that committed there, every one
#	that failed not, nothing prepared, no 08007; and each member's data
#	alike.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use TcopyTest;
use TcopyGroup;
use TcopyPgTest qw(setup_node twopc_conf twopc_ddl table_name_of);
use TcopyChaos qw(run_chaos);

my $group = TcopyGroup->new;
$group->start_all or BAIL_OUT('the group did not start');
ok(defined $group->leader, 'the group elects a leader') or BAIL_OUT('no leader');

my ($node) = setup_node(name => 'group_chaos', group => $group,
	conf => twopc_conf(recovery_interval => '1s'));
$node->safe_psql('postgres', twopc_ddl());

my $faults = 0;
run_chaos(
	node => $node,
	ts => $group,
	seconds => $ENV{TCOPY_CHAOS_SECONDS} // 30,
	clients => $ENV{TCOPY_CHAOS_CLIENTS} // 3,
	seed => $ENV{TCOPY_CHAOS_SEED} // 194,
	fault_every => 5,
	fault_name => 'member kill',
	fault => sub {
		my $victim = ($faults++ % 2 == 0 ? $group->leader(10) : undef) // 1 + int(rand(3));
		$group->member($victim)->kill9;
		sleep(rand(0.5));
		$group->start_member($victim) or BAIL_OUT("member $victim did not start after kill -9");
	});

my $table = table_name_of($node, 't');
$node->stop;
my $sums = $group->member_checksums($table);
like($sums->{1}{$table}, qr/^rows \d+ /, 'member 1 holds the table');
is($sums->{2}{$table}, $sums->{1}{$table}, 'member 2 holds the same rows');
is($sums->{3}{$table}, $sums->{1}{$table}, 'member 3 holds the same rows');
done_testing();
