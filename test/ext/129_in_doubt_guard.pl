# 129_in_doubt_guard.pl
#	A later transaction's rows are not lost to an older transaction that
#	recovery publishes after it (issue 30; docs/commit.md, "Writes held
#	back behind an in-doubt session").  Table r has on_conflict 'replace';
#	transaction n writes n to keys 1..10.  T1's COMMIT loses its publish:
#	the fault proxy (test/tools/tcopy_proxy.pl) kills the tserver with -9
#	as the RESOLVE (commit) is sent; COMMIT succeeds with the WARNING that
#	recovery will publish it, and the restarted tserver holds T1's session
#	prepared, in doubt.  The recovery worker is off (tcopy.recovery_interval
#	0), the tserver runs with a short --in-doubt-wait-ms:
#	- T2, writing the same keys, waits at its COMMIT about
#	  --in-doubt-wait-ms, then fails with 40001, the tserver's reason in
#	  the DETAIL and a HINT to let recovery resolve it and retry; nothing
#	  of T2 is there, and T1 is: the refusal published the sessions of
#	  transactions Postgres committed on that tserver, so that the retry
#	  goes through at once;
#	- T2 retried commits, and the rows are T2's, also after a round of
#	  recovery (before the guard, T2 committed at once and T1's publish by
#	  recovery overwrote its rows);
#	- T4 waits behind T3 (lost the same way) while recovery runs: it
#	  commits without an error once T3 is published, well before the bound;
#	- with the default bound, T6 right after T5's lost publish waits, and
#	  commits once the recovery worker, turned on meanwhile, publishes T5.
use strict;
use warnings;

use File::Compare ();
use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup twopc_ddl psql_bg sqlstates recover_all prepared_sessions
  table_name_of wait_until log_position);

my $WAIT_MS = 3000;
my ($node, $ts) = twopc_setup(
	recovery_interval => '0',
	tserver => { extra_args => [ '--in-doubt-wait-ms', $WAIT_MS ] });
$node->safe_psql('postgres', twopc_ddl('r', "on_conflict 'replace'"));
$node->safe_psql('postgres', "INSERT INTO r SELECT g, 0, 'seed' FROM generate_series(1, 20) g");
my $tserver_table = table_name_of($node, 'r');

# From now on the server reaches the tserver through the proxy (one
# without a fault between the faults), as 122_twopc_faults.pl does.
my $proxy = TcopyPgTest::Proxy->start($ts);
$node->safe_psql('postgres', "ALTER SERVER ts OPTIONS (SET address '" . $proxy->address . "')");

# The extension's hint for a write held back is checked when the installed
# tcopy.so is the one built here (pg_tests.sh installs it unless
# TCOPY_SKIP_INSTALL=1, for a tree whose extension is installed already).
my $installed_so = $node->config_data('--pkglibdir') . '/tcopy.so';
my $ext_is_ours = File::Compare::compare($installed_so, "$TcopyTest::TOP/tcopy.so") == 0;
note($ext_is_ours ? 'the installed extension is this tree\'s'
	: "the installed extension ($installed_so) is not this tree's: its HINT is not checked");

sub write_sql
{
	my ($n) = @_;
	return "INSERT INTO r SELECT g, $n, 't$n' FROM generate_series(1, 10) g";
}

# The values of n in keys 1..10, and of key 11 (untouched), e.g. "2;0".
sub values_of
{
	return $node->safe_psql('postgres',
		"SELECT string_agg(DISTINCT n::text, ',' ORDER BY n::text) FILTER (WHERE id <= 10) || ';' "
		  . "|| string_agg(n::text, ',') FILTER (WHERE id = 11) FROM r");
}

# The same, read on the tserver by tserver-cli: a SELECT would publish an
# in-doubt session of a committed transaction first (docs/snapshots.md),
# and the guard is about writes that come before any read.
sub tserver_values
{
	my $r = $ts->cli('scan', $tserver_table, '--format', 'csv');
	return "scan failed: $r->{err}" if $r->{rc} != 0;
	my (%low, @key11);
	for (split /\n/, $r->{out})
	{
		my ($id, $n) = split /,/;
		$low{$n} = 1 if $id <= 10;
		push @key11, $n if $id == 11;
	}
	return join(',', sort keys %low) . ';' . join(',', @key11);
}

# Transaction n whose COMMIT loses its publish: the tserver killed -9 as the
# RESOLVE is sent, then started again (with ts_args).
sub lose_publish
{
	my ($name, $n, @ts_args) = @_;
	$proxy->stop;
	$proxy = TcopyPgTest::Proxy->start($ts, fault => 'resolve_commit', kill => $ts->pid);
	my $p = psql_bg($node, [ write_sql($n) ], timeout => 60);
	my $fired = $proxy->wait_fired(60, sub { $p->done });
	like($fired, qr/killed/, "$name: the tserver is killed as the publish is sent")
	  or diag($proxy->log_text);
	$ts->kill9;					# reaps it
	$ts->start(@ts_args) or BAIL_OUT('tserver did not start after kill -9');
	my ($rc, $out, $err) = $p->finish;
	is($rc, 0, "$name: its COMMIT succeeds") or diag($err);
	like($err, qr/WARNING:  .*could not publish the write session/,
		"$name: ... with the WARNING that recovery will publish it");
	$proxy->stop;
	$proxy = TcopyPgTest::Proxy->start($ts);
	my ($sessions, $serr) = prepared_sessions($node);
	ok($sessions && @$sessions == 1 && $sessions->[0]{attached} eq 'f'
		  && $sessions->[0]{decision} eq 'commit',
		"$name: its session is prepared on the restarted tserver, detached, to be committed")
	  or diag($sessions ? explain($sessions) : $serr);
	return $sessions && $sessions->[0] ? $sessions->[0]{gid} : '';
}

# ---- T2 held back, refused, retried after recovery ----

my $gid = lose_publish('T1', 1);
is(tserver_values(), '0;0', 'T1 is not published yet: the seed rows (on the tserver)');

my $start = time();
my ($rc, $out, $err) = psql_bg($node, [ write_sql(2) ], timeout => 60)->finish;
my $took = time() - $start;
isnt($rc, 0, 'T2, writing the same keys, fails at COMMIT');
is((sqlstates($err))[0], '40001', '... with SQLSTATE 40001') or diag($err);
cmp_ok($took, '>=', $WAIT_MS / 1000 - 0.2, "... after waiting --in-doubt-wait-ms ($took s)");
cmp_ok($took, '<', $WAIT_MS / 1000 + 10, '... not much longer');
like($err, qr/ERROR:  40001: could not serialize access .*"r"/, '... naming the table') or diag($err);
like($err, qr/DETAIL:  the prepared session "\Q$gid\E", which changes table "\Q$tserver_table\E", is not yet resolved \(waited \d+ ms\): this session's writes could be overwritten when it is/,
	'... the DETAIL naming T1\'s session and why');
if ($ext_is_ours)
{
	like($err, qr/HINT:  Recovery resolves it \(tcopy\.recover_prepared_sessions\(\), or the recovery worker every tcopy\.recovery_interval\); retry the transaction then\./,
		'... and a HINT to let recovery resolve it and retry');
	like($err, qr/a write session of an earlier transaction is not yet resolved/, '... the message says so');
}
else
{
	like($err, qr/HINT:  /, '... and a HINT');
}
is(tserver_values(), '1;0',
	'nothing of T2 is there; T1 is: T2\'s refusal published it, as Postgres committed it (on the tserver)');

my ($ok, $resolved, $left) = recover_all($node, ts => $ts);
ok($ok, 'recovery leaves nothing prepared') or diag($left);
is($resolved, 0, '... having nothing left to resolve');
is(values_of(), '1;0', 'T1\'s rows are there');
($rc, $out, $err) = psql_bg($node, [ write_sql(2) ], timeout => 60)->finish;
is($rc, 0, 'T2 retried commits') or diag($err);
is(values_of(), '2;0', '... and the rows are T2\'s');
($ok, $resolved) = recover_all($node, ts => $ts);
is($resolved, 0, 'another round of recovery resolves nothing');
is(values_of(), '2;0', '... and the rows are still T2\'s');

# ---- recovery during T4's wait ----

$gid = lose_publish('T3', 3, '--in-doubt-wait-ms', 60_000);
my $ts_log_at = length($ts->log_contents);
$start = time();
my $t4 = psql_bg($node, [ write_sql(4) ], timeout => 120);
ok(wait_until(30, sub { index($ts->log_contents, 'holding back', $ts_log_at) >= 0 || $t4->done }),
	'T4\'s COMMIT is held back behind T3\'s session');
sleep(1);
ok(!$t4->done, '... and waits');
my $recovered = $node->safe_psql('postgres', 'SELECT tcopy.recover_prepared_sessions()');
is($recovered, 1, 'recovery runs meanwhile: T3\'s session is published');
($rc, $out, $err) = $t4->finish;
$took = time() - $start;
is($rc, 0, 'T4 commits without an error') or diag($err);
unlike($err, qr/ERROR/, '... none at all');
cmp_ok($took, '<', 20, "... well before the 60 s bound ($took s)");
is(values_of(), '4;0', 'the rows are T4\'s, on top of T3\'s');

# ---- the default bound: a COMMIT right after a restart waits for the worker ----

$gid = lose_publish('T5', 5, '--in-doubt-wait-ms', 15_000);
$ts_log_at = length($ts->log_contents);
$start = time();
my $t6 = psql_bg($node, [ write_sql(6) ], timeout => 120);
ok(wait_until(30, sub { index($ts->log_contents, 'holding back', $ts_log_at) >= 0 || $t6->done }),
	'T6, right after T5 lost its publish, is held back');
sleep(1);
ok(!$t6->done, '... and waits');
$node->safe_psql('postgres', "ALTER SYSTEM SET tcopy.recovery_interval = '1s'");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
($rc, $out, $err) = $t6->finish;
$took = time() - $start;
is($rc, 0, 'the recovery worker, turned on, publishes T5: T6 commits') or diag($err);
cmp_ok($took, '<', 15, "... within the default bound ($took s)");
is(values_of(), '6;0', 'the rows are T6\'s');
ok(wait_until(30, sub { my ($s) = prepared_sessions($node); $s && !@$s }), 'nothing is left prepared');

$proxy->stop;
$node->stop;
$ts->stop;
done_testing();
