# 013_load_labels.pl
#	Load labels over the wire (docs/protocol.md, Load labels): TABLE_OP
#	LOAD_LABEL claims a label for the session (CLAIMED, then OWN), another
#	session is told BUSY while the first holds it, open or prepared with its
#	connection live, and PREPARED (with the holder's gid) once the prepared
#	session is orphaned, also after a kill -9 and a restart (the claim comes
#	back from the record); a commit publishes it (PUBLISHED, with its time),
#	an abort frees it; LIST_LABELS lists the published ones; FORGET_LABEL
#	forgets one at once; tserver-cli labels lists them; a TRUNCATE forgets
#	them all; malformed requests
#	(an empty label, a claim outside a session, a forget inside one) are
#	PROTOCOL errors that close the connection.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep);
use TcopyTest qw(:all);

use constant {
	FRAME_LIST_LABELS => 27,
	FRAME_LABEL_LIST => 28,
	LOAD_LABEL => 3,
	FORGET_LABEL => 4,
	CLAIMED => 1,
	PUBLISHED => 2,
	OWN => 3,
	BUSY => 4,
	PREPARED => 5,
};

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";
my $r = $ts->cli('load', 'm', '--rows', 10);
is($r->{rc}, 0, 'table m created with 10 rows') or diag($r->{err});

# Send a frame and read one reply; (type, payload).
sub request
{
	my ($sock, $type, $payload) = @_;
	TcopyTest::send_frame($sock, $type, $payload);
	return TcopyTest::read_frame($sock, 10);
}

# A connection with m open and a session begun; (sock, table id).
sub session
{
	my $sock = $ts->connect_ready or return ();
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'm'));
	return () unless ($type // 0) == FRAME_TABLE_INFO;
	my $id = pb_decode($payload)->{1}[0];
	($type) = request($sock, FRAME_BEGIN, '');
	return () unless ($type // 0) == FRAME_BEGIN_OK;
	return ($sock, $id);
}

# A label operation; (frame type, state, published_at_ms, holder gid).
sub label_op
{
	my ($sock, $op, $id, $label, $in_session) = @_;
	my ($type, $payload) = request($sock, FRAME_TABLE_OP, pb_field_varint(1, $op)
		  . pb_field_varint(2, $id) . ($in_session ? pb_field_varint(3, 1) : '')
		  . pb_field_bytes(4, $label));
	return ($type // -1) unless ($type // 0) == FRAME_TABLE_OP_OK;
	my $f = pb_decode($payload);
	return ($type, $f->{1}[0] // 0, $f->{2}[0] // 0, $f->{3}[0] // '');
}

sub claim { my ($sock, $id, $label) = @_; return (label_op($sock, LOAD_LABEL, $id, $label, 1))[1] // -1 }

# The published labels of table id, joined by spaces.
sub listed
{
	my ($sock, $id) = @_;
	my ($type, $payload) = request($sock, FRAME_LIST_LABELS, pb_field_varint(1, $id));
	return "frame $type" unless ($type // 0) == FRAME_LABEL_LIST;
	return join(' ', map { pb_decode($_)->{1}[0] } @{ pb_decode($payload)->{1} // [] });
}

sub write_row
{
	my ($sock, $id, $aid) = @_;
	my $row = pb_field_packed_sint64(1, $aid, 1, 3) . pb_field_bytes(3, ' ' x 84);
	my ($type) = request($sock, FRAME_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, $id)
		  . pb_field_bytes(3, $row));
	return ($type // 0) == FRAME_ACK;
}

my ($a, $id) = session();
ok($a, 'session a begun');
is(claim($a, $id, 'l1'), CLAIMED, 'a claims l1');
is(claim($a, $id, 'l1'), OWN, 'a claims l1 again: OWN');
my ($b) = session();
is(claim($b, $id, 'l1'), BUSY, 'b is told BUSY while a holds l1');

ok(write_row($a, $id, 1_000_001), 'a writes a row');
my ($type) = request($a, FRAME_PREPARE, pb_field_varint(1, 1) . pb_field_varint(2, 1)
	  . pb_field_bytes(3, 'lab:1'));
is($type, FRAME_PREPARE_OK, 'a prepares under lab:1');
is(claim($b, $id, 'l1'), BUSY, 'b: BUSY while the prepared session is attached');
close($a);
my @answer;
for (1 .. 100)
{
	@answer = label_op($b, LOAD_LABEL, $id, 'l1', 1);
	last if ($answer[1] // 0) != BUSY;
	sleep(0.1);
}
is($answer[1], PREPARED, 'b: PREPARED once the prepared session is orphaned');
is($answer[3], 'lab:1', '... naming its gid');
close($b);

$ts->kill9;
$ts->start or die 'tserver did not start after kill -9';
my ($c) = session();
@answer = label_op($c, LOAD_LABEL, $id, 'l1', 1);
is($answer[1], PREPARED, 'after kill -9 and a restart, the prepared session still holds l1');
$r = $ts->resolve('lab:1', 1);
is($r->{rc}, 0, 'lab:1 resolved by commit') or diag($r->{out} . $r->{err});
@answer = label_op($c, LOAD_LABEL, $id, 'l1', 1);
is($answer[1], PUBLISHED, 'l1 is then published');
ok($answer[2] > 1_700_000_000_000, '... with its time');

# an abort frees a claim; a commit publishes it
is(claim($c, $id, 'l2'), CLAIMED, 'c claims l2');
($type) = request($c, FRAME_ABORT, '');
is($type, 13, 'c aborts');
($type) = request($c, FRAME_BEGIN, '');
is(claim($c, $id, 'l2'), CLAIMED, 'after the abort, l2 is free');
($type) = request($c, FRAME_COMMIT, pb_field_varint(1, 0) . pb_field_varint(2, 0));
is($type, FRAME_COMMIT_OK, 'c commits a session of no rows and label l2');
is(listed($c, $id), 'l1 l2', 'LIST_LABELS lists l1 and l2');
$r = $ts->cli('labels', 'm');
like($r->{out}, qr/^l1\t\d{4}-\d\d-\d\dT[\d:.]+Z\nl2\t\d{4}-[^\n]+Z\n\z/, 'tserver-cli labels lists them, with their times')
  or diag($r->{out} . $r->{err});

# forget at once; a truncate forgets them all
is((label_op($c, FORGET_LABEL, $id, 'l1', 0))[1], PUBLISHED, 'FORGET_LABEL l1: it was published');
is((label_op($c, FORGET_LABEL, $id, 'l1', 0))[1], 0, 'FORGET_LABEL l1 again: NONE');
is(listed($c, $id), 'l2', 'l2 is left');
($type) = request($c, FRAME_TABLE_OP, pb_field_varint(1, 1) . pb_field_varint(2, $id));
is($type, FRAME_TABLE_OP_OK, 'TRUNCATE m');
is(listed($c, $id), '', 'the truncate forgot l2');
$r = $ts->cli('labels', 'm');
is($r->{out}, '', 'tserver-cli labels lists none');
is($ts->cli('labels', 'm', '--forget', 'l2')->{out}, "not published\n", 'tserver-cli labels --forget of a label not published');

# malformed requests
sub expect_protocol_error
{
	my ($name, $sock, $op, $label, $in_session) = @_;
	my ($t, $payload) = request($sock, FRAME_TABLE_OP, pb_field_varint(1, $op)
		  . pb_field_varint(2, $id) . ($in_session ? pb_field_varint(3, 1) : '')
		  . pb_field_bytes(4, $label));
	is($t, FRAME_ERROR, "$name: an ERROR");
	is(pb_decode($payload // '')->{1}[0], ERROR_PROTOCOL, "$name: PROTOCOL");
	ok(TcopyTest::wait_closed($sock, 5), "$name: the connection is closed");
}
expect_protocol_error('LOAD_LABEL outside a session', $c, LOAD_LABEL, 'x', 0);
my ($d) = session();
expect_protocol_error('an empty label', $d, LOAD_LABEL, '', 1);
($d) = session();
expect_protocol_error('a label of 1025 bytes', $d, LOAD_LABEL, 'x' x 1025, 1);
($d) = session();
expect_protocol_error('FORGET_LABEL in a session', $d, FORGET_LABEL, 'x', 1);

$ts->stop;
done_testing();
