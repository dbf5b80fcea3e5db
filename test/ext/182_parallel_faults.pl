# 182_parallel_faults.pl
#	A parallel COPY (issue 17) that is cancelled, whose leader is
#	terminated, or one of whose parallel workers is terminated in the
#	middle (a held COPY FROM PROGRAM, see held_copy_sql, with two workers
#	running): the COPY fails (57014 for the cancel), no row of it is
#	visible, no parallel worker is left, the tserver holds no session and
#	a following parallel COPY works (in the same session where it
#	survives).  The workers' streams (docs/parallel.md#streams): a
#	tserver stopped (SIGSTOP) for 2 s in the middle loses nothing; one
#	killed fails the COPY, and after its restart nothing of it is there
#	and the next COPY works; a worker killed with SIGKILL (the postmaster
#	restarts every backend) leaves no session on the tserver and nothing
#	of the COPY.  pg_stat_progress_copy's row of the leader counts the
#	workers' rows (tuples_processed reaches the row count while the
#	program still runs) and its bytes_processed grows while a slow COPY
#	FROM PROGRAM runs.  During a parallel load of 2M rows
#	(TCOPY_PAR_BIG_ROWS) the RssAnon of the leader and of each worker,
#	sampled from /proc, stays under 32 MB, and every row is there.
# pg_tests: alone (it measures memory and how soon a fault ends a COPY)
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
  wait_until wait_tserver_idle held_copy_sql release_held_copy copy_progress psql_bg
  psql_cmds pg_messages copy_ways parallel_worker_pids parallel_copy_available);

my $T0 = time();
my $BIG_ROWS = $ENV{TCOPY_PAR_BIG_ROWS} // 2_000_000;
my $RSS_ANON_BOUND_KB = 32 * 1024;

# restart_after_crash: the kill -9 of a worker makes the postmaster restart
# every backend (PostgreSQL::Test::Cluster turns it off)
my ($node, $ts) = setup_node(
	conf => "max_worker_processes = 16\nmax_parallel_workers = 16\nrestart_after_crash = on\n");
my $dir = $node->basedir;
$node->safe_psql('postgres', accounts_ddl(tcopy => [ 'acc', 'big' ]));
ok(parallel_copy_available($node), 'the GUC tcopy.copy_workers exists (parallel COPY is there)');

my $held = "$dir/held.csv";
write_accounts_csv($held, 1, 300_000);
my $small = "$dir/small.csv";
my $small_expect = write_accounts_csv($small, 1_000_001, 10_000);
my $small_sum = "10000 $small_expect->{aid_sum} $small_expect->{abalance_sum}";

# two workers, small chunks (rows reach the workers while the held COPY
# trickles), whatever the input's size
my @PARALLEL = ('SET tcopy.copy_workers = 2', 'SET tcopy.copy_parallel_threshold = 0',
	"SET tcopy.copy_chunk_bytes = '16kB'");

sub count_sums
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || ' ' || coalesce(sum(aid), 0) || ' ' || coalesce(sum(abalance), 0) FROM $table");
}

# Wait until the held COPY into acc of leader pid (or of whatever backend
# runs it, pid undef) has processed more than min rows and has parallel
# workers; returns (leader pid, rows, worker pids) or () after 60 s or
# once done returns true.
sub wait_running
{
	my ($min, $done) = @_;
	my @r;
	wait_until(60, sub {
		return -1 if $done->();
		my ($pid, $n) = copy_progress($node, 'acc');
		return 0 unless $pid && $n > $min;
		my @workers = parallel_worker_pids($node, 'postgres', $pid);
		return 0 unless @workers;
		@r = ($pid, $n, @workers);
		return 1;
	});
	return @r;
}

# After a failed COPY: no row in acc, no parallel worker (those seen
# gone), the tserver idle.
sub check_clean
{
	my ($name, @workers) = @_;
	is(count_sums('acc'), '0 0 0', "$name: no row of the COPY is visible");
	my $gone = wait_until(10, sub { !parallel_worker_pids($node) && !grep { kill(0, $_) } @workers });
	ok($gone, "$name: no parallel worker is left")
	  or diag('left: ' . join(' ', parallel_worker_pids($node)));
	my ($idle, $stats) = wait_tserver_idle($ts, 15);
	ok($idle, "$name: the tserver holds no session") or diag(explain($stats));
}

# A parallel COPY of small.csv in session s (or a new psql): its rows
# are there and it ran parallel.
sub next_copy_works
{
	my ($name, $s) = @_;
	my @sql = (@PARALLEL, 'SET client_min_messages = debug1', "COPY acc FROM '$small' (FORMAT csv)");
	my ($out, $err);
	if ($s)
	{
		($out, $err) = $s->run(join(";\n", @sql, 'RESET client_min_messages') . ';');
	}
	else
	{
		(undef, $out, $err) = psql_cmds($node, 'postgres', \@sql);
	}
	like($out, qr/^COPY 10000$/m, "$name: the next COPY works") or diag($err);
	is(pg_messages($err), '', "$name: ... without a message");
	is(copy_ways($err), 'parallel', "$name: ... in parallel");
	is(count_sums('acc'), $small_sum, "$name: ... and its rows are there");
	$node->safe_psql('postgres', 'TRUNCATE acc');
}

# ---- pg_cancel_backend of the leader ----
{
	my $name = 'cancel';
	my $s = TcopyPgTest::Session->new($node, timeout => 120);
	my $pid = $s->backend_pid;
	$s->run_ok("\\set VERBOSITY verbose\n" . join(";\n", @PARALLEL) . ';');
	$s->send(held_copy_sql($node, 'acc', $held, 100_000) . ';');
	my ($leader, $n, @workers) = wait_running(20_000, sub { $s->done });
	is($leader, $pid, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', "$name: pg_cancel_backend");
	my $t = time();
	my ($out, $err) = $s->result;
	# the COPY's line, as a serial COPY's cancel names it; no worker's CONTEXT
	like(pg_messages($err),
		qr/\AERROR:  57014: canceling statement due to user request(?:\nCONTEXT:  COPY acc, line \d+)?\z/,
		"$name: the COPY fails with 57014, and nothing else (no parallel worker's CONTEXT)")
	  or diag($err);
	cmp_ok(time() - $t, '<', 10, "$name: ... promptly");
	is($out, '', "$name: no COPY tag");
	check_clean($name, @workers);
	next_copy_works($name, $s);
	$s->quit;
}

# ---- pg_terminate_backend of the leader ----
{
	my $name = 'terminate the leader';
	my $p = psql_bg($node, [ @PARALLEL, held_copy_sql($node, 'acc', $held, 100_000) ], timeout => 120);
	my ($leader, $n, @workers) = wait_running(20_000, sub { $p->done });
	ok($leader, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($leader)"), 't', "$name: pg_terminate_backend")
	  if $leader;
	my ($rc, $out, $err, $secs) = $p->finish;
	isnt($rc, 0, "$name: psql fails");
	like($err, qr/FATAL:  57P01: terminating connection due to administrator command/, "$name: with 57P01")
	  or diag($err);
	unlike($out, qr/^COPY/m, "$name: no COPY tag");
	check_clean($name, @workers);
	next_copy_works($name);
}

# ---- pg_terminate_backend of a parallel worker ----
{
	my $name = 'terminate a worker';
	my $s = TcopyPgTest::Session->new($node, timeout => 120);
	my $pid = $s->backend_pid;
	$s->run_ok("\\set VERBOSITY verbose\n" . join(";\n", @PARALLEL) . ';');
	$s->send(held_copy_sql($node, 'acc', $held, 100_000) . ';');
	my ($leader, $n, @workers) = wait_running(20_000, sub { $s->done });
	is($leader, $pid, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($workers[0])"), 't',
		"$name: pg_terminate_backend($workers[0])") if @workers;
	# the COPY must fail even once the rest of its rows come at full speed
	release_held_copy($node);
	my ($out, $err) = $s->result;
	like(pg_messages($err), qr/^ERROR:  /m, "$name: the COPY fails") or diag("stdout: $out\nstderr: $err");
	note("$name: $err");
	unlike($out, qr/^COPY/m, "$name: no COPY tag");
	check_clean($name, @workers);
	next_copy_works($name, $s);
	$s->quit;
}

# ---- the workers' streams: the tserver stalls, then is killed ----
{
	my $name = 'the tserver stalls';
	my $s = TcopyPgTest::Session->new($node, timeout => 120);
	$s->run_ok("\\set VERBOSITY verbose\n" . join(";\n", @PARALLEL) . ';');
	$s->send(held_copy_sql($node, 'acc', $held, 100_000) . ';');
	my ($leader, $n, @workers) = wait_running(20_000, sub { $s->done });
	ok($leader, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	# every stream's batches wait while the tserver is stopped
	kill('STOP', $ts->pid);
	release_held_copy($node);
	sleep(2);
	kill('CONT', $ts->pid);
	my ($out, $err) = $s->result;
	like($out, qr/^COPY 300000$/m, "$name: the COPY completes") or diag($err);
	is(count_sums('acc') =~ /^300000 / ? 'all' : count_sums('acc'), 'all', "$name: every row is there");
	$node->safe_psql('postgres', 'TRUNCATE acc');
	$s->quit;
}
{
	my $name = 'the tserver killed';
	my $s = TcopyPgTest::Session->new($node, timeout => 120);
	$s->run_ok("\\set VERBOSITY verbose\n" . join(";\n", @PARALLEL) . ';');
	$s->send(held_copy_sql($node, 'acc', $held, 100_000) . ';');
	my ($leader, $n, @workers) = wait_running(20_000, sub { $s->done });
	ok($leader, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	$ts->kill9;
	release_held_copy($node);
	my ($out, $err) = $s->result;
	like(pg_messages($err), qr/^ERROR:  /m, "$name: the COPY fails")
	  or diag("stdout: $out\nstderr: $err");
	note("$name: $err");
	unlike($out, qr/^COPY/m, "$name: no COPY tag");
	$ts->start or die "tserver did not start again";
	check_clean($name, @workers);
	next_copy_works($name, $s);
	$s->quit;
}

# ---- kill -9 of a worker while its stream writes ----
{
	my $name = 'kill -9 of a worker';
	my $p = psql_bg($node, [ @PARALLEL, held_copy_sql($node, 'acc', $held, 100_000) ], timeout => 120);
	my ($leader, $n, @workers) = wait_running(20_000, sub { $p->done });
	ok($leader, "$name: the COPY runs ($n rows) with parallel workers (@workers)");
	ok(kill('KILL', $workers[0]), "$name: kill -9 of worker $workers[0]") if @workers;
	my ($rc, $out, $err) = $p->finish;
	isnt($rc, 0, "$name: psql fails (the postmaster restarts every backend)") or diag($err);
	unlike($out, qr/^COPY/m, "$name: no COPY tag");
	ok(wait_until(60, sub { (eval { ($node->psql('postgres', 'SELECT 1'))[0] } // -1) == 0 }),
		"$name: the server accepts connections again after the crash restart");
	# the session's connection died with the leader: the tserver aborts it
	# and every stream of it, and nothing of the COPY is there
	my ($idle, $stats) = wait_tserver_idle($ts, 30, recover => $node);
	ok($idle, "$name: the tserver holds no session") or diag(explain($stats));
	is(count_sums('acc'), '0 0 0', "$name: no row of the COPY is visible");
	next_copy_works($name);
}

# ---- progress ----
{
	my $name = 'progress';
	# 16384 rows of 64 bytes: 1 MB, whole blocks of the reader's fread
	# (64 kB serially, 256 kB for the leader), so that no row waits for the
	# program's end in a partly read block; then the program sleeps: the
	# leader's row must count every row meanwhile
	my $aligned = "$dir/aligned.csv";
	my $rows = 16384;
	open(my $fh, '>', $aligned) or die "$aligned: $!";
	for my $aid (2_000_001 .. 2_000_000 + $rows)
	{
		my $line = "$aid,1," . ($aid % 1000) . ',';
		print $fh $line . ('f' x (63 - length $line)) . "\n";
	}
	close($fh) or die "$aligned: $!";
	is(-s $aligned, 1 << 20, "$name: the input is 1 MB");
	for my $way ([ 'serial', 'SET tcopy.copy_workers = 0' ], [ 'parallel', @PARALLEL, 'SET tcopy.copy_chunk_bytes = 1' ])
	{
		my ($how, @settings) = @$way;
		my $p = psql_bg($node, [ @settings, "COPY acc FROM PROGRAM 'cat $aligned; sleep 3' (FORMAT csv)" ],
			timeout => 60);
		my ($pid, $n, $workers, $max) = (0, 0, 0, 0);
		wait_until(10, sub {
			return -1 if $p->done;
			($pid, $n) = copy_progress($node, 'acc');
			$max = $n if $n && $n > $max;
			$workers ||= parallel_worker_pids($node, 'postgres', $pid) if $pid;
			return $n && $n >= $rows;
		});
		is($max, $rows, "$name, $how: tuples_processed of the leader reaches the $rows rows while the program runs");
		is($workers ? 1 : 0, $how eq 'parallel' ? 1 : 0, "$name, $how: parallel workers " . ($workers ? '' : 'not ') . 'seen');
		my ($rc, $out, $err) = $p->finish;
		like($out, qr/^COPY $rows$/m, "$name, $how: the COPY ends") or diag($err);
		$node->safe_psql('postgres', 'TRUNCATE acc');
	}

	# bytes_processed grows while a program writes 64 kB every 0.1 s
	my $trickle = "$dir/trickle.pl";
	PostgreSQL::Test::Utils::append_to_file($trickle, <<'PERL');
$SIG{PIPE} = sub { exit 0 };
$| = 1;
open(my $in, '<', $ARGV[0]) or die "$ARGV[0]: $!";
while (read($in, my $buf, 65536))
{
	print $buf or exit 0;
	select(undef, undef, undef, 0.1);
}
PERL
	for my $way ([ 'serial', 'SET tcopy.copy_workers = 0' ], [ 'parallel', @PARALLEL ])
	{
		my ($how, @settings) = @$way;
		my $s = TcopyPgTest::Session->new($node, timeout => 120);
		my $pid = $s->backend_pid;
		$s->run_ok(join(";\n", @settings) . ';');
		$s->send("COPY acc FROM PROGRAM 'perl $trickle $held' (FORMAT csv);");
		my @bytes;
		wait_until(20, sub {
			return -1 if $s->done;
			my $b = $node->safe_psql('postgres', "SELECT bytes_processed FROM pg_stat_progress_copy WHERE pid = $pid");
			return 0 if $b eq '';
			push @bytes, $b;
			sleep(0.4);
			return @bytes >= 8;
		});
		ok(@bytes >= 8 && $bytes[-1] > $bytes[3] && $bytes[3] > $bytes[0],
			"$name, $how: bytes_processed grows while the program writes") or diag("bytes_processed: @bytes");
		is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', "$name, $how: cancel the COPY");
		my ($o, $e) = $s->result;
		$s->quit;
		$node->safe_psql('postgres', 'TRUNCATE acc');
	}
}

# ---- memory of the leader and of each worker ----
{
	my $name = 'memory';
	my $big = "$dir/big.csv";
	my $t = time();
	my $expect = write_accounts_csv($big, 1, $BIG_ROWS);
	note(sprintf("$name: %d rows, %d bytes written in %.1f s", $BIG_ROWS, $expect->{bytes}, time() - $t));
	my $s = TcopyPgTest::Session->new($node, timeout => 300);
	my $pid = $s->backend_pid;
	$s->run_ok('SET tcopy.copy_workers = 2;');
	$t = time();
	$s->send("COPY big FROM '$big' (FORMAT csv);");
	my %max;
	my %workers;
	my $samples = 0;
	my $last_look = 0;
	until ($s->done)
	{
		if (time() - $last_look > 0.2)
		{
			$last_look = time();
			$workers{$_} //= 0 for parallel_worker_pids($node, 'postgres', $pid);
		}
		for my $p ($pid, keys %workers)
		{
			my $kb = rss_anon_kb($p);
			$max{$p} = $kb if defined $kb && $kb > ($max{$p} // 0);
		}
		$samples++;
		sleep(0.02);
	}
	my ($out, $err) = $s->result;
	my $secs = time() - $t;
	is($out, "COPY $BIG_ROWS", "$name: COPY of $BIG_ROWS rows") or diag($err);
	cmp_ok(scalar(keys %workers), '>=', 1, "$name: parallel workers ran (" . join(' ', sort keys %workers) . ')');
	cmp_ok($samples, '>=', 5, "$name: $samples samples");
	cmp_ok($max{$pid} // 0, '<', $RSS_ANON_BOUND_KB, "$name: the leader's RssAnon stayed under 32 MB (max "
		  . ($max{$pid} // '?') . ' kB)');
	for my $w (sort keys %workers)
	{
		cmp_ok($max{$w} // 0, '<', $RSS_ANON_BOUND_KB, "$name: worker ${w}'s RssAnon stayed under 32 MB (max "
			  . ($max{$w} // '?') . ' kB)');
	}
	note(sprintf("$name: %d rows in %.1f s (%.0f rows/s)", $BIG_ROWS, $secs, $BIG_ROWS / ($secs || 1)));
	is(count_sums('big'), "$BIG_ROWS $expect->{aid_sum} $expect->{abalance_sum}", "$name: every row is there");
	$s->quit;
	unlink($big);
}

note(sprintf('%.0f s', time() - $T0));
$node->stop;
$ts->stop;
done_testing();
