# 030_split.pl
#	SPLIT and the parts of a parallel scan (docs/scans.md, "Parallel
#	scans"):
#	- SPLIT of a table written by several sessions (so several SST files)
#	  answers keys ascending, inside the table, fewer than max_parts; the
#	  scans of the parts they cut, Scan.raw_lower and raw_upper, read
#	  exactly the rows of one scan, none twice, as of one snapshot while
#	  other sessions commit;
#	- raw bounds chosen by the client narrow a scan, also within key
#	  bounds (the intersection) and over a write session's own writes
#	  (the overlay is narrowed the same way);
#	- Scan.reverse reads the same rows last key first: the whole table,
#	  key bounds, raw bounds, a snapshot, a session's writes over the
#	  stored rows (a new key, a key it rewrote, keys past both ends), and
#	  limit counts from the end;
#	- refused with ERROR_PROTOCOL: a raw key shorter than a table id, or of
#	  another table; SPLIT of max_parts 0; SPLIT of an unknown table is
#	  ERROR_UNKNOWN_TABLE.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all request error_of reply_outcome pb_varints scan_rows);

use constant {
	FRAME_SNAPSHOT => 33,
	FRAME_SNAPSHOT_OK => 34,
	FRAME_SPLIT => 46,
	FRAME_SPLIT_OK => 47,
	KIND_INT => 2,
	KIND_BYTES => 4,
};

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

sub ready { return $ts->connect_ready // die "handshake failed" }

# table (k int8 key, v int8, s text); its id
sub create_table
{
	my ($sock, $name) = @_;
	my $col = sub {
		my ($n, $kind, $type) = @_;
		pb_field_bytes(1, pb_field_bytes(1, $n) . pb_field_varint(2, $kind) . pb_field_bytes(3, $type)
			  . pb_field_varint(4, ~0));
	};
	my $schema = $col->('k', KIND_INT, 'int8') . $col->('v', KIND_INT, 'int8')
	  . $col->('s', KIND_BYTES, 'text') . pb_field_varint(2, 0);
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE,
		pb_field_bytes(1, $name) . pb_field_bytes(2, $schema) . pb_field_varint(3, 1));
	die "cannot create $name" unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

sub row { my ($k, $v, $s) = @_; return pb_field_packed_sint64(1, $k, $v) . pb_field_bytes(3, $s) }

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
	my $seq = ++$s->{seq};
	my ($type, $payload) = request($s->{sock}, FRAME_WRITE, pb_field_varint(1, $seq)
		  . pb_field_varint(2, $table) . join('', map { pb_field_bytes(3, row(@$_)) } @rows));
	$s->{rows} += @rows;
	return reply_outcome(FRAME_ACK, $type, $payload);
}

sub commit
{
	my ($s) = @_;
	my ($type, $payload) = request($s->{sock}, FRAME_COMMIT,
		pb_field_varint(1, $s->{seq}) . pb_field_varint(2, $s->{rows}));
	return reply_outcome(FRAME_COMMIT_OK, $type, $payload);
}

# the stored key of k in table t: the table id, then k's order-preserving bytes
sub raw_key { my ($t, $k) = @_; return pack('NQ>', $t, $k ^ (1 << 63)) }

sub key_bound
{
	my ($k, $inclusive) = @_;
	return pb_field_bytes(1, pb_field_packed_sint64(1, $k)) . pb_field_varint(2, $inclusive ? 1 : 0);
}

# Scan table on a new connection: "k:v:s ..." or "error CODE: message".
# Options: raw_lower, raw_upper (bytes), lower, upper (KeyBound bytes),
# snapshot ({id, key}), session ({id, key}), limit, reverse.
sub scan
{
	my ($table, %o) = @_;
	my $sock = ready();
	my $request = pb_field_varint(1, $table);
	$request .= pb_field_bytes(3, $o{lower}) if defined $o{lower};
	$request .= pb_field_bytes(4, $o{upper}) if defined $o{upper};
	$request .= pb_field_varint(7, $o{session}{id}) . pb_field_bytes(8, $o{session}{key}) if $o{session};
	$request .= pb_field_varint(10, $o{snapshot}{id}) . pb_field_bytes(11, $o{snapshot}{key})
	  if $o{snapshot};
	$request .= pb_field_bytes(16, $o{raw_lower}) if defined $o{raw_lower};
	$request .= pb_field_bytes(17, $o{raw_upper}) if defined $o{raw_upper};
	$request .= pb_field_varint(6, $o{limit}) if $o{limit};
	$request .= pb_field_varint(19, 1) if $o{reverse};
	my $rows = scan_rows($sock, $request);
	close($sock);
	return $rows;
}

# SPLIT on a new connection: (keys arrayref) or the error string
sub split_keys
{
	my ($table, $max_parts, %o) = @_;
	my $sock = ready();
	my ($type, $payload) = request($sock, FRAME_SPLIT, pb_field_varint(1, $table)
		  . (defined $o{lower} ? pb_field_bytes(2, $o{lower}) : '')
		  . (defined $o{upper} ? pb_field_bytes(3, $o{upper}) : '')
		  . pb_field_varint(4, $max_parts));
	close($sock);
	return reply_outcome(FRAME_SPLIT_OK, $type, $payload) unless ($type // 0) == FRAME_SPLIT_OK;
	return pb_decode($payload)->{1} // [];
}

# The rows of the scans of every part that keys cut, in part order.
sub scan_parts
{
	my ($table, $keys, %o) = @_;
	my @bounds = ('', @$keys, '');
	my @parts;
	for my $i (0 .. $#bounds - 1)
	{
		my $rows = scan($table, %o, raw_lower => $bounds[$i], raw_upper => $bounds[ $i + 1 ]);
		return $rows if $rows =~ /^error/;
		push @parts, $rows eq '' ? () : $rows;
	}
	return join(' ', @parts);
}

sub keys_of { my ($rows) = @_; return map { (split /:/)[0] } split / /, $rows }

my $setup = ready();
my $t = create_table($setup, 'split');
my $other = create_table($setup, 'other');

# five sessions, each of keys spread over the whole range: five SST files that overlap
my $N = 4000;
for my $s (0 .. 4)
{
	my $session = begin();
	for (my $i = 0; $i < $N; $i += 500)
	{
		my @rows = map { [ $_ * 5 + $s, $_, 'r' . ($_ * 5 + $s) ] } $i .. $i + 499;
		die if write_batch($session, $t, @rows);
	}
	is(commit($session), '', "session $s commits its rows");
}
my $all = scan($t);
my @all_keys = keys_of($all);
is(scalar(@all_keys), 5 * $N, 'one scan reads every row');

my $keys = split_keys($t, 8);
ok(ref $keys, 'SPLIT answers SPLIT_OK') or diag($keys);
$keys = [] unless ref $keys;
cmp_ok(scalar(@$keys), '<', 8, '... with fewer keys than max_parts');
diag(scalar(@$keys) . ' split keys');
my $ordered = 1;
for my $i (0 .. $#$keys)
{
	$ordered = 0 unless substr($keys->[$i], 0, 4) eq pack('N', $t) && length($keys->[$i]) > 4;
	$ordered = 0 if $i > 0 && $keys->[ $i - 1 ] ge $keys->[$i];
}
ok($ordered, '... ascending, strictly inside the table');
is(scan_parts($t, $keys), $all, 'the parts read exactly the rows of one scan, in order');

# cuts of the client's own: every part reads its keys only, and together all
my @cuts = map { raw_key($t, $_) } 7, 4999, 5000, 12345;
my $parts = scan_parts($t, \@cuts);
is($parts, $all, 'parts cut at raw keys read the rows of one scan, none twice');
my @p = keys_of(scan($t, raw_lower => raw_key($t, 4999), raw_upper => raw_key($t, 5000)));
is("@p", '4999', 'a part reads the keys in [raw_lower, raw_upper)');
is(scan($t, raw_lower => raw_key($t, 10), raw_upper => raw_key($t, 10)), '',
	'an empty part reads nothing');
is(scan($t, raw_lower => raw_key($t, 20), raw_upper => raw_key($t, 10)), '',
	'... and so does an inverted one');
is(scan($t, raw_lower => pack('N', $t)), $all, 'a raw key of the table id alone is the table\'s start');

# with key bounds: the intersection
@p = keys_of(scan($t, lower => key_bound(100, 1), upper => key_bound(200, 0),
		raw_lower => raw_key($t, 50), raw_upper => raw_key($t, 150)));
is("@p", join(' ', 100 .. 149), 'raw bounds and key bounds: the rows inside both');
@p = keys_of(scan($t, lower => key_bound(100, 0), upper => key_bound(200, 1),
		raw_lower => raw_key($t, 150), raw_upper => raw_key($t, 300)));
is("@p", join(' ', 150 .. 200), '... either way round');
$keys = split_keys($t, 4, lower => key_bound(1000, 1), upper => key_bound(3000, 0));
ok(ref $keys, 'SPLIT within key bounds answers');
$keys = [] unless ref $keys;
is(scan_parts($t, $keys, lower => key_bound(1000, 1), upper => key_bound(3000, 0)),
	scan($t, lower => key_bound(1000, 1), upper => key_bound(3000, 0)),
	'... and its parts read the bounded scan\'s rows');

# as of one snapshot while others commit
my $holder = ready();
my ($type, $payload) = request($holder, FRAME_SNAPSHOT, '');
is($type, FRAME_SNAPSHOT_OK, 'a snapshot is taken');
my $sf = pb_decode($payload);
my $snap = { id => $sf->{1}[0], key => $sf->{2}[0] };
my $late = begin();
is(write_batch($late, $t, map { [ $_, -1, 'late' ] } 0 .. 30000), '', 'another session writes over the range');
is(commit($late), '', '... and commits');
is(scan_parts($t, \@cuts, snapshot => $snap), $all, 'the parts as of the snapshot read its rows only');

# a session's own writes: the overlay is narrowed too
my $mine = begin();
is(write_batch($mine, $t, [ 3, 33, 'mine' ], [ 6000, 66, 'mine' ], [ 40000, 44, 'mine' ]), '',
	'a session writes three rows');
my $whole = scan($t, session => $mine);
my @nums = keys_of($whole);
is(scalar(@nums), 30001 + 1, 'a scan naming the session reads them over the stored rows (one new key)');
is(scan_parts($t, \@cuts, session => $mine), $whole, '... and so do its parts, each write once');
is(scan($t, session => $mine, raw_lower => raw_key($t, 5000), raw_upper => raw_key($t, 7000))
	  =~ tr/ //, 1999, 'a part of the session\'s scan reads the keys in its range only');
like(scan($t, session => $mine, raw_lower => raw_key($t, 5999), raw_upper => raw_key($t, 6001)),
	qr/^5999:-1:late 6000:66:mine$/, '... with the session\'s row in it');

# backward: the same rows, last key first
sub backward { my ($rows) = @_; return join(' ', reverse split / /, $rows) }
is(scan($t, reverse => 1, snapshot => $snap), backward($all), 'reverse: every row of the snapshot, last key first');
is(scan($t, reverse => 1, lower => key_bound(100, 1), upper => key_bound(200, 0)),
	backward(scan($t, lower => key_bound(100, 1), upper => key_bound(200, 0))), 'reverse: within key bounds');
@p = keys_of(scan($t, reverse => 1, lower => key_bound(100, 0), upper => key_bound(200, 1),
		raw_lower => raw_key($t, 150), raw_upper => raw_key($t, 300)));
is("@p", join(' ', reverse 150 .. 200), 'reverse: within raw and key bounds');
is(scan($t, reverse => 1, session => $mine), backward($whole),
	'reverse: the session\'s writes over the stored rows');
like(scan($t, reverse => 1, session => $mine, limit => 2), qr/^40000:44:mine 30000:-1:late$/,
	'reverse with limit: the last rows, the session\'s past the stored ones first');
like(scan($t, reverse => 1, session => $mine, lower => key_bound(2, 1), upper => key_bound(6, 1)),
	qr/^6:-1:late 5:-1:late 4:-1:late 3:33:mine 2:-1:late$/,
	'reverse: a key the session rewrote, once, between stored ones');
is(scan($t, reverse => 1, lower => key_bound(50000, 1)), '', 'reverse: an empty range reads nothing');
is(scan($other, reverse => 1), '', '... and so does an empty table');

# refused
like(scan($t, raw_lower => 'xy'), qr/^error 1: scan raw_lower is not a key of table "split"/,
	'a raw key shorter than a table id is ERROR_PROTOCOL');
like(scan($t, raw_upper => raw_key($other, 5)), qr/^error 1: scan raw_upper is not a key of table "split"/,
	'a raw key of another table is ERROR_PROTOCOL');
like(scan($t, raw_lower => "\xff" x 40), qr/^error 1: /, 'a raw key of garbage is ERROR_PROTOCOL');
like(split_keys($t, 0), qr/^error 1: split asks for no parts/, 'SPLIT of max_parts 0 is ERROR_PROTOCOL');
like(split_keys(987654, 4), qr/^error 4: /, 'SPLIT of an unknown table is ERROR_UNKNOWN_TABLE');
like(split_keys($t, 4, lower => pb_field_bytes(1, pb_field_bytes(3, 'x'))), qr/^error 1: /,
	'SPLIT with a bound that does not match the key is ERROR_PROTOCOL');
$keys = split_keys($t, 100000);
ok(ref $keys, 'SPLIT of a huge max_parts answers (capped)');

$ts->stop;
done_testing();
