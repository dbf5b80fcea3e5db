# 011_tls.pl
#	TLS on tcp: listeners (tserver --tls-cert/--tls-key/--tls-ca, the
#	client's sslmode), with certificates made here by the openssl command:
#	  - a load and a scan over TLS, verified (verify-full) and not (require,
#	    the default); unix: ignores sslmode;
#	  - refusals, each with a message that says what to change: a client
#	    without TLS against a TLS tserver and the reverse, a certificate
#	    for another host (verify-full), another CA, and with --tls-ca a
#	    missing or foreign client certificate;
#	  - startup: a key others may read, --tls-cert without --tls-key;
#	  - through a recording forwarder, the rows and names are on the wire
#	    without TLS and not with it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);
use TcopyTls qw(have_openssl make_certs);

plan skip_all => 'the openssl command is missing (scripts/install-deps.sh installs it)'
  unless have_openssl();

# Forward 127.0.0.1:(returned port) to 127.0.0.1:$to, one connection at a
# time, appending every byte both ways to $file.  Returns (pid, port).
sub start_recorder
{
	my ($to, $file) = @_;
	my $listener = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
		LocalPort => 0, ReuseAddr => 1) or die "listen: $!";
	my $port = $listener->sockport;
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		open(my $out, '>>', $file) or POSIX::_exit(1);
		binmode $out;
		$out->autoflush(1);
		while (my $client = $listener->accept)
		{
			my $server = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $to)
			  or next;
			my $sel = IO::Select->new($client, $server);
			my $open = 1;
			while ($open)
			{
				for my $from ($sel->can_read(30))
				{
					my $n = sysread($from, my $buf, 65536);
					if (!$n)
					{
						$open = 0;
						last;
					}
					print $out $buf;
					syswrite($from == $client ? $server : $client, $buf);
				}
			}
			close $client;
			close $server;
		}
		POSIX::_exit(0);
	}
	close $listener;
	return ($pid, $port);
}

sub slurp
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	binmode $fh;
	local $/;
	return <$fh> // '';
}

# tserver-cli at address (the later --address wins over the unix one).
sub tcp_cli
{
	my ($ts, $address, @args) = @_;
	return $ts->cli('--address', $address, @args);
}

sub refused
{
	my ($r, $pattern, $name) = @_;
	isnt($r->{rc}, 0, "$name: refused");
	like($r->{err}, $pattern, "$name: the message says why") or diag($r->{err});
}

my $ts = TcopyTest->new;
my $certs = make_certs($ts->base_dir);
my ($ca, $server, $client) = map { $certs->{$_} } qw(ca server client);
my @verify = ('--sslmode', 'verify-full', '--sslrootcert', $ca->{crt});

# ---- a TLS tserver, on 127.0.0.1 and 127.0.0.2 (not in its certificate)
my $port = (free_tcp_ports(1))[0];
$ts->start('--listen', "tcp:127.0.0.1:$port", '--listen', "tcp:127.0.0.2:$port",
	'--tls-cert', $server->{crt}, '--tls-key', $server->{key})
  or die "TLS tserver did not start";
like($ts->log_contents, qr/tcp: listeners speak TLS only/, 'the log says tcp: is TLS only');
my $tls_addr = "tcp:127.0.0.1:$port";

$ts->cli_ok('verify-full by IP address: load', '--address', $tls_addr, @verify,
	'load', 'secret_table_xyzzy', '--rows', '20000');
my $r = tcp_cli($ts, $tls_addr, @verify, 'scan', 'secret_table_xyzzy', '--format', 'checksum');
is($r->{rc}, 0, 'verify-full: scan back') or diag($r->{err});
like($r->{out}, qr/^rows 20000\b/m, 'every row came back over TLS') or diag($r->{out});
like(tcp_cli($ts, "tcp:localhost:$port", @verify, 'ping')->{out}, qr/^ok /,
	'verify-full by host name (localhost) as well');
like(tcp_cli($ts, $tls_addr, @verify, 'ping')->{out}, qr/^ok tserver \S+ \(TLSv1\.3 /,
	'ping says the connection is TLS 1.3');
like($ts->cli('ping')->{out}, qr/^ok tserver \S+$/m, '... and over unix: names no TLS');
is($ts->count('secret_table_xyzzy'), 20000, 'the same rows over unix:');
like($ts->cli('--sslmode', 'verify-full', '--sslrootcert', '/nonexistent', 'ping')->{out},
	qr/^ok /, 'unix: ignores sslmode and its files');
like(tcp_cli($ts, $tls_addr, 'ping')->{out}, qr/^ok /,
	'the default sslmode (require) connects without a root certificate');
like(tcp_cli($ts, $tls_addr, '--sslmode', 'verify-ca', '--sslrootcert', $ca->{crt}, 'ping')->{out},
	qr/^ok /, 'verify-ca');

refused(tcp_cli($ts, "tcp:127.0.0.2:$port", @verify, 'ping'),
	qr/certificate verification failed: .*mismatch.*sslmode verify-full/,
	'verify-full with an address the certificate does not name');
like(tcp_cli($ts, "tcp:127.0.0.2:$port", '--sslmode', 'verify-ca', '--sslrootcert', $ca->{crt},
		'ping')->{out}, qr/^ok /, 'verify-ca does not check the name');
refused(tcp_cli($ts, $tls_addr, '--sslmode', 'verify-full', '--sslrootcert',
		$certs->{other_ca}{crt}, 'ping'),
	qr/certificate verification failed/, 'verify-full with another CA');
refused(tcp_cli($ts, $tls_addr, '--sslmode', 'verify-full', '--sslrootcert', '/nonexistent/ca.crt',
		'ping'),
	qr/sslrootcert/, 'a missing root certificate file');
my $t0 = time();
refused(tcp_cli($ts, $tls_addr, '--sslmode', 'disable', 'ping'),
	qr/accepts only TLS on tcp: connect with sslmode require/,
	'sslmode disable against a TLS tserver');
cmp_ok(time() - $t0, '<', 8, 'that refusal comes before the handshake timeout');
refused(tcp_cli($ts, $tls_addr, '--sslmode', 'bogus', 'ping'), qr/invalid sslmode "bogus"/,
	'a bad --sslmode');

# ---- a load whose writes stall (the tserver stopped twice) loses nothing:
# the client's writes wait with records encrypted but not yet sent
{
	my $bg = $ts->cli_bg('--address', $tls_addr, 'load', 'stalled', '--rows', '1000000',
		'--window', '16');
	Time::HiRes::sleep(0.15);
	for my $pause (0.5, 0.3)
	{
		kill 'STOP', $ts->pid;
		Time::HiRes::sleep($pause);
		kill 'CONT', $ts->pid;
		Time::HiRes::sleep(0.1);
	}
	is($bg->finish, 0, 'a load over TLS stalled by SIGSTOP completes') or diag($bg->{err});
	$ts->cli_ok('the same rows, plain', 'load', 'stalled_ref', '--rows', '1000000');
	is(tcp_cli($ts, $tls_addr, 'scan', 'stalled', '--format', 'checksum')->{out},
		$ts->cli('scan', 'stalled_ref', '--format', 'checksum')->{out},
		'... with every row intact');
}

# ---- what is on the wire
my $wire_tls = $ts->base_dir . '/wire_tls.bin';
my ($rec_pid, $rec_port) = start_recorder($port, $wire_tls);
$ts->cli_ok('a load through the recorder, TLS', '--address', "tcp:127.0.0.1:$rec_port",
	'load', 'wire_check_tls', '--rows', '1000');
is(tcp_cli($ts, "tcp:127.0.0.1:$rec_port", 'scan', 'wire_check_tls', '--format', 'csv')->{rc}, 0,
	'a scan through the recorder, TLS');
kill 'TERM', $rec_pid;
waitpid($rec_pid, 0);
my $bytes = slurp($wire_tls);
cmp_ok(length($bytes), '>', 50000, 'the recorder saw the TLS traffic');
unlike($bytes, qr/wire_check_tls/, 'with TLS the table name is not on the wire');
unlike($bytes, qr/filler|abalance/, 'nor the column names');
unlike($bytes, qr/ {84}/, "nor the rows' text (84 blanks of filler each)");
is(substr($bytes, 0, 1), "\x16", 'the first byte is a TLS handshake record');

# ---- a plaintext tserver
my $plain = TcopyTest->new;
my $plain_port = (free_tcp_ports(1))[0];
$plain->start('--listen', "tcp:127.0.0.1:$plain_port") or die "plain tserver did not start";
like($plain->log_contents, qr/no --tls-cert: tcp: traffic, rows included, is plain text/,
	'a plaintext tcp: listener is warned about');
my $plain_addr = "tcp:127.0.0.1:$plain_port";
refused(tcp_cli($plain, $plain_addr, 'ping'),
	qr/does not speak TLS.*sslmode disable.*\(sslmode require\)/,
	'the default sslmode against a plaintext tserver');
refused(tcp_cli($plain, $plain_addr, @verify, 'ping'), qr/does not speak TLS/,
	'verify-full against a plaintext tserver');
like(tcp_cli($plain, $plain_addr, '--sslmode', 'disable', 'ping')->{out}, qr/^ok /,
	'sslmode disable connects to it');

my $wire_plain = $plain->base_dir . '/wire_plain.bin';
($rec_pid, $rec_port) = start_recorder($plain_port, $wire_plain);
$plain->cli_ok('a load through the recorder, plain', '--address', "tcp:127.0.0.1:$rec_port",
	'--sslmode', 'disable', 'load', 'wire_check_plain', '--rows', '1000');
kill 'TERM', $rec_pid;
waitpid($rec_pid, 0);
$bytes = slurp($wire_plain);
like($bytes, qr/wire_check_plain/, 'without TLS the table name is on the wire');
like($bytes, qr/ {84}/, "and so is the rows' text (the check above can fail)");

# ---- client certificates (--tls-ca)
my $mtls = TcopyTest->new;
my $mtls_port = (free_tcp_ports(1))[0];
$mtls->start('--listen', "tcp:127.0.0.1:$mtls_port", '--tls-cert', $server->{crt},
	'--tls-key', $server->{key}, '--tls-ca', $ca->{crt})
  or die "tserver with --tls-ca did not start";
my $mtls_addr = "tcp:127.0.0.1:$mtls_port";
like(tcp_cli($mtls, $mtls_addr, @verify, '--sslcert', $client->{crt}, '--sslkey', $client->{key},
		'ping')->{out}, qr/^ok /, '--tls-ca: a client certificate of the CA is accepted');
refused(tcp_cli($mtls, $mtls_addr, @verify, 'ping'),
	qr/requires a client certificate: set sslcert and sslkey/,
	'--tls-ca: no client certificate');
refused(tcp_cli($mtls, $mtls_addr, @verify, '--sslcert', $certs->{other_client}{crt},
		'--sslkey', $certs->{other_client}{key}, 'ping'),
	qr/refused the client certificate/, '--tls-ca: a certificate of another CA');
like($mtls->log_contents, qr/TLS handshake failed: .*client presented no certificate/,
	'the tserver logs the missing certificate');
chmod(0644, $client->{key});
refused(tcp_cli($mtls, $mtls_addr, @verify, '--sslcert', $client->{crt}, '--sslkey',
		$client->{key}, 'ping'),
	qr/group or world access/, 'a client key others may read');
chmod(0600, $client->{key});
refused(tcp_cli($mtls, $mtls_addr, @verify, '--sslcert', $client->{crt}, 'ping'),
	qr/--sslcert and --sslkey go together/, '--sslcert without --sslkey');

# ---- proofs bound to the TLS channel (issue 32): a relaying proxy fails.
# A token over TLS works straight to the tserver with sslmode require; a
# proxy that terminates TLS under a certificate of its own and relays to
# the tserver (which require does not check) gets nowhere: the client's
# proof is bound to the proxy's certificate, the tserver checks it against
# its own.
{
	my $tok = TcopyTest->new(token => 'a bound token 0123456789abcdef');
	my $tport = (free_tcp_ports(1))[0];
	$tok->start('--listen', "tcp:127.0.0.1:$tport", '--tls-cert', $server->{crt},
		'--tls-key', $server->{key})
	  or die 'TLS tserver with a token did not start';
	like(tcp_cli($tok, "tcp:127.0.0.1:$tport", 'ping')->{out}, qr/^ok /,
		'a token over TLS, straight to the tserver (sslmode require): in');
	my $proxy = TcopyTls::make_cert($tok->base_dir, 'proxy', 'localhost', undef,
		'DNS:localhost,IP:127.0.0.1');
	my $pport = (free_tcp_ports(1))[0];
	ok(system('socat -V >/dev/null 2>&1') == 0, 'socat is there (scripts/install-deps.sh)');
	my $socat = fork() // die "fork: $!";
	if ($socat == 0)
	{
		open(STDERR, '>', $tok->base_dir . '/socat.log');
		exec('socat', "OPENSSL-LISTEN:$pport,bind=127.0.0.1,reuseaddr,fork,"
			  . "cert=$proxy->{crt},key=$proxy->{key},verify=0",
			"OPENSSL:127.0.0.1:$tport,verify=0");
		exit 127;
	}
	my $up = 0;
	for (1 .. 100)
	{
		last if ($up = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$pport"));
		sleep(0.05);
	}
	ok($up, 'the proxy listens');
	refused(tcp_cli($tok, "tcp:127.0.0.1:$pport", 'ping'), qr/authentication failed/,
		'through a proxy with a certificate of its own (sslmode require)');
	like($tok->log_contents, qr/no token of this server made it over this TLS channel/,
		'the tserver says the proof was made over another channel');
	refused(tcp_cli($tok, "tcp:127.0.0.1:$pport", @verify, 'ping'),
		qr/certificate verification failed/, 'through the proxy with sslmode verify-full');
	kill 'TERM', $socat;
	waitpid($socat, 0);
	$tok->stop;
}

# ---- startup
{
	my $bad = TcopyTest->new;
	chmod(0644, $server->{key});
	my ($what, $status) = $bad->spawn('--listen', 'tcp:127.0.0.1:' . (free_tcp_ports(1))[0],
		'--tls-cert', $server->{crt}, '--tls-key', $server->{key});
	is("$what " . ($status >> 8), 'exited 1', 'a --tls-key others may read: exit 1');
	like($bad->log_contents, qr/group or world access/, 'it says why');
	chmod(0600, $server->{key});
	($what, $status) = $bad->spawn('--tls-cert', $server->{crt});
	is("$what " . ($status >> 8), 'exited 2', '--tls-cert without --tls-key: exit 2');
	($what, $status) = $bad->spawn('--tls-cert', $ca->{crt}, '--tls-key', $server->{key});
	is("$what " . ($status >> 8), 'exited 1', 'a key that does not match the certificate: exit 1');
	like($bad->log_contents, qr/could not load the TLS key.*mismatch/, 'it says so');
}

$mtls->stop;
$plain->stop;
$ts->stop;
done_testing();
