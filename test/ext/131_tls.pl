# 131_tls.pl
#	The extension over TLS (tserver --tls-cert/--tls-key/--tls-ca; server
#	options sslmode and sslrootcert, user mapping options sslcert and
#	sslkey), with certificates made here by the openssl command:
#	  - the validator refuses a bad sslmode, a relative file name, sslcert
#	    without sslkey, and TLS options on the wrong object;
#	  - COPY and SELECT over verify-full with a client certificate give
#	    back every row;
#	  - a missing client certificate, a tserver without TLS, and a
#	    certificate for another host fail with 08006 and a message saying
#	    what to change;
#	  - a COPY stalled on a stopped tserver over TLS is cancelled by
#	    pg_cancel_backend, and so is a connection stuck in the TLS
#	    handshake.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use TcopyTest qw(free_tcp_ports);
use TcopyTls qw(have_openssl make_certs);
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum
  wait_until wait_tserver_idle held_copy_sql release_held_copy);

plan skip_all => 'the openssl command is missing (scripts/install-deps.sh installs it)'
  unless have_openssl();

my $SLACK_S = 4;				# how long a cancel may take to end a statement

my $certdir = PostgreSQL::Test::Utils::tempdir();
my $certs = make_certs($certdir);
my ($ca, $server, $client) = map { $certs->{$_} } qw(ca server client);
my $port = (free_tcp_ports(1))[0];
my ($node, $ts) = setup_node(tserver => { extra_args => [
	'--listen', "tcp:127.0.0.1:$port", '--listen', "tcp:127.0.0.2:$port", '--tls-cert', $server->{crt},
	'--tls-key', $server->{key}, '--tls-ca', $ca->{crt} ] });
my $plain = TcopyTest->new;
my $plain_port = (free_tcp_ports(1))[0];
$plain->start('--listen', "tcp:127.0.0.1:$plain_port") or BAIL_OUT('plain tserver did not start');

END { kill 'CONT', $ts->pid if $ts && $ts->pid }

# (stderr, SQLSTATE) of a statement expected to fail.
sub fails
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	my ($state) = $err =~ /ERROR:  ([0-9A-Z]{5}):/;
	return ($err, $state // '');
}

# ---- the validator
my @bad = (
	[ "CREATE SERVER b FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:1', sslmode 'prefer')",
	  qr/invalid value for option "sslmode": "prefer".*HINT:  Valid values are: disable, require, verify-ca, verify-full\./s,
	  'sslmode prefer' ],
	[ "CREATE SERVER b FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:1', sslrootcert 'ca.crt')",
	  qr/option "sslrootcert" must be an absolute path: "ca.crt"/, 'a relative sslrootcert' ],
	[ "CREATE SERVER b FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:1', sslcert '/x.crt')",
	  qr/invalid option "sslcert".*Valid options in this context are: address, namespace, batch_rows, batch_size, sslmode, sslrootcert/s,
	  'sslcert on a server' ],
	[ "CREATE USER MAPPING FOR CURRENT_USER SERVER ts OPTIONS (sslmode 'disable')",
	  qr/invalid option "sslmode".*Valid options in this context are: token, sslcert, sslkey/s,
	  'sslmode on a user mapping' ],
	[ "CREATE USER MAPPING FOR CURRENT_USER SERVER ts OPTIONS (sslcert '/x.crt')",
	  qr/options "sslcert" and "sslkey" go together/, 'sslcert without sslkey' ],
);
for my $case (@bad)
{
	my ($err) = fails($case->[0]);
	like($err, $case->[1], "validator: $case->[2]");
}

# a role that is no superuser may not name the files the backend presents
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	GRANT USAGE ON FOREIGN SERVER ts TO mallory;
});
{
	my ($err, $state) = fails("SET ROLE mallory;\nCREATE USER MAPPING FOR CURRENT_USER SERVER ts OPTIONS (sslcert '/x.crt', sslkey '/x.key')");
	like($err, qr/permission denied to set option "sslcert"/,
		'validator: sslcert and sslkey refused to a role that is no superuser');
	is($state, '42501', '... as insufficient_privilege');
}

# ---- COPY and SELECT over verify-full with a client certificate
$node->safe_psql('postgres', qq{
	CREATE SERVER tls FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$port',
		sslmode 'verify-full', sslrootcert '$ca->{crt}');
	CREATE USER MAPPING FOR PUBLIC SERVER tls OPTIONS (sslcert '$client->{crt}', sslkey '$client->{key}');
	CREATE SERVER tls_nocert FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$port',
		sslmode 'verify-full', sslrootcert '$ca->{crt}');
	CREATE USER MAPPING FOR PUBLIC SERVER tls_nocert;
	CREATE SERVER tls_wronghost FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.2:$port',
		sslmode 'verify-full', sslrootcert '$ca->{crt}');
	CREATE USER MAPPING FOR PUBLIC SERVER tls_wronghost OPTIONS (sslcert '$client->{crt}', sslkey '$client->{key}');
	CREATE SERVER plain FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$plain_port');
	CREATE USER MAPPING FOR PUBLIC SERVER plain;
	CREATE SERVER plain_disable FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$plain_port',
		sslmode 'disable');
	CREATE USER MAPPING FOR PUBLIC SERVER plain_disable;
	CREATE TABLE reference (aid int NOT NULL, bid int, abalance int, filler char(84));
});
for my $srv (qw(tls tls_nocert tls_wronghost plain plain_disable))
{
	$node->safe_psql('postgres', "CREATE FOREIGN TABLE acc_$srv (aid int NOT NULL, bid int, abalance int, filler char(84)) SERVER $srv OPTIONS (key 'aid');");
}
my $rows = 200_000;
my $csv = $node->basedir . '/acc.csv';
write_accounts_csv($csv, 1, $rows);
$node->safe_psql('postgres', "COPY reference FROM '$csv' (FORMAT csv)");
is($node->safe_psql('postgres', "COPY acc_tls FROM '$csv' (FORMAT csv)"), '',
	'COPY over TLS (verify-full, client certificate)');
is(table_checksum($node, 'acc_tls'), table_checksum($node, 'reference'),
	'SELECT over TLS gives back every row');
is($node->safe_psql('postgres', "INSERT INTO acc_tls VALUES (-1, 1, 1, 'x'); SELECT count(*) FROM acc_tls WHERE aid < 0"),
	'1', 'INSERT and a scan with a bound over TLS');
$node->safe_psql('postgres', 'TRUNCATE acc_tls');
is($node->safe_psql('postgres', 'SELECT count(*) FROM acc_tls'), '0', 'TRUNCATE over TLS');
is($node->safe_psql('postgres', "COPY acc_plain_disable FROM '$csv' (FORMAT csv) WHERE aid <= 1000; SELECT count(*) FROM acc_plain_disable"),
	'1000', 'sslmode disable reaches a tserver without TLS');

# ---- refusals
my ($err, $state) = fails('SELECT count(*) FROM acc_tls_nocert');
is($state, '08006', 'no client certificate: 08006');
like($err, qr/could not connect to tserver at "tcp:127\.0\.0\.1:\d+".*requires a client certificate: set sslcert and sslkey/s,
	'... saying which options to set') or diag($err);
($err, $state) = fails("COPY acc_plain FROM '$csv' (FORMAT csv)");
is($state, '08006', 'the default sslmode against a tserver without TLS: 08006');
like($err, qr/does not speak TLS.*use sslmode disable/s, '... saying so and naming sslmode') or diag($err);
($err, $state) = fails('SELECT count(*) FROM acc_tls_wronghost');
is($state, '08006', 'verify-full with an address the certificate does not name: 08006');
like($err, qr/certificate verification failed: .*mismatch/, '... saying why') or diag($err);

# ---- cancel over TLS
my $s = TcopyPgTest::Session->new($node, timeout => 120);
my $watch = TcopyPgTest::Session->new($node, timeout => 120);
my $pid = $s->backend_pid;

sub thread_state
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '?';
	my $line = <$fh> // '';
	return $line =~ /^\d+ \(.*\) (\S)/ ? $1 : '?';
}

sub stop_tserver
{
	my $tspid = $ts->pid;
	kill 'STOP', $tspid;
	wait_until(5, sub {
		my @states = map { thread_state($_) } glob("/proc/$tspid/task/*/stat");
		return @states && !grep { $_ ne 'T' } @states;
	}) or diag("tserver $tspid: not every thread stopped");
}

sub waits_on_tserver
{
	my ($p) = @_;
	return wait_until(5, sub {
		# a parallel COPY's workers send the rows themselves: one of them waits
		$watch->run_ok("SELECT bool_or(wait_event_type || ' ' || wait_event = 'Extension Extension') "
			  . "FROM pg_stat_activity WHERE pid = $p OR leader_pid = $p;") eq 't';
	});
}

my $big = $node->basedir . '/big.csv';
write_accounts_csv($big, 1, 500_000);
$s->send(held_copy_sql($node, 'acc_tls', $big, 100_000) . ';');
my $seen = wait_until(30, sub {
	return -1 if $s->done;
	my $n = $watch->run_ok("SELECT tuples_processed FROM pg_stat_progress_copy WHERE pid = $pid;");
	return $n ne '' && $n > 20_000 ? $n : 0;
});
ok($seen > 0, "stalled COPY: running ($seen rows) when the tserver is stopped");
stop_tserver();
release_held_copy($node);
ok(waits_on_tserver($pid), 'stalled COPY: it waits on the stopped tserver');
my $t1 = time();
is($watch->run_ok("SELECT pg_cancel_backend($pid);"), 't', 'stalled COPY: pg_cancel_backend');
my ($out, $cerr) = $s->result;
my $secs = time() - $t1;
like($cerr, qr/ERROR:  canceling statement due to user request/,
	'pg_cancel_backend ends a COPY stalled over TLS');
cmp_ok($secs, '<', $SLACK_S, sprintf("... within %d s (it took %.1f s)", $SLACK_S, $secs));

# a new connection, its TLS handshake unanswered by the stopped tserver
my $h = TcopyPgTest::Session->new($node, timeout => 120);
my $hpid = $h->backend_pid;
$h->send('SELECT count(*) FROM acc_tls;');
ok(waits_on_tserver($hpid), 'handshake: a new connection waits on the stopped tserver');
$t1 = time();
is($watch->run_ok("SELECT pg_cancel_backend($hpid);"), 't', 'handshake: pg_cancel_backend');
($out, $cerr) = $h->result;
$secs = time() - $t1;
like($cerr, qr/ERROR:  canceling statement due to user request/,
	'pg_cancel_backend ends a connection stuck in the TLS handshake');
cmp_ok($secs, '<', $SLACK_S, sprintf("... within %d s (it took %.1f s)", $SLACK_S, $secs));

kill 'CONT', $ts->pid;
my ($idle, $stats) = wait_tserver_idle($ts, 10);
ok($idle, 'after SIGCONT the tserver holds no session') or diag(explain($stats));
($out, $cerr) = $s->run("COPY acc_tls FROM '$csv' (FORMAT csv) WHERE aid <= 5000;");
is($out, 'COPY 5000', 'the next COPY in the cancelled session works over TLS') or diag($cerr);
is($h->run_ok('SELECT count(*) FROM acc_tls;'), '5000', '... and a scan in the other one');

$s->quit;
$h->quit;
$watch->quit;
$node->stop;
$plain->stop;
$ts->stop;
done_testing();
