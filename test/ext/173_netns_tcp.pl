# 173_netns_tcp.pl
#	Scale-out over tservers on other machines (issue 16), with real
#	separation on this one: two tservers, each in a network namespace of
#	its own (test/tools/netns.sh, set up by test/pg_tests.sh as root;
#	TCOPY_NETNS_DIR), listening on tcp:10.231.K.2, with data directories
#	of their own; one Postgres node on the host reaches them through a
#	link with 1 ms more round trip (TCOPY_NETNS_DELAY_US, 500 us each
#	way, by netem, or test/tools/delay_relay when the kernel has none):
#	ts1 in plain tcp (sslmode disable, --insecure), ts2 over TLS
#	(verify-full, a client certificate) and a token.  A table acc
#	PARTITION BY HASH (aid) has 4 tcopy partitions, 0 and 2 on ts1, 1 and
#	3 on ts2 (key 'aid'); ref is a heap table partitioned the same way.
#	Without TCOPY_NETNS_DIR (not root, no `ip netns`) the test skips.
#	Asserted:
#	  - each tserver runs in another network namespace than the test, and
#	    nothing answers on its port on this host's loopback; tserver-cli
#	    reaches it through the link (over TLS for ts2); a round trip (an
#	    EOF there, the tserver's EOF back) takes at least the added delay;
#	  - COPY of 50k rows into acc: count and checksum of acc and of each
#	    partition equal ref's, and each tserver holds exactly its
#	    partitions' rows;
#	  - kill -9 of ts2 in the middle of a (slow) COPY FROM PROGRAM into
#	    acc: the COPY fails, nothing of it is on ts1 (no rows, no session
#	    open or prepared); once ts2 is restarted and recovery has run,
#	    nothing of it there either, and acc equals ref again;
#	  - a committed COPY of 50k more rows after that is complete on both
#	    tservers (checksums of acc and its partitions equal ref's).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(sleep time);
use TcopyTest qw(free_tcp_ports);
use TcopyTls qw(have_openssl);
use TcopyNetns qw(netns_dir netem_delays link_delay_us relay_binary start_relay stop_relay);
use TcopyPgTest qw(write_accounts_csv table_checksum twopc_conf wait_until copy_progress
  held_copy_sql release_held_copy psql_bg recover_all assert_tserver_unprepared table_name_of);

my $dir = netns_dir();
plan skip_all => 'no network namespaces: TCOPY_NETNS_DIR is not set (test/pg_tests.sh sets them up '
  . 'when run as root with `ip netns` working)'
  unless $dir;
plan skip_all => 'the openssl command is missing (scripts/install-deps.sh installs it)'
  unless have_openssl();
BAIL_OUT('no ' . relay_binary() . ': make -C test relay') unless -x relay_binary();

my $TS_PORT = 5480;				# in the namespaces: no one else there
my $ROWS = 50_000;
my $started = time();

# the links: netem delays them already, or the relays do; one way, 500 us
# (1 ms more per round trip) unless pg_tests.sh was told otherwise
my $netem = netem_delays($dir);
my $DELAY_US = link_delay_us($dir, 500);
my $relay_delay = $netem ? 0 : $DELAY_US;
note($netem ? "netem delays the links" : "no netem: delay_relay adds ${DELAY_US} us each way");

my $certdir = PostgreSQL::Test::Utils::tempdir();
# the CA, the server's and the client's of make_certs, not the others
my $ca = TcopyTls::make_cert($certdir, 'ca', 'tcopy test CA', undef, undef);
my $server = TcopyTls::make_cert($certdir, 'server', 'localhost', $ca, 'DNS:localhost,IP:127.0.0.1');
my $client = TcopyTls::make_cert($certdir, 'client', 'tcopy client', $ca, undef);
my $TOKEN = 'netns-test-token-' . int(rand(1e9));

# ts1 plain, ts2 TLS with a client certificate and a token; the relays are
# on 127.0.0.1, which the server certificate names (verify-full)
my %ts;
$ts{1} = TcopyNetns::Tserver->new(dir => $dir, k => 1, port => $TS_PORT,
	relay_port => (free_tcp_ports(1))[0], args => ['--insecure'], cli_args => [ '--sslmode', 'disable' ]);
$ts{2} = TcopyNetns::Tserver->new(dir => $dir, k => 2, port => $TS_PORT,
	relay_port => (free_tcp_ports(1))[0], token => $TOKEN,
	args => [ '--tls-cert', $server->{crt}, '--tls-key', $server->{key}, '--tls-ca', $ca->{crt} ],
	cli_args => [ '--sslmode', 'verify-full', '--sslrootcert', $ca->{crt},
		'--sslcert', $client->{crt}, '--sslkey', $client->{key} ]);
# TcopyTest's token option gives args its --token-file: add it
push @{ $ts{2}{args} }, '--token-file', $ts{2}->token_file;
my %relay;
for my $k (1, 2)
{
	$ts{$k}->start or BAIL_OUT("tserver $k did not start in its namespace");
	$relay{$k} = start_relay('127.0.0.1:' . $ts{$k}{relay_port}, $ts{$k}->ns_host_port,
		$relay_delay, $ts{$k}->base_dir . '/relay.log');
}

# ---- the separation
my $our_net = readlink('/proc/self/ns/net');
for my $k (1, 2)
{
	my $their_net = readlink('/proc/' . $ts{$k}->pid . '/ns/net');
	ok(defined $their_net && $their_net ne $our_net,
		"tserver $k runs in a network namespace of its own ($their_net, the test's $our_net)");
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $TS_PORT, Timeout => 2);
	ok(!$sock, "tserver $k: nothing answers on this host's 127.0.0.1:$TS_PORT");
	my $out = $ts{$k}->cli_ok("tserver $k answers tserver-cli ping through the link", 'ping');
	like($out, $k == 2 ? qr/^ok .*TLS/ : qr/^ok /, "tserver $k: the ping " . ($k == 2 ? 'is over TLS' : 'works'))
	  or diag($out);
	# a round trip: our EOF reaches the tserver, which closes; its EOF
	# comes back
	$sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $ts{$k}{relay_port}, Timeout => 5)
	  or BAIL_OUT("connect to relay $k: $!");
	my $t0 = time();
	shutdown($sock, 1);
	my $buf;
	1 while sysread($sock, $buf, 65536);
	my $secs = time() - $t0;
	close($sock);
	cmp_ok($secs * 1e6, '>=', 2 * $DELAY_US, "tserver $k: a round trip takes at least the link's added "
		  . (2 * $DELAY_US) . sprintf(' us (%.0f us)', $secs * 1e6));
}

# ---- the node and the tables
my $node = PostgreSQL::Test::Cluster->new('netns');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n"
	  . twopc_conf(recovery_interval => '0'));
$node->start;
my ($r1, $r2) = map { $ts{$_}->address } 1, 2;
$node->safe_psql('postgres', qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts1 FOREIGN DATA WRAPPER tcopy OPTIONS (address '$r1', sslmode 'disable');
	CREATE USER MAPPING FOR PUBLIC SERVER ts1;
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '$r2',
		sslmode 'verify-full', sslrootcert '$ca->{crt}');
	CREATE USER MAPPING FOR PUBLIC SERVER ts2 OPTIONS (token '$TOKEN',
		sslcert '$client->{crt}', sslkey '$client->{key}');
	CREATE TABLE acc (aid int NOT NULL, bid int, abalance int, filler char(84)) PARTITION BY HASH (aid);
	CREATE TABLE ref (aid int NOT NULL, bid int, abalance int, filler char(84)) PARTITION BY HASH (aid);
});
my %server_of = (0 => 1, 1 => 2, 2 => 1, 3 => 2);
for my $p (0 .. 3)
{
	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE acc_p$p PARTITION OF acc FOR VALUES WITH (MODULUS 4, REMAINDER $p)
			SERVER ts$server_of{$p} OPTIONS (key 'aid');
		CREATE TABLE ref_p$p PARTITION OF ref FOR VALUES WITH (MODULUS 4, REMAINDER $p);
	});
}
my %table_of = map { $_ => table_name_of($node, "acc_p$_") } 0 .. 3;

# acc and each partition equal ref's; each tserver holds its partitions' rows
sub check_equal
{
	my ($name) = @_;
	is(table_checksum($node, 'acc'), table_checksum($node, 'ref'), "$name: acc's count and checksum are ref's");
	my @bad;
	for my $p (0 .. 3)
	{
		my ($a, $r) = (table_checksum($node, "acc_p$p"), table_checksum($node, "ref_p$p"));
		push @bad, "partition $p: acc $a, ref $r" if $a ne $r;
		my $want = $node->safe_psql('postgres', "SELECT count(*) FROM ref_p$p");
		my $there = $ts{ $server_of{$p} }->count($table_of{$p});
		push @bad, "partition $p: ts$server_of{$p} holds " . ($there // 'error') . " rows, ref_p$p $want"
		  unless defined $there && $there eq $want;
	}
	ok(!@bad, "$name: each partition equals ref's, and its tserver holds exactly its rows")
	  or diag(join("\n", @bad));
}

# ---- 1. a load over the links
my $base = $node->basedir;
write_accounts_csv("$base/a.csv", 1, $ROWS);
$node->safe_psql('postgres', "COPY ref FROM '$base/a.csv' (FORMAT csv)");
my $t0 = time();
my ($rc, $out, $err) = $node->psql('postgres', "COPY acc FROM '$base/a.csv' (FORMAT csv)");
is($rc, 0, "COPY of $ROWS rows into acc over the two links") or diag($err);
note(sprintf("COPY of %d rows into acc: %.2f s", $ROWS, time() - $t0));
check_equal('load');
my $ref_sum = table_checksum($node, 'ref');

# ---- 2. ts2 killed -9 mid-COPY
{
	my $name = 'ts2 killed -9 mid-COPY';
	write_accounts_csv("$base/b.csv", 100_001, $ROWS);
	my $fast = 20_000;
	my $p = psql_bg($node, held_copy_sql($node, 'acc', "$base/b.csv", $fast), timeout => 60);
	# the progress moves by whole batches: half the fast rows is surely
	# reached while they come fast
	wait_until(30, sub {
		my (undef, $done) = copy_progress($node, 'acc');
		return ($done // 0) >= $fast / 2 || $p->done;
	});
	my (undef, $done) = copy_progress($node, 'acc');
	ok($done && $done >= $fast / 2, "$name: the COPY is past " . ($fast / 2) . " rows and still running ("
		  . ($done // 'not running') . ')');
	my ($s1, $s2) = ($ts{1}->stats, $ts{2}->stats);
	ok($s1 && $s1->{sessions_open} >= 1 && $s2 && $s2->{sessions_open} >= 1,
		"$name: both tservers hold a session of the COPY")
	  or diag(explain([ $s1, $s2 ]));
	$ts{2}->kill9;
	release_held_copy($node);
	($rc, $out, $err) = $p->finish;
	isnt($rc, 0, "$name: the COPY fails") or diag($out);
	like($err, qr/ERROR:/, "$name: ... with an ERROR") or diag($err);
	note("the COPY's error: $err");
	my $s;
	ok(wait_until(10, sub { $s = $ts{1}->stats; $s && $s->{sessions_open} == 0 }),
		"$name: ts1 holds no session of it any more")
	  or diag(explain($s));
	assert_tserver_unprepared($ts{1}, "$name, ts1");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM acc_p0 WHERE aid > 100000')
		  + $node->safe_psql('postgres', 'SELECT count(*) FROM acc_p2 WHERE aid > 100000'),
		0, "$name: none of its rows on ts1's partitions");
	is(($ts{1}->count($table_of{0}) // -1) + ($ts{1}->count($table_of{2}) // -1),
		$node->safe_psql('postgres', 'SELECT count(*) FROM ref_p0') + $node->safe_psql('postgres', 'SELECT count(*) FROM ref_p2'),
		"$name: ts1 holds only the first load's rows");
	$ts{2}->start or BAIL_OUT('tserver 2 did not restart');
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts{2}, timeout => 20);
	ok($ok, "$name: after ts2's restart and recovery, nothing prepared in Postgres' view nor on ts2")
	  or diag($left);
	assert_tserver_unprepared($ts{2}, "$name, ts2");
	is(table_checksum($node, 'acc'), $ref_sum, "$name: acc is what it was before that COPY");
	check_equal($name);
}

# ---- 3. a committed load after that
{
	my $name = 'load after the kill';
	write_accounts_csv("$base/c.csv", 200_001, $ROWS);
	$node->safe_psql('postgres', "COPY ref FROM '$base/c.csv' (FORMAT csv)");
	($rc, $out, $err) = $node->psql('postgres', "COPY acc FROM '$base/c.csv' (FORMAT csv)");
	is($rc, 0, "$name: COPY of $ROWS more rows into acc") or diag($err);
	check_equal($name);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM acc'), 2 * $ROWS, "$name: acc holds both loads");
}

$node->stop;
for my $k (1, 2)
{
	$ts{$k}->stop("tserver $k ends on SIGTERM");
	is(stop_relay($relay{$k}), 0, "relay $k exits with status 0 on SIGTERM");
}
my $secs = time() - $started;
note(sprintf('run time %.1f s', $secs));
cmp_ok($secs, '<', 60, 'the test runs in under 60 s');
done_testing();
