# 161_pgbench.pl
#	pgbench on tcopy tables (issue 15): the four tables made by
#	tcopy.create_pgbench_tables('ts'), then Postgres' own pgbench:
#	- `pgbench -i -I g -s 10` (client-side: TRUNCATE, INSERTs, COPY ...
#	  FREEZE in one transaction) and, later, `-I G` (server-side: INSERT
#	  ... SELECT): exit 0; 1,000,000 accounts, 10 branches, 100 tellers,
#	  each key once, the right bids, no history, every balance 0;
#	- the syncs of the tserver's log per commit (issue 46; the tserver
#	  runs --statistics: wal_syncs, sessions_committed): a TPC-B-like run
#	  of 1 client costs the tserver one sync per commit, its PREPARE's
#	  (the publish is a lazy write), and one of 4 clients no more (RocksDB
#	  groups the PREPAREs that arrive together);
#	- the built-in TPC-B-like script, 4 clients, 2 threads, -n (VACUUM does
#	  not apply to foreign tables), TCOPY_PGBENCH_SECONDS (default 30):
#	  exit 0, transactions processed, none failed; then pgbench's
#	  invariant: sum(abalance) = sum(bbalance) = sum(tbalance) =
#	  sum(delta), count(history) = the transactions pgbench reports
#	  processed, and, stronger, each account's, teller's and branch's
#	  balance is the sum of its history rows' deltas; no row of the three
#	  keyed tables lost or doubled;
#	- select-only (-S), 4 clients: exit 0, transactions processed, none
#	  failed, the tables unchanged;
#	- a TPC-B-like run (-T 20) with the tserver killed -9 about 8 s in and
#	  started again on its data: the clients whose transactions the kill
#	  cut abort (pgbench then exits 2), naming the tserver, and no
#	  commit's outcome is unknown (no 08007); every transaction is all or
#	  nothing, before recovery (the invariant holds, count(history) is at
#	  most the transactions processed); after
#	  tcopy.recover_prepared_sessions() (the background worker is off, so
#	  that the test sees what the kill left) nothing is left prepared, and
#	  no committed transaction is lost: count(history) = the transactions
#	  pgbench processed, the invariant and every balance right; a
#	  further run after the restart adds to them the same way.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(run_pgbench assert_pgbench_invariant setup_node recover_all assert_tserver_unprepared wait_until);

my $SCALE = 10;
my $seconds = $ENV{TCOPY_PGBENCH_SECONDS} // 30;
my $KILL_RUN_SECONDS = 20;
my $KILL_AFTER = 8;			# seconds into the kill run
my $TIMEOUT = 300;			# seconds: a pgbench that takes longer hangs

my ($node, $ts) = setup_node(conf => "tcopy.recovery_interval = 0\nmax_connections = 20\n",
	tserver => { extra_args => ['--statistics'] });
$node->safe_psql('postgres', "SELECT tcopy.create_pgbench_tables('ts')");

my @connect = ('-h', $node->host, '-p', $node->port);
my $pgbench = $node->installed_command('pgbench');

# The figures of pgbench's report: { processed, failed, tps }, a figure
# missing from the report undef.
sub report
{
	my ($out) = @_;
	my %r;
	($r{processed}) = $out =~ /^number of transactions actually processed: (\d+)/m;
	($r{failed}) = $out =~ /^number of failed transactions: (\d+)/m;
	($r{tps}) = $out =~ /^tps = ([0-9.]+)/m;
	return \%r;
}

# A pgbench run (args after -n, -c 4, -j 2) that must succeed: exit 0,
# transactions processed, none failed.  Returns the report.
sub pgbench_ok
{
	my ($name, @args) = @_;
	my ($rc, $out, $err) = run_pgbench($node, '-n', '-c', '4', '-j', '2', @args);
	my $r = report($out);
	is($rc, 0, "$name: pgbench exits 0") or diag("stdout:\n$out\nstderr:\n$err");
	cmp_ok($r->{processed} // 0, '>', 0, "$name: transactions processed");
	is($r->{failed}, 0, "$name: no transaction failed") or diag($out);
	note("$name: $r->{processed} transactions, tps " . ($r->{tps} // '?'));
	return $r;
}

# pgbench -i with init steps: exit 0, then the tables as a fresh
# initialization leaves them.
sub init_ok
{
	my ($name, $steps) = @_;
	my ($rc, $out, $err) = run_pgbench($node, '-i', '-I', $steps, '-s', $SCALE);
	is($rc, 0, "$name: pgbench -i -I $steps -s $SCALE exits 0") or diag("stdout:\n$out\nstderr:\n$err");
	my $accounts = 100_000 * $SCALE;
	is($node->safe_psql('postgres', q{
			SELECT count(*), count(DISTINCT aid), min(aid), max(aid), sum(abalance),
				count(*) FILTER (WHERE bid <> (aid - 1) / 100000 + 1)
			FROM pgbench_accounts}),
		"$accounts|$accounts|1|$accounts|0|0",
		"$name: pgbench_accounts holds aids 1..$accounts once each, their bids, balances 0");
	is($node->safe_psql('postgres', q{
			SELECT count(*), count(DISTINCT bid), min(bid), max(bid), sum(bbalance)
			FROM pgbench_branches}),
		"$SCALE|$SCALE|1|$SCALE|0", "$name: pgbench_branches holds bids 1..$SCALE, balances 0");
	my $tellers = 10 * $SCALE;
	is($node->safe_psql('postgres', q{
			SELECT count(*), count(DISTINCT tid), min(tid), max(tid), sum(tbalance),
				count(*) FILTER (WHERE bid <> (tid - 1) / 10 + 1)
			FROM pgbench_tellers}),
		"$tellers|$tellers|1|$tellers|0|0", "$name: pgbench_tellers holds tids 1..$tellers, their bids, balances 0");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pgbench_history'), '0',
		"$name: pgbench_history is empty");
}

# pgbench's invariant, and more: each balance is the sum of its history
# rows' deltas, each key there once.  Returns the number of history rows.
sub check_balances
{
	my ($name, $history_rows) = @_;
	assert_pgbench_invariant($node, $name);
	my $count = $node->safe_psql('postgres', 'SELECT count(*) FROM pgbench_history');
	is($count, $history_rows, "$name: one history row per transaction pgbench processed")
	  if defined $history_rows;
	# a key missing, doubled, or with a balance its history does not explain
	for my $t ([ 'accounts', 'aid', 'abalance', 100_000 * $SCALE ],
		[ 'tellers', 'tid', 'tbalance', 10 * $SCALE ],
		[ 'branches', 'bid', 'bbalance', $SCALE ])
	{
		my ($table, $key, $balance, $rows) = @$t;
		is($node->safe_psql('postgres', qq{
				SELECT (SELECT count(*) || '|' || count(DISTINCT $key) FROM pgbench_$table)
					|| '|' || count(*)
				FROM pgbench_$table t
				FULL JOIN (SELECT $key, sum(delta) AS delta FROM pgbench_history GROUP BY $key) h
					USING ($key)
				WHERE t.$key IS NULL OR t.$balance <> coalesce(h.delta, 0)}),
			"$rows|$rows|0",
			"$name: each of the $rows $table once, its balance the sum of its history's deltas");
	}
	return $count;
}

# ---- client-side generation, then TPC-B-like ----
init_ok('-I g', 'g');

# the tserver's syncs per commit: one with 1 client, at most one with 4
my $tpcb_history = 0;
for my $clients (1, 4)
{
	my $before = $ts->stats or die 'tserver-cli stats failed';
	my ($rc, $out, $err) = run_pgbench($node, '-n', '-c', $clients, '-j', $clients > 1 ? 2 : 1,
		'-T', 5);
	my $after = $ts->stats or die 'tserver-cli stats failed';
	my $rr = report($out);
	is($rc, 0, "syncs, $clients client(s): pgbench exits 0") or diag("stdout:\n$out\nstderr:\n$err");
	$tpcb_history += $rr->{processed} // 0;
	my $commits = $after->{sessions_committed} - $before->{sessions_committed};
	my $syncs = $after->{wal_syncs} - $before->{wal_syncs};
	cmp_ok($commits, '>=', $rr->{processed} // 1, "syncs, $clients client(s): a tserver session committed per transaction");
	# a few more: the background syncer's, when no PREPARE came within
	# 100 ms of a publish (a stalled client on a loaded machine), and its
	# last round; two per commit before issue 46
	cmp_ok($syncs, '<=', int($commits * 1.05) + 5,
		sprintf("syncs, %d client(s): %d syncs of the tserver's log for %d commits (%.2f each)",
			$clients, $syncs, $commits, $commits ? $syncs / $commits : 0));
	cmp_ok($after->{lazy_writes} - $before->{lazy_writes}, '>=', $commits,
		"syncs, $clients client(s): every publish a lazy write");
}
my $r = pgbench_ok('TPC-B-like', '-T', $seconds);
check_balances('after TPC-B-like', $tpcb_history + $r->{processed});

# ---- server-side generation, then select-only ----
init_ok('-I G', 'G');
pgbench_ok('select-only', '-S', '-T', $seconds);
check_balances('after select-only', 0);

# ---- kill -9 of the tserver during a TPC-B-like run ----
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ $pgbench, @connect, '-n', '-c', '4', '-j', '2', '-T', $KILL_RUN_SECONDS,
		'postgres' ], '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout($TIMEOUT));
my $started = time();
sleep($KILL_AFTER);
my $history_before_kill = $node->safe_psql('postgres', 'SELECT count(*) FROM pgbench_history');
cmp_ok($history_before_kill, '>', 0, 'kill run: transactions committed before the kill');
$ts->kill9;
note(sprintf('tserver killed %.1f s into the run, %d transactions committed by then',
		time() - $started, $history_before_kill));
$ts->start or BAIL_OUT('tserver did not start after kill -9');
my $rc = eval { $h->finish; 1 } ? $h->full_result(0) : do { eval { $h->kill_kill }; $err .= "\n(test harness: $@)"; -1 };
$rc = $rc == -1 || ($rc & 127) ? -1 : $rc >> 8;
my $kr = report($out);
# pgbench aborts a client on an error it does not retry: exit status 2,
# after its report; 0 only if no client's transaction met the kill
ok($rc == 0 || $rc == 2, 'kill run: pgbench ends with its report (exit 0, or 2 for aborted clients)')
  or diag("exit $rc\nstdout:\n$out\nstderr:\n$err");
cmp_ok($kr->{processed} // 0, '>=', $history_before_kill,
	'kill run: pgbench reports at least the transactions committed before the kill')
  or diag("stdout:\n$out\nstderr:\n$err");
my @aborted = $err =~ /^(.*aborted in command.*)$/mg;
note("kill run: exit $rc, $kr->{processed} transactions processed, " . scalar(@aborted) . ' clients aborted');
note($_) for @aborted;
ok(!grep({ !/tserver/ } @aborted), 'kill run: each client the kill aborted says it lost the tserver')
  or diag(join("\n", @aborted));
unlike("$out\n$err", qr/could not learn whether|\b08007\b/, 'kill run: no commit outcome is unknown (no 08007)');

my $published = check_balances('kill run, before recovery');
cmp_ok($published, '<=', $kr->{processed},
	'kill run, before recovery: no more history rows than transactions processed');
my ($ok, $resolved, $left) = recover_all($node, ts => $ts);
ok($ok, 'kill run: after recovery nothing is left prepared') or diag($left);
note("recovery resolved $resolved sessions");
my $history = check_balances('kill run, after recovery', $kr->{processed});
assert_tserver_unprepared($ts, 'kill run, after recovery');

# the restarted tserver serves the next run as before
my $after = pgbench_ok('TPC-B-like after the restart', '-T', 5);
check_balances('after the restart', $history + ($after->{processed} // 0));

$node->stop;
$ts->stop;
done_testing();
