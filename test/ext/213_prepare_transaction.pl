# 213_prepare_transaction.pl
#	PREPARE TRANSACTION of a transaction that wrote tcopy tables, then
#	COMMIT PREPARED or ROLLBACK PREPARED from another session (issue 48,
#	item 6a), each case beside a heap twin (h) of the tcopy table (f):
#	- an INSERT and a COPY, PREPARE TRANSACTION: another session sees none
#	  of the rows in f or h; the session is listed prepared, held by no
#	  connection, decision "in progress", and recovery (the function, and
#	  the worker every second) leaves it; the preparing backend's next
#	  transaction writes and commits; COMMIT PREPARED from another session:
#	  the rows are there at once for it and a third session, as many as
#	  in h; while it was prepared, another transaction's INSERT into f
#	  failed with 40001 after the tserver's --in-doubt-wait-ms (1 s here;
#	  the heap twin takes it: a difference the README names), and an
#	  UPDATE of it failed with 40001 at once;
#	- ROLLBACK PREPARED: nothing of the transaction, in f, h or on the
#	  tserver (nothing left prepared);
#	- PREPARE, Postgres stopped in immediate mode and started again: the
#	  transaction is still prepared, COMMIT PREPARED publishes its rows;
#	- PREPARE, the tserver killed -9 and started again: COMMIT PREPARED
#	  publishes its rows;
#	- UPDATE and DELETE in a prepared transaction: another session's UPDATE
#	  of the same key waits for the key's lock, held by the prepared
#	  transaction, and ends with lock_timeout (55P03) as on h; an UPDATE
#	  waiting for it without a timeout goes on when a third session runs
#	  COMMIT PREPARED; both update the rows as the prepared transaction
#	  left them;
#	- a transaction that wrote to two tservers: a session prepared on each,
#	  both published by COMMIT PREPARED;
#	- at the end f and h hold the same rows, recovery finds nothing to
#	  resolve and tcopy.prepared_session_records is empty.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup twopc_ddl rows_copy_sql rows_insert_sql prepared_sessions
  recover_all assert_tserver_unprepared wait_until);

my $per = 1000;
# a write held back behind a prepared transaction's session fails after 1 s
my ($node, $ts) = twopc_setup(recovery_interval => '1s', max_prepared_transactions => 5,
	tserver => { extra_args => [ '--in-doubt-wait-ms', '1000' ] });
$node->safe_psql('postgres', twopc_ddl('f', "table_name 'f'") . twopc_ddl('g', "table_name 'g'")
	  . 'CREATE TABLE h (id int PRIMARY KEY, n int NOT NULL, payload text);');

# Transaction n's writes into table: an INSERT of its first 100 rows and a
# COPY of the others.
sub writes
{
	my ($n, $table) = @_;
	return (rows_insert_sql($n, table => $table, per => $per, last => 100),
		rows_copy_sql($node, $n, table => $table, per => $per, first => 101));
}

# The rows of transaction n in f and in h, from a new session.
sub counts
{
	my ($n) = @_;
	return $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM f WHERE n = $n) || ' ' || (SELECT count(*) FROM h WHERE n = $n)");
}

# Prepare transaction n, which writes f and h, as gid in session s.
sub prepare
{
	my ($s, $n, $gid) = @_;
	$s->run_ok(join(";\n", 'BEGIN', writes($n, 'f'), writes($n, 'h'), "PREPARE TRANSACTION '$gid'") . ';');
}

# The session of the prepared transaction gid, as tcopy.prepared_sessions() lists it.
sub listed
{
	my ($gid) = @_;
	my ($sessions, $err) = prepared_sessions($node);
	my $xid = $node->safe_psql('postgres', "SELECT transaction FROM pg_prepared_xacts WHERE gid = '$gid'");
	return undef unless $sessions && $xid ne '';
	my @mine = grep { $_->{xid} == $xid } @$sessions;
	return @mine == 1 ? $mine[0] : undef;
}

my @s = map { TcopyPgTest::Session->new($node, timeout => 120) } 1 .. 2;

# ---- COMMIT PREPARED from another session ----
{
	my $name = 'COMMIT PREPARED';
	prepare($s[0], 1, 'p1');
	is(counts(1), '0 0', "$name: another session sees none of the prepared rows, as on the heap");
	my $session;
	ok(wait_until(10, sub { $session = listed('p1'); $session && $session->{attached} eq 'f' }),
		"$name: the session is listed prepared, held by no connection")
	  or diag(explain($session));
	is($session && $session->{decision}, 'in progress', "$name: ... decision \"in progress\"");
	is($node->safe_psql('postgres', 'SELECT tcopy.recover_prepared_sessions()'), '0',
		"$name: tcopy.recover_prepared_sessions() resolves nothing while it is prepared");
	sleep(2.5);    # two rounds of the worker
	ok(listed('p1'), "$name: nor does the recovery worker");
	is(counts(1), '0 0', "$name: ... and the rows stay invisible");
	is($s[0]->run_ok("BEGIN; INSERT INTO g (id, n, payload) VALUES (1, 1, 'next'); COMMIT;"
		  . ' SELECT count(*) FROM g;'), "BEGIN\nINSERT 0 1\nCOMMIT\n1",
		"$name: the preparing backend's next transaction writes and commits");
	# unlike the heap: the tserver holds back writes to f behind the
	# prepared session, whose publish could overwrite them (README, Limits)
	my ($out, $err) = $s[1]->run("\\set VERBOSITY verbose\nINSERT INTO f (id, n, payload) VALUES (900001, 99, 'other');");
	like($err, qr/ERROR:  40001: .*not yet resolved/,
		"$name: another transaction's write to the table fails with 40001 after --in-doubt-wait-ms");
	is($s[1]->run_ok("INSERT INTO h (id, n, payload) VALUES (900001, 99, 'other');"), 'INSERT 0 1',
		"$name: ... where the heap twin takes it");
	($out, $err) = $s[1]->run("UPDATE f SET payload = 'other' WHERE id = 900002;");
	like($err, qr/ERROR:  40001: /, "$name: an UPDATE of the table fails with 40001 at once");

	my $t0 = time();
	is($s[1]->run_ok("COMMIT PREPARED 'p1'; SELECT count(*) FROM f WHERE n = 1;"),
		"COMMIT PREPARED\n$per", "$name: from another session, whose next read sees every row");
	note(sprintf('COMMIT PREPARED and the read took %.3f s', time() - $t0));
	is(counts(1), "$per $per", "$name: a third session sees them too, as many as in the heap twin");
	is($s[1]->run_ok("INSERT INTO f (id, n, payload) VALUES (900001, 99, 'other');"), 'INSERT 0 1',
		"$name: the write to the table goes through again");
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_prepared_xacts"), '0',
		"$name: nothing is prepared in Postgres");
}

# ---- ROLLBACK PREPARED ----
{
	my $name = 'ROLLBACK PREPARED';
	prepare($s[0], 2, 'p2');
	ok(wait_until(10, sub { my $l = listed('p2'); $l && $l->{attached} eq 'f' }),
		"$name: the session is prepared");
	is($s[1]->run_ok("ROLLBACK PREPARED 'p2';"), 'ROLLBACK PREPARED', "$name: from another session");
	is(counts(2), '0 0', "$name: nothing of the transaction, in the tcopy table or the heap");
	assert_tserver_unprepared($ts, $name);
}

# ---- a Postgres restart ----
{
	my $name = 'COMMIT PREPARED after a Postgres restart';
	prepare($s[0], 3, 'p3');
	$_->quit for @s;
	$node->stop('immediate');
	$node->start;
	is($node->safe_psql('postgres', "SELECT gid FROM pg_prepared_xacts"), 'p3',
		"$name: the transaction is prepared after the restart");
	is(counts(3), '0 0', "$name: its rows are not visible");
	is($node->safe_psql('postgres', 'SELECT tcopy.recover_prepared_sessions()'), '0',
		"$name: recovery leaves its session");
	is($node->safe_psql('postgres', "COMMIT PREPARED 'p3'; SELECT count(*) FROM f WHERE n = 3"), $per,
		"$name: COMMIT PREPARED publishes its rows");
	is(counts(3), "$per $per", "$name: as many as in the heap twin");
}

# ---- a tserver restart ----
@s = map { TcopyPgTest::Session->new($node, timeout => 120) } 1 .. 2;
{
	my $name = 'COMMIT PREPARED after the tserver was killed';
	prepare($s[0], 4, 'p4');
	$ts->kill9;
	$ts->start or BAIL_OUT('the tserver did not start again');
	ok($ts->prepared && grep({ $_->{gid} =~ /^tcopy:/ } @{ $ts->prepared }),
		"$name: the restarted tserver has the session prepared");
	is(counts(4), '0 0', "$name: its rows are not visible");
	is($s[1]->run_ok("COMMIT PREPARED 'p4'; SELECT count(*) FROM f WHERE n = 4;"),
		"COMMIT PREPARED\n$per", "$name: COMMIT PREPARED publishes its rows");
	is(counts(4), "$per $per", "$name: as many as in the heap twin");
}

# ---- UPDATE, DELETE and the row locks of a prepared transaction ----
{
	my $name = 'UPDATE and DELETE';
	for my $t ('f', 'h')
	{
		$node->safe_psql('postgres', "INSERT INTO $t SELECT i, 0, 'row ' || i FROM generate_series(1, 10) i");
	}
	$s[0]->run_ok('BEGIN;' . join('', map {
		" UPDATE $_ SET payload = 'prepared' WHERE id = 5; DELETE FROM $_ WHERE id = 6;"
		  . " UPDATE $_ SET payload = 'prepared' WHERE id = 7;" } 'f', 'h')
		  . " PREPARE TRANSACTION 'p5';");
	for my $t ('f', 'h')
	{
		my ($out, $err) = $s[1]->run("\\set VERBOSITY verbose\nSET lock_timeout = '1s';"
			  . " UPDATE $t SET payload = payload || ' and other' WHERE id = 5;");
		like($err, qr/ERROR:  55P03: canceling statement due to lock timeout/,
			"$name ($t): another session's UPDATE of the key waits for the prepared transaction, until lock_timeout");
	}
	is($node->safe_psql('postgres', "SELECT string_agg(payload, ',' ORDER BY id) FROM f WHERE id IN (5, 6)"),
		'row 5,row 6', "$name: the prepared UPDATE and DELETE are not visible");
	$s[1]->run_ok('RESET lock_timeout;');
	# two UPDATEs of key 7 wait for the prepared transaction's lock
	my %waiter = (f => $s[1], h => $s[0]);
	$waiter{$_}->send("UPDATE $_ SET payload = payload || ' and waiter' WHERE id = 7;") for 'f', 'h';
	sleep(1);
	ok(!$waiter{f}->done && !$waiter{h}->done, "$name: UPDATEs of another key it updated wait for it");
	$node->safe_psql('postgres', "COMMIT PREPARED 'p5'");
	for my $t ('f', 'h')
	{
		my ($out, $err) = $waiter{$t}->result;
		is("$out$err", 'UPDATE 1', "$name ($t): after COMMIT PREPARED (a third session) the waiting UPDATE goes through");
	}
	for my $t ('f', 'h')
	{
		is($s[1]->run_ok("UPDATE $t SET payload = payload || ' and other' WHERE id = 5;"), 'UPDATE 1',
			"$name ($t): after COMMIT PREPARED the other UPDATE goes through");
		is($node->safe_psql('postgres', "SELECT string_agg(id || ':' || payload, ',' ORDER BY id) FROM $t WHERE id BETWEEN 4 AND 7"),
			'4:row 4,5:prepared and other,7:prepared and waiter',
			"$name ($t): they updated the rows the prepared transaction left");
	}
}

# ---- two tservers ----
my $ts2 = TcopyTest->new;
$ts2->start or BAIL_OUT('the second tserver did not start');
{
	my $name = 'two tservers';
	my $address = $ts2->address;
	$node->safe_psql('postgres', "CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');"
		  . ' CREATE USER MAPPING FOR PUBLIC SERVER ts2;'
		  . ' CREATE FOREIGN TABLE f2 (id int NOT NULL, n int NOT NULL, payload text) SERVER ts2'
		  . " OPTIONS (key 'id', table_name 'f2');");
	$s[0]->run_ok(join(";\n", 'BEGIN', writes(6, 'f'), writes(6, 'f2'), writes(6, 'h'),
			"PREPARE TRANSACTION 'p6'") . ';');
	my $xid = $node->safe_psql('postgres', "SELECT transaction FROM pg_prepared_xacts WHERE gid = 'p6'");
	my ($sessions) = prepared_sessions($node);
	is(scalar(grep { $_->{xid} == $xid && $_->{decision} eq 'in progress' } @{ $sessions // [] }), 2,
		"$name: the transaction has a session prepared on each tserver");
	is($s[1]->run_ok("COMMIT PREPARED 'p6'; SELECT (SELECT count(*) FROM f WHERE n = 6) || ' '"
			  . " || (SELECT count(*) FROM f2 WHERE n = 6);"),
		"COMMIT PREPARED\n$per $per", "$name: COMMIT PREPARED publishes both, read at once");
	is(counts(6), "$per $per", "$name: as many as in the heap twin");
	$node->safe_psql('postgres', 'DROP FOREIGN TABLE f2');
}

# ---- at the end ----
$_->quit for @s;
is($node->safe_psql('postgres',
		'SELECT count(*) FROM ((SELECT * FROM f EXCEPT SELECT * FROM h) UNION ALL (SELECT * FROM h EXCEPT SELECT * FROM f)) d'),
	'0', 'at the end: f and its heap twin hold the same rows');
my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 20);
ok($ok, 'at the end: nothing is left prepared') or diag($left);
is($node->safe_psql('postgres', 'SELECT count(*) FROM tcopy.prepared_session_records'), '0',
	'at the end: tcopy.prepared_session_records is empty');

$node->stop;
$ts->stop;
$ts2->stop;
done_testing();
