# 006_auth.pl
#	Access control of the tserver (docs/protocol.md#handshake):
#	  - it does not start without a way to authenticate clients
#	    (--token-file, --scoped-tokens, --allow-uid) unless --insecure, which
#	    it logs loudly; its unix socket is 0600 unless --socket-mode widens
#	    it, and world access needs --insecure;
#	  - a --token-file (or --scoped-tokens file) that group or others may
#	    access is refused at startup;
#	  - with a token, client and server authenticate mutually over both
#	    nonces: a wrong, missing, replayed or truncated proof, or a client
#	    nonce of the wrong length, is refused with ERROR_AUTH, and logged,
#	    before any frame after HELLO is looked at; the server's proof in
#	    READY is checked by the client before it sends anything else (a fake
#	    server with a wrong proof, no proof, a short nonce or no tokens gets
#	    nothing more); the token itself never crosses the wire;
#	  - until the handshake is done, frames are limited to a few KiB, and the
#	    whole handshake to --handshake-timeout from the accept, however the
#	    client trickles its bytes;
#	  - a client of protocol version 2 is told the versions differ;
#	  - with --allow-uid, a unix socket client running as another user is
#	    refused (SO_PEERCRED) before it is even greeted, unless the server
#	    also holds tokens, when it must prove one.  That part runs a client
#	    as `nobody`, so it needs root (CI runs as root).
#	Scoped tokens are 010_scoped.pl's.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Digest::SHA qw(hmac_sha256);
use IO::Select;
use IO::Socket::UNIX;
use IPC::Run ();
use POSIX ();
use Socket qw(SOCK_STREAM);
use Test::More;
use File::Copy ();
use File::Find ();
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);

my $TOKEN = 'correct horse battery staple';

# Write a token file with the given mode.
sub token_file
{
	my ($path, $token, $mode) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh "$token\n";
	close $fh;
	chmod($mode, $path) or die "chmod $path: $!";
	return $path;
}

# Read the reply: an ERROR frame of code want, then the connection closes.
# Returns the error's message.
sub expect_error
{
	my ($sock, $want, $name) = @_;
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	is($type, FRAME_ERROR, "$name: the reply is an ERROR frame");
	my $error = defined $payload ? pb_decode($payload) : {};
	my $message = $error->{2} ? $error->{2}[0] : '';
	is($error->{1} ? $error->{1}[0] : 0, $want, "$name: code $want") or diag("message: $message");
	ok(TcopyTest::wait_closed($sock, 10), "$name: the server closes the connection");
	close $sock;
	return $message;
}

# Connect and read SERVER_HELLO: (socket, its decoded fields).
sub greeted
{
	my ($ts) = @_;
	my $sock = $ts->connect_raw or die "connect: $!";
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	die "expected SERVER_HELLO, got " . ($type // 'nothing') unless ($type // 0) == FRAME_SERVER_HELLO;
	return ($sock, pb_decode($payload));
}

use constant CLIENT_NONCE => join('', map { chr(100 + $_) } 0 .. 31);

# HELLO, with a proof (and the client's nonce, 32 bytes unless given).
sub hello_msg
{
	my ($auth, $client_nonce) = @_;
	my $m = pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, '006_auth');
	$m .= pb_field_bytes(3, $auth) . pb_field_bytes(4, $client_nonce // CLIENT_NONCE) if defined $auth;
	return $m;
}

# ---- secure by default ----

{
	my $ts0 = TcopyTest->new(auth => []);
	my ($what, $status) = $ts0->spawn;
	is("$what " . ($status >> 8), 'exited 2', 'no authentication option: the tserver does not start (exit 2)');
	like($ts0->log_contents, qr/no way to authenticate clients: give --token-file FILE, --scoped-tokens FILE or --allow-uid UID.*or --insecure/,
		'it says which options would do');
	($what, $status) = $ts0->spawn('--allow-uid', $>, '--socket-mode', '0666');
	is("$what " . ($status >> 8), 'exited 2', '--socket-mode 0666 without --insecure: exit 2');
	like($ts0->log_contents, qr/--socket-mode 0666 lets every local user connect/, 'it says why');
	($what, $status) = $ts0->spawn('--allow-uid', $>, '--socket-mode', '0460');
	is("$what " . ($status >> 8), 'exited 2', '--socket-mode 0460 (the owner cannot write): exit 2');
	like($ts0->log_contents, qr/--socket-mode needs an octal mode from 0600 to 0777/, 'it says why');

	$ts0->start('--insecure') or die "tserver --insecure did not start";
	like($ts0->log_contents, qr/WARNING: --insecure: clients are NOT authenticated/, '--insecure is logged as a warning');
	is((stat($ts0->socket_path))[2] & 07777, 0600, 'the socket is created 0600 by default');
	$ts0->cli_ok('with --insecure, a client without a token connects', 'ping');
	$ts0->stop;

	$ts0->start('--allow-uid', $>, '--socket-mode', '0660') or die "tserver --socket-mode 0660 did not start";
	is((stat($ts0->socket_path))[2] & 07777, 0660, '--socket-mode 0660 widens it to the group');
	$ts0->stop;
	$ts0->start('--insecure', '--socket-mode', '777') or die "tserver --insecure --socket-mode 777 did not start";
	is((stat($ts0->socket_path))[2] & 07777, 0777, 'world access with --insecure');
	$ts0->stop;
}

# ---- the data directory and its files are the owner's only ----

{
	my $tsd = TcopyTest->new;
	mkdir($tsd->data_dir, 0755) or die "mkdir: $!";
	chmod(0755, $tsd->data_dir) or die "chmod: $!";
	my ($what, $status) = $tsd->spawn;
	is("$what " . ($status >> 8), 'exited 1', 'a data directory others may read: the tserver does not start (exit 1)');
	like($tsd->log_contents, qr/data directory ".*" has invalid permissions 0755: they must be 0700 \(or 0750\)/,
		'it says why');
	chmod(0700, $tsd->data_dir) or die "chmod: $!";
	$tsd->start or die "tserver did not start on a 0700 data directory";
	$tsd->cli_ok('a load into it', 'load', 'private', '--rows', '1000');
	$tsd->stop;
	my @open;
	File::Find::find({ no_chdir => 1, wanted => sub {
		my $mode = (lstat($_))[2];
		push @open, sprintf('%s %04o', $_, $mode & 07777) if ($mode & 077) != 0;
	} }, $tsd->data_dir);
	is(join("\n", @open), '', 'every file and directory of the store is its owner\'s only');
}

# ---- the token file must be private ----

my $ts = TcopyTest->new(auth => []);
my $tokfile = "" . $ts->base_dir . "/token";
for my $mode (0644, 0640, 0604, 0620)
{
	token_file($tokfile, $TOKEN, $mode);
	my ($what, $status) = $ts->spawn('--token-file', $tokfile);
	my $label = sprintf('token file of mode %04o', $mode);
	is($what, 'exited', "$label: the tserver does not start");
	is($status >> 8, 1, "$label: exit status 1") if $what eq 'exited';
	like($ts->log_contents, qr/token file ".*" has group or world access \(mode 0\d+\).*chmod 0600/,
		"$label: the log says why");
	if ($what ne 'exited')
	{
		kill 'KILL', $status;
		waitpid($status, 0);
	}
}

# tokens that no client could present: refused at startup, not at login
for my $case (['an empty token file', "\n", qr/token file ".*" is empty/],
	['a token with a NUL byte', "ab\0cd", qr/token in ".*" contains a NUL byte/])
{
	my ($label, $content, $why) = @$case;
	token_file($tokfile, $content, 0600);
	my ($what, $status) = $ts->spawn('--token-file', $tokfile);
	is($what, 'exited', "$label: the tserver does not start");
	like($ts->log_contents, $why, "$label: the log says why");
	if ($what ne 'exited')
	{
		kill 'KILL', $status;
		waitpid($status, 0);
	}
}

token_file($tokfile, $TOKEN, 0600);
$ts->start('--token-file', $tokfile) or die "tserver with a private token file did not start";
pass('a token file of mode 0600 is accepted');
unlike($ts->log_contents, qr/bytes long: tokens should be long/, 'a 28-byte token draws no warning');
{
	my $tss = TcopyTest->new(auth => []);
	my $short = token_file($tss->base_dir . "/short", 'pw', 0600);
	$tss->start('--token-file', $short) or die "tserver with a short token did not start";
	like($tss->log_contents, qr/WARNING: the token of --token-file is 2 bytes long: tokens should be long random strings/,
		'a 2-byte token starts the tserver with a warning');
	$tss->stop;
}

# ---- tserver-cli: right, wrong and no token ----

my $wrongfile = token_file($ts->base_dir . "/wrong", "not the token", 0600);
$ts->cli_ok('tserver-cli with the right token connects', '--token-file', $tokfile, 'ping');
my $r = $ts->cli('--token-file', $wrongfile, 'ping');
isnt($r->{rc}, 0, 'tserver-cli with a wrong token fails');
like($r->{err}, qr/authentication failed/, 'it is told: authentication failed');
$r = $ts->cli('ping');
isnt($r->{rc}, 0, 'tserver-cli without a token fails');
like($r->{err}, qr/requires a token/, 'it is told the server requires a token');

# ---- by hand: the nonces, a correct proof both ways, then a replay ----

my ($sock_a, $hello_a) = greeted($ts);
my ($sock_b, $hello_b) = greeted($ts);
is($hello_a->{4}[0], 1, 'SERVER_HELLO says authentication is required');
is($hello_a->{5}[0], 1, 'and that the server offers its own proof');
is(length($hello_a->{3}[0] // ''), 32, 'with a 32-byte nonce');
isnt($hello_a->{3}[0], $hello_b->{3}[0], 'each connection gets its own nonce');

# an eavesdropper sees connection A's proof and replays it on connection B
my $auth_a = auth_proof($TOKEN, 'client', $hello_a->{3}[0], CLIENT_NONCE);
TcopyTest::send_frame($sock_a, FRAME_HELLO, hello_msg($auth_a));
my ($type, $ready_payload) = TcopyTest::read_frame($sock_a, 10);
is($type, FRAME_READY, 'HELLO with the client proof over both nonces gets READY');
is(pb_decode($ready_payload // '')->{2}[0], auth_proof($TOKEN, 'server', $hello_a->{3}[0], CLIENT_NONCE),
	'READY carries the server proof: HMAC-SHA256(token, server label || server nonce || client nonce)');
isnt(auth_proof($TOKEN, 'server', $hello_a->{3}[0], CLIENT_NONCE), $auth_a,
	'the two proofs differ (a client proof reflected back is no server proof)');
TcopyTest::send_frame($sock_a, FRAME_STATS_REQUEST, '');
($type) = TcopyTest::read_frame($sock_a, 10);
is($type, FRAME_STATS, 'and the authenticated connection is served');

TcopyTest::send_frame($sock_b, FRAME_HELLO, hello_msg($auth_a));
like(expect_error($sock_b, ERROR_AUTH, 'an answer replayed from another connection'),
	qr/authentication failed/, 'replay: authentication failed');
close $sock_a;

# the wrong token, and no answer at all
{
	my ($sock, $hello) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(auth_proof('guess', 'client', $hello->{3}[0], CLIENT_NONCE)));
	expect_error($sock, ERROR_AUTH, 'a proof under a wrong token');
}
{
	my ($sock) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(undef));
	like(expect_error($sock, ERROR_AUTH, 'HELLO without a proof'),
		qr/carries no proof/, 'missing: the error says so');
}
{
	my ($sock, $hello) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO,
		hello_msg(substr(auth_proof($TOKEN, 'client', $hello->{3}[0], CLIENT_NONCE), 0, 31)));
	expect_error($sock, ERROR_AUTH, 'a truncated proof');
}
{
	# the server's proof offered as the client's: the labels differ
	my ($sock, $hello) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(auth_proof($TOKEN, 'server', $hello->{3}[0], CLIENT_NONCE)));
	expect_error($sock, ERROR_AUTH, 'the server\'s proof offered as the client\'s');
}
{
	# the version 2 answer, HMAC-SHA256(token, nonce), is no proof now
	my ($sock, $hello) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(hmac_sha256($hello->{3}[0], $TOKEN)));
	expect_error($sock, ERROR_AUTH, 'a version 2 answer');
}
{
	my ($sock, $hello) = greeted($ts);
	my $short = substr(CLIENT_NONCE, 0, 31);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(auth_proof($TOKEN, 'client', $hello->{3}[0], $short), $short));
	like(expect_error($sock, ERROR_AUTH, 'a client nonce of 31 bytes'),
		qr/nonce is 31 bytes instead of 32/, 'the wrong nonce length is named');
}
{
	# a client of the previous protocol version is told so
	my ($sock) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, pb_field_varint(1, 3) . pb_field_bytes(2, 'old'));
	like(expect_error($sock, ERROR_PROTOCOL, 'a HELLO of protocol version 3'),
		qr/unsupported protocol version 3 \(this server speaks version ${\ TcopyTest::PROTOCOL_VERSION}\)/, 'the versions are named');
}
{
	# the token itself as the answer: never what the server wants
	my ($sock) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg($TOKEN));
	expect_error($sock, ERROR_AUTH, 'the plain token as the authentication code');
}

# ---- nothing after a failed HELLO is parsed ----

my $stats = $ts->stats;	# through tserver-cli, which needs the token
ok(!defined $stats, 'stats without the token are refused');
my $stats_of = sub {
	my $r = $ts->cli('--token-file', $tokfile, 'stats');
	return { $r->{out} =~ /^(\w+): (\d+)$/mg };
};
my $before = $stats_of->();
{
	# a wrong HELLO with a session's frames right behind it, in one write
	my ($sock, $hello) = greeted($ts);
	my $batch = pb_field_varint(1, 1) . pb_field_varint(2, 1)
	  . pb_field_bytes(3, pb_field_packed_sint64(1, 1, 2, 3));
	TcopyTest::send_bytes($sock, pack('NC', length(hello_msg("\0" x 32)), FRAME_HELLO) . hello_msg("\0" x 32)
		  . pack('NC', 0, FRAME_BEGIN) . pack('NC', length $batch, FRAME_WRITE) . $batch
		  . pack('NC', 3, FRAME_WRITE) . "\xff\xff\xff");
	expect_error($sock, ERROR_AUTH, 'a wrong HELLO followed by BEGIN and WRITE frames');
}
{
	my ($sock) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_WRITE, pb_field_varint(1, 1));
	expect_error($sock, ERROR_PROTOCOL, 'a WRITE instead of HELLO');
}
{
	# before the handshake a frame may not be large: refused on its header
	my ($sock) = greeted($ts);
	TcopyTest::send_bytes($sock, pack('NC', 1024 * 1024, FRAME_HELLO));
	like(expect_error($sock, ERROR_TOO_LARGE, 'a 1 MB HELLO before the handshake'),
		qr/before the handshake/, 'the error names the handshake limit');
}
my $after = $stats_of->();
is($after->{batches_received}, $before->{batches_received},
	'no batch of an unauthenticated connection was received');
is($after->{sessions_open}, 0, 'no session was opened');
is($after->{tables}, $before->{tables}, 'no table was created');

# the log names each refusal and its peer, and never the token
my $log = $ts->log_contents;
my @refusals = $log =~ /WARNING.*connection \d+ from unix:\S+ \(pid \d+, uid \d+\): authentication failed/g;
cmp_ok(scalar @refusals, '>=', 9, 'every refused authentication is logged with its peer')
  or diag(TcopyTest::tail($log, 30));
unlike($log, qr/\Q$TOKEN\E/, 'the token never appears in the log');

$ts->stop;

# the handshake has one deadline, from the accept: a client that sends a
# byte of HELLO every second is cut at --handshake-timeout all the same
{
	$ts->start('--token-file', $tokfile, '--handshake-timeout', '3') or die "tserver did not start";
	my ($sock, $hello) = greeted($ts);
	my $frame = pack('NC', length(hello_msg("\0" x 32)), FRAME_HELLO) . hello_msg("\0" x 32);
	my $t0 = time();
	my ($type, $payload);
	for my $i (0 .. length($frame) - 2)
	{
		last unless TcopyTest::send_bytes($sock, substr($frame, $i, 1));
		if (IO::Select->new($sock)->can_read(1))
		{
			($type, $payload) = TcopyTest::read_frame($sock, 5);
			last;
		}
	}
	my $waited = sprintf('%.1f', time() - $t0);
	is($type, FRAME_ERROR, 'a HELLO trickled a byte a second: the server sends an ERROR frame');
	my $error = defined $payload ? pb_decode($payload) : {};
	is($error->{1} ? $error->{1}[0] : 0, ERROR_AUTH, '... of code ERROR_AUTH');
	like($error->{2} ? $error->{2}[0] : '', qr/no handshake within 3 s of connecting/, '... saying why');
	ok($waited >= 2.5 && $waited <= 5, "... at the deadline, 3 s after the accept (took $waited s)");
	ok(TcopyTest::wait_closed($sock, 10), '... and closes the connection');
	close $sock;
}

$ts->stop;

# ---- the client against a fake server ----

# Run tserver-cli ping against a fake server at $path that answers with
# $serve->($conn, $hello_payload_from_client); returns { rc, out, err, hello
# (the client's HELLO payload, or undef), after (what the client sent
# after the fake server's last frame) }.
sub against_fake_server
{
	my ($server_hello, $serve) = @_;
	my $path = $ts->base_dir . "/fake.sock";
	unlink $path;
	my $listener = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $path, Listen => 1)
	  or die "listen $path: $!";
	my ($out, $err) = ('', '');
	my $cli = IPC::Run::start([ $TcopyTest::CLI, '--address', "unix:$path", '--token-file', $tokfile,
			'ping' ], '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(30));
	my %got = (after => '');
	if (IO::Select->new($listener)->can_read(10))
	{
		my $conn = $listener->accept;
		TcopyTest::send_frame($conn, FRAME_SERVER_HELLO, $server_hello);
		my ($t, $payload) = TcopyTest::read_frame($conn, 10);
		$got{hello} = $payload if defined $t && $t == FRAME_HELLO;
		$serve->($conn, $got{hello}) if defined $got{hello};
		# whatever the client sends until it closes
		my $sel = IO::Select->new($conn);
		while ($sel->can_read(10))
		{
			my $n = sysread($conn, my $buf, 4096);
			last unless $n;
			$got{after} .= $buf;
		}
		close $conn;
	}
	eval { $cli->finish; 1 } or eval { $cli->kill_kill };
	$got{rc} = $? >> 8;
	$got{err} = $err;
	$got{out} = $out;
	close $listener;
	unlink $path;
	return \%got;
}

{
	my $nonce = join('', map { chr } 0 .. 31);
	my $server_hello = pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, 'fake')
	  . pb_field_bytes(3, $nonce) . pb_field_varint(4, 1) . pb_field_varint(5, 1);

	# a fake server that does not know the token answers a wrong proof
	my $r = against_fake_server($server_hello, sub {
		my ($conn) = @_;
		TcopyTest::send_frame($conn, FRAME_READY, pb_field_varint(1, 1) . pb_field_bytes(2, "\x55" x 32));
	});
	my $hello = pb_decode($r->{hello} // '');
	is(length($hello->{4}[0] // ''), 32, 'the client sends a 32-byte nonce of its own');
	is($hello->{3}[0], auth_proof($TOKEN, 'client', $nonce, $hello->{4}[0] // ''),
		'its proof is HMAC-SHA256(token, client label || server nonce || client nonce)');
	unlike($r->{hello} // '', qr/\Q$TOKEN\E/, 'the token is not in what it sent');
	isnt($r->{rc}, 0, 'a wrong server proof: the client fails');
	like($r->{err}, qr/tserver did not prove it knows the token/, '... saying the tserver did not prove the token');
	is($r->{after}, '', '... and sends nothing after READY');

	$r = against_fake_server($server_hello, sub {
		TcopyTest::send_frame($_[0], FRAME_READY, pb_field_varint(1, 1));
	});
	like($r->{err}, qr/tserver did not prove it knows the token: its READY carries no proof/,
		'no server proof: the client refuses');
	is($r->{after}, '', '... and sends nothing after READY');

	# the client's nonce differs per connection, so a fake server cannot
	# replay a real server's proof; but it is refused with the right one
	$r = against_fake_server($server_hello, sub {
		my ($conn, $payload) = @_;
		my $cn = pb_decode($payload)->{4}[0] // '';
		TcopyTest::send_frame($conn, FRAME_READY, pb_field_varint(1, 1)
			  . pb_field_bytes(2, auth_proof($TOKEN, 'server', $nonce, $cn)));
	});
	is($r->{rc}, 0, 'the right server proof: the client goes on') or diag($r->{err});
	like($r->{out}, qr/^ok fake/, '... and talks to it');

	# a nonce of the wrong length, or no tokens at the server: no HELLO at all
	$r = against_fake_server(pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, 'fake')
		  . pb_field_bytes(3, substr($nonce, 0, 16)) . pb_field_varint(4, 1) . pb_field_varint(5, 1), sub { });
	ok(!defined $r->{hello}, 'a 16-byte server nonce: the client sends no HELLO');
	like($r->{err}, qr/tserver sent a nonce of 16 bytes instead of 32/, '... and says why');
	$r = against_fake_server(pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, 'fake')
		  . pb_field_bytes(3, $nonce), sub { });
	ok(!defined $r->{hello}, 'a server asking for no token, to a client with one: no HELLO');
	like($r->{err}, qr/tserver did not prove it knows the token: it holds no tokens/, '... and says why');
	$r = against_fake_server(pb_field_varint(1, 3) . pb_field_bytes(2, 'old')
		  . pb_field_bytes(3, $nonce) . pb_field_varint(4, 1), sub { });
	like($r->{err}, qr/tserver speaks protocol version 3, this client version ${\ TcopyTest::PROTOCOL_VERSION}/,
		'a server of protocol version 3: the client names both versions');
}

# ---- --allow-uid ----

# bad arguments are usage errors (exit 2)
{
	my $ts2 = TcopyTest->new(auth => []);
	my ($what, $status) = $ts2->spawn('--allow-uid', 'no-such-user-xyz');
	is("$what " . ($status >> 8), 'exited 2', '--allow-uid with an unknown user name: exit 2');
	like($ts2->log_contents, qr/no user is called "no-such-user-xyz"/, 'the unknown user is named');
	($what, $status) = $ts2->spawn('--allow-uid', '12x');
	is("$what " . ($status >> 8), 'exited 2', '--allow-uid 12x: exit 2');
	($what, $status) = $ts2->spawn('--allow-uid', '0', '--listen', 'tcp:127.0.0.1:0');
	is("$what " . ($status >> 8), 'exited 2', '--allow-uid with a tcp listener and no token: exit 2');
	like($ts2->log_contents, qr/--allow-uid cannot check tcp clients/, 'it says why');
}

SKIP:
{
	skip "--allow-uid: running a client as another user needs root (this runs as uid $>)", 20
	  if $> != 0;
	my @nobody = getpwnam('nobody');
	skip "--allow-uid: there is no user nobody", 20 unless @nobody;
	my ($nobody_uid, $nobody_gid) = @nobody[ 2, 3 ];

	my $ts3 = TcopyTest->new(auth => []);
	# the server's directory must let nobody reach the socket; the socket,
	# of mode 0660, nobody's group
	chmod(0711, $ts3->base_dir) or die "chmod: $!";
	my $start3 = sub {
		$ts3->start('--socket-mode', '0660', @_) or die "tserver @_ did not start";
		chown(0, $nobody_gid, $ts3->socket_path) or die "chown: $!";
	};
	{
		# owner only by default: nobody cannot even connect
		$ts3->start('--allow-uid', '0,nobody') or die "tserver did not start";
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			POSIX::setgid($nobody_gid);
			POSIX::setuid($nobody_uid) or POSIX::_exit(3);
			POSIX::_exit($ts3->connect_raw ? 0 : 1);
		}
		waitpid($pid, 0);
		is($? >> 8, 1, 'with the default socket mode 0600, nobody cannot connect at all');
		$ts3->stop;
	}
	$start3->('--allow-uid', '0');

	# nobody may not reach the build's tserver-cli (a clone in /root, mode
	# 0700): it runs a copy in the server's directory, which it can traverse
	my $nobody_cli = $ts3->base_dir . "/tserver-cli";
	File::Copy::copy($TcopyTest::CLI, $nobody_cli) or die "copy $TcopyTest::CLI: $!";
	chmod(0755, $nobody_cli) or die "chmod: $!";

	# Run tserver-cli as nobody: { rc, out, err }.
	my $cli_as_nobody = sub {
		my ($out, $err) = ('', '');
		IPC::Run::run([ $nobody_cli, '--address', $ts3->address, @_ ],
			init => sub {
				POSIX::setgid($nobody_gid) or die "setgid: $!";
				POSIX::setuid($nobody_uid) or die "setuid: $!";
			},
			'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(30));
		return { rc => $? >> 8, out => $out, err => $err };
	};

	$ts3->cli_ok('root (uid 0, allowed) connects', 'ping');
	my $r = $cli_as_nobody->('ping');
	isnt($r->{rc}, 0, "nobody (uid $nobody_uid) is refused");
	like($r->{err}, qr/uid $nobody_uid is not allowed to connect/, 'and told why');

	# by hand, as nobody: the first frame is the refusal, not SERVER_HELLO
	pipe(my $rd, my $wr) or die "pipe: $!";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		close $rd;
		POSIX::setgid($nobody_gid);
		POSIX::setuid($nobody_uid) or POSIX::_exit(3);
		my $sock = $ts3->connect_raw or POSIX::_exit(4);
		my ($t, $payload) = TcopyTest::read_frame($sock, 10);
		my $error = defined $payload ? pb_decode($payload) : {};
		my $closed = TcopyTest::wait_closed($sock, 10) ? 1 : 0;
		print $wr join("\t", $t // -1, $error->{1} ? $error->{1}[0] : -1, $closed), "\n";
		close $wr;
		POSIX::_exit(0);
	}
	close $wr;
	my $line = <$rd> // '';
	close $rd;
	waitpid($pid, 0);
	chomp $line;
	my ($t, $code, $closed) = split /\t/, $line;
	is($t, FRAME_ERROR, 'a raw connection as nobody gets ERROR before any SERVER_HELLO');
	is($code, ERROR_AUTH, 'with code ERROR_AUTH');
	is($closed, 1, 'and is closed');

	like($ts3->log_contents, qr/WARNING.*\(pid \d+, uid $nobody_uid\): uid $nobody_uid is not allowed to connect/,
		'the refusal is logged with the peer');
	$ts3->cli_ok('root still connects after the refusals', 'ping');

	# allowed by name, next to a uid
	$ts3->stop;
	$start3->('--allow-uid', '0,nobody');
	like($ts3->log_contents, qr/unix socket clients running as uid 0,$nobody_uid need no token/,
		'the allowed uids are logged at startup');
	$r = $cli_as_nobody->('ping');
	is($r->{rc}, 0, 'with --allow-uid 0,nobody, nobody connects') or diag($r->{err});
	$ts3->cli_ok('and root too', 'ping');
	$ts3->stop;

	# with tokens too, a uid not listed must prove one
	$start3->('--allow-uid', '0', '--token-file', $tokfile);
	$r = $cli_as_nobody->('ping');
	like($r->{err}, qr/requires a token/, 'with --allow-uid 0 and a token, nobody without the token is refused');
	my $nobody_tok = $ts3->base_dir . "/nobody_token";
	token_file($nobody_tok, $TOKEN, 0600);
	chown($nobody_uid, $nobody_gid, $nobody_tok) or die "chown: $!";
	$r = $cli_as_nobody->('--token-file', $nobody_tok, 'ping');
	is($r->{rc}, 0, '... and admitted with it') or diag($r->{err});
	$ts3->cli_ok('root still needs no token', 'ping');
	$ts3->stop;
}

done_testing();
