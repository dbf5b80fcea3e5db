# 111_kill_tserver.pl
#	kill -9 of the tserver at random points of COPYs of 200k rows
#	(TCOPY_FAULT_ROWS overrides), seven times (TCOPY_FAULT_ITERATIONS), 0 to
#	800 ms after the COPY starts (less when a COPY takes less here, so that
#	most kills land in it), the delays drawn from a fixed seed
#	(TCOPY_FAULT_SEED, printed): a COPY the kill interrupts before its
#	commit record (while it sends rows, or in the prepare) fails with an
#	error naming the tserver and never reports rows copied; after a
#	restart the table holds exactly the loads that reported success
#	(count and checksum), nothing of the failed one, before recovery and
#	after it (a session the tserver had prepared durably before it died is
#	discarded by recovery).  A kill during the commit's publish (two-phase
#	commit: after Postgres' commit record) cannot fail the COPY: it
#	reports every row copied with a WARNING that recovery will publish it;
#	the table then holds all or nothing of it (the tserver may have
#	published before it died), and after tcopy.recover_prepared_sessions()
#	all of it, once.  No outcome is ever unknown (no "could not learn
#	whether ... committed", SQLSTATE 08007).  After every iteration
#	recovery leaves nothing prepared, on the tserver nor in the database;
#	the background worker is off (tcopy.recovery_interval 0), so that the
#	test sees what each kill left before recovery runs.  Failed loads are
#	retried at once, so that successful loads interleave with the killed
#	ones.  COPYs alternate between a long-lived psql session (whose cached
#	connection died with the tserver) and one-shot psql runs (whose exit
#	status is checked).  Rows come from a program that trickles the file
#	(a 1 ms pause every 500 lines, as a slow client would send them): read
#	at full speed, 200k rows take tcopy well under the time psql needs to
#	start, and nearly every kill would land in the commit instead.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum checksum_add
  recover_all assert_tserver_unprepared);

my $rows = $ENV{TCOPY_FAULT_ROWS} // 200_000;
my $iterations = $ENV{TCOPY_FAULT_ITERATIONS} // 7;
my $seed = $ENV{TCOPY_FAULT_SEED} // 111;
my $MAX_DELAY = 0.8;		# seconds from a COPY's start to the kill, at most
my $COPY_TIMEOUT = 120;		# seconds: a COPY that takes longer hangs
# the WARNING of a commit whose publish failed ("could not publish ...; it
# will be published by recovery"); psql -f prefixes it with "psql:...: "
my $PUBLISH_WARNING = qr/\bWARNING:  (?:[0-9A-Z]{5}: )?.*(?:could not publish|published by recovery)/;

srand($seed);
diag("random seed $seed (set TCOPY_FAULT_SEED=$seed to repeat this run)");

# recovery only when the test calls it (see the header)
my ($node, $ts) = setup_node(conf => "tcopy.recovery_interval = 0\n");
$node->safe_psql('postgres', accounts_ddl(heap => ['reference'], tcopy => ['acc']));

# Load k holds aids k * rows + 1 .. (k + 1) * rows; its checksum is that of
# the same file loaded into a heap table.
my %loads;
sub load_file
{
	my ($k) = @_;
	return @{ $loads{$k} } if $loads{$k};
	my $file = $node->basedir . "/load.$k.csv";
	write_accounts_csv($file, $k * $rows + 1, $rows);
	my $sum = do {
		$node->safe_psql('postgres', "TRUNCATE reference; COPY reference FROM '$file' (FORMAT csv)");
		table_checksum($node, 'reference');
	};
	$loads{$k} = [ $file, $sum ];
	return ($file, $sum);
}

# The COPY of a load file, its rows trickled (see the header).
sub copy_sql
{
	my ($file) = @_;
	my $program = 'perl -pe \'\'select(undef, undef, undef, 0.001) unless $. % 500\'\' ' . $file;
	return "COPY acc FROM PROGRAM '$program' (FORMAT csv)";
}

my $s = TcopyPgTest::Session->new($node, timeout => $COPY_TIMEOUT);
my $expected = '0 0 0 0';	# checksum of the loads committed so far
my $next_load = 0;

# A COPY that must succeed; adds its load to $expected.
sub load_ok
{
	my ($what) = @_;
	my ($file, $sum) = load_file($next_load);
	my $t0 = time();
	my ($out, $err) = $s->run(copy_sql($file) . ';');
	my $secs = time() - $t0;
	is($out, "COPY $rows", "$what: COPY of load $next_load succeeds") or diag($err);
	$expected = checksum_add($expected, $sum);
	$next_load++;
	is(table_checksum($node, 'acc'), $expected, "$what: the table holds every committed load");
	return $secs;
}

# a first load, which also tells how long one takes here
my $copy_secs = load_ok('first load');
my $max_delay = $copy_secs * 1.2 < $MAX_DELAY ? $copy_secs * 1.2 : $MAX_DELAY;
note(sprintf("a COPY of %d rows takes %.2f s; kills come 0-%.2f s after a COPY starts",
	$rows, $copy_secs, $max_delay));

my %outcomes;
for my $i (1 .. $iterations)
{
	my ($file, $sum) = load_file($next_load);
	my $delay = rand($max_delay);
	my $copy = copy_sql($file);
	my $via = $i % 2 ? 'session' : 'psql';
	my $name = sprintf("iteration %d (%s, kill after %.3f s)", $i, $via, $delay);
	my ($reported, $out, $err);

	if ($via eq 'session')
	{
		$s->send("$copy;");
		sleep($delay);
		$ts->kill9;
		($out, $err) = $s->result;
		$reported = $out =~ /^COPY \d+$/m;
		ok(!$reported || $out eq "COPY $rows", "$name: a COPY reporting success reports every row")
		  or diag("stdout: $out");
	}
	else
	{
		my $p = TcopyPgTest::Psql->start($node, $copy, timeout => $COPY_TIMEOUT);
		sleep($delay);
		$ts->kill9;
		my $rc;
		($rc, $out, $err) = $p->finish;
		$reported = $rc == 0;
		isnt($rc, -1, "$name: psql ends (no hang, no signal)");
		ok($rc == 0 ? $out eq "COPY $rows" : $rc == 1 && $out !~ /^COPY/m,
			"$name: psql exits 0 having copied every row, or 1 having copied none")
		  or diag("exit $rc\nstdout: $out\nstderr: $err");
	}
	$ts->start or BAIL_OUT("tserver did not start after kill -9");
	unlike($err, qr/could not learn whether|\b08007\b/, "$name: the outcome is never unknown (no 08007)");

	my $state = table_checksum($node, 'acc');
	my $with = checksum_add($expected, $sum);
	my ($first_aid, $last_aid) = ($next_load * $rows + 1, ($next_load + 1) * $rows);
	if ($reported)
	{
		ok($err eq '' || $err =~ $PUBLISH_WARNING,
			"$name: a COPY reporting success says nothing else, or that recovery will publish it")
		  or diag("stderr: $err");
		unlike($err, qr/\b(?:ERROR|FATAL):/, "$name: ... and no error");
		if ($err =~ $PUBLISH_WARNING)
		{
			# killed during the publish: Postgres had committed; recovery
			# publishes what the tserver had not
			ok($state eq $expected || $state eq $with,
				"$name: killed during the publish: before recovery the table holds all or nothing of the COPY")
			  or diag("state $state\nwithout the COPY $expected\nwith it $with");
			$outcomes{'killed during the publish, '
				  . ($state eq $with ? 'published before the kill' : 'published by recovery')}++;
		}
		else
		{
			$outcomes{'done before the kill'}++;
			is($state, $with, "$name: all of the COPY that reported success is there after a restart");
		}
		my ($ok, $resolved, $left) = recover_all($node, ts => $ts);
		ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
		is(table_checksum($node, 'acc'), $with, "$name: after recovery all of the COPY is there");
		is($node->safe_psql('postgres',
				"SELECT count(*) || ' ' || count(DISTINCT aid) FROM acc WHERE aid BETWEEN $first_aid AND $last_aid"),
			"$rows $rows", "$name: ... each of its rows once");
		$expected = $with;
		$next_load++;
		next;
	}

	like($err, qr/ERROR:  .*tserver/, "$name: the killed COPY fails, naming the tserver");
	unlike($out, qr/^COPY \d+/m, "$name: ... and reports no rows copied");
	is($state, $expected, "$name: nothing of the killed COPY is there after a restart")
	  or diag("error: $err");
	# a kill after the tserver made the prepare durable, before Postgres
	# heard of it, leaves the session prepared: recovery discards it
	my $prepared = $ts->prepared;
	$outcomes{$prepared && @$prepared ? 'killed in the prepare, left prepared' : 'killed during the COPY'}++;
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts);
	ok($ok, "$name: after recovery nothing is left prepared") or diag($left);
	is(table_checksum($node, 'acc'), $expected, "$name: ... and nothing of the killed COPY is there")
	  or diag("recovery resolved $resolved sessions; error: $err");
	# the same load again, in the session whose connection the kill cut
	load_ok("$name, retried");
}

note("outcomes: " . join(', ', map { "$_: $outcomes{$_}" } sort keys %outcomes));
cmp_ok($outcomes{'killed during the COPY'} // 0, '>=', 1,
	'at least one kill came in the middle of a COPY');
is($node->safe_psql('postgres', 'SELECT count(*) FROM acc'), $next_load * $rows,
	"in the end the table holds the $next_load committed loads");
assert_tserver_unprepared($ts, 'in the end');

$s->quit;
$node->stop;
$ts->stop;
done_testing();
