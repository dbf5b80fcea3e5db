# 122_twopc_faults.pl
#	Two-phase commit (issue 11): the connection to the tserver cut, and the
#	tserver killed with -9, at each step of prepare, publish (Resolve
#	commit) and discard (Resolve abort).  The foreign server's address is
#	the fault proxy (test/tools/tcopy_proxy.pl), which acts once per
#	transaction, at the step under test:
#	  cut   the frame is dropped (or sent, then the connection is cut);
#	  kill  the same, and the proxy kills the tserver with SIGKILL at that
#	        frame; the test restarts it at once;
#	  pause the backend pauses at a test pause point (tcopy.test_pause_at:
#	        after-prepare, before-publish), the tserver is killed -9 and
#	        restarted, then the backend is killed -9 (the postmaster
#	        restarts every backend).
#	Each transaction n is BEGIN; INSERT INTO marker VALUES (n); COPY of its
#	rows into t; COMMIT (2,000 rows, TCOPY_2PC_ROWS; or 60,000,
#	TCOPY_2PC_BIG_ROWS, which the tserver, run with --session-memory-mb 1,
#	spills to staging files), or, for the discard steps, the COPYing half of
#	a serializable write skew, which fails at COMMIT with 40001 after its
#	sessions were prepared.  The client sees: a fault in the prepare fails
#	the COMMIT (never with 08007); a fault in the publish leaves COMMIT
#	successful (a WARNING at most); a skew transaction fails with 40001.
#	After every step, once recovery has run (tcopy.recover_prepared_sessions()
#	until tcopy.prepared_sessions() is empty and the tserver lists nothing
#	prepared): every transaction so far has its marker row exactly when it
#	has all of its rows, the committed ones are there, the others are not.
#	First, without a fault, the proxy's trace shows that a commit sends
#	PREPARE then RESOLVE (commit), never COMMIT.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup rows_copy_sql txn_sql psql_bg prepared_sessions
  recover_all assert_atomic assert_tserver_unprepared assert_no_08007 sqlstates
  wait_until start_paused);

my $small = $ENV{TCOPY_2PC_ROWS} // 2_000;
my $big = $ENV{TCOPY_2PC_BIG_ROWS} // 60_000;
my $per = $big;				# id space of a transaction: n * per + 1 ..
my $STEP_TIMEOUT = 90;		# seconds a step's statements may take

# step: [ mode, fault or pause point, kind (commit: a plain transaction;
# skew: the failing half of a write skew), rows, outcome after recovery ]
my @steps = (
	[ 'cut', 'prepare', 'commit', $small, 'abort' ],
	[ 'cut', 'prepare_sent', 'commit', $small, 'abort' ],
	[ 'cut', 'prepare_ok', 'commit', $small, 'abort' ],
	[ 'cut', 'prepare_ok', 'commit', $big, 'abort' ],
	[ 'cut', 'resolve_commit', 'commit', $small, 'commit' ],
	[ 'cut', 'resolve_commit', 'commit', $big, 'commit' ],
	[ 'cut', 'resolve_commit_sent', 'commit', $small, 'commit' ],
	[ 'cut', 'resolve_commit_ok', 'commit', $small, 'commit' ],
	[ 'cut', 'resolve_abort', 'skew', $small, 'abort' ],
	[ 'cut', 'resolve_abort_sent', 'skew', $small, 'abort' ],
	[ 'cut', 'resolve_abort_ok', 'skew', $small, 'abort' ],
	[ 'kill', 'prepare', 'commit', $small, 'abort' ],
	[ 'kill', 'prepare_sent', 'commit', $big, 'abort' ],
	[ 'kill', 'prepare_ok', 'commit', $small, 'abort' ],
	[ 'kill', 'prepare_ok', 'commit', $big, 'abort' ],
	[ 'kill', 'resolve_commit', 'commit', $small, 'commit' ],
	[ 'kill', 'resolve_commit', 'commit', $big, 'commit' ],
	[ 'kill', 'resolve_commit_sent', 'commit', $small, 'commit' ],
	[ 'kill', 'resolve_commit_sent', 'commit', $big, 'commit' ],
	[ 'kill', 'resolve_commit_ok', 'commit', $big, 'commit' ],
	[ 'kill', 'resolve_abort', 'skew', $big, 'abort' ],
	[ 'kill', 'resolve_abort_sent', 'skew', $small, 'abort' ],
	[ 'kill', 'resolve_abort_ok', 'skew', $big, 'abort' ],
	[ 'pause', 'after-prepare', 'commit', $small, 'abort' ],
	[ 'pause', 'after-prepare', 'commit', $big, 'abort' ],
	[ 'pause', 'before-publish', 'commit', $small, 'commit' ],
	[ 'pause', 'before-publish', 'commit', $big, 'commit' ],
);

# recovery only when the test calls it: the proxy's one fault must hit the
# transaction's own connection
my ($node, $ts) = twopc_setup(
	recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
$node->safe_psql('postgres', q{
	CREATE TABLE mytab (class int, value int);
	INSERT INTO mytab VALUES (1, 10), (1, 20), (2, 100), (2, 200);
});
my $proxy = TcopyPgTest::Proxy->start($ts, trace => 1);
$node->safe_psql('postgres', "ALTER SERVER ts OPTIONS (SET address '" . $proxy->address . "')");

my @outputs;				# every psql output, for the 08007 check
my (%sizes, @committed, @aborted);
my $n = 0;

# ---- without a fault: the frames of a commit ----
{
	$n++;
	my ($rc, $out, $err) = psql_bg($node, [ txn_sql($node, $n, per => $per, last => $small) ],
		timeout => $STEP_TIMEOUT)->finish;
	push @outputs, $out, $err;
	$sizes{$n} = $small;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $small\nCOMMIT", 'no fault: the transaction commits') or diag($err);
	push @committed, $n;
	my $trace = $proxy->log_text;
	my @frames = map { /^connection \d+ c2s (\w+)/ ? $1 : () } split /\n/, $trace;
	my @ends = grep { /^(?:PREPARE|RESOLVE|COMMIT|ABORT)$/ } @frames;
	my @resolves = $trace =~ /^connection \d+ c2s RESOLVE \d+ (\w+)$/mg;
	is(join(' ', @ends), 'PREPARE RESOLVE', 'no fault: the commit sends PREPARE, then RESOLVE, and no COMMIT')
	  or diag($trace);
	is(join(' ', @resolves), 'commit', 'no fault: ... a RESOLVE that publishes');
	like($trace, qr/^connection \d+ s2c PREPARE_OK /m, 'no fault: the tserver answers PREPARE_OK');
	like($trace, qr/^connection \d+ s2c RESOLVE_OK /m, 'no fault: ... and RESOLVE_OK');
	assert_atomic($node, 'no fault', per => $per, sizes => \%sizes, committed => \@committed);
	$proxy->stop;
}

# The skew transaction n up to its COMMIT, which is sent and not waited
# for: (the COPYing session, the other one), or () when a step failed.
sub start_skew
{
	my ($name, $n, $rows) = @_;
	$node->safe_psql('postgres', 'DELETE FROM mytab WHERE value IN (30, 300)');
	my @s = map {
		my $s = TcopyPgTest::Session->new($node, timeout => $STEP_TIMEOUT);
		$s->run_ok('\set VERBOSITY verbose');
		$s;
	} 1 .. 2;
	my ($reader, $copier) = @s;
	my @r;
	push @r, [ $reader->run("BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT sum(value) FROM mytab WHERE class = 1;") ];
	push @r, [ $copier->run("BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT sum(value) FROM mytab WHERE class = 2;") ];
	push @r, [ $reader->run('INSERT INTO mytab VALUES (2, 30);') ];
	push @r, [ $copier->run("INSERT INTO mytab VALUES (1, 300);\nINSERT INTO marker VALUES ($n);\n"
			  . rows_copy_sql($node, $n, per => $per, last => $rows) . ';') ];
	push @r, [ $reader->run('COMMIT;') ];
	push @outputs, map { @$_ } @r;
	my $ok = is(join("\n", map { $_->[0] } @r),
		"BEGIN\n30\nBEGIN\n300\nINSERT 0 1\nINSERT 0 1\nINSERT 0 1\nCOPY $rows\nCOMMIT",
		"$name: the write skew runs up to the COPYing transaction's COMMIT");
	diag(join("\n", map { $_->[1] } @r)) unless $ok;
	$reader->quit;
	$copier->send('COMMIT;');
	return ($copier);
}

# ---- the steps ----
for my $step (@steps)
{
	my ($mode, $fault, $kind, $rows, $outcome) = @$step;
	$n++;
	$sizes{$n} = $rows;
	my $name = "$mode at $fault" . ($kind eq 'skew' ? ' (write skew)' : '') . ", $rows rows (transaction $n)";
	my $t0 = time();
	my ($rc, $out, $err);

	if ($mode eq 'pause')
	{
		$proxy = TcopyPgTest::Proxy->start($ts);
		my ($p, $pid) = start_paused($node, $fault, [ txn_sql($node, $n, per => $per, last => $rows) ],
			timeout => $STEP_TIMEOUT);
		ok($pid, "$name: the backend pauses at $fault");
		if ($pid)
		{
			my ($sessions, $perr) = prepared_sessions($node);
			my @mine = grep { $_->{attached} eq 't' } @{ $sessions // [] };
			is(scalar(@mine), 1, "$name: while it is paused, its session is prepared and attached")
			  or diag($sessions ? explain($sessions) : $perr);
			$ts->kill9;
			$ts->start or BAIL_OUT('tserver did not start after kill -9');
			ok(kill('KILL', $pid), "$name: kill -9 of the paused backend");
		}
		($rc, $out, $err) = $p->finish;
		push @outputs, $out, $err;
		if ($pid)
		{
			is($rc, 2, "$name: psql reports the connection lost") or diag("$out\n$err");
			ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
				"$name: Postgres accepts connections again after the crash restart");
		}
		else
		{
			diag("exit $rc\n$out\n$err");
		}
	}
	else
	{
		$proxy = TcopyPgTest::Proxy->start($ts, fault => $fault, trace => 1,
			$mode eq 'kill' ? (kill => $ts->pid) : ());
		my ($p, $copier);
		if ($kind eq 'skew')
		{
			($copier) = start_skew($name, $n, $rows);
		}
		else
		{
			$p = psql_bg($node, [ txn_sql($node, $n, per => $per, last => $rows) ], timeout => $STEP_TIMEOUT);
		}
		my $fired = $proxy->wait_fired($STEP_TIMEOUT, sub { $p ? $p->done : $copier->done });
		ok($fired, "$name: the proxy's fault fired") or diag($proxy->log_text);
		if ($mode eq 'kill' && $fired =~ /killed/)
		{
			$ts->kill9;		# reaps it
			$ts->start or BAIL_OUT('tserver did not start after kill -9');
		}
		if ($p)
		{
			($rc, $out, $err) = $p->finish;
		}
		else
		{
			($out, $err) = $copier->result;
			$rc = $out eq 'COMMIT' ? 0 : 1;
			$copier->quit;
		}
		push @outputs, $out, $err;
		note("$name: exit $rc, stdout: $out\nstderr: $err");
		if ($kind eq 'skew')
		{
			is($out, '', "$name: the COPYing transaction's COMMIT does not commit");
			is((sqlstates($err))[0], '40001', "$name: ... it fails with SQLSTATE 40001") or diag($err);
		}
		elsif ($outcome eq 'abort')
		{
			is($rc, 1, "$name: COMMIT fails (the prepare failed)");
			unlike($out, qr/^COMMIT$/m, "$name: ... psql shows no COMMIT");
			like($err, qr/ERROR:  [0-9A-Z]{5}: /, "$name: ... with an error") or diag($err);
		}
		else
		{
			is($rc, 0, "$name: COMMIT succeeds: the commit record is written, the publish is left to recovery")
			  or diag($err);
			like($out, qr/COMMIT$/, "$name: ... psql shows COMMIT");
			unlike($err, qr/^ERROR/m, "$name: ... with a WARNING at most");
		}
	}
	$proxy->stop;
	cmp_ok(time() - $t0, '<', $STEP_TIMEOUT, "$name: the step ends in time");

	# recovery, through a proxy without a fault
	$proxy = TcopyPgTest::Proxy->start($ts);
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
	note("$name: recovery resolved $resolved prepared sessions");
	$outcome eq 'commit' ? push(@committed, $n) : push(@aborted, $n);
	assert_atomic($node, $name, per => $per, sizes => \%sizes, committed => \@committed, aborted => \@aborted);
	assert_tserver_unprepared($ts, $name);
	$proxy->stop;
}

assert_no_08007($node, 'faults', @outputs);
$node->stop;
$ts->stop;
done_testing();
