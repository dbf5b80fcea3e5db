# 020_backup.pl
#	Online, consistent backups of one tserver (issue 28, item 4;
#	docs/storage.md#backups): tserver-cli backup DIR, and a tserver started
#	on DIR, which is a data directory:
#	- a backup taken while a load stages, and while loads commit, holds
#	  each load's rows wholly or not at all, and every table committed
#	  before it began, checksum for checksum;
#	- a prepared session (spilled: SST files in staging; or not: its batch
#	  in its record) is in the backup with its files: listed prepared after
#	  the restore, and RESOLVE commit publishes its rows there;
#	- a backup taken while a prepared session is resolved has it prepared
#	  with its files, or published, never both and never half;
#	- a backup into another file system (a tmpfs: root only) is copied
#	  from a scratch directory after the lock, prepared session included,
#	  and leaves no scratch directory behind;
#	- a truncated table is empty in it, a dropped one gone;
#	- a scoped client is refused (PERMISSION), and so are bad paths (an
#	  existing directory: the message says to use a new one), while the
#	  tserver goes on serving;
#	- a backup whose parent directories are missing makes them (mode
#	  0700), unless they would be inside the data directory or under a
#	  file;
#	- the manifest, BACKUP, is written last: a tserver refuses to start on a
#	  directory whose BACKUP says incomplete, and renames a complete one
#	  BACKUP.old.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all request reply_outcome);

use constant {
	FRAME_BACKUP => 40,
	FRAME_BACKUP_OK => 41,
	ROWS_SPILLED => 150_000,	# past 4 MB of session memory: SST files
};

sub write_file
{
	my ($path, $content, $mode) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $content;
	close $fh;
	chmod($mode, $path) if defined $mode;
	return $path;
}

my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 4 ]);
my $base = $ts->base_dir;
my $scoped = write_file("$base/scoped", "ns_ scoped-token-of-twenty\n", 0600);
my $scoped_token = write_file("$base/scoped.token", "scoped-token-of-twenty\n", 0600);
$ts->start('--scoped-tokens', $scoped) or die 'tserver did not start';
my $n = 0;

# Take a backup into a new directory under the test's; its path and output.
sub backup
{
	my ($name) = @_;
	my $dir = "$base/backup-" . ++$n;
	my $out = $ts->cli_ok("$name: tserver-cli backup", 'backup', $dir);
	return ($dir, $out);
}

# A tserver started on a backup directory.
sub restored
{
	my ($dir) = @_;
	my $r = TcopyTest->new(data => $dir);
	$r->start or die "no tserver starts on the backup $dir";
	return $r;
}

sub gids
{
	my ($server) = @_;
	return join(',', map { $_->{gid} } @{ $server->prepared('b') // [] });
}

# ---- committed tables, and a load staging while the backup is taken ----

$ts->cli_ok('committed before', 'load', 'base', '--rows', 50_000, '--shuffle');
$ts->cli_ok('a keyless table', 'load', 'logs', '--rows', 2000, '--keyless');
my %at = (base => $ts->checksum('base'), logs => $ts->checksum('logs'));
my $held = $ts->cli_bg('load', 'held', '--rows', ROWS_SPILLED, '--hold');
ok($held->wait_for(qr/staged \d+ rows/, 120), 'a load has staged (and spilled) its rows');
my ($b1, $out) = backup('while a load stages');
like($out, qr/^backup into \Q$b1\E: \d+ tables, 0 prepared sessions, \d+ bytes, sequence \d+, [\d.]+ s/,
	'it says what it took');
$held->send_line('');
is($held->finish, 0, 'the load commits after the backup');
ok(-e "$b1/BACKUP" && !-e "$b1/.checkpoint", 'the backup holds its manifest, its checkpoint moved up');
is((stat($b1))[2] & 07777, 0700, 'the backup directory has mode 0700');
my $manifest = do { local (@ARGV, $/) = ("$b1/BACKUP"); <> };
like($manifest, qr/\Atserver backup\n.*^tables: 3\n.*^prepared sessions: 0\n.*^end\n\z/ms,
	'the manifest counts 3 tables (held is not made yet), and ends with its end line');

my $r = restored($b1);
is_deeply($r->checksum($_), $at{$_}, "restored: $_ has the rows it had at the backup") for sort keys %at;
is($r->count('held') // 0, 0, 'restored: the staging load is not there');
like($r->log_contents, qr/starting on a backup/, 'the restored tserver says it starts on a backup');
ok(-e "$b1/BACKUP.old" && !-e "$b1/BACKUP", '... and renamed its manifest BACKUP.old');
$r->cli_ok('restored: a load into the restored tserver', 'load', 'logs', '--rows', 10, '--keyless');
is($r->count('logs'), 2010, 'restored: new row ids of a keyless table follow the old ones');
$r->stop;

# loads committing while backups are taken: each is wholly in, or out
for my $i (1 .. 3)
{
	my $load = $ts->cli_bg('load', "race$i", '--rows', 500_000);
	select(undef, undef, undef, (0.05, 0.3, 0.8)[$i - 1]);
	my ($dir) = backup("during load $i");
	is($load->finish, 0, "load $i committed");
	my $r = restored($dir);
	my $count = $r->count("race$i") // 0;
	ok($count == 0 || $count == 500_000, "load $i: $count rows in the backup, none or all");
	note("load $i: " . ($count ? 'in the backup' : 'not in the backup'));
	is_deeply($r->checksum('base'), $at{base}, "load $i: base as it was");
	$r->stop;
}

# ---- prepared sessions ----

$ts->cli_ok('a spilled session is prepared', 'load', 'prep', '--rows', ROWS_SPILLED, '--prepare', 'b:spilled');
# another table: the orphaned spilled session holds prep (019_in_doubt.pl)
$ts->cli_ok('a small one is prepared', 'load', 'prep_small', '--rows', 10, '--start', 1_000_000,
	'--prepare', 'b:small');
my ($b2, $out2) = backup('with two prepared sessions');
like($out2, qr/ 2 prepared sessions,.*\nprepared\tb:small\nprepared\tb:spilled\n/s, 'it lists both');
$r = restored($b2);
is(gids($r), 'b:small,b:spilled', 'restored: both are prepared (orphaned)');
is(($r->count('prep') // 0) + ($r->count('prep_small') // 0), 0,
	'restored: none of their rows is visible');
is($r->resolve('b:spilled', 1)->{rc}, 0, 'restored: RESOLVE commit of the spilled one');
is($r->resolve('b:small', 0)->{rc}, 0, 'restored: RESOLVE abort of the small one');
is($r->count('prep'), ROWS_SPILLED, "restored: the spilled session's rows are published");
my $published = $r->checksum('prep');
$r->stop;
is($ts->resolve('b:spilled', 1)->{rc}, 0, 'source: the same decisions');
is($ts->resolve('b:small', 0)->{rc}, 0, '...');
is_deeply($ts->checksum('prep'), $published, 'source and restored backup agree, checksum for checksum');

# ---- a backup on another file system ----

# hard links cannot cross file systems: the checkpoint and the prepared
# sessions' links go to a scratch directory in staging, under the lock, and
# are copied from there after it (a tmpfs of the test's own: root only)
my $otherfs = "$base/otherfs";
my $mounted = 0;
END { system('umount', $otherfs) if $mounted; }
SKIP:
{
	skip 'needs root, to mount a tmpfs', 12 if $> != 0;
	mkdir $otherfs or die "$otherfs: $!";
	skip "cannot mount a tmpfs on $otherfs", 12
	  if system('mount', '-t', 'tmpfs', '-o', 'size=256m,mode=0700', 'tcopy-backup', $otherfs) != 0;
	$mounted = 1;
	isnt((stat($otherfs))[0], (stat($ts->data_dir))[0], 'the tmpfs is another file system');
	$ts->cli_ok('a spilled session is prepared', 'load', 'prep_other', '--rows', ROWS_SPILLED,
		'--prepare', 'b:otherfs');
	my $dir = "$otherfs/backup";
	my $o = $ts->cli_ok('a backup on another file system', 'backup', $dir);
	like($o, qr/ 1 prepared sessions,.*\nprepared\tb:otherfs\n/s, 'it lists the prepared session');
	like($ts->log_contents, qr/backup into "\Q$dir\E": on another file system, taken into .* under the lock and copied after it/,
		'the tserver took it into a scratch directory and copied it after the lock');
	my @scratch = glob($ts->data_dir . '/staging/backup-*');
	is(scalar @scratch, 0, 'no scratch directory is left in staging');
	my $r = restored($dir);
	is(gids($r), 'b:otherfs', 'restored from the other file system: the session is prepared');
	is_deeply($r->checksum($_), $ts->checksum($_), "restored: $_ as the source has it")
	  for qw(base prep);
	is($r->resolve('b:otherfs', 1)->{rc}, 0, 'restored: RESOLVE commit: its copied files publish');
	is($ts->resolve('b:otherfs', 1)->{rc}, 0, 'source: the same decision');
	is_deeply($r->checksum('prep_other'), $ts->checksum('prep_other'),
		'... and both hold the same rows');
	$r->stop;
	system('umount', $otherfs) == 0 or diag("umount $otherfs failed");
	$mounted = 0;
}

# a backup while the prepared session is resolved: prepared with all its
# files, or published; never both.  Which one goes first varies.
my $total = ROWS_SPILLED;
my %seen;
for my $i (1 .. 6)
{
	my $gid = "b:race$i";
	my $dir = "$base/backup-" . ++$n;
	$ts->cli_ok("$gid prepared", 'load', 'prep', '--rows', 60_000, '--start', 10_000_000 * $i,
		'--prepare', $gid);
	my @bg;
	if ($i % 2)
	{
		push @bg, $ts->cli_bg('backup', $dir);
		select(undef, undef, undef, 0.01 * $i);
		push @bg, $ts->cli_bg('resolve', $gid, 'commit');
	}
	else
	{
		push @bg, $ts->cli_bg('resolve', $gid, 'commit');
		select(undef, undef, undef, 0.005 * $i);
		push @bg, $ts->cli_bg('backup', $dir);
	}
	is($_->finish, 0, "$gid: " . $_->cmd) for @bg;
	$total += 60_000;
	my $r = restored($dir);
	my $listed = gids($r) eq $gid;
	my $count = $r->count('prep');
	if ($listed)
	{
		$seen{prepared}++;
		is($count, $total - 60_000, "$gid in the backup prepared, without its rows");
		is($r->resolve($gid, 1)->{rc}, 0, "$gid: its files are there: RESOLVE commit publishes it");
	}
	else
	{
		$seen{published}++;
		is(gids($r), '', "$gid in the backup published, not prepared");
	}
	is($r->count('prep'), $total, "$gid: every row once");
	is_deeply($r->checksum('prep'), $ts->checksum('prep'), "$gid: checksum as the source's");
	$r->stop;
}
note('backups during a resolve: ' . join(', ', map { "$seen{$_} $_" } sort keys %seen));

# ---- truncated and dropped tables ----

$ts->cli_ok('a table to truncate', 'load', 'trunc', '--rows', 1000);
$ts->cli_ok('truncated', 'truncate', 'trunc');
$ts->cli_ok('a table to drop', 'load', 'gone', '--rows', 1000);
$ts->cli_ok('dropped', 'drop', 'gone');
my ($b3) = backup('after a truncate and a drop');
$r = restored($b3);
is($r->count('trunc'), 0, 'restored: the truncated table is empty');
isnt($r->cli('scan', 'gone')->{rc}, 0, 'restored: the dropped table is gone');
is_deeply($r->checksum('prep'), $ts->checksum('prep'), 'restored: prep as the source has it');
$r->stop;

# ---- refusals ----

my $refused = $ts->cli('--token-file', $scoped_token, 'backup', "$base/scoped-backup");
isnt($refused->{rc}, 0, 'a scoped client cannot take a backup');
like($refused->{err}, qr/permission denied for tserver backup: it needs full access/, '... PERMISSION');
ok(!-e "$base/scoped-backup", '... and nothing is made');

for my $case ([ 'relative', 'backups/x', qr/must be an absolute path/ ],
	[ 'existing', $b1, qr/backup directory "\Q$b1\E" already exists: back up into a new directory/ ],
	[ 'inside the data directory', $ts->data_dir . '/x', qr/inside the tserver's data directory/ ],
	[ 'inside the data directory, parents missing', $ts->data_dir . '/y/z/b',
	  qr/backup directory "[^"]+\/y\/z\/b" must not be inside the tserver's data directory/ ],
	[ 'under a file', "$base/scoped/x/b", qr/"\Q$base\E\/scoped" is not a directory/ ],
	[ 'a .. component', "$base/../x", qr/must not hold/ ])
{
	my ($what, $dir, $re) = @$case;
	my $res = $ts->cli('backup', $dir);
	isnt($res->{rc}, 0, "a backup into a path $what is refused");
	like($res->{err}, $re, "... $re");
}
for my $case ([ 'NUL inside', "$base/a\0b" ], [ 'not UTF-8', "$base/\xff\xfe" ],
	[ 'too long', '/' . ('a' x 1100) ])
{
	my ($what, $dir) = @$case;
	my $sock = $ts->connect_ready or die 'no connection';
	my ($type, $payload) = request($sock, FRAME_BACKUP, pb_field_bytes(1, $dir));
	like(reply_outcome(FRAME_BACKUP_OK, $type, $payload), qr/^error 1: a backup directory's path must/,
		"a path $what: PROTOCOL error");
	close $sock;
}
ok(!-e "$base/a", 'nothing was made');
ok(!-e $ts->data_dir . '/y', 'no parent was made inside the data directory');

# missing parents are made
my $deep = "$base/made/by/the backup";
my $made = $ts->cli('backup', $deep);
is($made->{rc}, 0, 'a backup whose parent directories are missing is taken') or diag($made->{err});
ok(-f "$deep/BACKUP", '... into the directory asked for');
is(sprintf('%04o', (stat("$base/made/by"))[2] & 07777), '0700', '... its parents made with mode 0700');
like($ts->log_contents, qr/backup: created directory "\Q$base\E\/made\/by"/, '... and logged');
like($ts->cli('ping')->{out}, qr/^ok/, 'the tserver still serves');

# ---- an incomplete backup ----

my ($b4) = backup('to be made incomplete');
write_file("$b4/BACKUP", "tserver backup\nincomplete: the backup did not finish\n", 0600);
my $inc = TcopyTest->new(data => $b4);
my ($what) = $inc->spawn;
is($what, 'exited', 'a tserver does not start on an incomplete backup');
like($inc->log_contents, qr/is an incomplete backup: the backup into it did not finish/,
	'... and says why');

$ts->stop;
done_testing();
