# 010_scoped.pl
#	Scoped credentials (--scoped-tokens, docs/protocol.md#scoped-credentials):
#	  - the file must be private and well formed, or the tserver does not
#	    start, naming the file and line;
#	  - a scoped token reaches the tables whose names start with its
#	    namespace, and nothing else: OPEN_TABLE of another name is
#	    ERROR_PERMISSION whether the table exists or not (the same words),
#	    and SCAN, SPLIT, TABLE_OP of a table id it did not open are refused the
#	    same way, checked through the raw protocol;
#	  - it does not see, nor resolve, another namespace's prepared
#	    sessions (NOT_FOUND), also after a restart; each namespace has a
#	    gid space of its own: the same gid prepared by two is two
#	    sessions, the admin token sees them tagged (issue 32);
#	  - the --token-file token keeps full access beside the scoped ones;
#	  - the open sessions (tserver-cli sessions): a scoped token sees those
#	    begun under its namespace, the admin token all.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Digest::SHA;
use Test::More;
use TcopyTest qw(:all);

my $ADMIN = 'admin token';
my $T1 = 'token one';
my $T2 = 'token-two';

my $ts = TcopyTest->new(auth => []);
my $dir = $ts->base_dir;

# Write a file of the given mode; returns its path.
sub write_file { return TcopyTest::write_private_file($dir, @_) }

my $admin_file = write_file('admin', "$ADMIN\n", 0600);
my $t1_file = write_file('t1', "$T1\n", 0600);
my $t2_file = write_file('t2', "$T2\n", 0600);
my $t3_file = write_file('t3', "no such token\n", 0600);

# ---- the file is checked at startup ----

for my $case (
	[ 'a scoped tokens file of mode 0640', "c1_ x\n", 0640, qr/scoped tokens file ".*" has group or world access \(mode 0640\)/ ],
	[ 'a line without a token', "# comment\nc1_\n", 0600, qr/scoped:2: expected NAMESPACE TOKEN, found no token/ ],
	[ 'the same token twice', "c1_ same\nc2_ same\n", 0600, qr/scoped:2: the same token is given twice/ ],
	[ 'a file of comments only', "# nothing\n\n", 0600, qr/holds no token/ ],
	[ 'the admin token as a scoped one', "c1_ $ADMIN\n", 0600, qr/the same token is given twice/ ])
{
	my ($label, $content, $mode, $why) = @$case;
	my $file = write_file('scoped', $content, $mode);
	my ($what, $status) = $ts->spawn('--token-file', $admin_file, '--scoped-tokens', $file);
	is("$what " . ($what eq 'exited' ? $status >> 8 : ''), 'exited 1', "$label: the tserver does not start");
	like($ts->log_contents, $why, "$label: the log says why");
	if ($what ne 'exited')
	{
		kill 'KILL', $status;
		waitpid($status, 0);
	}
}

# comments, blank lines, tabs, a token with spaces, trailing white space
my $scoped = write_file('scoped', "# two clusters\n\n  c1_  $T1\nc2_\t$T2  \r\n", 0600);
$ts->start('--token-file', $admin_file, '--scoped-tokens', $scoped) or die "tserver did not start";
like($ts->log_contents, qr/2 scoped tokens from/, 'two scoped tokens are read');

my $as = sub { my $file = shift; return $ts->cli('--token-file', $file, @_) };

# ---- tables ----

is($as->($t1_file, 'load', 'c1_a', '--rows', 100)->{rc}, 0, 'token one loads c1_a, in its namespace');
my $r = $as->($t1_file, 'load', 'c2_a', '--rows', 100);
isnt($r->{rc}, 0, 'token one cannot load c2_a');
like($r->{err}, qr/permission denied for tserver table "c2_a"/, '... permission denied for tserver table "c2_a"');
is($as->($admin_file, 'load', 'c2_a', '--rows', 50)->{rc}, 0, 'the admin token loads c2_a');
is($as->($t2_file, 'scan', 'c2_a', '--format', 'count')->{out}, "50\n", 'token two reads c2_a');
$r = $as->($t3_file, 'ping');
like($r->{err}, qr/authentication failed/, 'an unknown token is refused');


# by hand: the refusal does not tell whether the table exists
my %id;
{
	my $admin = $ts->connect_ready(token => $ADMIN) or die "admin handshake failed";
	my ($t, $m) = TcopyTest::request_decoded($admin, FRAME_OPEN_TABLE, pb_field_bytes(1, 'c2_a'));
	is($t, FRAME_TABLE_INFO, 'the admin token opens c2_a');
	$id{c2_a} = $m->{1}[0];
	close $admin;
}
for my $name ('c2_a', 'c2_no_such_table', 'other')
{
	my $sock = $ts->connect_ready(token => $T1) or die "handshake failed";
	my ($t, $m) = TcopyTest::request_decoded($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, $name) . pb_field_varint(3, 1));
	is($t, FRAME_ERROR, "token one, OPEN_TABLE $name (create): ERROR");
	is($m->{1}[0], ERROR_PERMISSION, '... ERROR_PERMISSION');
	is($m->{2}[0], "permission denied for tserver table \"$name\"", '... in the same words, whether it exists or not');
	ok(TcopyTest::wait_closed($sock, 10), '... and the connection is closed');
}
{
	my $sock = $ts->connect_ready(token => $T1) or die "handshake failed";
	my ($t, $m) = TcopyTest::request_decoded($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'c1_a'));
	is($t, FRAME_TABLE_INFO, 'token one opens c1_a');
	my ($st) = TcopyTest::request_decoded($sock, FRAME_SCAN, pb_field_varint(1, $m->{1}[0]) . pb_field_varint(6, 1));
	is($st, FRAME_SCAN_BATCH, '... and scans it');
	($t, $m) = TcopyTest::request_decoded($sock, FRAME_SCAN, pb_field_varint(1, $id{c2_a}));
	is($t, FRAME_ERROR, 'token one, SCAN of c2_a\'s id (not opened): ERROR');
	is($m->{1}[0], ERROR_PERMISSION, '... ERROR_PERMISSION');
	like($m->{2}[0], qr/permission denied for tserver table id $id{c2_a}/, '... naming the id');
}
{
	# SPLIT (frame 46; SPLIT_OK 47) is checked as SCAN is
	my $sock = $ts->connect_ready(token => $T1) or die "handshake failed";
	my ($t, $m) = TcopyTest::request_decoded($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'c1_a'));
	($t) = TcopyTest::request_decoded($sock, 46, pb_field_varint(1, $m->{1}[0]) . pb_field_varint(4, 4));
	is($t, 47, 'token one splits c1_a');
	($t, $m) = TcopyTest::request_decoded($sock, 46, pb_field_varint(1, $id{c2_a}) . pb_field_varint(4, 4));
	is($m->{1}[0], ERROR_PERMISSION, 'token one, SPLIT of c2_a\'s id (not opened): ERROR_PERMISSION');
}
for my $id ($id{c2_a}, 4000)
{
	my $sock = $ts->connect_ready(token => $T1) or die "handshake failed";
	my ($t, $m) = TcopyTest::request_decoded($sock, FRAME_TABLE_OP, pb_field_varint(1, 2) . pb_field_varint(2, $id));
	is($m->{1}[0], ERROR_PERMISSION, "token one, DROP of table id $id: ERROR_PERMISSION, existing or not");
}
is($as->($admin_file, 'scan', 'c2_a', '--format', 'count')->{out}, "50\n", 'c2_a is untouched');
$r = $as->($t1_file, 'truncate', 'c2_a');
like($r->{err}, qr/permission denied/, 'tserver-cli truncate c2_a with token one: permission denied');
$r = $as->($t1_file, 'drop', 'c2_a');
like($r->{err}, qr/permission denied/, 'tserver-cli drop c2_a with token one: permission denied');

# ---- open sessions: each namespace sees its own ----
{
	my $held = $ts->cli_bg('--token-file', $t1_file, 'load', 'c1_held', '--rows', 700, '--hold');
	ok($held->wait_for(qr/^staged 700 rows$/m, 60), 'token one holds a session open')
	  or diag($held->err);
	my @one = split /\n/, $as->($t1_file, 'sessions')->{out};
	is(scalar @one, 1, 'token one sees its open session');
	my @f = split /\t/, $one[0] // '';
	is($f[1], 'writing', '... writing');
	is($f[3], 700, '... with the 700 rows it staged');
	ok($f[4] > 0, "... and the bytes it holds ($f[4])");
	is($f[6], 1, '... in one table');
	is($as->($t2_file, 'sessions')->{out}, '', 'token two sees no session: not its namespace\'s');
	is(scalar(split /\n/, $as->($admin_file, 'sessions')->{out}), 1, 'the admin token sees it');
	$held->send_line('');
	is($held->finish, 0, 'the held session commits');
	is($as->($admin_file, 'sessions')->{out}, '', 'then no session is open');
}

# ---- prepared sessions ----

# The gids a token sees (tserver-cli prepared).
sub gids_seen
{
	my ($file) = @_;
	my $r = $as->($file, 'prepared');
	return 'failed: ' . $r->{err} if $r->{rc} != 0;
	return join(',', map { (split /\t/)[0] } grep { !/^#/ } split /\n/, $r->{out});
}

is($as->($t1_file, 'load', 'c1_b', '--rows', 10, '--prepare', 'g1')->{rc}, 0, 'token one prepares g1 on c1_b');
is($as->($t2_file, 'load', 'c2_b', '--rows', 20, '--prepare', 'g2')->{rc}, 0, 'token two prepares g2 on c2_b');
is(gids_seen($t1_file), 'g1', 'token one lists only g1');
is(gids_seen($t2_file), 'g2', 'token two lists only g2');
# each namespace's gids are its own: the store tags them (session/ts_gid.c)
my %tag = map { $_ => '~' . substr(Digest::SHA::sha256_hex($_), 0, 16) . ':' } qw(c1_ c2_);
is(gids_seen($admin_file), join(',', sort("$tag{c1_}g1", "$tag{c2_}g2")),
	"the admin token lists both, tagged with their namespaces");
$r = $as->($t1_file, 'resolve', 'g2', 'commit');
like($r->{out}, qr/not found/, 'token one resolving g2: not found');
is($as->($admin_file, 'scan', 'c2_b', '--format', 'count')->{out}, "0\n", '... and g2 is not published');

$ts->restart('--token-file', $admin_file, '--scoped-tokens', $scoped) or die "restart failed";
is(gids_seen($t1_file), 'g1', 'after a restart, token one still lists only g1');
is(gids_seen($t2_file), 'g2', '... and token two only g2');
like($as->($t1_file, 'resolve', 'g2', 'abort')->{out}, qr/not found/, '... nor can token one discard g2');
like($as->($t2_file, 'resolve', 'g2', 'commit')->{out}, qr/committed 20 rows/, 'token two commits g2');
like($as->($t1_file, 'resolve', 'g1', 'commit')->{out}, qr/committed 10 rows/, 'token one commits g1');
is($as->($t2_file, 'scan', 'c2_b', '--format', 'count')->{out}, "20\n", 'c2_b has its rows');

# issue 32: one tenant's gid neither blocks, nor reveals, nor resolves another's
is($as->($t2_file, 'load', 'c2_b', '--rows', 7, '--start', 100, '--prepare', 'same')->{rc}, 0,
	'token two prepares "same"');
$r = $as->($t1_file, 'load', 'c1_b', '--rows', 5, '--start', 100, '--prepare', 'same');
is($r->{rc}, 0, 'token one prepares "same" too: not "already prepared"') or diag($r->{err});
is(gids_seen($t1_file), 'same', 'token one lists its own "same"');
is(gids_seen($admin_file), join(',', sort("$tag{c1_}same", "$tag{c2_}same")),
	'the admin token lists the two');
like($as->($t1_file, 'resolve', 'same', 'commit')->{out}, qr/committed 5 rows/,
	'token one commits its "same": 5 rows, not token two\'s 7');
is(gids_seen($t2_file), 'same', "token two's \"same\" is still prepared");
like($as->($t1_file, 'resolve', 'same', 'commit')->{out}, qr/not found/,
	'token one resolving "same" again: not found, though token two holds one');
like($as->($admin_file, 'resolve', "$tag{c2_}same", 'abort')->{out}, qr/discarded 7 rows/,
	'the admin token discards token two\'s by its tagged name');
is($as->($t2_file, 'scan', 'c2_b', '--format', 'count')->{out}, "20\n", '... and c2_b is unchanged');
$r = $as->($t1_file, 'load', 'c1_b', '--rows', 1, '--prepare', 'x' x 200);
is($r->{rc}, 0, 'a scoped token may use a gid of 200 bytes') or diag($r->{err});
like($as->($t1_file, 'resolve', 'x' x 200, 'abort')->{out}, qr/discarded 1 rows/, '... and resolve it');
$r = $as->($t1_file, 'load', 'c1_b', '--rows', 1, '--prepare', 'x' x 201);
like($r->{err}, qr/a global id has 1 to 200 bytes/, '... not of 201');

# streams of a write session (docs/protocol.md#streams): only a connection
# of the session's namespace, or of full access, may JOIN it; another
# namespace's JOIN, with the right id and key, is answered as no session
is($as->($t1_file, 'load', 'c1_s', '--rows', 1)->{rc}, 0, 'token one makes c1_s');
{
	my $owner = $ts->connect_ready(token => $T1) // die 'handshake failed';
	my ($t, $m) = TcopyTest::request_decoded($owner, FRAME_OPEN_TABLE, pb_field_bytes(1, 'c1_s'));
	is($t, FRAME_TABLE_INFO, 'token one opens c1_s');
	($t, $m) = TcopyTest::request_decoded($owner, FRAME_BEGIN, '');
	is($t, FRAME_BEGIN_OK, '... begins a session');
	my $join = pb_field_varint(1, $m->{1}[0]) . pb_field_bytes(2, $m->{2}[0] // '');
	($t, $m) = TcopyTest::request_decoded($owner, 35, pb_field_varint(1, 1));
	is($t, 36, '... and opens it to streams');
	my $other = $ts->connect_ready(token => $T2) // die 'handshake failed';
	($t, $m) = TcopyTest::request_decoded($other, 37, $join);
	is("$t " . ($m->{1}[0] // '') . ': ' . ($m->{2}[0] // ''),
		FRAME_ERROR . ' 16: JOIN names no write session of this id and key open to streams',
		"token two's JOIN of it, with its id and key, is answered as no session");
	for my $tok ([ 'token one', $T1 ], [ 'the admin token', $ADMIN ])
	{
		my $sock = $ts->connect_ready(token => $tok->[1]) // die 'handshake failed';
		($t, $m) = TcopyTest::request_decoded($sock, 37, $join);
		is($t, 38, "$tok->[0] joins it");
		close($sock);
	}
	($t, $m) = TcopyTest::request_decoded($owner, FRAME_ABORT, '');
	is($t, 13, 'the session aborts');
	close($owner);
	close($other);
}

$ts->stop;
done_testing();
