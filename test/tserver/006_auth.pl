# 006_auth.pl
#	Access control of the tserver:
#	  - a --token-file that group or others may access is refused at startup;
#	  - with a token, a client must answer the per-connection nonce with
#	    HMAC-SHA256(token, nonce): a wrong, missing or replayed answer is
#	    refused with ERROR_AUTH, and logged, before any frame after HELLO is
#	    looked at; the token itself never crosses the wire;
#	  - until the handshake is done, frames are limited to a few KiB;
#	  - with --allow-uid, a unix socket client running as another user is
#	    refused (SO_PEERCRED) before it is even greeted.  That part runs a
#	    client as `nobody`, so it needs root (CI runs as root).
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

sub hello_msg
{
	my ($auth) = @_;
	my $m = pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, '006_auth');
	$m .= pb_field_bytes(3, $auth) if defined $auth;
	return $m;
}

# ---- the token file must be private ----

my $ts = TcopyTest->new;
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

# ---- tserver-cli: right, wrong and no token ----

my $wrongfile = token_file($ts->base_dir . "/wrong", "not the token", 0600);
$ts->cli_ok('tserver-cli with the right token connects', '--token-file', $tokfile, 'ping');
my $r = $ts->cli('--token-file', $wrongfile, 'ping');
isnt($r->{rc}, 0, 'tserver-cli with a wrong token fails');
like($r->{err}, qr/authentication failed/, 'it is told: authentication failed');
$r = $ts->cli('ping');
isnt($r->{rc}, 0, 'tserver-cli without a token fails');
like($r->{err}, qr/requires a token/, 'it is told the server requires a token');

# ---- by hand: the nonce, a correct answer, then a replay ----

my ($sock_a, $hello_a) = greeted($ts);
my ($sock_b, $hello_b) = greeted($ts);
is($hello_a->{4}[0], 1, 'SERVER_HELLO says authentication is required');
is(length($hello_a->{3}[0] // ''), 32, 'with a 32-byte nonce');
isnt($hello_a->{3}[0], $hello_b->{3}[0], 'each connection gets its own nonce');

# an eavesdropper sees connection A's answer and replays it on connection B
my $auth_a = hmac_sha256($hello_a->{3}[0], $TOKEN);
TcopyTest::send_frame($sock_a, FRAME_HELLO, hello_msg($auth_a));
my ($type) = TcopyTest::read_frame($sock_a, 10);
is($type, FRAME_READY, 'HELLO with HMAC-SHA256(token, nonce) gets READY');
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
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(hmac_sha256($hello->{3}[0], 'guess')));
	expect_error($sock, ERROR_AUTH, 'HMAC under a wrong token');
}
{
	my ($sock) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(undef));
	like(expect_error($sock, ERROR_AUTH, 'HELLO without an authentication code'),
		qr/no authentication code/, 'missing: the error says so');
}
{
	my ($sock, $hello) = greeted($ts);
	TcopyTest::send_frame($sock, FRAME_HELLO, hello_msg(substr(hmac_sha256($hello->{3}[0], $TOKEN), 0, 31)));
	expect_error($sock, ERROR_AUTH, 'a truncated authentication code');
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
cmp_ok(scalar @refusals, '>=', 7, 'every refused authentication is logged with its peer')
  or diag(TcopyTest::tail($log, 30));
unlike($log, qr/\Q$TOKEN\E/, 'the token never appears in the log');

# a client that never authenticates does not hold its thread forever: no
# HELLO within 10 s gets ERROR_AUTH and a closed connection
{
	my ($sock) = greeted($ts);
	my $t0 = time();
	my ($type, $payload) = TcopyTest::read_frame($sock, 20);
	my $waited = sprintf('%.1f', time() - $t0);
	is($type, FRAME_ERROR, 'no HELLO at all: the server sends an ERROR frame');
	my $error = defined $payload ? pb_decode($payload) : {};
	is($error->{1} ? $error->{1}[0] : 0, ERROR_AUTH, '... of code ERROR_AUTH');
	like($error->{2} ? $error->{2}[0] : '', qr/no handshake within 10 s/, '... saying why');
	ok($waited >= 9 && $waited <= 13, "... after about 10 s (took $waited s)");
	ok(TcopyTest::wait_closed($sock, 10), '... and closes the connection');
	close $sock;
}

$ts->stop;

# ---- the client sends HMAC(token, nonce), never the token ----

{
	# a fake server: a fixed nonce, and it records what the client says
	my $dir = $ts->base_dir;
	my $path = "$dir/fake.sock";
	my $listener = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $path, Listen => 1)
	  or die "listen $path: $!";
	my $nonce = join('', map { chr } 0 .. 31);
	my ($out, $err) = ('', '');
	my $cli = IPC::Run::start([ $TcopyTest::CLI, '--address', "unix:$path", '--token-file', $tokfile,
			'ping' ], '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(30));
	my $client_bytes = '';
	if (IO::Select->new($listener)->can_read(10))
	{
		my $conn = $listener->accept;
		my $hello = pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, 'fake') . pb_field_bytes(3, $nonce)
		  . pb_field_varint(4, 1);
		TcopyTest::send_frame($conn, FRAME_SERVER_HELLO, $hello);
		my ($t, $payload) = TcopyTest::read_frame($conn, 10);
		is($t, FRAME_HELLO, 'the client answers the fake server with HELLO');
		$client_bytes = $payload // '';
		close $conn;
	}
	eval { $cli->finish; 1 } or eval { $cli->kill_kill };
	is(pb_decode($client_bytes)->{3}[0], hmac_sha256($nonce, $TOKEN),
		'its authentication code is HMAC-SHA256(token, nonce)');
	unlike($client_bytes, qr/\Q$TOKEN\E/, 'the token is not in what it sent');
	close $listener;
	unlink $path;
}

# ---- --allow-uid ----

# bad arguments are usage errors (exit 2)
{
	my $ts2 = TcopyTest->new;
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
	skip "--allow-uid: running a client as another user needs root (this runs as uid $>)", 15
	  if $> != 0;
	my @nobody = getpwnam('nobody');
	skip "--allow-uid: there is no user nobody", 15 unless @nobody;
	my ($nobody_uid, $nobody_gid) = @nobody[ 2, 3 ];

	my $ts3 = TcopyTest->new;
	# the server's directory must let nobody reach the socket
	chmod(0711, $ts3->base_dir) or die "chmod: $!";
	$ts3->start('--allow-uid', '0') or die "tserver with --allow-uid 0 did not start";

	# Run tserver-cli as nobody: { rc, out, err }.
	my $cli_as_nobody = sub {
		my ($out, $err) = ('', '');
		IPC::Run::run([ $TcopyTest::CLI, '--address', $ts3->address, @_ ],
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
	$ts3->start('--allow-uid', '0,nobody') or die "tserver with --allow-uid 0,nobody did not start";
	like($ts3->log_contents, qr/unix socket clients must run as uid 0,$nobody_uid/,
		'the allowed uids are logged at startup');
	$r = $cli_as_nobody->('ping');
	is($r->{rc}, 0, 'with --allow-uid 0,nobody, nobody connects') or diag($r->{err});
	$ts3->cli_ok('and root too', 'ping');
	$ts3->stop;
}

done_testing();
