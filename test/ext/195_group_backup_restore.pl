# 195_group_backup_restore.pl
#	Postgres and a replica group restored to one consistent point (issue
#	28, item 4; README "Backups of Postgres and its tservers"): the foreign
#	server's address lists a group of three; tcopy.backup() (its leader
#	takes the backup) writes a restore point while transactions commit,
#	one of them paused after its commit record and one after its prepare.
#	Restored: Postgres by point-in-time recovery to the restore point, the
#	group as a new group of three members on copies of the backup
#	(--raft-bootstrap), the server's address changed to them.  Asserted,
#	once recovery has resolved what the backup held prepared:
#	- the tcopy table holds exactly the transactions whose marker the
#	  restored Postgres has: before the backup (the paused-after-commit one
#	  published, the paused-after-prepare one discarded), a first run of
#	  those committing around it, none after;
#	- the new group takes transactions, and every member holds the same
#	  rows.
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
use TcopyPgTest qw(assert_restored_point commit_txn archive_wal restore_to_point setup_node twopc_conf twopc_ddl txn_sql recover_all assert_atomic
  start_paused psql_bg wait_until table_name_of);

my $per = 2000;

my $old = TcopyGroup->new(extra_args => [ '--session-memory-mb', 1 ]);
$old->start_all or BAIL_OUT('the group did not start');
ok(defined $old->leader, 'the group elects a leader') or BAIL_OUT('no leader');
my ($node) = setup_node(name => 'primary', group => $old,
	init => { allows_streaming => 1, has_archiving => 1 },
	conf => twopc_conf(recovery_interval => '0'));
$node->safe_psql('postgres', twopc_ddl());

sub commit_ok { commit_txn($node, $_[0], per => $per) }

commit_ok($_) for 1 .. 3;
$node->backup('base');
commit_ok($_) for 4 .. 6;

# transaction 7 paused after its prepare, 8 after its commit record
my ($p7, $pid7) = start_paused($node, 'after-prepare', [ txn_sql($node, 7, per => $per) ]);
my ($p8, $pid8) = start_paused($node, 'before-publish', [ txn_sql($node, 8, per => $per) ]);
ok($pid7 && $pid8, 'transactions 7 and 8 pause');

my $loop = psql_bg($node, [ map { join(";\n", txn_sql($node, $_, per => $per, last => 200)) } 100 .. 199 ]);
ok(wait_until(60, sub { $node->safe_psql('postgres', 'SELECT count(*) FROM marker WHERE n >= 100') > 0 }),
	'the transactions around the backup begin to commit');
my $dir = PostgreSQL::Test::Utils::tempdir_short();
my ($rc, $out, $err) = $node->psql('postgres',
	"SELECT servers, backup, tables, prepared_sessions, restore_lsn IS NOT NULL"
	  . " FROM tcopy.backup('gbk', '$dir')");
is($rc, 0, 'tcopy.backup() of the group succeeds while transactions commit') or diag($err);
like($out, qr/^ts\|\Q$dir\E\/ts\|\d+\|\d+\|t$/, 'the group backed up as its server, into directory/<server>')
  or diag($out);
my ($lrc) = $loop->finish;
is($lrc, 0, 'the transactions around the backup all committed');
commit_ok($_) for 9 .. 10;

ok(archive_wal($node), 'the WAL is archived');
$node->stop('immediate');
$p7->finish;
$p8->finish;
$old->stop_all;

# the group restored as a new group, on three copies of the backup
my $new = TcopyGroup->new(extra_args => [ '--session-memory-mb', 1 ]);
for my $i (1 .. 3)
{
	is(system('cp', '-a', "$dir/ts", $new->member($i)->data_dir), 0,
		"the backup copied for new member $i");
}
ok($new->start_all, 'the new group starts on the copies');
ok(defined $new->leader, 'the new group elects a leader');

my ($restored, $promoted) = restore_to_point($node, 'base', 'restored', 'gbk');
ok($promoted, 'Postgres recovers to the restore point and is promoted');
my $address = $new->address;
$restored->safe_psql('postgres', "ALTER SERVER ts OPTIONS (SET address '$address')");

my ($ok, $resolved, $left) = recover_all($restored, timeout => 60);
ok($ok, "recovery resolves what the backup held prepared ($resolved sessions)") or diag($left);
my @during = assert_restored_point($restored, per => $per,
	sizes => { map { $_ => 200 } 100 .. 199 });

# the new group takes transactions; its members alike
$node = $restored;
commit_ok($_) for 11 .. 12;
my $result = assert_atomic($restored, 'after the restore', per => $per,
	sizes => { map { $_ => 200 } 100 .. 199 });
ok($result->{present}{11} && $result->{present}{12}, 'transactions after the restore are there');
my $tname = table_name_of($restored, 't');
$restored->stop;
sleep(1);						# the followers apply the last entries
my $sums = $new->member_checksums($tname);
like($sums->{1}{$tname}, qr/^rows \d+ /, 'member 1 holds the table');
is($sums->{2}{$tname}, $sums->{1}{$tname}, 'members 1 and 2 hold the same rows');
is($sums->{3}{$tname}, $sums->{1}{$tname}, 'members 1 and 3 hold the same rows');
done_testing();
