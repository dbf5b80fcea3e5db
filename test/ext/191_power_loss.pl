# 191_power_loss.pl
#	Power loss on the tserver's machine (issues 30 and 43): the tserver
#	runs under test/tools/powerloss.c, which logs every change to its data
#	directory and every sync and, at a chosen point, kills it dead; the data
#	directory is then rebuilt twice: from what had been synced alone (a
#	file's data at its last sync, a directory's entries at their last sync:
#	what a kill -9, which keeps the page cache, never shows), and as ext4
#	(data=ordered) may leave it (every change of a directory's entries and
#	every truncate up to the cut durable, data only as synced); on each,
#	the tserver started, Postgres' recovery run, and every table compared
#	with what Postgres committed.
#
#	The self-check first: a one-member replica group (libraft's io_submit
#	on O_DSYNC files, libuv's pwritev) with its --raft-dir outside the data
#	directory, loads and a backup (mkdtemp, renameat2) into a third watched
#	directory, killed -9; then the first round's data directory, killed -9
#	at its end: each rebuilt as if every change had been synced must equal
#	the live one, 0 differing names, sizes or contents; a write path the
#	layer misses shows there.
#
#	Each round: a tserver of its own (--session-memory-mb 1, so that big
#	sessions spill), a server and three tables made for it, then one
#	client's transactions in a fixed order until the power goes (the ledger
#	load of TcopyPowerloss.pm):
#	  copy      COPY of 500 rows into a (keys n*1000000+1.., v = n)
#	  replace   COPY of keys 1..200 into b (on_conflict 'replace'), v = n
#	  copy_big  COPY of 40,000 rows into a (spilled: SST files, ingested)
#	  reload    TRUNCATE c, COPY of keys 1..3000 into c, v = n
#	  insert    INSERT of 20 rows into a
#	  delete    DELETE FROM a of the rows of the copy five transactions back
#	each with a row (round, n) in the heap table ledger: Postgres decides,
#	so a transaction committed exactly when its ledger row is there.
#	Asserted per round:
#	- right after each restart, before recovery (or after the part of it
#	  that a second power loss let through), every transaction whose COMMIT
#	  was acknowledged (no "could not publish" WARNING) is there: an
#	  acknowledgement waits for what it promises to be on disk; no row of a
#	  transaction Postgres did not commit is there, ever;
#	- after recovery: exactly the committed transactions (a per n, b the
#	  last committed replace, c the last committed reload), nothing left
#	  prepared; a table whose CREATE committed can be read.
#	The first round cuts nothing (a kill -9 at the end, then only what was
#	synced) and marks, in the layer's numbering, where each transaction
#	began and where its COMMIT returned; the others cut, in turn, right
#	after a sync and just before a change where something is at stake:
#	inside a transaction after the first acknowledged one, half the time
#	among the last syncs or changes before its COMMIT returned (a round
#	that ends before its cut point is killed at its end).  At least 90% of
#	the cut rounds must have an acknowledged transaction when the power
#	goes.  Every third round also cuts the power again during recovery
#	(the rebuilt tserver under the layer once more), then rebuilds and
#	recovers.  The figures: rounds, cut points, committed and acknowledged
#	transactions, mismatches of each rebuild.
#
#	TCOPY_POWERLOSS_SECONDS bounds the rounds (default 40);
#	TCOPY_POWERLOSS_SEED fixes the cut points (default: the time, printed);
#	TCOPY_POWERLOSS_SWEEP=1 cuts after every sync in turn instead.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Path qw(rmtree);
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_conf recover_all wait_until);
use TcopyPowerloss;

my $seconds = $ENV{TCOPY_POWERLOSS_SECONDS} // 40;
my $seed = $ENV{TCOPY_POWERLOSS_SEED} // time() % 100000;
my $sweep = $ENV{TCOPY_POWERLOSS_SWEEP};
my $shim = $TcopyPowerloss::SHIM;
my @ts_args = ('--session-memory-mb', '1');
srand($seed);
note("seed $seed (TCOPY_POWERLOSS_SEED), $seconds s of rounds");
BAIL_OUT("$shim is not built (make -C test powerloss)") unless -r $shim;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n"
	  . twopc_conf(recovery_interval => '0'));
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION tcopy;
	CREATE TABLE ledger (round int, n int, PRIMARY KEY (round, n));
});
TcopyPowerloss::load_init($node);
my $ntxn = $TcopyPowerloss::NTXN;

# Start a tserver on $data at $socket, under the layer when $cut is given
# ({ log, op | sync }, roots: $data unless given), with @args after the
# test's.  Returns the TcopyTest and 'ready' or 'exited'.
sub start_tserver
{
	my ($data, $socket, $cut, @args) = @_;
	my $ts = TcopyTest->new(data => $data, socket => $socket, extra_args => [ @ts_args, @args ]);
	$cut = { roots => [$data], %$cut } if $cut;
	my ($what, $value) = TcopyPowerloss::with_layer($cut, sub { $ts->spawn });
	$ts->{pid} = $value if $what eq 'ready';
	die "tserver did not start: $what\n" . $ts->log_contents if $what eq 'timeout';
	return ($ts, $what, $what eq 'exited' ? $value : undef);
}

# Is the tserver still running?  One that exited is reaped, its wait
# status kept for exit_status.
sub tserver_alive
{
	my ($ts) = @_;
	return 0 unless $ts->pid;
	return 1 if waitpid($ts->pid, WNOHANG) == 0;
	$ts->{reaped} = $?;
	$ts->{pid} = undef;
	return 0;
}

# The tserver's wait status once it exited (within timeout seconds).
sub exit_status
{
	my ($ts, $timeout) = @_;
	return $ts->{reaped} if defined $ts->{reaped};
	return $ts->wait_exit($timeout);
}

# Rebuild $out (synced), and ext4's into $ext4 when given, from $log (and
# the copy $start of the tree the log began with); { changes, syncs, cut }.
sub rebuild
{
	my ($log, $out, $start, $ext4) = @_;
	return TcopyPowerloss::rebuild($log, [$out], $start ? [$start] : [],
		$ext4 ? (ext4 => [$ext4]) : ());
}

# The self-check: $live, killed -9, against its log rebuilt as if every
# change had been synced (@$roots: the log's roots, $live among them).
sub self_check
{
	my ($what, $log, $roots, $base) = @_;
	my @all = map { "$base/all$_" } 0 .. $#$roots;
	TcopyPowerloss::rebuild($log, [ map { "$base/synced$_" } 0 .. $#$roots ], [], all => \@all);
	my %sum = (names => 0, sizes => 0, contents => 0, files => 0);
	my @diffs;
	for my $i (0 .. $#$roots)
	{
		my $c = TcopyPowerloss::compare_trees($roots->[$i], $all[$i]);
		$sum{$_} += $c->{$_} for qw(names sizes contents);
		$sum{files} += keys %{ TcopyPowerloss::tree_of($roots->[$i]) };
		push @diffs, map { "$roots->[$i]: $_" } @{ $c->{diffs} };
	}
	is_deeply([ @sum{qw(names sizes contents)} ], [ 0, 0, 0 ],
		"self-check ($what): $sum{files} entries live, rebuilt from the log as if all synced: "
		  . "$sum{names} differing names, $sum{sizes} sizes, $sum{contents} contents")
	  or diag(join("\n", @diffs) . "\nkept in $base");
	return \%sum;
}

# The self-check of libraft's and the backup's write paths: a group of one
# under the layer, its raft log and a backup in directories of their own.
sub group_self_check
{
	my $base = PostgreSQL::Test::Utils::tempdir_short();
	my @roots = map { "$base/$_" } qw(data raft backups);
	mkdir($_, 0700) or die "mkdir $_: $!" for @roots;
	my $secret = "$base/secret";
	PostgreSQL::Test::Utils::append_to_file($secret, join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32) . "\n");
	chmod(0600, $secret);
	my ($port) = TcopyTest::free_tcp_ports(1);
	my ($ts, $state) = start_tserver($roots[0], "$base/ts.sock", { log => "$base/pl.log", roots => \@roots },
		'--raft-id', 1, '--raft-listen', "127.0.0.1:$port", '--raft-secret-file', $secret,
		'--raft-dir', $roots[1], '--raft-bootstrap', "1\@127.0.0.1:$port",
		# a group of one: the raft port carries nothing, and its TLS writes no file
		'--raft-insecure-cleartext');
	is($state, 'ready', 'self-check: a group of one starts under the layer') or return;
	wait_until(30, sub { ($ts->cli('group-status')->{out} // '') =~ /^leader \d/ });
	$ts->cli_ok('self-check: a spilled load through the group', 'load', 'big', '--rows', 40000);
	$ts->cli_ok('self-check: a small load', 'load', 'small', '--rows', 300);
	$ts->cli_ok('self-check: a backup into a watched directory', 'backup', "$roots[2]/b1");
	$ts->cli_ok('self-check: a load after it', 'load', 'small2', '--rows', 3000);
	kill 'KILL', $ts->pid;
	$ts->wait_exit(30);
	my $st = TcopyPowerloss::log_counts("$base/pl.log", {});
	ok($st->{through} > 0, "self-check: the layer saw $st->{through} of libraft's writes through "
		  . "(io_submit on O_DSYNC files), $st->{changes} changes and $st->{syncs} syncs in all");
	my $sum = self_check('a group of one, its raft log and a backup elsewhere', "$base/pl.log", \@roots, $base);
	rmtree($base) unless $sum->{names} + $sum->{sizes} + $sum->{contents} || $ENV{TCOPY_TEST_KEEP};
}

my ($rounds, $cuts, $checked, $mismatched) = (0, 0, 0, 0);
my ($acked_total, $acked_rounds) = (0, 0);
my %model_mismatches = (synced => 0, ext4 => 0);
my $ext4_differs = 0;	# rounds whose ext4 tree is not the synced one
my ($total_changes, $total_syncs);
my $deadline;
my $sweep_next = 1;
# the first round's marks: where transaction n began and its COMMIT returned
my (@began, @acked_at);

# Check round r on the rebuilt tree $dir (model: synced or ext4): start a
# tserver on it, before recovery every acknowledged transaction there and
# nothing uncommitted, after it exactly the committed ones.  The synced
# tree of every third round loses power again during recovery.  Returns
# the differences and the recovery power losses.  The last check drops
# the round's tables and server (the tserver drops their data).
sub check_tree
{
	my ($r, $name, $model, $dir, $base, $committed, $acked, $tables, $last) = @_;
	my $socket = "$base/ts.sock";
	my @diff;
	my $recovery_cuts = 0;
	for (my $attempt = 0;; $attempt++)
	{
		my $again = $model eq 'synced' && $r % 3 == 0 && $attempt == 0 && $tables == 3;
		my $rlog = "$base/$model-recovery$attempt.log";
		system('cp', '-a', $dir, "$dir.start") == 0 or die "cp -a $dir: $?" if $again;
		my ($ts2, $st2) = start_tserver($dir, $socket,
			$again ? { log => $rlog, op => 1 + int(rand(60)) } : undef);
		# under the layer, the power may go at any moment, reads included
		# (RocksDB's background work makes changes): then rebuild, go on.
		# After a step that failed ($failed), wait for the process: a cut
		# closes its sockets before waitpid can reap it (seen on a loaded
		# machine: a read failed with "tserver closed the connection" while
		# the process still counted as alive)
		my $lost = sub {
			my ($failed) = @_;
			return 0 unless $again;
			wait_until(10, sub { !tserver_alive($ts2) }) if $failed;
			return 0 if tserver_alive($ts2);
			rebuild($rlog, "$base/$model-rebuilt$attempt", "$dir.start");
			$dir = "$base/$model-rebuilt$attempt";
			$recovery_cuts++;
			return 1;
		};
		if ($st2 ne 'ready')
		{
			next if $lost->(1);
			push @diff, "$model: the rebuilt tserver did not start";
			last;
		}
		if ($tables == 3)
		{
			# before recovery (or after part of it): every acknowledged
			# transaction is there, nothing uncommitted
			my $got = TcopyPowerloss::contents($r);
			next if !ref $got && $lost->(1);
			push @diff, map { "$model, before recovery: $_" }
			  ref $got ? TcopyPowerloss::compare($r, $got, $committed, $acked) : ($got);
		}
		my ($ok, undef, $left) = recover_all($node, ts => $ts2, timeout => 60,
			give_up => sub { !tserver_alive($ts2) });
		next if $lost->(!$ok);
		if ($again)
		{
			# the power held through recovery: on without the layer, unless
			# it goes at the shutdown
			kill 'TERM', $ts2->pid;
			my $status = exit_status($ts2, 60);
			next if $status == 9 && $lost->();
			is($status, 0, "$name: the tserver under the layer stops cleanly");
			next;
		}
		push @diff, "$model: recovery did not finish: $left" unless $ok;
		if ($tables == 3)
		{
			my $got = TcopyPowerloss::contents($r);
			push @diff, map { "$model, after recovery: $_" }
			  ref $got ? TcopyPowerloss::compare($r, $got, $committed) : ($got);
			$node->safe_psql('postgres', "DROP FOREIGN TABLE a$r, b$r, c$r") if $last;
		}
		$node->safe_psql('postgres', "DROP SERVER IF EXISTS ts$r CASCADE") if $last;
		$ts2->stop("$name: the tserver on the $model tree stops cleanly") if tserver_alive($ts2);
		last;
	}
	return (\@diff, $recovery_cuts);
}

# One round; returns its changes and syncs (those of the rebuilt log).
sub round
{
	my ($r, $cut) = @_;
	my $base = PostgreSQL::Test::Utils::tempdir_short();
	my $socket = "$base/ts.sock";
	my $log = "$base/pl.log";
	mkdir("$base/data", 0700) or die "mkdir: $!";
	my $what_cut = !$cut ? 'no cut' : $cut->{op} ? "power lost before change $cut->{op}"
	  : "power lost after sync $cut->{sync}";
	my $name = "round $r ($what_cut)";
	my ($ts, $state, $start_status) = start_tserver("$base/data", $socket, { log => $log, %{ $cut // {} } });

	# the server and tables; a failure here is the power going
	my $made = $node->psql('postgres', qq{
		CREATE SERVER ts$r FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$socket');
		CREATE USER MAPPING FOR PUBLIC SERVER ts$r;
		CREATE FOREIGN TABLE a$r (k bigint NOT NULL, v int NOT NULL) SERVER ts$r OPTIONS (key 'k');
		CREATE FOREIGN TABLE b$r (k bigint NOT NULL, v int NOT NULL) SERVER ts$r
			OPTIONS (key 'k', on_conflict 'replace');
		CREATE FOREIGN TABLE c$r (k bigint NOT NULL, v int NOT NULL) SERVER ts$r OPTIONS (key 'k');
	}, on_error_stop => 1) == 0 if $state eq 'ready';
	my %warned;
	my $ran = 0;
	my %counts;
	if ($made)
	{
		for my $n (1 .. $ntxn)
		{
			last unless tserver_alive($ts);
			$began[$n] = { %{ TcopyPowerloss::log_counts($log, \%counts) } } if !$cut;
			my ($kind, $sql) = TcopyPowerloss::txn_sql($r, $n);
			my ($rc, $out, $err) = $node->psql('postgres', $sql, on_error_stop => 1, timeout => 120);
			$warned{$n} = 1 if $err =~ /could not publish/;
			$acked_at[$n] = { %{ TcopyPowerloss::log_counts($log, \%counts) } }
			  if !$cut && $rc == 0 && !$warned{$n};
			$ran = $n;
		}
	}
	# the power goes (or, uncut, a kill -9 now): only the synced is left;
	# a round may make fewer changes or syncs than the first, and end
	# before its cut point: then it is killed at its end too
	my $alive = $state eq 'ready' && tserver_alive($ts);
	ok($alive, "$name: the tserver ran the whole round") or diag($ts->log_contents)
	  if !$cut;
	if ($alive)
	{
		kill 'KILL', $ts->pid;
		$name .= ', past the round\'s end' if $cut;
	}
	my $status = $state eq 'ready' ? exit_status($ts, 60) : $start_status;
	is($status, 9, "$name: the tserver was killed (SIGKILL)")
	  or diag("status " . ($status // 'none') . "\n" . TcopyTest::tail($ts->log_contents, 30));
	my $built = rebuild($log, "$base/rebuilt", undef, "$base/ext4");
	# a process that died by itself must have died of the layer's cut; one
	# the test killed may have reached its cut point in the same instant
	ok($built->{cut} || $alive,
		"$name: " . ($built->{cut} ? "the layer" : "the test") . " cut the power");
	# the self-check: the live directory is what the log says was written
	self_check("round ${r}'s data directory", $log, ["$base/data"], "$base/check") if !$cut;

	my %committed = map { (split /\|/)[1] => 1 } split /\n/,
	  $node->safe_psql('postgres', "SELECT round, n FROM ledger WHERE round = $r");
	my %acked = map { $_ => 1 } grep { !$warned{$_} } keys %committed;
	my $tables = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_foreign_table t JOIN pg_class c ON c.oid = t.ftrelid"
		  . " WHERE c.relname IN ('a$r', 'b$r', 'c$r')");
	my @diff;
	my $recovery_cuts = 0;
	my $apart = TcopyPowerloss::compare_trees("$base/rebuilt", "$base/ext4");
	$ext4_differs++ if $apart->{names} + $apart->{sizes} + $apart->{contents};
	for my $model (qw(synced ext4))
	{
		my ($d, $lost) = check_tree($r, $name, $model,
			$model eq 'synced' ? "$base/rebuilt" : "$base/ext4", $base, \%committed, \%acked, $tables,
			$model eq 'ext4');
		$model_mismatches{$model} += @$d;
		push @diff, @$d;
		$recovery_cuts += $lost;
	}
	$checked += scalar keys %committed;
	$mismatched += @diff;
	if ($cut)
	{
		$acked_total += scalar keys %acked;
		$acked_rounds++ if %acked;
	}
	is_deeply(\@diff, [], sprintf("%s: %d of %d transactions committed (%d acknowledged), "
		  . "%d recovery power losses; on the synced and the ext4 rebuild every committed one "
		  . "there exactly, nothing else", $name, scalar keys %committed, $ran, scalar keys %acked,
		  $recovery_cuts))
	  or diag("kept in $base");
	rmtree($base) unless @diff || $ENV{TCOPY_TEST_KEEP};
	return $built;
}

group_self_check();
$deadline = time() + $seconds;

# round 1: no cut; it tells how many changes and syncs a round makes, and
# where each transaction began and was acknowledged
my $first = round(1, undef);
($total_changes, $total_syncs) = ($first->{changes}, $first->{syncs});
ok($total_syncs > 20, "a round makes $total_changes changes and $total_syncs syncs");
note('the first round\'s transactions (began..acknowledged, in changes/syncs): '
	  . join(' ', map { "$_:$began[$_]{changes}..$acked_at[$_]{changes}/$began[$_]{syncs}..$acked_at[$_]{syncs}" }
		  grep { $began[$_] && $acked_at[$_] } 1 .. $ntxn));
$rounds = 1;
while (time() < $deadline)
{
	my $r = ++$rounds;
	my $cut;
	if ($sweep)
	{
		last if $sweep_next > $total_syncs;
		$cut = { sync => $sweep_next++ };
	}
	else
	{
		$cut = TcopyPowerloss::at_stake($r, \@began, \@acked_at, $total_changes, $total_syncs);
	}
	round($r, $cut);
	$cuts++;
}
my $pct = $cuts ? 100 * $acked_rounds / $cuts : 0;
note(sprintf("power-loss figures: %d rounds, %d cut points, %d with an acknowledged transaction "
	  . "at the cut (%.0f%%), %d committed transactions checked, %d acknowledged in cut rounds, "
	  . "%d mismatches (synced rebuild %d, ext4 rebuild %d); the ext4 tree differed from the synced "
	  . "one in %d rounds", $rounds, $cuts, $acked_rounds, $pct, $checked, $acked_total, $mismatched,
	  $model_mismatches{synced}, $model_mismatches{ext4}, $ext4_differs));
ok($cuts >= 3, "at least three cut points tried ($cuts)");
ok($sweep || $pct >= 90, sprintf("%.0f%% of the cut rounds (%d of %d) had an acknowledged transaction at the cut",
	$pct, $acked_rounds, $cuts));
is($mismatched, 0, "no mismatch in $cuts rounds, on either rebuild");

$node->stop;
done_testing();
