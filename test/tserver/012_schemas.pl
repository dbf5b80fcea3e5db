# 012_schemas.pl
#	Schemas end to end, over the wire and across restarts
#	(docs/protocol.md#tables):
#	  - a table of no columns is created, written (rows without values),
#	    committed, scanned (empty rows, counted here and by tserver-cli),
#	    kept across a restart, truncated and dropped;
#	  - columns are matched by form where both sides have one: a table
#	    created without forms gets them from the first client that sends
#	    them, a type renamed on the client (same form) then opens and the
#	    stored type name follows, and another form is SCHEMA_MISMATCH;
#	  - a schema with a column more (ADD COLUMN) replaces the stored one,
#	    the one before opens again (the ALTER rolled back), a key column
#	    more is SCHEMA_MISMATCH, a malformed missing value PROTOCOL;
#	  - a dropped column keeps the stored one at its place.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

# ---- helpers ----

# Send a frame and read one reply: (type, payload).
sub request
{
	my ($sock, $type, $payload) = @_;
	TcopyTest::send_frame($sock, $type, $payload);
	return TcopyTest::read_frame($sock, 10);
}

# A connection after the handshake; dies when that fails.
sub ready
{
	return $ts->connect_ready // die "handshake failed";
}

# Column {name, kind, type_name, typmod -1, form (when defined)}, as a
# Schema's field 1 (an int32 of -1 travels as the varint of 2^64 - 1).
sub column
{
	my ($name, $kind, $type, $form) = @_;
	return pb_field_bytes(1, pb_field_bytes(1, $name) . pb_field_varint(2, $kind)
		  . pb_field_bytes(3, $type) . pb_field_varint(4, ~0)
		  . (defined $form ? pb_field_bytes(5, $form) : ''));
}

# OpenTable {table, schema (bytes of a Schema, when defined), create}.
sub open_table_msg
{
	my ($name, $schema, $create) = @_;
	return pb_field_bytes(1, $name) . (defined $schema ? pb_field_bytes(2, $schema) : '')
	  . ($create ? pb_field_varint(3, 1) : '');
}

# The columns of a TableInfo payload: a list of { name, type_name, form }.
sub info_columns
{
	my ($payload) = @_;
	my $schema = pb_decode(pb_decode($payload)->{2}[0] // '');
	return map {
		my $c = pb_decode($_);
		{ name => $c->{1}[0] // '', type_name => $c->{3}[0] // '', form => $c->{5}[0] // '' }
	} @{ $schema->{1} // [] };
}

# Write nbatches WRITE frames of rows empty rows each in one session and
# commit; true when every answer was the expected one.
sub write_empty_rows
{
	my ($sock, $table_id, $nbatches, $rows) = @_;
	my ($type, $payload) = request($sock, FRAME_BEGIN, '');
	return 0 unless defined $type && $type == FRAME_BEGIN_OK;
	for my $seq (1 .. $nbatches)
	{
		my $batch = pb_field_varint(1, $seq) . pb_field_varint(2, $table_id)
		  . (pb_field_bytes(3, '') x $rows);
		($type, $payload) = request($sock, FRAME_WRITE, $batch);
		return 0 unless defined $type && $type == FRAME_ACK;
		return 0 unless (pb_decode($payload)->{2}[0] // 0) == $seq * $rows;
	}
	($type, $payload) = request($sock, FRAME_COMMIT,
		pb_field_varint(1, $nbatches) . pb_field_varint(2, $nbatches * $rows));
	return 0 unless defined $type && $type == FRAME_COMMIT_OK;
	return (pb_decode($payload)->{1}[0] // 0) == $nbatches * $rows;
}

# Scan table_id in batches of batch_rows: the rows, or undef when a frame
# was not a SCAN_BATCH or a row was not empty.
sub scan_count
{
	my ($sock, $table_id, $batch_rows, $want) = @_;
	$want //= '';				# each row's bytes: empty rows by default
	TcopyTest::send_frame($sock, FRAME_SCAN,
		pb_field_varint(1, $table_id) . pb_field_varint(5, $batch_rows));
	my $rows = 0;
	for (;;)
	{
		my ($type, $payload) = TcopyTest::read_frame($sock, 30);
		return undef unless defined $type && $type == FRAME_SCAN_BATCH;
		my $batch = pb_decode($payload);
		for my $row (@{ $batch->{1} // [] })
		{
			return undef if $row ne $want;
			$rows++;
		}
		return $rows if $batch->{2} && $batch->{2}[0];
	}
}

# ---- a table of no columns ----

my $sock = ready();
my ($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('nocols', '', 1));
is($type, FRAME_TABLE_INFO, 'a table of no columns is created') or die "cannot go on";
my $info = pb_decode($payload);
my $nocols = $info->{1}[0];
ok($nocols, 'it has an id');
is($info->{3}[0], 1, 'TABLE_INFO says created');
is(scalar(info_columns($payload)), 0, 'its schema has no columns');

ok(write_empty_rows($sock, $nocols, 3, 1000), '3000 empty rows written and committed');
is(scan_count($sock, $nocols, 0), 3000, 'a scan returns 3000 empty rows');
is(scan_count($sock, $nocols, 7), 3000, 'so does one in batches of 7 rows');
is($ts->count('nocols'), 3000, 'tserver-cli counts 3000 rows');
close $sock;

$ts->restart or die "tserver did not restart";
is($ts->count('nocols'), 3000, 'after a restart: still 3000 rows');
$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('nocols', '', 0));
is($type, FRAME_TABLE_INFO, 'reopened with its empty schema');
ok(write_empty_rows($sock, $nocols, 1, 5), '5 more rows written');
is(scan_count($sock, $nocols, 0), 3005, 'a scan returns 3005 rows: new row ids overwrote none');
# ADD COLUMN: a schema with a column more replaces the stored one (its
# rows read the column's missing value), and the schema before it (the
# ALTER rolled back) opens again; a key column is not an added column
my $missing7 = pb_field_bytes(6, pb_field_varint(1, 14));	# Row {ints: [7]}
my $with_missing = pb_field_bytes(1, pb_field_bytes(1, 'a') . pb_field_varint(2, 2)
	  . pb_field_bytes(3, 'int4') . pb_field_varint(4, ~0) . pb_field_bytes(5, 'int4')
	  . $missing7);
($type, $payload) = request($sock, FRAME_OPEN_TABLE,
	open_table_msg('nocols', $with_missing, 0));
is($type, FRAME_TABLE_INFO, 'opened with a column more (ADD COLUMN)');
is(scalar(info_columns($payload)), 1, 'TABLE_INFO: the stored schema has the column');
# Row {ints: [7]}, packed: each stored row reads the missing value
is(scan_count($sock, $nocols, 0, "\x0a\x01\x0e"), 3005, 'its 3005 rows read the missing value 7');
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('nocols', '', 0));
is($type, FRAME_TABLE_INFO, 'opened again without it (the ALTER rolled back)');
is(scalar(info_columns($payload)), 0, 'TABLE_INFO: no column');
($type, $payload) = request($sock, FRAME_OPEN_TABLE,
	open_table_msg('nocols', column('a', 2, 'int4', 'int4') . pb_field_varint(2, 0), 0));
is($type, FRAME_ERROR, 'opened with a key column: an error');
is(pb_decode($payload // '')->{1}[0], ERROR_SCHEMA_MISMATCH, 'SCHEMA_MISMATCH');
my $bad_missing = pb_field_bytes(1, pb_field_bytes(1, 'a') . pb_field_varint(2, 2)
	  . pb_field_bytes(3, 'int4') . pb_field_varint(4, ~0)
	  . pb_field_bytes(6, pb_field_bytes(3, 'x')));	# Row {blobs: ['x']}
close $sock;					# an ERROR closes the connection
$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('nocols', $bad_missing, 0));
is($type, FRAME_ERROR, 'an int column whose missing value is bytes: an error');
is(pb_decode($payload // '')->{1}[0], ERROR_PROTOCOL, 'PROTOCOL');
close $sock;

# DROP COLUMN: a dropped column (Column.dropped) matches the stored one at
# its place, which stays, its kind included
$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('drops',
	column('k', 2, 'int4', 'int4') . column('v', 2, 'int4', 'int4') . column('s', 4, 'text', 'text')
	  . pb_field_varint(2, 0), 1));
is($type, FRAME_TABLE_INFO, 'a table (k key, v, s) is created');
my $dropped_v = pb_field_bytes(1, pb_field_bytes(1, 'tcopy:dropped(1)') . pb_field_varint(2, 4)
	  . pb_field_bytes(3, '') . pb_field_varint(4, ~0) . pb_field_varint(7, 1));
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('drops',
	column('k', 2, 'int4', 'int4') . $dropped_v . column('s', 4, 'text', 'text')
	  . column('w', 4, 'text', 'text') . pb_field_varint(2, 0), 0));
is($type, FRAME_TABLE_INFO, 'opened with v dropped and w added');
is(join(',', map { $_->{name} } info_columns($payload)), 'k,v,s,w',
	'TABLE_INFO: v stays stored at its place, w is added');
close $sock;

my $r = $ts->cli('truncate', 'nocols');
is($r->{rc}, 0, 'truncated') or diag($r->{err});
is($ts->count('nocols'), 0, 'no rows after the truncate');
$r = $ts->cli('drop', 'nocols');
is($r->{rc}, 0, 'dropped') or diag($r->{err});
is($ts->count('nocols'), undef, 'a scan after the drop fails');

# ---- forms ----

# (k int8 key, m a user type), as a client before forms sends it, or with
# forms
sub mood_schema
{
	my ($m_type, $with_forms) = @_;
	return column('k', 2, 'int8', $with_forms ? 'int8' : undef)
	  . column('m', 4, $m_type, $with_forms ? 'enum:label' : undef)
	  . pb_field_bytes(2, pb_varint(0));
}

$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', mood_schema('mood', 0), 1));
is($type, FRAME_TABLE_INFO, 'a table is created without forms');
my @columns = info_columns($payload);
is($columns[1]{form}, '', 'its columns have no form');

($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', mood_schema('mood', 1), 0));
is($type, FRAME_TABLE_INFO, 'opened with forms and the same type names');
@columns = info_columns($payload);
is($columns[0]{form}, 'int8', 'TABLE_INFO: the stored schema gained the forms');
is($columns[1]{form}, 'enum:label', 'TABLE_INFO: form of the second column');
close $sock;

$ts->restart or die "tserver did not restart";
$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', undef, 0));
is($type, FRAME_TABLE_INFO, 'after a restart: opened by name');
@columns = info_columns($payload);
is($columns[1]{form}, 'enum:label', 'the forms were stored');

($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', mood_schema('feeling', 1), 0));
is($type, FRAME_TABLE_INFO, 'a renamed type of the same form opens');
@columns = info_columns($payload);
is($columns[1]{type_name}, 'feeling', 'the stored type name follows the rename');

my $other = column('k', 2, 'int8', 'int8') . column('m', 4, 'feeling', 'enum:oid')
  . pb_field_bytes(2, pb_varint(0));
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', $other, 0));
is($type, FRAME_ERROR, 'another form: an error');
my $error = pb_decode($payload // '');
is($error->{1}[0], ERROR_SCHEMA_MISMATCH, 'SCHEMA_MISMATCH');
like($error->{2}[0] // '', qr/form "enum:label" on the tserver, not .* form "enum:oid"/,
	'the message names both forms');
close $sock;

$ts->restart or die "tserver did not restart";
$sock = ready();
($type, $payload) = request($sock, FRAME_OPEN_TABLE, open_table_msg('moods', mood_schema('feeling', 0), 0));
is($type, FRAME_TABLE_INFO, 'after a restart: a client without forms opens by the new type name');
@columns = info_columns($payload);
is($columns[1]{form}, 'enum:label', 'and leaves the stored forms alone');
close $sock;

$ts->stop;
done_testing();
