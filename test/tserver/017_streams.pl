# 017_streams.pl
#	Streams of one write session over the wire (docs/protocol.md#streams):
#	- a session opened to streams takes batches from connections that JOIN
#	  it with its id and key, chunk by chunk, and stages the chunks in
#	  chunk order whatever order they arrive in: a stream that sends chunk
#	  2 first gets no ACK until chunk 1 has ended on another stream; of
#	  equal keys the one of the later chunk wins, though it arrived first;
#	  a keyless table's rows get row ids (and so scan order) in chunk order;
#	  an empty chunk (CHUNK, then CHUNK end) takes its turn too; a chunk
#	  ended as the input's last drops the later chunks' rows (acknowledged,
#	  not staged), and a stream may leave in the middle of one of those;
#	- closing names the chunks and the session's rows (its own before the
#	  streams, and theirs); the session then commits them all;
#	- refused: the session's own WRITE while streams are open, a JOIN with a
#	  wrong key (SESSION_LOST), a stream's UPDATE, a close naming chunks
#	  never staged;
#	- a stream that leaves in the middle of a chunk fails the close; the
#	  session's ABORT wakes a stream waiting for its turn with an error;
#	- under on_conflict error, a duplicate across two streams' chunks is
#	  reported with its row's ordinal in input order (DUPLICATE_KEY);
#	- skips: the session's own connection names chunks no stream sends
#	  (CHUNK {chunk, through}): a later chunk's batch waits until they are
#	  skipped, a skip ahead of the turn is passed when the turn reaches it,
#	  a skip with last ends the input, a close right after a skip waits for
#	  the chunks sent to end; a skip of an ended chunk is refused, and a
#	  close with no stream joined does not wait; a table's on_conflict may
#	  be set while streams are open, a TRUNCATE may not;
#	- a ROLLBACK_TO on the session ends its streams and takes their rows
#	  back (a parallel COPY that failed in a savepoint);
#	- a stream's rows and records are laid out by the schema its connection
#	  opened the table with, not the table's after another connection's
#	  ADD COLUMN (as a session connection's WRITEs).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Select;
use Time::HiRes ();
use Test::More;
use TcopyTest qw(:all request error_of reply_outcome scan_rows);

use constant {
	FRAME_STREAMS => 35,
	FRAME_STREAMS_OK => 36,
	FRAME_JOIN => 37,
	FRAME_JOIN_OK => 38,
	FRAME_CHUNK => 39,
	FRAME_ROLLBACK_TO => 31,
	FRAME_ROLLBACK_TO_OK => 32,
	WRITE_UPDATE => 1,
	KIND_INT => 2,
	KIND_BYTES => 4,
	TABLE_OP_TRUNCATE => 1,
	TABLE_OP_ON_CONFLICT => 5,
	ON_CONFLICT_IGNORE => 1,
	ON_CONFLICT_ERROR => 2,
	ERROR_DUPLICATE_KEY => 12,
	FRAME_ABORT_OK => 13,
};

my $ts = TcopyTest->new;
$ts->start('--log-level', 'debug') or die "tserver did not start";

sub ready { return $ts->connect_ready // die "handshake failed" }

# Close sock and wait until the tserver's log says (what, after the
# connection's id) it has released what the connection held.
sub close_and_wait
{
	my ($sock, $what) = @_;
	my $id = TcopyTest::connection_id($sock);
	close($sock);
	for (1 .. 400)
	{
		return 1 if $ts->log_contents =~ /connection $id \Q$what\E/;
		Time::HiRes::sleep(0.05);
	}
	die "the tserver's log does not say that connection $id $what";
}

# table (k int8 [key], s text); its id
sub create_table
{
	my ($sock, $name, $keyless) = @_;
	my $col = sub {
		my ($n, $kind, $type) = @_;
		pb_field_bytes(1, pb_field_bytes(1, $n) . pb_field_varint(2, $kind) . pb_field_bytes(3, $type)
			  . pb_field_varint(4, ~0));
	};
	my $schema = $col->('k', KIND_INT, 'int8') . $col->('s', KIND_BYTES, 'text')
	  . ($keyless ? '' : pb_field_varint(2, 0));
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE,
		pb_field_bytes(1, $name) . pb_field_bytes(2, $schema) . pb_field_varint(3, 1));
	die "cannot create $name" unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

sub row { my ($k, $s) = @_; return pb_field_packed_sint64(1, $k) . pb_field_bytes(3, $s) }

sub batch_payload
{
	my ($seq, $table, $kind, @rows) = @_;
	return pb_field_varint(1, $seq) . pb_field_varint(2, $table)
	  . join('', map { pb_field_bytes(3, row(@$_)) } @rows) . ($kind ? pb_field_varint(4, $kind) : '');
}

# a session on a new connection: { sock, id, key, seq, rows }
sub begin
{
	my $sock = ready();
	my ($type, $payload) = request($sock, FRAME_BEGIN, '');
	die 'BEGIN: ' . reply_outcome(FRAME_BEGIN_OK, $type, $payload) unless ($type // 0) == FRAME_BEGIN_OK;
	my $f = pb_decode($payload);
	return { sock => $sock, id => $f->{1}[0], key => $f->{2}[0] // '', seq => 0, rows => 0 };
}

sub write_batch
{
	my ($s, $table, @rows) = @_;
	my ($type, $payload) = request($s->{sock}, FRAME_WRITE, batch_payload(++$s->{seq}, $table, 0, @rows));
	$s->{rows} += @rows;
	return reply_outcome(FRAME_ACK, $type, $payload);
}

sub streams
{
	my ($s, $open, $chunks, $rows) = @_;
	my ($type, $payload) = request($s->{sock}, FRAME_STREAMS, $open ? pb_field_varint(1, 1)
		: pb_field_varint(2, $chunks) . pb_field_varint(3, $rows));
	return reply_outcome(FRAME_STREAMS_OK, $type, $payload);
}

sub commit
{
	my ($s, $rows) = @_;
	my ($type, $payload) = request($s->{sock}, FRAME_COMMIT,
		pb_field_varint(1, $s->{seq}) . pb_field_varint(2, $rows // $s->{rows}));
	return reply_outcome(FRAME_COMMIT_OK, $type, $payload);
}

# a stream of session s on a new connection: { sock, seq }, or "error ..."
sub join_stream
{
	my ($s, %o) = @_;
	my $sock = ready();
	my ($type, $payload) = request($sock, FRAME_JOIN,
		pb_field_varint(1, $s->{id}) . pb_field_bytes(2, $o{key} // $s->{key}));
	return reply_outcome(FRAME_JOIN_OK, $type, $payload) unless ($type // 0) == FRAME_JOIN_OK;
	return { sock => $sock, seq => 0 };
}

# a chunk's start, or its end (which takes the stream's next seq and is
# answered with an ACK: read it with reply_of)
sub chunk
{
	my ($st, $chunk, $end) = @_;
	TcopyTest::send_frame($st->{sock}, FRAME_CHUNK, pb_field_varint(1, $chunk)
		  . ($end ? pb_field_varint(2, 1) . pb_field_varint(3, ++$st->{seq}) : ''));
}

# send a stream's batch without waiting for its ACK
sub send_batch
{
	my ($st, $table, $kind, @rows) = @_;
	TcopyTest::send_frame($st->{sock}, FRAME_WRITE, batch_payload(++$st->{seq}, $table, $kind, @rows));
}

# the stream's next reply within timeout: "" for an ACK, "none" for none
sub reply_of
{
	my ($st, $timeout) = @_;
	return 'none' unless IO::Select->new($st->{sock})->can_read($timeout);
	my ($type, $payload) = TcopyTest::read_frame($st->{sock}, 30);
	return reply_outcome(FRAME_ACK, $type, $payload);
}

sub scan
{
	my ($table) = @_;
	my $sock = ready();
	my $rows = scan_rows($sock, pb_field_varint(1, $table));
	close($sock);
	return $rows;
}

my ($type, $payload);
my $setup = ready();
my $t = create_table($setup, 'streamed');
my $keyless = create_table($setup, 'streamed_keyless', 1);

# chunk order, not arrival order
my $s = begin();
is(write_batch($s, $t, [ 1, 'own' ]), '', "the session's own batch before its streams");
is(streams($s, 1), '', 'STREAMS opens the session to streams');
like(write_batch($s, $t, [ 2, 'x' ]), qr/^error 1: unexpected FRAME_WRITE frame in proto "in write session with streams"/,
	"the session's own WRITE is refused while streams are open");

$s = begin();
is(write_batch($s, $t, [ 1, 'own' ]), '', 'a new session writes a row of its own');
is(streams($s, 1), '', '... and opens to streams');
like(join_stream($s, key => 'x' x 16), qr/^error 16: JOIN names no write session/,
	'a JOIN with a wrong key is SESSION_LOST');
my ($a, $b) = (join_stream($s), join_stream($s));
ok(ref $a && ref $b, 'two connections join it');
chunk($a, 2);
send_batch($a, $t, 0, [ 5, 'chunk2' ], [ 7, 'chunk2' ]);
is(reply_of($a, 0.7), 'none', "chunk 2's batch waits for chunk 1");
chunk($b, 1);
send_batch($b, $t, 0, [ 5, 'chunk1' ], [ 6, 'chunk1' ]);
is(reply_of($b, 10), '', "chunk 1's batch is staged");
is(reply_of($a, 0.3), 'none', "chunk 2's still waits: chunk 1 has not ended");
chunk($b, 1, 1);
is(reply_of($b, 10), '', 'chunk 1 ends (its end is acknowledged)');
is(reply_of($a, 10), '', "chunk 2's batch is staged");
chunk($a, 2, 1);
chunk($b, 3);
chunk($b, 3, 1);	# an empty chunk takes its turn too
chunk($a, 4);
send_batch($a, $t, 0, [ 8, 'chunk4' ]);
is(reply_of($a, 10) . reply_of($a, 10), '', 'chunk 2 ends, and after an empty chunk 3, chunk 4 is staged');
is(reply_of($b, 10), '', 'the empty chunk 3 ended');
chunk($a, 4, 1);
is(reply_of($a, 10), '', 'chunk 4 ends');
is(streams($s, 0, 3, 6), 'error 1: closing the session\'s streams names 3 chunks, but 4 were staged',
	'a close naming 3 of 4 chunks fails');

$s = begin();
is(streams($s, 1), '', 'another session opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 2);
send_batch($a, $t, 0, [ 5, 'chunk2' ], [ 7, 'chunk2' ]);
chunk($a, 2, 1);
chunk($b, 1);
send_batch($b, $t, 0, [ 5, 'chunk1' ], [ 6, 'chunk1' ]);
chunk($b, 1, 1);
is(reply_of($b, 10) . reply_of($b, 10), '', 'chunk 1 staged and ended');
is(reply_of($a, 10) . reply_of($a, 10), '', 'chunk 2 staged and ended');
is(streams($s, 0, 2, 4), '', 'the close names 2 chunks and 4 rows');
is(commit($s, 4), '', 'the session commits');
is(scan($t), '5:chunk2 6:chunk1 7:chunk2', 'of equal keys the later chunk wins, though it arrived first');

# a keyless table: row ids in chunk order
$s = begin();
is(streams($s, 1), '', 'a session for a keyless table opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 2);
send_batch($a, $keyless, 0, [ 3, 'c' ], [ 4, 'd' ]);
chunk($a, 2, 1);
chunk($b, 1);
send_batch($b, $keyless, 0, [ 1, 'a' ], [ 2, 'b' ]);
chunk($b, 1, 1);
is(join('', map { reply_of($_, 10) . reply_of($_, 10) } $a, $b), '', 'both chunks staged and ended');
is(streams($s, 0, 2, 4), '', 'closed');
is(commit($s, 4), '', 'committed');
is(scan($keyless), '1:a 2:b 3:c 4:d', "a keyless table's rows are in chunk order");

# the input's last chunk: the chunks after it are acknowledged, not staged
$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 2);
send_batch($a, $t, 0, [ 20, 'after the end' ]);
chunk($b, 1);
send_batch($b, $t, 0, [ 21, 'last' ]);
TcopyTest::send_frame($b->{sock}, FRAME_CHUNK, pb_field_varint(1, 1) . pb_field_varint(2, 1)
	  . pb_field_varint(3, ++$b->{seq}) . pb_field_varint(4, 1));
is(reply_of($b, 10) . reply_of($b, 10), '', 'chunk 1 staged and ended as the last');
is(reply_of($a, 10), '', "chunk 2's batch is acknowledged");
close_and_wait($a->{sock}, 'left the streams');	# in the middle of chunk 2: past the end
is(streams($s, 0, 1, 1), '', 'the close names 1 chunk and 1 row');
is(commit($s, 1), '', 'committed');
is(scan($t), '5:chunk2 6:chunk1 7:chunk2 21:last', 'only the rows up to the last chunk are stored');

# skips: chunks no stream sends, named by the session's own connection
sub skip_chunks
{
	my ($s, $first, $through, $last) = @_;
	TcopyTest::send_frame($s->{sock}, FRAME_CHUNK, pb_field_varint(1, $first)
		  . pb_field_varint(5, $through) . ($last ? pb_field_varint(4, 1) : ''));
}

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 3);
send_batch($a, $t, 0, [ 30, 'chunk3' ]);
is(reply_of($a, 0.5), 'none', "chunk 3's batch waits for chunks 1 and 2");
skip_chunks($s, 1, 2);
is(reply_of($a, 10), '', '... and is staged once they are skipped');
chunk($a, 3, 1);
is(reply_of($a, 10), '', 'chunk 3 ends');
skip_chunks($s, 5, 6);
chunk($b, 7);
send_batch($b, $t, 0, [ 31, 'chunk7' ]);
chunk($b, 7, 1);
is(reply_of($b, 0.5), 'none', 'chunk 7 waits for chunk 4, though 5 and 6 are skipped ahead');
chunk($a, 4);
send_batch($a, $t, 0, [ 30, 'chunk4' ]);
chunk($a, 4, 1);
is(reply_of($a, 10) . reply_of($a, 10), '', 'chunk 4 is staged and ends');
is(reply_of($b, 10) . reply_of($b, 10), '', '... and chunk 7 follows it, past the skipped 5 and 6');
chunk($a, 9);
send_batch($a, $t, 0, [ 32, 'chunk9' ]);
chunk($a, 9, 1);
skip_chunks($s, 8, 8);
is(streams($s, 0, 9, 4), '', 'a close right after the skip waits for chunk 9 to end, and names 9 chunks');
is(commit($s, 4), '', 'the session commits');
is(scan($t), '5:chunk2 6:chunk1 7:chunk2 21:last 30:chunk4 31:chunk7 32:chunk9',
	'the rows of the chunks sent, in chunk order');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 3);
send_batch($a, $t, 0, [ 40, 'after the end' ]);
chunk($a, 3, 1);
chunk($b, 1);
send_batch($b, $t, 0, [ 41, 'chunk1' ]);
chunk($b, 1, 1);
skip_chunks($s, 2, 2, 1);
is(join('', map { reply_of($a, 10) } 1 .. 2), '',
	"a skip with last ends the input: chunk 3's batch and end are acknowledged, not staged");
is(streams($s, 0, 2, 1), '', 'the close names 2 chunks, 1 row');
is(commit($s, 1), '', 'committed');
like(scan($t), qr/41:chunk1/, "chunk 1's row is stored");
unlike(scan($t), qr/40:/, "chunk 3's is not");

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
($type, $payload) = request($s->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_ON_CONFLICT)
	  . pb_field_varint(2, $t) . pb_field_varint(3, 1) . pb_field_varint(5, ON_CONFLICT_IGNORE));
is(reply_outcome(FRAME_TABLE_OP_OK, $type, $payload), '',
	"a table's on_conflict is set while the session's streams are open");
($type, $payload) = request($s->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_TRUNCATE)
	  . pb_field_varint(2, $t) . pb_field_varint(3, 1));
like(reply_outcome(FRAME_TABLE_OP_OK, $type, $payload), qr/^error 1: unexpected FRAME_TABLE_OP frame/,
	'... but not a TRUNCATE');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
chunk($a, 1);
send_batch($a, $t, 0, [ 50, 'a' ]);
chunk($a, 1, 1);
is(reply_of($a, 10) . reply_of($a, 10), '', 'chunk 1 is staged and ends');
skip_chunks($s, 1, 1);
like(streams($s, 0, 1, 1), qr/^error 1: a skip of chunks from 1 after chunk 1 ended or was skipped/,
	'a skip of a chunk that ended is refused');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
like(streams($s, 0, 2, 0), qr/^error 1: closing the session's streams names 2 chunks, but 0 were staged/,
	'a close naming chunks no stream can end fails at once when no stream is joined');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
TcopyTest::send_frame($s->{sock}, FRAME_STREAMS, pb_field_varint(2, 1) . pb_field_varint(3, 0));
is(reply_of($s, 0.5), 'none', 'a close naming a chunk not yet sent waits while a stream is joined');
close($s->{sock});
my $gave_up;
for (1 .. 400)
{
	last if ($gave_up = $ts->log_contents =~ /closing the session's streams names 1 chunks, but 0 were staged/);
	Time::HiRes::sleep(0.05);
}
ok($gave_up, '... and gives up, saying which chunks were missing, when its client closes the connection');
close_and_wait($a->{sock}, 'left the streams');

# a rollback to a savepoint ends the streams and takes their rows back
$s = begin();
is(write_batch($s, $t, [ 60, 'kept' ]), '', 'a session writes a row of its own');
is(streams($s, 1), '', '... opens to streams');
$a = join_stream($s);
chunk($a, 1);
send_batch($a, $t, 0, [ 61, 'taken back' ]);
is(reply_of($a, 10), '', 'a stream stages a row');
($type, $payload) = request($s->{sock}, FRAME_ROLLBACK_TO, pb_field_varint(1, 1) . pb_field_varint(2, 1));
is(reply_outcome(FRAME_ROLLBACK_TO_OK, $type, $payload), '', 'ROLLBACK_TO with the streams open is taken');
is(pb_decode($payload)->{1}[0], 1, '... and done');
send_batch($a, $t, 0, [ 62, 'after' ]);
like(reply_of($a, 10), qr/^error 16: the write session's streams were closed/, "... and ended the streams");
is(write_batch($s, $t, [ 63, 'own again' ]), '', 'the session writes again');
is(commit($s, 2), '', '... and commits');
like(scan($t), qr/60:kept 63:own again$/, "the streams' row is not stored");

# refusals and failures
$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
chunk($a, 1);
send_batch($a, $t, WRITE_UPDATE, [ 1, 'u' ]);
like(reply_of($a, 10), qr/^error 1: a stream of a session sends inserts only/, "a stream's UPDATE is refused");
like(streams($s, 0, 0, 0), qr/^error 1: a stream of a session sends inserts only/,
	'... and the close fails with its error');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
chunk($a, 1);
send_batch($a, $t, 0, [ 1, 'a' ]);
is(reply_of($a, 10), '', 'a stream stages a row of chunk 1');
close_and_wait($a->{sock}, 'left the streams');
like(streams($s, 0, 1, 1), qr/^error 16: a stream of the write session left in the middle of chunk 1/,
	'a stream that left in the middle of its chunk fails the close');

$s = begin();
is(streams($s, 1), '', 'a session opens to streams');
$a = join_stream($s);
chunk($a, 2);
send_batch($a, $t, 0, [ 9, 'waits' ]);
is(reply_of($a, 0.5), 'none', 'a stream waits for chunk 1');
($type, $payload) = request($s->{sock}, FRAME_ABORT, '');
is(reply_outcome(FRAME_ABORT_OK, $type, $payload), '', 'the session aborts');
like(reply_of($a, 10), qr/^error 16: the write session's streams were closed/,
	'... and the waiting stream fails');
is(scan($t), '5:chunk2 6:chunk1 7:chunk2 21:last 30:chunk4 31:chunk7 32:chunk9 41:chunk1 60:kept 63:own again',
	'nothing of the failed sessions is stored');

# on_conflict error: a duplicate across chunks names its row in input order
$s = begin();
($type, $payload) = request($s->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_ON_CONFLICT)
	  . pb_field_varint(2, $t) . pb_field_varint(3, 1) . pb_field_varint(5, ON_CONFLICT_ERROR));
is(reply_outcome(FRAME_TABLE_OP_OK, $type, $payload), '', 'a session sets on_conflict error');
is(write_batch($s, $t, [ 100, 'own' ]), '', '... writes row 1 itself');
is(streams($s, 1), '', '... and opens to streams');
($a, $b) = (join_stream($s), join_stream($s));
chunk($a, 2);
send_batch($a, $t, 0, [ 102, 'dup' ], [ 103, 'x' ]);
chunk($b, 1);
send_batch($b, $t, 0, [ 101, 'y' ], [ 102, 'y' ]);
chunk($b, 1, 1);
is(reply_of($b, 10) . reply_of($b, 10), '', 'chunk 1 staged and ended');
($type, $payload) = TcopyTest::read_frame($a->{sock}, 30);
my ($code, $message) = error_of($payload);
is($code, ERROR_DUPLICATE_KEY, "chunk 2's duplicate of chunk 1's key is DUPLICATE_KEY");
is(pb_decode($payload)->{6}[0], 4, '... of the 4th row in input order (own 1, chunk 1: 2 and 3, chunk 2: 4)');
like(streams($s, 0, 2, 5), qr/^error 12: Key \(k\)=\(102\) already exists/, '... and the close reports it');

my $d = begin();
is(streams($d, 1), '', 'a session opens to streams');
$a = join_stream($d);
chunk($a, 1);
send_batch($a, $t, 0, [ 200, 'a' ]);
is(reply_of($a, 10), '', 'a stream stages a row');
close_and_wait($d->{sock}, 'closed with an open session: aborted');
send_batch($a, $t, 0, [ 201, 'b' ]);
like(reply_of($a, 10), qr/^error 16: the write session's streams were closed/,
	"after the session's connection closed, the stream's next batch fails");

# a stream's batches are laid out by the schema its connection opened the
# table with, as a session connection's are: another connection's ADD
# COLUMN in the meantime does not make them short
{
	my $col = sub {
		my ($n, $kind, $type) = @_;
		pb_field_bytes(1, pb_field_bytes(1, $n) . pb_field_varint(2, $kind) . pb_field_bytes(3, $type)
			  . pb_field_varint(4, ~0));
	};
	my $narrow = $col->('k', KIND_INT, 'int8') . $col->('s', KIND_BYTES, 'text') . pb_field_varint(2, 0);
	my $g = create_table(ready(), 'grow');
	$s = begin();
	is(streams($s, 1), '', 'a session opens to streams');
	$a = join_stream($s);
	($type) = request($a->{sock}, FRAME_OPEN_TABLE, pb_field_bytes(1, 'grow') . pb_field_bytes(2, $narrow));
	is($type, FRAME_TABLE_INFO, 'a stream opens the table with its schema');
	my $other = ready();
	($type) = request($other, FRAME_OPEN_TABLE, pb_field_bytes(1, 'grow')
		  . pb_field_bytes(2, $narrow . $col->('w', KIND_BYTES, 'text')));
	is($type, FRAME_TABLE_INFO, 'another connection adds a column');
	chunk($a, 1);
	send_batch($a, $g, 0, [ 1, 'narrow' ]);
	is(reply_of($a, 10), '', "the stream's row of the schema it opened is staged");
	TcopyTest::send_frame($a->{sock}, FRAME_WRITE, pb_field_varint(1, ++$a->{seq})
		  . pb_field_varint(2, $g)
		  . pb_field_bytes(5, stored_record(stored_key_int(2), stored_value(bytes => 'record'))));
	is(reply_of($a, 10), '', '... and so is its record (WriteBatch.records)');
	chunk($a, 1, 1);
	is(reply_of($a, 10), '', 'its chunk ends');
	is(streams($s, 0, 1, 2), '', 'the close names 1 chunk and 2 rows');
	is(commit($s, 2), '', 'the session commits');
	is(scan($g), '1:narrow 2:record', 'the rows read back');
	close $other;
}

ok($ts->check_log, 'no unexpected log lines');
$ts->stop;
done_testing();
