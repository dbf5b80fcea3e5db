# 192_backup_restore.pl
#	A backup of Postgres and its tserver restored to one consistent point
#	(issue 28, item 4): tcopy.backup(label, directory) backs the tserver up
#	and writes a restore point, while transactions commit; Postgres is then
#	restored from a base backup taken before, by point-in-time recovery to
#	recovery_target_name = label, and a tserver started on the backup.
#	Each transaction n is BEGIN; INSERT INTO marker VALUES (n); COPY of its
#	rows into t; COMMIT.  Asserted, after recovery has resolved what the
#	backup held prepared:
#	- t holds exactly the transactions whose marker the restored Postgres
#	  has (all of each one's rows, none of the others'): those committed
#	  before the backup, and of the transactions committing during it,
#	  whichever Postgres committed before the restore point;
#	- a transaction paused after its prepare (no commit record) when the
#	  backup ran is held prepared by the backup and discarded; one paused
#	  after its commit record, before its publish, is held prepared and
#	  published; those committed after the backup are in neither;
#	- the function is refused to a non-superuser (42501), with a relative
#	  directory (22023) and a label too long for a restore point;
#	- a second backup into the same directory is refused, naming
#	  directory/<server> and asking for a new directory; one into a
#	  directory whose parents are missing makes them (the README's
#	  procedure, a directory a day, needs no mkdir).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(assert_restored_point commit_txn archive_wal restore_to_point twopc_setup txn_sql recover_all
  start_paused psql_bg sqlstates wait_until);

my $per = 2000;

my ($node, $ts) = twopc_setup(
	name => 'primary',
	init => { allows_streaming => 1, has_archiving => 1 },
	recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN');

sub commit_ok { commit_txn($node, $_[0], per => $per) }

commit_ok($_) for 1 .. 3;
$node->backup('base');
commit_ok($_) for 4 .. 6;

# refusals
my ($rc, $out, $err) = $node->psql('postgres', "SET ROLE alice; SELECT * FROM tcopy.backup('x', '/tmp')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/permission denied for function backup/, 'a non-superuser may not run tcopy.backup()');
my $dir = PostgreSQL::Test::Utils::tempdir_short();
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM tcopy.backup('x', 'relative/dir')");
like($err, qr/22023: backup directory "relative\/dir" is not an absolute path/, 'a relative directory is refused');
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM tcopy.backup(repeat('x', 64), '$dir')");
like($err, qr/value too long for restore point \(maximum 63 characters\)/, 'a label too long is refused');
ok(!-e "$dir/ts", 'nothing was backed up by the refused calls');

# transaction 7 paused after its prepare, 8 after its commit record
my ($p7, $pid7) = start_paused($node, 'after-prepare', [ txn_sql($node, 7, per => $per) ]);
my ($p8, $pid8) = start_paused($node, 'before-publish', [ txn_sql($node, 8, per => $per) ]);
ok($pid7 && $pid8, 'transactions 7 and 8 pause');

# transactions committing while the backup runs, one after the other: the
# backup starts once the first has committed
my $loop = psql_bg($node, [ map { join(";\n", txn_sql($node, $_, per => $per, last => 200)) } 100 .. 299 ]);
ok(wait_until(60, sub { $node->safe_psql('postgres', 'SELECT count(*) FROM marker WHERE n >= 100') > 0 }),
	'the transactions around the backup begin to commit');
($rc, $out, $err) = $node->psql('postgres',
	"SELECT servers, backup, tables, prepared_sessions, restore_lsn IS NOT NULL"
	  . " FROM tcopy.backup('bk1', '$dir')");
is($rc, 0, 'tcopy.backup() succeeds while transactions commit') or diag($err);
like($out, qr/^ts\|\Q$dir\E\/ts\|1\|\d+\|t$/, 'it backed up the one tserver, into directory/<server>')
  or diag($out);
my ($prepared) = $out =~ /\|(\d+)\|t$/;
ok(defined $prepared && $prepared >= 2, "the backup holds the paused transactions' sessions prepared ($prepared)");
my ($lrc) = $loop->finish;
is($lrc, 0, 'the transactions around the backup all committed');
commit_ok($_) for 9 .. 10;

# the directory again: refused, saying what to do; a new one: its parents made
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM tcopy.backup('bk-again', '$dir')");
like($err, qr/backup directory "\Q$dir\E\/ts" already exists: back up into a new directory/,
	'a second backup into the same directory is refused, saying to use a new one');
my $deep = "$dir/nightly/2026-12-07";
($rc, $out, $err) = $node->psql('postgres', "SELECT backup FROM tcopy.backup('bk2', '$deep')");
is($rc, 0, 'a backup into a directory whose parents are missing succeeds') or diag($err);
is($out, "$deep/ts", '... into directory/<server>');
ok(-f "$deep/ts/BACKUP", '... its parents made by the tserver');

# the restore point archived, then the primary and its tserver gone
ok(archive_wal($node), 'the WAL is archived');
$node->stop('immediate');
$p7->finish;
$p8->finish;
$ts->stop;

# restored: Postgres to the restore point, a tserver on the backup
my $ts2 = TcopyTest->new(data => "$dir/ts", socket => $ts->socket_path,
	extra_args => [ '--session-memory-mb', '1' ]);
$ts2->start or BAIL_OUT('the tserver does not start on the backup');
like($ts2->log_contents, qr/starting on a backup/, 'the tserver starts on the backup');
my ($restored, $promoted) = restore_to_point($node, 'base', 'restored', 'bk1');
ok($promoted, 'Postgres recovers to the restore point and is promoted');

my ($ok, $resolved, $left) = recover_all($restored, ts => $ts2, timeout => 60);
ok($ok, "recovery resolves what the backup held prepared ($resolved sessions)") or diag($left);
my @during = assert_restored_point($restored, per => $per,
	sizes => { map { $_ => 200 } 100 .. 299 });
ok(@during >= 1 && @during < 200, scalar(@during) . ' of the 200 transactions around the backup '
	  . 'committed before its restore point: some, not all');

$ts2->stop;
done_testing();
