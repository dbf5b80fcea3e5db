# 034_records.pl
#	Rows in the stored form (WriteBatch.records, protocol 7; docs/protocol.md,
#	src/common/tc_record.h): stored as received, they read back exactly as
#	the same rows sent as Row messages and encoded by the tserver.
#	- Random sessions of inserts, updates and deletes (NULLs, negative and
#	  extreme integers, strings with zero bytes, empty strings) go to two
#	  tables of one schema, as rows to one and as records to the other, in
#	  the same batches; each table then scans to the same rows, byte for
#	  byte, in the same order; a keyless table too (row ids given by the
#	  tserver).
#	- A record not in the stored form (a tag of 2, a column missing, a
#	  length past the batch, a varint not the shortest, a bool of 2, a key
#	  string not ended, a key for a keyless table, a value in a delete)
#	  fails its batch with BAD_ROW naming the row, and so does a batch of
#	  both rows and records (PROTOCOL): the connection closes, nothing of
#	  the session is published, the tserver serves on.
#	- A connection that opened a table before another added a column writes
#	  records of the schema it opened (the added column then reads NULL),
#	  and one of the added column is refused.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all request error_of);

use constant {
	KIND_BOOL => 1,
	KIND_INT => 2,
	KIND_BYTES => 4,
	WRITE_UPDATE => 1,
	WRITE_DELETE => 2,
};

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

sub ready { return $ts->connect_ready // die "handshake failed" }

sub column
{
	my ($name, $kind, $type) = @_;
	return pb_field_bytes(1, pb_field_bytes(1, $name) . pb_field_varint(2, $kind)
		  . pb_field_bytes(3, $type));
}

# Create table name (k int8, b bool, v int8, s text), keyed by k unless
# keyless; its id.
sub create_table
{
	my ($sock, $name, $keyless) = @_;
	my $schema = column('k', KIND_INT, 'int8') . column('b', KIND_BOOL, 'bool')
	  . column('v', KIND_INT, 'int8') . column('s', KIND_BYTES, 'text')
	  . ($keyless ? '' : pb_field_varint(2, 0));
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE,
		pb_field_bytes(1, $name) . pb_field_bytes(2, $schema) . pb_field_varint(3, 1));
	die "cannot create $name: frame " . ($type // 'none') unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

# A row [k, b, v, s], b, v or s undef for NULL: as a Row message...
sub row_msg
{
	my ($k, $b, $v, $s) = @{ $_[0] };
	my @ints = grep { defined } ($k, $b, $v);
	my @nulls = grep { !defined $_[0][$_] } 0 .. 3;
	return pb_field_packed_sint64(1, @ints) . (defined $s ? pb_field_bytes(3, $s) : '')
	  . (@nulls ? pb_field_bytes(4, join('', map { pb_varint($_) } @nulls)) : '');
}

# ... and as a record (key only in a delete; no key when keyless).
sub record
{
	my ($row, $keyless, $delete) = @_;
	my ($k, $b, $v, $s) = @$row;
	my @value = $keyless ? (int => $k) : ();
	push @value, defined $b ? (bool => $b) : (null => undef);
	push @value, defined $v ? (int => $v) : (null => undef);
	push @value, defined $s ? (bytes => $s) : (null => undef);
	return stored_record($keyless ? '' : stored_key_int($k),
		$delete ? '' : stored_value(@value));
}

# Send a WRITE and read its answer: '' for ACK, else "error CODE: message"
# or "frame T".
sub write_frame
{
	my ($sock, $seq, $id, $kind, $body) = @_;
	my ($type, $payload) = request($sock, FRAME_WRITE, pb_field_varint(1, $seq)
		  . pb_field_varint(2, $id) . $body . ($kind ? pb_field_varint(4, $kind) : ''));
	return '' if ($type // 0) == FRAME_ACK;
	return ($type // 0) == FRAME_ERROR ? 'error ' . join(': ', error_of($payload))
	  : 'frame ' . ($type // 'none');
}

sub begin
{
	my ($sock) = @_;
	my ($type) = request($sock, FRAME_BEGIN, '');
	die "BEGIN: frame " . ($type // 'none') unless ($type // 0) == FRAME_BEGIN_OK;
}

sub commit
{
	my ($sock, $seq, $rows) = @_;
	my ($type, $payload) = request($sock, FRAME_COMMIT,
		pb_field_varint(1, $seq) . pb_field_varint(2, $rows));
	return '' if ($type // 0) == FRAME_COMMIT_OK;
	return 'error ' . join(': ', error_of($payload));
}

# Every row of table id, as the ScanBatch holds them (Row messages' bytes).
sub scan_raw
{
	my ($sock, $id) = @_;
	TcopyTest::send_frame($sock, FRAME_SCAN, pb_field_varint(1, $id));
	my @rows;
	for (;;)
	{
		my ($type, $payload) = TcopyTest::read_frame($sock, 60);
		return ('error ' . join(': ', error_of($payload))) if ($type // 0) == FRAME_ERROR;
		return ('frame ' . ($type // 'none')) unless ($type // 0) == FRAME_SCAN_BATCH;
		my $batch = pb_decode($payload);
		push @rows, @{ $batch->{1} // [] };
		return @rows if $batch->{2} && $batch->{2}[0];
	}
}

srand(34);
my @strings = ('', "a\0b", "\0", "\0\0x", 'plain', 'x' x 300, "caf\xc3\xa9");
sub random_row
{
	my ($k) = @_;
	my @edges = (0, 1, -1, 63, -64, 64, 2**31, -2**31, 9223372036854775807, -9223372036854775807 - 1);
	return [ $k, rand() < 0.2 ? undef : int(rand(2)),
		rand() < 0.2 ? undef : rand() < 0.3 ? $edges[ rand @edges ] : int(rand(2e9)) - 1e9,
		rand() < 0.2 ? undef : $strings[ rand @strings ] . int(rand(100)) ];
}

# ---- the same sessions as rows and as records ----
{
	my $sock = ready();
	my $rows_id = create_table($sock, 'as_rows');
	my $records_id = create_table($sock, 'as_records');
	my $keyless_rows = create_table($sock, 'keyless_rows', 1);
	my $keyless_records = create_table($sock, 'keyless_records', 1);
	my $failed = '';

	for my $session (1 .. 4)
	{
		begin($sock);
		my ($seq, $rows) = (0, 0);
		for my $b (1 .. 6)
		{
			my $kind = $b == 1 ? 0 : (0, WRITE_UPDATE, WRITE_DELETE)[ rand 3 ];
			my @batch = map { random_row(int(rand(400)) - 200) } 1 .. 1 + int(rand(60));
			# an insert's keys distinct within the session's batch
			my %seen;
			@batch = grep { !$seen{ $_->[0] }++ } @batch;
			$failed ||= write_frame($sock, ++$seq, $rows_id, $kind,
				join('', map { pb_field_bytes(3, row_msg($_)) } @batch));
			$failed ||= write_frame($sock, ++$seq, $records_id, $kind,
				pb_field_bytes(5, join('', map { record($_, 0, $kind == WRITE_DELETE) } @batch)));
			$rows += 2 * @batch;
			next if $kind;
			$failed ||= write_frame($sock, ++$seq, $keyless_rows, 0,
				join('', map { pb_field_bytes(3, row_msg($_)) } @batch));
			$failed ||= write_frame($sock, ++$seq, $keyless_records, 0,
				pb_field_bytes(5, join('', map { record($_, 1) } @batch)));
			$rows += 2 * @batch;
		}
		$failed ||= commit($sock, $seq, $rows);
	}
	is($failed, '', 'every batch, as rows and as records, is acknowledged and committed');

	my @a = scan_raw($sock, $rows_id);
	my @b = scan_raw($sock, $records_id);
	cmp_ok(scalar(@a), '>', 100, 'the keyed table holds rows (' . scalar(@a) . ')');
	is_deeply(\@b, \@a, 'the table written with records reads as the one written with rows');
	@a = map { pb_decode($_)->{1}[0] } scan_raw($sock, $keyless_rows);
	@b = map { pb_decode($_)->{1}[0] } scan_raw($sock, $keyless_records);
	cmp_ok(scalar(@a), '>', 20, 'the keyless table holds rows (' . scalar(@a) . ')');
	# row ids are given in order, so the rows come back as they were sent
	is_deeply(\@b, \@a, 'a keyless table written with records reads as one written with rows');
	close $sock;
}

# ---- records the tserver refuses ----
my $good = stored_value(bool => 1, int => 5, bytes => 'ok');
my @refused = (
	[ 'a tag of 2', stored_record(stored_key_int(1), "\x02" . substr($good, 1)), 'tag' ],
	[ 'a column missing', stored_record(stored_key_int(1), stored_value(bool => 1, int => 5)),
		'without all its columns' ],
	[ 'a length past the batch', substr(stored_record(stored_key_int(1), $good), 0, -1),
		'past the batch' ],
	[ 'a varint not the shortest', stored_record(stored_key_int(1),
		"\x01\x01\x01\x8a\x00\x01\x02ok"), 'shortest varint' ],
	[ 'a bool of 2', stored_record(stored_key_int(1), "\x01\x02" . substr($good, 2)), 'bool' ],
	[ 'a key shorter than its column', stored_record("\x80\0\0", $good), 'key' ],
	[ 'a key string for an int key', stored_record(stored_key_bytes('ab'), $good), 'key' ],
);
{
	my $sock = ready();
	my $id = create_table($sock, 'refused');
	close $sock;
	for my $case (@refused)
	{
		my ($name, $records, $why) = @$case;
		$sock = ready();
		request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'refused'));
		begin($sock);
		is(write_frame($sock, 1, $id, 0, pb_field_bytes(5, stored_record(stored_key_int(7), $good))),
			'', "$name: a good record first is acknowledged");
		my $r = write_frame($sock, 2, $id, 0,
			pb_field_bytes(5, stored_record(stored_key_int(8), $good) . $records));
		like($r, qr/^error ${\ ERROR_BAD_ROW}: record not in the stored form: .*\Q$why\E.*\(row 2 of batch 2 for table "refused"\)/,
			"$name: BAD_ROW names the row and why");
		ok(TcopyTest::wait_closed($sock, 10), "$name: the connection closes");
		close $sock;
	}
	$sock = ready();
	request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'refused'));
	begin($sock);
	like(write_frame($sock, 1, $id, WRITE_DELETE, pb_field_bytes(5, stored_record(stored_key_int(1), $good))),
		qr/^error ${\ ERROR_BAD_ROW}: record not in the stored form: a value in a delete/,
		'a value in a delete is refused');
	close $sock;
	$sock = ready();
	request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'refused'));
	begin($sock);
	like(write_frame($sock, 1, $id, 0, pb_field_bytes(3, row_msg([ 1, 1, 1, 'x' ]))
			. pb_field_bytes(5, stored_record(stored_key_int(2), $good))),
		qr/^error ${\ ERROR_PROTOCOL}: .*both rows and records/, 'rows and records together are refused');
	close $sock;

	$sock = ready();
	my $keyless = create_table($sock, 'refused_keyless', 1);
	begin($sock);
	like(write_frame($sock, 1, $keyless, 0, pb_field_bytes(5, stored_record(stored_key_int(2),
		stored_value(int => 2, bool => 1, int => 5, bytes => 'ok')))),
		qr/^error ${\ ERROR_BAD_ROW}: record not in the stored form: a key for a table without key columns/,
		'a key for a keyless table is refused');
	close $sock;

	$sock = ready();
	is_deeply([ scan_raw($sock, $id) ], [], 'nothing of the refused sessions was published');
	is(TcopyTest::cli($ts, 'ping')->{rc}, 0, 'the tserver still answers');
	close $sock;
}

# ---- records laid out by the schema the connection opened the table with ----
# A row as "ints|blobs|nulls" (its Row message's fields).
sub row_text
{
	my $f = pb_decode($_[0]);
	my @ints = map { $_ & 1 ? -(($_ + 1) >> 1) : $_ >> 1 } TcopyTest::pb_varints($f->{1}[0] // '');
	return join('|', join(',', @ints), join(',', @{ $f->{3} // [] }),
		join(',', TcopyTest::pb_varints($f->{4}[0] // '')));
}
{
	my $narrow = column('k', KIND_INT, 'int8') . column('v', KIND_INT, 'int8') . pb_field_varint(2, 0);
	my $wide = $narrow . column('w', KIND_BYTES, 'text');
	my $old = ready();
	my ($type, $payload) = request($old, FRAME_OPEN_TABLE,
		pb_field_bytes(1, 'grow') . pb_field_bytes(2, $narrow) . pb_field_varint(3, 1));
	my $id = pb_decode($payload)->{1}[0];
	# another client's ALTER TABLE ... ADD COLUMN w
	my $new = ready();
	($type) = request($new, FRAME_OPEN_TABLE, pb_field_bytes(1, 'grow') . pb_field_bytes(2, $wide));
	is($type, FRAME_TABLE_INFO, 'another connection opens the table with a column added');

	begin($old);
	is(write_frame($old, 1, $id, 0, pb_field_bytes(5, stored_record(stored_key_int(1),
		stored_value(int => 10)))), '',
		'a connection that opened the table before writes records of its own schema');
	is(commit($old, 1, 1), '', 'and commits them');
	begin($new);
	is(write_frame($new, 1, $id, 0, pb_field_bytes(5, stored_record(stored_key_int(2),
		stored_value(int => 20, bytes => 'x')))), '', 'the other writes records of the new one');
	is(commit($new, 1, 1), '', 'and commits them');
	is(join(' ', map { row_text($_) } scan_raw($new, $id)), '1,10||2 2,20|x|',
		'the older row reads the added column as NULL');
	begin($old);
	like(write_frame($old, 1, $id, 0, pb_field_bytes(5, stored_record(stored_key_int(3),
		stored_value(int => 30, bytes => 'y')))),
		qr/^error ${\ ERROR_BAD_ROW}: record not in the stored form: a value longer than its columns/,
		"a record of the column the connection does not know is refused");
	close $old;
	close $new;
}

$ts->stop;
done_testing();
