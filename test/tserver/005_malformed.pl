# 005_malformed.pl
#	The tserver trusts nothing it receives: malformed frames, messages out
#	of order and rows that do not fit are each answered with an ERROR frame
#	of the right code and a closed connection, while the server lives on
#	and another client's open session is untouched and commits.
#
#	Frames are sent with `tserver-cli raw --hex` and by hand over the unix
#	socket: 4-byte big-endian payload length, type byte, protobuf payload
#	(proto/tcopy.proto), encoded here field by field.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep);
use TcopyTest qw(:all);

my $MAX_FRAME_MB = 2;
my $ts = TcopyTest->new(extra_args => [ '--max-frame-mb', $MAX_FRAME_MB ]);
$ts->start or die "tserver did not start";

# a table of the pgbench shape (aid int key, bid int, abalance int, filler bytes)
my $r = $ts->cli('load', 'm', '--rows', 10);
is($r->{rc}, 0, 'table m created with 10 rows') or diag($r->{err});

# a second client holds a session open through everything below
my $held = $ts->cli_bg('load', 'held', '--rows', 20_000, '--hold');
ok($held->wait_for(qr/^staged 20000 rows$/m, 120), 'held session staged 20000 rows')
  or diag("stdout: " . $held->out . "\nstderr: " . $held->err);

# ---- message builders ----

sub row_msg
{
	my (%f) = @_;
	my $m = '';
	$m .= pb_field_packed_sint64(1, @{ $f{ints} }) if $f{ints} && @{ $f{ints} };
	$m .= join('', map { pb_field_bytes(3, $_) } @{ $f{blobs} // [] });
	$m .= pb_field_bytes(4, join('', map { pb_varint($_) } @{ $f{nulls} })) if $f{nulls};
	return $m;
}

sub write_msg
{
	my ($seq, $table_id, @rows) = @_;
	return pb_field_varint(1, $seq) . pb_field_varint(2, $table_id)
	  . join('', map { pb_field_bytes(3, $_) } @rows);
}

my $filler = ' ' x 84;
my $good_row = row_msg(ints => [ 1_000_001, 1, 0 ], blobs => [$filler]);

# ---- helpers ----

# Read the reply: an ERROR frame of code want, then the connection closes.
sub expect_error
{
	my ($sock, $want, $name) = @_;
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	# a ServerHello may come first when we spoke before reading it
	($type, $payload) = TcopyTest::read_frame($sock, 10)
	  if defined $type && $type == FRAME_SERVER_HELLO;
	my $ok = is($type, FRAME_ERROR, "$name: the reply is an ERROR frame");
	if (defined $type && $type == FRAME_ERROR)
	{
		my $error = pb_decode($payload);
		my $code = $error->{1} ? $error->{1}[0] : 0;
		my $message = $error->{2} ? $error->{2}[0] : '';
		if (ref $want)
		{
			ok((grep { $_ == $code } @$want), "$name: code is one of @$want")
			  or diag("code $code: $message");
		}
		else
		{
			is($code, $want, "$name: code $want") or diag("message: $message");
		}
		isnt($message, '', "$name: the error has a message");
	}
	ok(TcopyTest::wait_closed($sock, 10), "$name: the server closes the connection");
	close $sock;
	return $ok;
}

# expect_error, returning the error's message.
sub expect_error_message
{
	my ($sock, $want, $name) = @_;
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	is($type, FRAME_ERROR, "$name: the reply is an ERROR frame");
	my $error = defined $payload ? pb_decode($payload) : {};
	is($error->{1} ? $error->{1}[0] : 0, $want, "$name: code $want");
	ok(TcopyTest::wait_closed($sock, 10), "$name: the server closes the connection");
	close $sock;
	return $error->{2} ? $error->{2}[0] : '';
}

sub alive
{
	my ($name) = @_;
	my $r = $ts->cli('ping');
	is($r->{rc}, 0, "$name: tserver still answers") or diag($r->{err});
}

# A connection after the handshake; dies when that fails.
sub ready
{
	my $sock = $ts->connect_ready or die "handshake failed";
	return $sock;
}

sub send_frame { TcopyTest::send_frame(@_) }

# Send a frame and read one reply; (type, payload).
sub request
{
	my ($sock, $type, $payload) = @_;
	send_frame($sock, $type, $payload);
	return TcopyTest::read_frame($sock, 10);
}

# Open table m on sock; its id.
sub open_m
{
	my ($sock) = @_;
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'm'));
	is($type, FRAME_TABLE_INFO, 'OPEN_TABLE m answers TABLE_INFO') or return 0;
	return pb_decode($payload)->{1}[0];
}

sub begin
{
	my ($sock) = @_;
	my ($type) = request($sock, FRAME_BEGIN, '');
	is($type, FRAME_BEGIN_OK, 'BEGIN answers BEGIN_OK');
}

# ---- tserver-cli raw ----

my @raw_cases = (
	[ 'garbage OPEN_TABLE payload', '00000004' . '04' . 'ffffffff', 'ERROR_PROTOCOL' ],
	[ 'garbage WRITE payload (no session)', '00000003' . '08' . 'fffefd', 'ERROR_PROTOCOL' ],
	[ 'oversized length header', 'fffffff0' . '08', 'ERROR_TOO_LARGE' ],
	[ 'length just over --max-frame-mb', sprintf('%08x', $MAX_FRAME_MB * 1024 * 1024 + 1) . '08',
		'ERROR_TOO_LARGE' ],
	[ 'unknown frame type 0x63', '00000000' . '63', 'ERROR_PROTOCOL' ],
	[ 'frame type 0', '00000000' . '00', 'ERROR_PROTOCOL' ],
	[ 'WRITE before BEGIN', unpack('H*', pack('NC', length(write_msg(1, 1, $good_row)), FRAME_WRITE)
		  . write_msg(1, 1, $good_row)), 'ERROR_PROTOCOL' ],
	[ 'a second HELLO', '00000002' . '02' . '0801', 'ERROR_PROTOCOL' ],
	[ 'a server-only frame (ACK)', '00000000' . '09', 'ERROR_PROTOCOL' ],
	[ 'COMMIT without BEGIN', '00000000' . '0a', 'ERROR_PROTOCOL' ],
);
for my $case (@raw_cases)
{
	my ($name, $hex, $code) = @$case;
	my $r = $ts->cli('raw', '--hex', $hex);
	is($r->{rc}, 0, "raw $name: tserver-cli got a reply") or diag($r->{err});
	like($r->{out}, qr/^FRAME_ERROR $code \(\d+\): \S/, "raw $name: ERROR frame with $code")
	  or diag("stdout: $r->{out}");
	alive("raw $name");
}

# ---- by hand: before and during the handshake ----

{
	my $sock = $ts->connect_raw;
	ok($sock, 'connected');
	my ($type) = TcopyTest::read_frame($sock, 10);
	is($type, FRAME_SERVER_HELLO, 'the server speaks first: SERVER_HELLO');
	send_frame($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'm'));
	expect_error($sock, ERROR_PROTOCOL, 'OPEN_TABLE before HELLO');
}
{
	my $sock = $ts->connect_raw;
	send_frame($sock, FRAME_STATS_REQUEST, '');	# before even reading SERVER_HELLO
	expect_error($sock, ERROR_PROTOCOL, 'STATS_REQUEST before HELLO');
}
{
	my $sock = $ts->connect_raw;
	TcopyTest::read_frame($sock, 10);
	send_frame($sock, FRAME_HELLO, pb_field_varint(1, PROTOCOL_VERSION + 1));
	expect_error($sock, ERROR_PROTOCOL, 'HELLO of the next protocol version');
}
{
	my $sock = $ts->connect_raw;
	TcopyTest::read_frame($sock, 10);
	send_frame($sock, FRAME_HELLO, "\xff\xff\xff");
	expect_error($sock, ERROR_PROTOCOL, 'garbage HELLO payload');
}
{
	my $sock = $ts->connect_raw;
	TcopyTest::read_frame($sock, 10);
	TcopyTest::send_bytes($sock, pack('NC', 0xFFFFFFF0, FRAME_HELLO));
	expect_error($sock, ERROR_TOO_LARGE, 'oversized HELLO');
}
alive('after the handshake cases');

# ---- by hand: after the handshake ----

{
	my $sock = ready();
	send_frame($sock, FRAME_OPEN_TABLE, "\x0a\x80\x80\x80\x80\x10");	# length beyond the payload
	expect_error($sock, ERROR_PROTOCOL, 'OPEN_TABLE with a cut string');
}
{
	my $sock = ready();
	begin($sock);
	send_frame($sock, FRAME_WRITE, "\x1a\x7f\x0a\x05");
	expect_error($sock, ERROR_PROTOCOL, 'garbage WRITE payload in a session');
}
{
	my $sock = ready();
	TcopyTest::send_bytes($sock, pack('NC', 0xFFFFFFF0, FRAME_WRITE));
	expect_error($sock, ERROR_TOO_LARGE, 'oversized length header');
}
{
	my $sock = ready();
	TcopyTest::send_bytes($sock, pack('NC', 0, 0x63));
	expect_error($sock, ERROR_PROTOCOL, 'unknown frame type byte');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	expect_error($sock, ERROR_PROTOCOL, 'WRITE before BEGIN');
}
{
	my $sock = ready();
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, 999_999, $good_row));
	expect_error($sock, ERROR_UNKNOWN_TABLE, 'WRITE for an unknown table id');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, row_msg(ints => [ 1_000_002 ], blobs => [$filler])));
	expect_error($sock, ERROR_BAD_ROW, 'a row with 1 int where the schema has 3');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $good_row,
		row_msg(ints => [ 1_000_003, 1, 0, 5 ], blobs => [$filler])));
	expect_error($sock, ERROR_BAD_ROW, 'a batch whose second row has 4 ints');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, row_msg(ints => [ 1, 0 ], blobs => [$filler],
		nulls => [0])));
	expect_error($sock, ERROR_BAD_ROW, 'a row with a NULL key');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, row_msg(ints => [ 1_000_004, 0 ],
		blobs => [$filler], nulls => [ 2, 1 ])));
	expect_error($sock, ERROR_BAD_ROW, 'a row with nulls out of order');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(2, $id, $good_row));
	expect_error($sock, ERROR_PROTOCOL, 'a first WRITE with seq 2');
}
{
	my $sock = ready();
	begin($sock);
	send_frame($sock, FRAME_BEGIN, '');
	expect_error($sock, ERROR_PROTOCOL, 'BEGIN inside a session');
}
{
	# a batch accepted, then a COMMIT that miscounts the rows: nothing commits
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my ($type) = request($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	is($type, FRAME_ACK, 'a good WRITE is acknowledged');
	send_frame($sock, FRAME_COMMIT, pb_field_varint(1, 1) . pb_field_varint(2, 5));
	expect_error($sock, ERROR_PROTOCOL, 'COMMIT naming 5 rows where 1 was sent');
	is($ts->count('m'), 10, 'the miscounted session committed nothing');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my ($type) = request($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	is($type, FRAME_ACK, 'a good WRITE is acknowledged');
	send_frame($sock, FRAME_COMMIT, pb_field_varint(1, 3) . pb_field_varint(2, 1));
	expect_error($sock, ERROR_PROTOCOL, 'COMMIT naming seq 3 where 1 was last');
	is($ts->count('m'), 10, 'that session committed nothing either');
}
{
	my $sock = ready();
	my $column = pb_field_bytes(1, 'a') . pb_field_varint(2, 0) . pb_field_bytes(3, 'int4');
	my $schema = pb_field_bytes(1, $column) . pb_field_bytes(2, pb_varint(0));
	send_frame($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'bad_kind') . pb_field_bytes(2, $schema)
		  . pb_field_varint(3, 1));
	expect_error($sock, ERROR_PROTOCOL, 'creating a table with a KIND_NONE column');
}
{
	my $sock = ready();
	my $column = pb_field_bytes(1, 'a') . pb_field_varint(2, 2) . pb_field_bytes(3, 'int4');
	my $schema = pb_field_bytes(1, $column) . pb_field_bytes(2, pb_varint(1));
	send_frame($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'bad_key') . pb_field_bytes(2, $schema)
		  . pb_field_varint(3, 1));
	expect_error($sock, ERROR_PROTOCOL, 'creating a table whose key index is out of range');
}
{
	my $sock = ready();
	send_frame($sock, FRAME_SCAN, pb_field_varint(1, 999_999));
	expect_error($sock, ERROR_UNKNOWN_TABLE, 'SCAN of an unknown table id');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	send_frame($sock, FRAME_SCAN, pb_field_varint(1, $id) . pb_field_bytes(2, pb_varint(99)));
	expect_error($sock, [ ERROR_PROTOCOL, ERROR_SCHEMA_MISMATCH, ERROR_BAD_ROW ],
		'SCAN projecting column 99 of 4');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	my $bound = pb_field_bytes(1, row_msg(blobs => ['x'])) . pb_field_varint(2, 1);
	send_frame($sock, FRAME_SCAN, pb_field_varint(1, $id) . pb_field_bytes(3, $bound));
	expect_error($sock, [ ERROR_PROTOCOL, ERROR_SCHEMA_MISMATCH, ERROR_BAD_ROW ],
		'SCAN bounded by a string on an int key');
}
{
	my $sock = ready();
	send_frame($sock, 16, pb_field_varint(1, 1) . pb_field_varint(2, 999_999));	# TABLE_OP
	expect_error($sock, ERROR_UNKNOWN_TABLE, 'TRUNCATE of an unknown table id');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	send_frame($sock, 16, pb_field_varint(1, 7) . pb_field_varint(2, $id));
	expect_error($sock, ERROR_PROTOCOL, 'TABLE_OP of unknown kind 7');
}

# ---- absurd counts, huge repeated fields, deep nesting, wrong types ----

{
	# a million empty rows: 2 bytes each on the wire, some 100 unpacked
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my $rows = "\x1a\x00" x 1_000_000;
	send_frame($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $id) . $rows);
	like(expect_error_message($sock, ERROR_TOO_LARGE, 'a WRITE of 10^6 empty rows in 2 MB'),
		qr/unpacks into more than/, 'refused for the memory it would unpack into');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	# rows field (3) claiming 10^9 bytes, 5 present
	send_frame($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $id)
		  . "\x1a" . pb_varint(1_000_000_000) . "\x0a\x03\x02\x04\x06");
	expect_error($sock, ERROR_PROTOCOL, 'a WRITE whose rows claim 10^9 bytes in a small payload');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	# packed nulls claiming 10^9 bytes inside a row
	my $row = pb_field_packed_sint64(1, 1_000_005, 1, 0) . pb_field_bytes(3, $filler)
	  . "\x22" . pb_varint(1_000_000_000) . "\x01\x02";
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $row));
	expect_error($sock, ERROR_PROTOCOL, 'a row whose nulls claim 10^9 bytes');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id,
		pb_field_packed_sint64(1, 1_000_006, 1, 0) . pb_field_bytes(3, $filler)
		  . pb_field_bytes(4, "\x01" x (1 << 20))));
	expect_error($sock, ERROR_BAD_ROW, 'a row with 2^20 nulls');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id,
		pb_field_bytes(1, "\x02" x (1 << 20)) . pb_field_bytes(3, $filler)));
	expect_error($sock, ERROR_BAD_ROW, 'a row with 2^20 ints');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	# 100000 nested start-group tags: protobuf-c does not recurse into them
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $good_row . ("\x0b" x 100_000)));
	expect_error($sock, ERROR_PROTOCOL, 'a row holding 10^5 nested groups');
}
{
	# an unknown field holding 2000 levels of nested messages is skipped
	# whole, as protobuf wants: the row itself is accepted
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my $nested = 'x';
	$nested = pb_field_bytes(15, $nested) for 1 .. 2000;
	my ($type) = request($sock, FRAME_WRITE, write_msg(1, $id,
		row_msg(ints => [ 1_000_007, 1, 0 ], blobs => [$filler]) . $nested));
	is($type, FRAME_ACK, 'a row with a deeply nested unknown field is acknowledged');
	($type) = request($sock, FRAME_ABORT, '');
	is($type, 13, 'and its session aborts');	# ABORT_OK
	close $sock;
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	# field 1 (ints, sint64) as a 64-bit fixed value
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, "\x09" . ("\x00" x 8) . pb_field_bytes(3, $filler)));
	expect_error($sock, ERROR_PROTOCOL, 'a row whose ints come with the wrong wire type');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id,
		pb_field_bytes(2, pack('d<3', 1_000_008, 1, 0)) . pb_field_bytes(3, $filler)));
	expect_error($sock, ERROR_BAD_ROW, 'a row with floats for the int columns');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, row_msg(blobs => [ '1000009', '1', '0', $filler ])));
	expect_error($sock, ERROR_BAD_ROW, 'a row with blobs for the int columns');
}

# ---- sessions out of order ----

{
	my $sock = ready();
	send_frame($sock, FRAME_ABORT, '');
	expect_error($sock, ERROR_PROTOCOL, 'ABORT without a session');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my ($type) = request($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	is($type, FRAME_ACK, 'a good WRITE is acknowledged');
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	expect_error($sock, ERROR_PROTOCOL, 'a second WRITE with seq 1');
}
{
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	send_frame($sock, 16, pb_field_varint(1, 1) . pb_field_varint(2, $id));	# TABLE_OP
	expect_error($sock, ERROR_PROTOCOL, 'TRUNCATE inside a write session');
}
{
	# a session committed (empty), then a WRITE and a COMMIT for it
	my $sock = ready();
	my $id = open_m($sock);
	begin($sock);
	my ($type) = request($sock, FRAME_COMMIT, pb_field_varint(1, 0) . pb_field_varint(2, 0));
	is($type, FRAME_COMMIT_OK, 'an empty session commits');
	send_frame($sock, FRAME_WRITE, write_msg(1, $id, $good_row));
	expect_error($sock, ERROR_PROTOCOL, 'a WRITE after the COMMIT');
}
{
	my $sock = ready();
	begin($sock);
	my ($type) = request($sock, FRAME_COMMIT, '');
	is($type, FRAME_COMMIT_OK, 'another empty session commits');
	send_frame($sock, FRAME_COMMIT, '');
	expect_error($sock, ERROR_PROTOCOL, 'a second COMMIT');
}
alive('after the absurd counts and misordered sessions');

{
	# a frame cut short, then the client closes its side: no reply is owed,
	# but the server must close and live on
	my $sock = ready();
	TcopyTest::send_bytes($sock, pack('NC', 100, FRAME_WRITE) . ('x' x 10));
	shutdown($sock, 1);
	ok(TcopyTest::wait_closed($sock, 10), 'truncated frame then close: the server closes');
	close $sock;
}
{
	# and the same with the socket closed entirely, mid-session
	my $sock = ready();
	begin($sock);
	TcopyTest::send_bytes($sock, pack('NC', 1000, FRAME_WRITE) . ('y' x 3));
	close $sock;
}
alive('after the malformed frames');

my $tables = ($ts->stats // {})->{tables};
is($tables, 2, 'no malformed OPEN_TABLE created a table (only m and held exist)');

# every connection above is gone: the held session's and the stats one remain
my $open;
for (1 .. 100)
{
	$open = ($ts->stats // {})->{connections_open};
	last if defined $open && $open == 2;
	sleep(0.1);
}
is($open, 2, 'every failed connection was closed (open: held + stats)');
is(($ts->stats // {})->{sessions_open}, 1, 'only the held session is open');

is($ts->count('m'), 10, 'table m is unchanged');
is($ts->count('held'), 0, 'the held session is still invisible');

# ---- the held session commits, whole ----

$held->send_line('');
is($held->finish, 0, 'the held session commits after all this') or diag($held->err);
like($held->out, qr/^committed 20000 rows/m, 'it reports 20000 rows committed');
my $c = $ts->checksum('held', '--columns', 'aid');
is($c->{rows}, 20_000, 'all 20000 held rows are there');
is($c->{sum}, aid_sum(20_000), 'with the right aids');

$ts->stop;

done_testing();
