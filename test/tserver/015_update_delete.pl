# 015_update_delete.pl
#	Updates and deletes in a write session, and scans that read an open
#	session, over the wire (protocol 4: WriteBatch.kind, BeginOk.session_key,
#	Scan.session_id and session_key; docs/protocol.md, docs/storage.md,
#	Updates and deletes, Reading a session).  With 1 MB of session memory:
#	- WRITE_UPDATE and WRITE_DELETE batches are published by a commit (an
#	  update of a key not stored stores the row, a delete of one deletes
#	  nothing) and leave nothing after an abort;
#	- under ON_CONFLICT_ERROR: an update of a stored key, a delete then an
#	  insert of a stored key, an insert then an update or a delete of a new
#	  key are not duplicates; an insert of a stored key is, and so is one
#	  before a delete of its key (DUPLICATE_KEY, nothing published);
#	- updates and deletes of a keyless table, and a batch of an unknown
#	  kind, are PROTOCOL errors that close the connection; the tserver
#	  keeps serving, another connection's session too;
#	- a Scan naming an open session (its id and key, on another connection)
#	  reads the session's inserts, updates, deletes and staged TRUNCATE
#	  merged over the committed rows, in key order, within lower and upper
#	  bounds; other scans read the committed rows only; a wrong key, an
#	  unknown id or a session already committed are PROTOCOL errors;
#	- a session that spilled: a scan of a narrow key range reads it, one
#	  of more than 1 MB of its spilled rows is refused with UNREADABLE (14);
#	- a spilled session with updates, deletes and deleted keys inserted
#	  again, its keys ascending or shuffled, under ON_CONFLICT_REPLACE,
#	  ERROR and IGNORE: read through the session in a range, and the table
#	  once published, hold the rows a model of the session computes;
#	- a TRUNCATE staged after 30000 spilled rows of the table (ascending or
#	  shuffled) and another table's: a scan through the session reads none
#	  of them, and the commit publishes exactly the rows written after it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use List::Util qw(sum0);
use Test::More;
use TcopyTest qw(:all);

use constant {
	FRAME_ABORT_OK => 13,
	WRITE_INSERT => 0,
	WRITE_UPDATE => 1,
	WRITE_DELETE => 2,
	TABLE_OP_TRUNCATE => 1,
	TABLE_OP_ON_CONFLICT => 5,
	ON_CONFLICT_REPLACE => 0,
	ON_CONFLICT_IGNORE => 1,
	ON_CONFLICT_ERROR => 2,
	KIND_INT => 2,
	KIND_BYTES => 4,
	ERROR_DUPLICATE_KEY => 12,
	ERROR_UNREADABLE => 14,
};

my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 1 ]);
$ts->start or die "tserver did not start";

# '' when two lists of rows (as scan returns them) are equal, else where
# they first differ, briefly.
sub first_difference
{
	my ($got, $want) = @_;
	my @g = split / /, $got;
	my @w = split / /, $want;
	for my $i (0 .. ($#g > $#w ? $#g : $#w))
	{
		my ($x, $y) = ($g[$i] // 'nothing', $w[$i] // 'nothing');
		return "row $i: got $x, want $y (" . scalar(@g) . ' rows, want ' . scalar(@w) . ')' if $x ne $y;
	}
	return '';
}

# ---- the protocol by hand ----

# Send a frame and read one reply: (type, payload).
sub request
{
	my ($sock, $type, $payload) = @_;
	TcopyTest::send_frame($sock, $type, $payload);
	return TcopyTest::read_frame($sock, 30);
}

sub ready
{
	return $ts->connect_ready // die "handshake failed";
}

# The code and message of an ERROR frame's payload.
sub error_of
{
	my ($payload) = @_;
	my $f = pb_decode($payload // '');
	return ($f->{1}[0] // 0, $f->{2}[0] // '');
}

# Column {name, kind, type_name, typmod -1}, as a Schema's field 1.
sub column
{
	my ($name, $kind, $type) = @_;
	return pb_field_bytes(1, pb_field_bytes(1, $name) . pb_field_varint(2, $kind)
		  . pb_field_bytes(3, $type) . pb_field_varint(4, ~0));
}

# Create table name (k int8, v int8, s bytes), keyed by k unless keyless;
# its id.
sub create_table
{
	my ($sock, $name, $keyless) = @_;
	my $schema = column('k', KIND_INT, 'int8') . column('v', KIND_INT, 'int8')
	  . column('s', KIND_BYTES, 'text') . ($keyless ? '' : pb_field_varint(2, 0));
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE,
		pb_field_bytes(1, $name) . pb_field_bytes(2, $schema) . pb_field_varint(3, 1));
	die "cannot create $name: frame " . ($type // 'none') unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

# A Row (k, v, s).
sub row
{
	my ($k, $v, $s) = @_;
	return pb_field_packed_sint64(1, $k, $v) . pb_field_bytes(3, $s);
}

sub zigzag_decode
{
	my ($n) = @_;
	return $n & 1 ? -(($n + 1) >> 1) : $n >> 1;
}

# A value of s as scan and model_rows show it: the long pad by its length.
sub show_s
{
	my ($s) = @_;
	return length($s) > 50 ? 'x' . length($s) : $s;
}

# A Row's [k, v, s].
sub row_values
{
	my ($bytes) = @_;
	my $f = pb_decode($bytes);
	my $packed = $f->{1}[0] // '';
	my @ints;
	my ($n, $shift) = (0, 0);
	for my $b (map { ord } split //, $packed)
	{
		$n |= ($b & 0x7F) << $shift;
		$shift += 7;
		next if $b & 0x80;
		push @ints, zigzag_decode($n);
		($n, $shift) = (0, 0);
	}
	return [ @ints, $f->{3}[0] // '' ];
}

# A session on sock: { sock, id, key, seq, rows }.
sub begin
{
	my ($sock) = @_;
	my ($type, $payload) = request($sock, FRAME_BEGIN, '');
	die "BEGIN: frame " . ($type // 'none') unless ($type // 0) == FRAME_BEGIN_OK;
	my $f = pb_decode($payload);
	return { sock => $sock, id => $f->{1}[0], key => $f->{2}[0] // '', seq => 0, rows => 0 };
}

# Set the session's on_conflict for table id.
sub set_on_conflict
{
	my ($session, $id, $policy) = @_;
	my ($type) = request($session->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_ON_CONFLICT)
		  . pb_field_varint(2, $id) . pb_field_varint(3, 1) . pb_field_varint(5, $policy));
	die "ON_CONFLICT: frame " . ($type // 'none') unless ($type // 0) == FRAME_TABLE_OP_OK;
}

# Write one batch of rows ([k, v, s] each) of kind; '' when acknowledged,
# else "frame T" or "error CODE: message".
sub write_batch
{
	my ($session, $id, $kind, @rows) = @_;
	my $seq = ++$session->{seq};
	my ($type, $payload) = request($session->{sock}, FRAME_WRITE, pb_field_varint(1, $seq)
		  . pb_field_varint(2, $id) . join('', map { pb_field_bytes(3, row(@$_)) } @rows)
		  . ($kind ? pb_field_varint(4, $kind) : ''));
	$session->{rows} += @rows;
	return '' if ($type // 0) == FRAME_ACK;
	return ($type // 0) == FRAME_ERROR ? 'error ' . join(': ', error_of($payload))
	  : 'frame ' . ($type // 'none');
}

# Commit: '' when committed, else as write_batch's.
sub commit
{
	my ($session) = @_;
	my ($type, $payload) = request($session->{sock}, FRAME_COMMIT,
		pb_field_varint(1, $session->{seq}) . pb_field_varint(2, $session->{rows}));
	return '' if ($type // 0) == FRAME_COMMIT_OK;
	return ($type // 0) == FRAME_ERROR ? 'error ' . join(': ', error_of($payload))
	  : 'frame ' . ($type // 'none');
}

# Run steps ([kind, rows...], or ['commit'], ['abort']) on a new session on
# a new connection, with on_conflict policy when defined; the first
# failure ('error CODE: ...'), or ''.
sub run_session
{
	my ($id, $policy, @steps) = @_;
	my $session = begin(ready());
	set_on_conflict($session, $id, $policy) if defined $policy;
	for my $step (@steps)
	{
		my ($what, @rows) = @$step;
		my $r;
		if ($what eq 'commit')
		{
			$r = commit($session);
		}
		elsif ($what eq 'abort')
		{
			my ($type) = request($session->{sock}, FRAME_ABORT, '');
			$r = ($type // 0) == FRAME_ABORT_OK ? '' : 'frame ' . ($type // 'none');
		}
		else
		{
			$r = write_batch($session, $id, $what, @rows);
		}
		if ($r ne '')
		{
			close($session->{sock});
			return $r;
		}
	}
	close($session->{sock});
	return '';
}

# KeyBound {key: Row of k, inclusive}.
sub bound
{
	my ($k, $inclusive) = @_;
	return pb_field_bytes(1, pb_field_packed_sint64(1, $k)) . ($inclusive ? pb_field_varint(2, 1) : '');
}

# Scan table id on sock; options session (reads it), lower and upper
# ([k, inclusive]), batch_rows.  The rows as "k:v:s" joined by spaces, or
# "error CODE: message".
sub scan
{
	my ($sock, $id, %opts) = @_;
	my $request = pb_field_varint(1, $id)
	  . ($opts{lower} ? pb_field_bytes(3, bound(@{ $opts{lower} })) : '')
	  . ($opts{upper} ? pb_field_bytes(4, bound(@{ $opts{upper} })) : '')
	  . pb_field_varint(5, $opts{batch_rows} // 0);
	if (my $session = $opts{session})
	{
		$request .= pb_field_varint(7, $opts{session_id} // $session->{id})
		  . pb_field_bytes(8, $opts{session_key} // $session->{key});
	}
	TcopyTest::send_frame($sock, FRAME_SCAN, $request);
	my @rows;
	for (;;)
	{
		my ($type, $payload) = TcopyTest::read_frame($sock, 60);
		return 'error ' . join(': ', error_of($payload)) if ($type // 0) == FRAME_ERROR;
		return 'frame ' . ($type // 'none') unless ($type // 0) == FRAME_SCAN_BATCH;
		my $batch = pb_decode($payload);
		push @rows, map { my $r = row_values($_); "$r->[0]:$r->[1]:" . show_s($r->[2]) } @{ $batch->{1} // [] };
		return join(' ', @rows) if $batch->{2} && $batch->{2}[0];
	}
}

# The "k:v:s" rows of a model (k => [v, s]) with keys in [lo, hi].
sub model_rows
{
	my ($model, $lo, $hi) = @_;
	return join(' ', map { "$_:$model->{$_}[0]:" . show_s($model->{$_}[1]) }
		  grep { $_ >= $lo && $_ <= $hi } sort { $a <=> $b } keys %$model);
}

my $conn = ready();

# ---- commit and abort ----
my $t = create_table($conn, 'ud');
is(run_session($t, undef, [ WRITE_INSERT, map { [ $_, $_, "s$_" ] } 1 .. 10 ], ['commit']), '',
	'10 rows inserted');
is(run_session($t, undef,
		[ WRITE_UPDATE, [ 2, 200, 'updated' ], [ 20, 20, 'update of a new key' ] ],
		[ WRITE_DELETE, [ 3, 0, '' ], [ 30, 0, '' ] ],
		[ WRITE_INSERT, [ 11, 11, 's11' ] ],
		['commit']), '', 'updates, deletes and an insert committed');
my %model = map { $_ => [ $_, "s$_" ] } 1 .. 11;
$model{2} = [ 200, 'updated' ];
delete $model{3};
$model{20} = [ 20, 'update of a new key' ];
is(scan($conn, $t), model_rows(\%model, 0, 1000),
	'published: 2 updated, 3 deleted, 20 stored by its update, the delete of 30 did nothing');
is(run_session($t, undef,
		[ WRITE_UPDATE, [ 1, -1, 'aborted' ] ],
		[ WRITE_DELETE, [ 4, 0, '' ] ],
		[ WRITE_INSERT, [ 12, 12, 'aborted' ] ],
		['abort']), '', 'updates, deletes and an insert aborted');
is(scan($conn, $t), model_rows(\%model, 0, 1000), 'an abort leaves the rows as they were');

# ---- ON_CONFLICT_ERROR ----
is(run_session($t, ON_CONFLICT_ERROR, [ WRITE_UPDATE, [ 5, 500, 'updated' ] ], ['commit']), '',
	'error: an update of a stored key is no duplicate');
$model{5} = [ 500, 'updated' ];
is(run_session($t, ON_CONFLICT_ERROR,
		[ WRITE_DELETE, [ 6, 0, '' ] ], [ WRITE_INSERT, [ 6, 600, 'inserted again' ] ], ['commit']),
	'', 'error: a delete, then an insert of the stored key is no duplicate');
$model{6} = [ 600, 'inserted again' ];
is(run_session($t, ON_CONFLICT_ERROR,
		[ WRITE_INSERT, [ 40, 40, 'new' ], [ 41, 41, 'new' ] ],
		[ WRITE_UPDATE, [ 40, 400, 'new, updated' ] ],
		[ WRITE_DELETE, [ 41, 0, '' ] ],
		[ WRITE_UPDATE, [ 7, 700, 'updated' ] ],
		[ WRITE_UPDATE, [ 7, 701, 'updated twice' ] ],
		['commit']),
	'', 'error: a new key inserted then updated or deleted, a stored one updated twice');
$model{40} = [ 400, 'new, updated' ];
$model{7} = [ 701, 'updated twice' ];
is(scan($conn, $t), model_rows(\%model, 0, 1000), 'error: the rows of those sessions');
like(run_session($t, ON_CONFLICT_ERROR, [ WRITE_INSERT, [ 8, 800, 'duplicate' ] ], ['commit']),
	qr/^error ${\ERROR_DUPLICATE_KEY}: Key \(k\)=\(8\) already exists\.$/,
	'error: an insert of a stored key is DUPLICATE_KEY');
like(run_session($t, ON_CONFLICT_ERROR,
		[ WRITE_INSERT, [ 9, 900, 'duplicate' ] ], [ WRITE_DELETE, [ 9, 0, '' ] ], ['commit']),
	qr/^error ${\ERROR_DUPLICATE_KEY}: Key \(k\)=\(9\) already exists\.$/,
	'error: an insert of a stored key before its delete is DUPLICATE_KEY');
is(scan($conn, $t), model_rows(\%model, 0, 1000), 'error: the failed sessions published nothing');

# ---- what the tserver refuses ----
my $nokey = create_table($conn, 'ud_nokey', 1);
is(run_session($nokey, undef, [ WRITE_INSERT, [ 1, 1, 'x' ] ], ['commit']), '', 'keyless: an insert');
my $other = begin(ready());
is(write_batch($other, $t, WRITE_UPDATE, [ 1, 100, 'other connection' ]), '',
	'another connection stages an update');
for my $case ([ 'an update of a keyless table', $nokey, WRITE_UPDATE, qr/has no key columns: its rows cannot be updated/ ],
			  [ 'a delete of a keyless table', $nokey, WRITE_DELETE, qr/has no key columns: its rows cannot be deleted/ ],
			  [ 'a batch of kind 7', $t, 7, qr/write batch of unknown kind 7/ ])
{
	my ($name, $id, $kind, $message) = @$case;
	my $sock = ready();
	my $session = begin($sock);
	like(write_batch($session, $id, $kind, [ 1, 1, 'x' ]), qr/^error ${\ERROR_PROTOCOL}: /,
		"$name: PROTOCOL");
	ok(TcopyTest::wait_closed($sock, 5), "$name: the connection is closed");
	is(scan(ready(), $nokey), '1:1:x', "$name: the tserver keeps serving");
}
my $sock = ready();
like(scan($sock, $nokey), qr/^1:1:x$/, 'the keyless table kept its row');
is(commit($other), '', "the other connection's session commits");
$model{1} = [ 100, 'other connection' ];
is(scan($conn, $t), model_rows(\%model, 0, 1000), '... with its update');

# ---- reading an open session ----
my $reader = ready();
my $session = begin(ready());
is(write_batch($session, $t, WRITE_INSERT, [ 50, 50, 'new' ], [ 0, 0, 'new first' ]), '', 'read: inserts');
is(write_batch($session, $t, WRITE_UPDATE, [ 1, 1000, 'read: updated' ], [ 50, 5000, 'new, updated' ]), '',
	'read: updates');
is(write_batch($session, $t, WRITE_DELETE, [ 2, 0, '' ], [ 11, 0, '' ], [ 99, 0, '' ]), '', 'read: deletes');
my %staged = %model;
$staged{0} = [ 0, 'new first' ];
$staged{1} = [ 1000, 'read: updated' ];
$staged{50} = [ 5000, 'new, updated' ];
delete @staged{ 2, 11 };
is(scan($reader, $t, session => $session), model_rows(\%staged, -1000, 1000),
	'read: a scan naming the session reads its writes over the committed rows, in key order');
is(scan($reader, $t, session => $session, batch_rows => 2), model_rows(\%staged, -1000, 1000),
	'read: ... also in batches of 2 rows');
is(scan($reader, $t), model_rows(\%model, -1000, 1000), 'read: a scan without it reads the committed rows');
is(scan($reader, $t, session => $session, lower => [ 1, 1 ], upper => [ 11, 0 ]),
	model_rows(\%staged, 1, 10), 'read: lower 1 inclusive, upper 11 exclusive');
is(scan($reader, $t, session => $session, lower => [ 1, 0 ], upper => [ 50, 1 ]),
	model_rows(\%staged, 2, 50), 'read: lower 1 exclusive, upper 50 inclusive');
is(scan($reader, $t, session => $session, lower => [ 2, 1 ], upper => [ 2, 1 ]), '',
	'read: the range of a deleted key is empty');
is(scan($reader, $t, session => $session, upper => [ 0, 1 ]), model_rows(\%staged, -1000, 0),
	'read: upper 0 inclusive');
is(write_batch($session, $t, WRITE_UPDATE, [ 0, -5, 'updated after a read' ]), '', 'read: another update');
$staged{0} = [ -5, 'updated after a read' ];
is(scan($reader, $t, session => $session, lower => [ 0, 1 ], upper => [ 0, 1 ]), '0:-5:updated after a read',
	'read: a later scan reads the later write');
like(scan(ready(), $t, session => $session, session_key => 'x' x 16), qr/^error ${\ERROR_SESSION_LOST}: /,
	'read: a wrong key is SESSION_LOST');
like(scan(ready(), $t, session => $session, session_key => ''), qr/^error ${\ERROR_SESSION_LOST}: /,
	'read: an empty key is SESSION_LOST');
like(scan(ready(), $t, session => $session, session_id => $session->{id} + 1000), qr/^error ${\ERROR_SESSION_LOST}: /,
	'read: an unknown session id is SESSION_LOST');
is(length($session->{key}), 16, 'read: BEGIN_OK gave a 16-byte key');
is(commit($session), '', 'read: the session commits');
is(scan(ready(), $t), model_rows(\%staged, -1000, 1000), 'read: it published what the scans read');
like(scan(ready(), $t, session => $session), qr/^error ${\ERROR_SESSION_LOST}: /,
	'read: a committed session can no longer be named (SESSION_LOST)');
%model = %staged;

# a staged TRUNCATE hides the stored rows, another table's writes do not show
my $t2 = create_table($conn, 'ud_truncated');
is(run_session($t2, undef, [ WRITE_INSERT, map { [ $_, $_, 'old' ] } 1 .. 5 ], ['commit']), '',
	'truncate: 5 rows stored');
$session = begin(ready());
my ($type) = request($session->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_TRUNCATE)
	  . pb_field_varint(2, $t2) . pb_field_varint(3, 1));
is($type, FRAME_TABLE_OP_OK, 'truncate: staged in a session');
is(scan($reader, $t2, session => $session), '', 'truncate: a scan naming the session reads no row');
is(write_batch($session, $t2, WRITE_INSERT, [ 3, 33, 'new' ]), '', 'truncate: then an insert');
is(write_batch($session, $t, WRITE_UPDATE, [ 1, 1, 'other table' ]), '', 'truncate: and an update of the other table');
is(scan($reader, $t2, session => $session), '3:33:new', 'truncate: the session reads its new row only');
is(scan($reader, $t2), '1:1:old 2:2:old 3:3:old 4:4:old 5:5:old', 'truncate: others read the stored rows');
is(write_batch($session, $t2, WRITE_UPDATE, [ 4, 44, 'updated after the truncate' ]), '',
	'truncate: an update of a truncated key');
is(scan($reader, $t2, session => $session), '3:33:new 4:44:updated after the truncate',
	'truncate: ... stores it, as its publish will');
my ($r_type) = request($session->{sock}, FRAME_ABORT, '');
is($r_type, FRAME_ABORT_OK, 'truncate: aborted');
is(scan($reader, $t2), '1:1:old 2:2:old 3:3:old 4:4:old 5:5:old', 'truncate: the rows are as they were');
is(scan($reader, $t), model_rows(\%model, -1000, 1000), "truncate: the other table's too");

# ---- a spilled session ----
# rows of about 130 bytes: 30000 of them stage about 4 MB, past 512 KB
my $pad = 'p' x 100;
sub shuffled
{
	my ($seed, @keys) = @_;
	srand($seed);
	for (my $i = $#keys; $i > 0; $i--)
	{
		my $j = int(rand($i + 1));
		@keys[ $i, $j ] = @keys[ $j, $i ];
	}
	return @keys;
}

# Whether the tserver's staging directory holds a session's spill.
sub spilled
{
	my $dir = $ts->data_dir . '/staging';
	opendir(my $dh, $dir) or return 0;
	return scalar(grep { !/^\.\.?$/ } readdir($dh)) > 0;
}

# Write rows of keys in batches of 1000; '' or the first failure.
sub write_many
{
	my ($session, $id, $kind, $make, @keys) = @_;
	while (my @chunk = splice(@keys, 0, 1000))
	{
		my $r = write_batch($session, $id, $kind, map { $make->($_) } @chunk);
		return $r if $r ne '';
	}
	return '';
}

{
	my $name = 'unreadable';
	my $id = create_table($conn, 'ud_unreadable');
	my $s = begin(ready());
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, 1 .. 30000), '', "$name: 30000 rows");
	like(scan($reader, $id, session => $s), qr/^error ${\ERROR_UNREADABLE}: .*spilled/,
		"$name: a scan of the whole table is refused with UNREADABLE");
	$reader = ready();
	is(scan($reader, $id, session => $s, lower => [ 100, 1 ], upper => [ 102, 1 ]),
		'100:100:x100 101:101:x100 102:102:x100', "$name: a scan of three keys reads them");
	is(scan($reader, $id), '', "$name: a scan without the session reads nothing");
	($type) = request($s->{sock}, FRAME_ABORT, '');
	is($type, FRAME_ABORT_OK, "$name: aborted");
}

# A spilled session of 30000 inserts (ascending or shuffled), then updates
# (v = -k) of 1000 keys spread over the range, deletes of 1000 others, and
# 100 of the deleted keys inserted again (v = 2k); under policy.  The
# session is read in a range through a scan naming it, then committed.
for my $order ('ascending', 'shuffled')
{
	for my $policy ([ 'replace', ON_CONFLICT_REPLACE ], [ 'error', ON_CONFLICT_ERROR ],
					[ 'ignore', ON_CONFLICT_IGNORE ])
	{
		my ($policy_name, $policy_value) = @$policy;
		my $name = "spilled, keys $order, $policy_name";
		my $id = create_table($conn, "ud_spilled_${order}_$policy_name");
		my @keys = 1 .. 30000;
		@keys = shuffled(15, @keys) if $order eq 'shuffled';
		my %m = map { $_ => [ $_, $pad ] } @keys;
		my @updated = grep { $_ % 30 == 1 } 1 .. 30000;
		my @deleted = grep { $_ % 30 == 2 } 1 .. 30000;
		my @again = @deleted[ grep { $_ % 10 == 0 } 0 .. $#deleted ];
		@updated = shuffled(16, @updated) if $order eq 'shuffled';
		my $s = begin(ready());
		set_on_conflict($s, $id, $policy_value);
		is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, @keys), '', "$name: inserts");
		is(write_many($s, $id, WRITE_UPDATE, sub { [ $_[0], -$_[0], 'updated' ] }, @updated), '',
			"$name: updates");
		$m{$_} = [ -$_, 'updated' ] for @updated;
		is(write_many($s, $id, WRITE_DELETE, sub { [ $_[0], 0, '' ] }, @deleted), '', "$name: deletes");
		delete @m{@deleted};
		is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], 2 * $_[0], 'again' ] }, @again), '',
			"$name: deleted keys inserted again");
		$m{$_} = [ 2 * $_, 'again' ] for @again;
		ok(spilled(), "$name: the session spilled");
		is(scan(ready(), $id, session => $s, lower => [ 14950, 1 ], upper => [ 15050, 1 ]),
			model_rows(\%m, 14950, 15050), "$name: read in a range through the session");
		is(commit($s), '', "$name: commits");
		my $rows = scan(ready(), $id);
		my @got = split / /, $rows;
		is(scalar(@got), scalar(keys %m), "$name: published " . scalar(keys %m) . ' rows');
		is(sum0(map { (split /:/)[1] } @got), sum0(map { $_->[0] } values %m), "$name: ... their sum of v");
		is(first_difference($rows, model_rows(\%m, 0, 1 << 30)), '', "$name: ... and they are the model's");
	}
}

# A TRUNCATE staged after the session wrote the table (issue 48): the
# table's rows staged before it, spilled in key order (direct SST files) or
# not (runs), another table's rows among them, are discarded at once: a
# scan through the session reads none of them, the rows written after the
# TRUNCATE (their keys among the discarded ones) are all it publishes, and
# the other table keeps its rows.
for my $order ('ascending', 'shuffled')
{
	my $name = "truncate after spilled writes, keys $order";
	my $id = create_table($conn, "ud_truncate_written_$order");
	my $other = create_table($conn, "ud_truncate_other_$order");
	is(run_session($id, undef, [ WRITE_INSERT, map { [ $_, $_, 'old' ] } 1 .. 5 ], ['commit']), '',
		"$name: 5 rows stored");
	my @keys = 1 .. 30000;
	@keys = shuffled(17, @keys) if $order eq 'shuffled';
	my $s = begin(ready());
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, @keys[ 0 .. 14999 ]), '',
		"$name: 15000 rows");
	is(write_many($s, $other, WRITE_INSERT, sub { [ $_[0], 1, 'other' ] }, 1 .. 500), '',
		"$name: 500 rows of another table");
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, @keys[ 15000 .. 29999 ]), '',
		"$name: 15000 more rows");
	is(write_batch($s, $id, WRITE_DELETE, [ 7, 0, '' ]), '', "$name: a delete");
	ok(spilled(), "$name: the session spilled");
	is(scan(ready(), $id, session => $s, lower => [ 100, 1 ], upper => [ 101, 1 ]), '100:100:x100 101:101:x100',
		"$name: a scan through the session reads them");
	my ($type) = request($s->{sock}, FRAME_TABLE_OP, pb_field_varint(1, TABLE_OP_TRUNCATE)
		  . pb_field_varint(2, $id) . pb_field_varint(3, 1));
	is($type, FRAME_TABLE_OP_OK, "$name: TRUNCATE staged");
	is(scan(ready(), $id, session => $s), '', "$name: a scan of the whole table through the session reads no row");
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], 7, 'after' ] }, 100 .. 119), '',
		"$name: 20 rows after the TRUNCATE, keys among the discarded ones");
	is(write_batch($s, $id, WRITE_UPDATE, [ 119, 8, 'updated after' ]), '', "$name: an update of one");
	my $want = join(' ', (map { "$_:7:after" } 100 .. 118), '119:8:updated after');
	is(scan(ready(), $id, session => $s), $want, "$name: the session reads only them");
	is(scan(ready(), $id), '1:1:old 2:2:old 3:3:old 4:4:old 5:5:old', "$name: others read the stored rows");
	is(commit($s), '', "$name: commits");
	is(scan(ready(), $id), $want, "$name: published exactly the rows after the TRUNCATE");
	my @got = split / /, scan(ready(), $other);
	is(scalar(@got), 500, "$name: the other table's rows are all published");
}

# A stored key deleted in one unsorted spill and inserted again in a later
# one, or in the last buffer, under ON_CONFLICT_ERROR: not a duplicate of
# the stored row (the delete went first), as on a heap table; inserted
# again without the delete, it is one.
for my $case ([ 1, 1 ], [ 1, 0 ], [ 0, 1 ])
{
	my ($delete, $after) = @$case;
	my $name = ($delete ? 'delete, spill, insert again' : 'insert of a stored key after a spill')
	  . ($after ? '' : ', last');
	my $id = create_table($conn, "ud_respill_$delete$after");
	my $s = begin(ready());
	is(write_batch($s, $id, WRITE_INSERT, map { [ $_, $_, 'old' ] } 1 .. 5), '', "$name: 5 rows");
	is(commit($s), '', "$name: stored");
	$s = begin(ready());
	set_on_conflict($s, $id, ON_CONFLICT_ERROR);
	is(write_batch($s, $id, WRITE_DELETE, [ 3, 0, '' ]), '', "$name: delete 3") if $delete;
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, shuffled(15, 100 .. 15099)),
		'', "$name: 15000 shuffled rows");
	ok(spilled(), "$name: the session spilled");
	is(write_batch($s, $id, WRITE_INSERT, [ 3, 33, 'again' ]), '', "$name: insert 3");
	is(write_many($s, $id, WRITE_INSERT, sub { [ $_[0], $_[0], $pad ] }, shuffled(16, 20000 .. 34999)),
		'', "$name: 15000 more shuffled rows") if $after;
	if ($delete)
	{
		is(commit($s), '', "$name: commits");
		is(scan(ready(), $id, lower => [ 1, 1 ], upper => [ 5, 1 ]), '1:1:old 2:2:old 3:33:again 4:4:old 5:5:old',
			"$name: 3 is the row inserted again");
	}
	else
	{
		like(commit($s), qr/^error ${\ERROR_DUPLICATE_KEY}: /, "$name: a duplicate key");
		is(scan(ready(), $id), '1:1:old 2:2:old 3:3:old 4:4:old 5:5:old', "$name: nothing published");
	}
}

$ts->check_log;
$ts->stop;
done_testing();
