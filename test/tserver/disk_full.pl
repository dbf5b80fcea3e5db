# disk_full.pl
#	The tserver on a full disk: its data directory on a 64 MB tmpfs of the
#	test's own (so the test needs root, to mount it: test/run_tests.sh runs
#	it as a step of its own; anyone else gets a skip), with
#	--session-memory-mb 8.  A load that runs out of space fails with the
#	file system's error, leaves nothing visible and no session, staged or
#	spilled data behind, and the tserver goes on serving: pings, scans of
#	what was committed before, and new loads once there is room again.
#	Space runs out at four points of a session:
#	  - spilling a run to staging/ (a shuffled load larger than the disk);
#	  - spilling a sorted load's SST file to staging/;
#	  - at commit, writing the SST files a spilled session is ingested
#	    from (the disk filled up while the session was held open);
#	  - at commit, writing a small session's WriteBatch to RocksDB's WAL
#	    (the same), and creating a table: refused by the tserver's free
#	    space check (ts_store_check_space), since Debian 12's RocksDB does
#	    not survive a failed WAL write.
#	Last, a restart finds every committed row, nothing of the failed
#	loads, and loads work.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);

plan skip_all => 'needs root, to mount a tmpfs' if $> != 0;

my $mnt = tempdir('tcdfXXXXXX', DIR => '/tmp', CLEANUP => 1);
if (system('mount', '-t', 'tmpfs', '-o', 'size=64m,mode=0700', 'tcopy-disk-full', $mnt) != 0)
{
	plan skip_all => "cannot mount a tmpfs on $mnt (not permitted here?)";
}
my $mounted = 1;
my $filler = "$mnt/filler";

my $ts = TcopyTest->new(data => "$mnt/data", extra_args => [ '--session-memory-mb', '8' ]);
$ts->start or BAIL_OUT('tserver did not start');

# Fill the file system up to `leave` bytes, with one file.
sub fill_disk
{
	my ($leave) = @_;
	open(my $fh, '>', $filler) or die "open $filler: $!";
	my $chunk = "\0" x (1 << 20);
	my $size = 0;
	while (1)
	{
		my $n = syswrite($fh, $chunk);
		last unless $n;
		$size += $n;
	}
	close $fh;
	truncate($filler, $size > $leave ? $size - $leave : 0) or die "truncate $filler: $!";
}

# After a failed load: no session, nothing staged or spilled, staging/
# empty, the tserver answers, and the committed tables are as they were.
my %committed;		# table => checksum line
sub check_clean
{
	my ($name) = @_;
	my $stats;
	my $deadline = time() + 5;
	while (time() < $deadline)
	{
		$stats = $ts->stats;
		last if $stats && !$stats->{sessions_open} && !$stats->{staged_bytes} && !$stats->{spilled_bytes};
		sleep(0.05);
	}
	ok($stats && !$stats->{sessions_open} && !$stats->{staged_bytes} && !$stats->{spilled_bytes},
		"$name: no session, nothing staged or spilled") or diag(explain($stats));
	my @left = glob($ts->data_dir . '/staging/*');
	is(scalar(@left), 0, "$name: staging/ is empty") or diag("@left");
	$ts->cli_ok("$name: the tserver answers a ping", 'ping');
	for my $table (sort keys %committed)
	{
		is(($ts->checksum($table) // {})->{line}, $committed{$table},
			"$name: committed table $table is intact");
	}
}

# A load that must succeed.
sub load_ok
{
	my ($name, $table, $rows) = @_;
	my $r = $ts->cli('load', $table, '--rows', $rows);
	is($r->{rc}, 0, "$name: a load of $rows rows into $table succeeds") or diag($r->{err});
	my $sum = $ts->checksum($table);
	is($sum && $sum->{rows}, $rows, "$name: ... and its rows are there");
	$committed{$table} = $sum->{line} if $sum;
	return $r->{rc} == 0;
}

# A load held open (staged, not committed) while the disk fills up, up to
# leave bytes more than the rows it holds in memory when plus_staged is
# set; then it commits.
sub commit_on_full_disk
{
	my ($name, $table, $rows, $leave, $plus_staged, @load_args) = @_;
	my $load = $ts->cli_bg('load', $table, '--rows', $rows, '--hold', @load_args);
	ok($load->wait_for(qr/^staged $rows rows$/m, 60), "$name: $rows rows staged") or diag($load->err);
	my $stats = $ts->stats;
	$leave += $stats->{staged_bytes} if $plus_staged;
	fill_disk($leave);
	$load->send_line('');
	my $rc = $load->finish;
	is($rc, 1, "$name: the commit fails");
	return $load->err;
}

load_ok('before', 'first', 10_000);

# ---- spilling ----
# Shuffled keys: spills are sorted runs (a sorted load goes straight to
# LZ4-compressed SST files, where tserver-cli's blank fillers shrink to
# fit; see the next case).
my $r = $ts->cli('load', 'too_big', '--rows', 1_000_000, '--shuffle');
is($r->{rc}, 1, 'spill: a load of 1M rows (~100 MB) onto 64 MB fails');
like($r->{err}, qr/could not write staging file .*No space left on device/,
	'spill: ... with the file system\'s error on a staging file');
is($ts->count('too_big'), 0, 'spill: nothing of the load is visible');
check_clean('spill');
load_ok('spill', 'after_spill', 10_000);

# ---- SST files of a sorted session, spilled as they fill ----
fill_disk(5 * 1024 * 1024);	# room to create the table (the space check keeps 4 MB)
$r = $ts->cli('load', 'sorted_too_big', '--rows', 4_000_000);
is($r->{rc}, 1, 'sorted spill: a sorted load of 4M rows onto 5 MB left fails');
like($r->{err}, qr/could not write SST file.*No space left on device/,
	'sorted spill: ... with the file system\'s error on an SST file');
is($ts->count('sorted_too_big'), 0, 'sorted spill: nothing of the load is visible');
check_clean('sorted spill');
unlink $filler;
load_ok('sorted spill', 'after_sorted_spill', 10_000);

# ---- SST files of a spilled session, at commit ----
# 300k shuffled rows: about 25 MB of runs spilled, 8 MB in memory; at
# commit the rows in memory are spilled too (they fit), then the merged SST
# files need more than the 256 kB left.
my $err = commit_on_full_disk('ingest', 'ingest_full', 300_000, 256 * 1024, 1, '--shuffle');
like($err, qr/could not write SST file.*No space left on device/, "ingest: ... writing an SST file, with the file system's error");
is($ts->count('ingest_full'), 0, 'ingest: nothing of the load is visible');
check_clean('ingest');
unlink $filler;
load_ok('ingest', 'after_ingest', 10_000);

# ---- a small session's WAL write, at commit ----
# 20k rows (about 2 MB) stay in memory; at commit their WriteBatch would
# meet a WAL with 64 kB left.  RocksDB does not survive that (it stops on
# an assertion, or refuses every later write), so the tserver checks the
# free space first and refuses the commit with ENOSPC's words.
$err = commit_on_full_disk('wal', 'wal_full', 20_000, 64 * 1024, 0);
like($err, qr/could not write to the store .*No space left on device/, "wal: ... with the file system's error");
my $crashed = defined $ts->wait_exit(0.5);
ok(!$crashed, 'wal: the tserver is still running');
BAIL_OUT('the tserver died: ' . TcopyTest::tail($ts->log_contents, 3)) if $crashed;
is($ts->count('wal_full'), 0, 'wal: nothing of the load is visible');
check_clean('wal');
my $create = $ts->cli('create', 'wal_new_table', '--columns', 'id:int', '--key', 'id');
is($create->{rc}, 1, 'wal: creating a table on the full disk fails too');
like($create->{err}, qr/No space left on device/, '... with the file system\'s error');
unlink $filler;
load_ok('wal', 'after_wal', 10_000);

# ---- restart ----
$ts->restart or BAIL_OUT('tserver did not restart');
for my $table (sort keys %committed)
{
	is(($ts->checksum($table) // {})->{line}, $committed{$table}, "restart: committed table $table is intact");
}
is($ts->count('too_big') // 0, 0, 'restart: nothing of the failed loads appeared');
is($ts->count('sorted_too_big') // 0, 0, 'restart: ... (sorted spill)');
is($ts->count('ingest_full') // 0, 0, 'restart: ... (ingest)');
is($ts->count('wal_full') // 0, 0, 'restart: ... (wal)');
load_ok('restart', 'after_restart', 10_000);

$ts->stop;

END
{
	if ($mounted)
	{
		if ($ts && $ts->pid)
		{
			kill('KILL', $ts->pid);
			waitpid($ts->pid, 0);
			$ts->{pid} = undef;
		}
		system('umount', $mnt) == 0 or warn "umount $mnt failed\n";
	}
}

done_testing();
