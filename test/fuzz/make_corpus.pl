#!/usr/bin/perl
# make_corpus.pl
#	Write the seed corpus of fuzz_frames (test/fuzz/corpus/): valid
#	connections, each one input in fuzz_frames.c's format
#
#	  [flags] then frames [type][u16 big-endian length][protobuf payload]
#
#	against the tables the harness creates (1 kv, 2 log, 3 txt; see
#	fuzz_create_tables).  Deterministic: run it again and the files are the
#	same.  Usage: test/fuzz/make_corpus.pl [OUTDIR]
#
#	With --batch, write instead the seeds of fuzz_batch_decode
#	(test/fuzz/corpus_batch/): bare WriteBatch payloads, both as protobuf-c
#	packs them and in the other encodings a proto3 parser accepts (unpacked
#	repeated numbers, fields out of order, unknown fields, repeated
#	scalars, long varints), and a few malformed ones.
#	Usage: test/fuzz/make_corpus.pl --batch [OUTDIR]
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Path qw(make_path);
use TcopyTest qw(pb_varint pb_field_varint pb_field_bytes pb_field_packed_sint64 PROTOCOL_VERSION
  stored_record stored_key_int stored_value);

my $batch_mode = @ARGV && $ARGV[0] eq '--batch';
shift @ARGV if $batch_mode;
my $out = $ARGV[0] // ($batch_mode ? "$FindBin::Bin/corpus_batch" : "$FindBin::Bin/corpus");

use constant {
	OWN_HELLO => 1,
	TOKEN => 2,
	SCOPED => 4,			# the harness proves the token of namespace "k"
	DECODE_TOTAL => 8,		# frames share a 32 KiB decode budget
	F_HELLO => 2,
	F_OPEN_TABLE => 4,
	F_BEGIN => 6,
	F_WRITE => 8,
	F_COMMIT => 10,
	F_ABORT => 12,
	F_SCAN => 14,
	F_TABLE_OP => 16,
	F_STATS_REQUEST => 18,
	F_PREPARE => 21,
	F_RESOLVE => 23,
	F_LIST_PREPARED => 25,
	F_LIST_LABELS => 27,
	F_MODIFY => 29,
	F_ROLLBACK_TO => 31,
	F_SNAPSHOT => 33,
	F_STREAMS => 35,
	F_JOIN => 37,
	F_CHUNK => 39,
	F_BACKUP => 40,
	F_LIST_TABLES => 44,
	WRITE_UPDATE => 1,
	WRITE_DELETE => 2,
	ASSIGN_ADD => 1,
	KIND_BOOL => 1,
	KIND_INT => 2,
	KIND_FLOAT => 3,
	KIND_BYTES => 4,
	TRUNCATE => 1,
	DROP => 2,
	LOAD_LABEL => 3,
	FORGET_LABEL => 4,
	KEY => "\x5a" x 16,	# every session's and snapshot's (fuzz_frames.c)
};

sub frame
{
	my ($type, $payload) = @_;
	die "payload too long for a seed frame" if length $payload > 0xFFFF;
	return pack('Cn', $type, length $payload) . $payload;
}

# Row: ints (sint64, packed), floats (double, packed), blobs, nulls (packed)
sub row
{
	my (%f) = @_;
	my $m = '';
	$m .= pb_field_packed_sint64(1, @{ $f{ints} }) if $f{ints} && @{ $f{ints} };
	$m .= pb_field_bytes(2, pack('d<*', @{ $f{floats} })) if $f{floats} && @{ $f{floats} };
	$m .= join('', map { pb_field_bytes(3, $_) } @{ $f{blobs} // [] });
	$m .= pb_field_bytes(4, join('', map { pb_varint($_) } @{ $f{nulls} }))
	  if $f{nulls} && @{ $f{nulls} };
	return $m;
}

sub write_batch
{
	my ($seq, $table, @rows) = @_;
	return frame(F_WRITE, pb_field_varint(1, $seq) . pb_field_varint(2, $table)
		  . join('', map { pb_field_bytes(3, $_) } @rows));
}

sub commit
{
	my ($last_seq, $rows) = @_;
	return frame(F_COMMIT, pb_field_varint(1, $last_seq) . pb_field_varint(2, $rows));
}

# Prepare: last_seq, rows, gid
sub prepare
{
	my ($last_seq, $rows, $gid) = @_;
	return frame(F_PREPARE, pb_field_varint(1, $last_seq) . pb_field_varint(2, $rows)
		  . pb_field_bytes(3, $gid));
}

# Resolve: gid, commit
sub resolve
{
	my ($gid, $commit) = @_;
	return frame(F_RESOLVE, pb_field_bytes(1, $gid) . pb_field_varint(2, $commit ? 1 : 0));
}

sub list_prepared
{
	my ($prefix) = @_;
	return frame(F_LIST_PREPARED, length $prefix ? pb_field_bytes(1, $prefix) : '');
}

# TableOp: op, table, in_session
sub table_op
{
	my ($op, $table, $in_session) = @_;
	return frame(F_TABLE_OP, pb_field_varint(1, $op) . pb_field_varint(2, $table)
		  . ($in_session ? pb_field_varint(3, 1) : ''));
}

sub bound
{
	my ($inclusive, %key) = @_;
	return pb_field_bytes(1, row(%key)) . pb_field_varint(2, $inclusive);
}

# Scan: table, columns, lower, upper, batch_rows, limit, reverse
sub scan
{
	my (%s) = @_;
	my $m = pb_field_varint(1, $s{table});
	$m .= pb_field_bytes(2, join('', map { pb_varint($_) } @{ $s{columns} })) if $s{columns};
	$m .= pb_field_bytes(3, $s{lower}) if defined $s{lower};
	$m .= pb_field_bytes(4, $s{upper}) if defined $s{upper};
	$m .= pb_field_varint(5, $s{batch_rows}) if $s{batch_rows};
	$m .= pb_field_varint(6, $s{limit}) if $s{limit};
	$m .= pb_field_varint(10, $s{snapshot}) . pb_field_bytes(11, KEY) if $s{snapshot};
	$m .= pb_field_bytes(13, $s{filter}) if defined $s{filter};
	$m .= pb_field_varint(19, 1) if $s{reverse};
	return frame(F_SCAN, $m);
}

# Expr: op, args (Exprs' bytes), column, type, ints, floats, blobs
sub expr
{
	my (%e) = @_;
	my $m = pb_field_varint(1, $e{op});
	$m .= join('', map { pb_field_bytes(2, $_) } @{ $e{args} // [] });
	$m .= pb_field_varint(3, $e{column}) if $e{column};
	$m .= pb_field_varint(4, $e{type}) if $e{type};
	$m .= pb_field_packed_sint64(5, @{ $e{ints} }) if $e{ints};
	$m .= pb_field_bytes(6, pack('d<*', @{ $e{floats} })) if $e{floats};
	$m .= join('', map { pb_field_bytes(7, $_) } @{ $e{blobs} // [] });
	return $m;
}

sub column
{
	my ($name, $kind, $type, $form) = @_;
	return pb_field_bytes(1, pb_field_bytes(1, $name) . pb_field_varint(2, $kind)
		  . pb_field_bytes(3, $type) . (defined $form ? pb_field_bytes(5, $form) : ''));
}

# kv: id int (key), b bool, f float, s text, n int
sub kv_row
{
	my ($id, $s) = @_;
	return row(ints => [ $id, $id % 2, -$id * 1000 ], floats => [ $id / 4 ],
		blobs => [ $s // "row $id" ]);
}

# the same kv row in the stored form (WriteBatch.records)
sub kv_record
{
	my ($id, $s) = @_;
	return stored_record(stored_key_int($id),
		stored_value(bool => $id % 2, float => $id / 4, bytes => $s // "row $id",
			int => -$id * 1000));
}

sub write_records
{
	my ($seq, $table, @records) = @_;
	return frame(F_WRITE, pb_field_varint(1, $seq) . pb_field_varint(2, $table)
		  . pb_field_bytes(5, join('', @records)));
}

my %seeds;

$seeds{'01-kv-upsert-commit-scan'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 5)
  . write_batch(2, 1, map { kv_row($_, "again $_") } 3 .. 8)
  . commit(2, 11)
  . scan(table => 1)
  . scan(table => 1, columns => [ 3, 0 ], lower => bound(1, ints => [2]),
	upper => bound(0, ints => [6]), batch_rows => 2, limit => 3);

$seeds{'02-own-hello-create-abort-drop'} = chr(OWN_HELLO)
  . frame(F_HELLO, pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(2, 'seed'))
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'fz')
	  . pb_field_bytes(2, column('a', KIND_INT, 'int8') . column('b', KIND_BYTES, 'text')
		  . column('c', KIND_FLOAT, 'float4') . column('d', KIND_BOOL, 'bool')
		  . pb_field_bytes(2, pb_varint(0)))
	  . pb_field_varint(3, 1))
  . frame(F_BEGIN, '')
  . write_batch(1, 4, row(ints => [ 1, 1 ], floats => [0.5], blobs => ['x']),
	row(ints => [2], nulls => [ 1, 2, 3 ]))
  . frame(F_ABORT, '')
  . frame(F_TABLE_OP, pb_field_varint(1, TRUNCATE) . pb_field_varint(2, 4))
  . frame(F_TABLE_OP, pb_field_varint(1, DROP) . pb_field_varint(2, 4))
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv'));

# 4 batches of 10 rows of 200 bytes: several spills at 4 KiB of session memory
$seeds{'03-keyless-spill-commit'} = chr(0)
  . frame(F_BEGIN, '')
  . join('', map {
	my $b = $_;
	write_batch($b, 2, map { row(ints => [ $b * 100 + $_ ], blobs => [ chr(65 + $_) x 200 ]) } 0 .. 9)
  } 1 .. 4)
  . commit(4, 40)
  . scan(table => 2, batch_rows => 7);

my $inf = 9**9**9;
$seeds{'04-txt-bounds-specials'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 3,
	row(ints => [1], floats => [-0.0], blobs => ['a']),
	row(ints => [2], floats => [$inf], blobs => ["a\0b"]),
	row(ints => [-1], floats => [ -$inf ], blobs => ['b']),
	row(ints => [3], nulls => [2], blobs => ['']))
  . write_batch(2, 3, row(ints => [1], floats => [ $inf - $inf ], blobs => ['a']))
  . commit(2, 5)
  . scan(table => 3, lower => bound(1, blobs => ['a']), upper => bound(0, blobs => ['b'], ints => [0]))
  . scan(table => 3, columns => [2], limit => 2)
  . scan(table => 3, lower => bound(1, blobs => ['a']), reverse => 1, limit => 1);

$seeds{'05-token-stats-scan'} = chr(TOKEN)
  . frame(F_STATS_REQUEST, '')
  . frame(F_LIST_TABLES, '')
  . frame(F_LIST_TABLES, pb_field_bytes(1, 'k'))
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv'))
  . scan(table => 1);

$seeds{'06-three-tables-one-session'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, row(ints => [7], nulls => [ 1, 2, 3, 4 ]), kv_row(9))
  . write_batch(2, 3, row(ints => [ 5 ], floats => [1.5], blobs => ['k']))
  . write_batch(3, 2, row(ints => [1], blobs => ["\x00\xff"]), row(nulls => [ 0, 1 ]))
  . commit(3, 5)
  . frame(F_STATS_REQUEST, '');

$seeds{'07-write-before-begin'} = chr(0) . write_batch(1, 1, kv_row(1));

# overlapping keys across spilled runs: the last write of each key wins
$seeds{'08-kv-spill-upsert'} = chr(0)
  . frame(F_BEGIN, '')
  . join('', map {
	my $b = $_;
	write_batch($b, 1, map { kv_row($_, "$b:" . ('v' x 300)) } ($b * 5) .. ($b * 5 + 9))
  } 1 .. 3)
  . commit(3, 30)
  . scan(table => 1, batch_rows => 4)
  . frame(F_TABLE_OP, pb_field_varint(1, TRUNCATE) . pb_field_varint(2, 1))
  . scan(table => 1);

$seeds{'09-own-hello-wrong-token'} = chr(OWN_HELLO | TOKEN)
  . frame(F_HELLO, pb_field_varint(1, PROTOCOL_VERSION) . pb_field_bytes(3, "\x01" x 32))
  . frame(F_STATS_REQUEST, '');

# two-phase commit: a session with table operations prepared, listed,
# published, and resolved once more (not found)
$seeds{'10-prepare-ops-resolve-commit'} = chr(0)
  . frame(F_BEGIN, '')
  . table_op(TRUNCATE, 3, 1)
  . write_batch(1, 1, map { kv_row($_) } 1 .. 4)
  . table_op(DROP, 2, 1)
  . write_batch(2, 3, row(ints => [1], floats => [2.5], blobs => ['t']))
  . prepare(2, 5, 'seed:10')
  . list_prepared('seed:')
  . resolve('seed:10', 1)
  . resolve('seed:10', 1)
  . scan(table => 1)
  . frame(F_STATS_REQUEST, '');

# a spilled (unsorted) session prepared, then discarded
$seeds{'11-prepare-spilled-abort'} = chr(0)
  . frame(F_BEGIN, '')
  . join('', map {
	my $b = $_;
	write_batch($b, 1, map { kv_row($_, "$b:" . ('w' x 300)) } reverse(($b * 5) .. ($b * 5 + 9)))
  } 1 .. 3)
  . table_op(TRUNCATE, 3, 1)
  . prepare(3, 30, 'seed:11')
  . list_prepared('')
  . resolve('seed:11', 0)
  . scan(table => 1);

# a sorted spilled keyless session prepared and published
$seeds{'12-keyless-spill-prepare-commit'} = chr(0)
  . frame(F_BEGIN, '')
  . join('', map {
	my $b = $_;
	write_batch($b, 2, map { row(ints => [ $b * 100 + $_ ], blobs => [ chr(97 + $_) x 200 ]) } 0 .. 9)
  } 1 .. 4)
  . prepare(4, 40, 'seed:12')
  . resolve('seed:12', 1)
  . scan(table => 2, batch_rows => 9);

# refused: BEGIN while the connection's prepared session is unresolved
$seeds{'13-begin-after-prepare'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, kv_row(1))
  . prepare(1, 1, 'seed:13')
  . frame(F_BEGIN, '');

# a session's TRUNCATE of a table it wrote to: its rows staged before go
$seeds{'14-truncate-after-write'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, kv_row(1))
  . table_op(TRUNCATE, 1, 1);

# resolving what is not prepared, then an empty global id (refused)
$seeds{'15-resolve-not-found'} = chr(0)
  . resolve('nothing', 1)
  . list_prepared('n')
  . resolve('', 0);

# scoped to namespace "k": kv (id 1) once opened, and nothing else
$seeds{'16-scoped-kv-then-log'} = chr(TOKEN | SCOPED)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv'))
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 3)
  . commit(1, 3)
  . scan(table => 1)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'log'));
$seeds{'17-scoped-id-not-opened'} = chr(TOKEN | SCOPED)
  . scan(table => 2);
$seeds{'18-scoped-prepare-list-resolve'} = chr(SCOPED)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv'))
  . frame(F_BEGIN, '')
  . table_op(TRUNCATE, 1, 1)
  . write_batch(1, 1, kv_row(7))
  . prepare(1, 1, 'seed:18')
  . list_prepared('')
  . resolve('seed:18', 0)
  . frame(F_TABLE_OP, pb_field_varint(1, DROP) . pb_field_varint(2, 3));
# with the total decode budget: a small batch passes, a large one does not
$seeds{'19-decode-total'} = chr(DECODE_TOTAL)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, kv_row(1))
  . write_batch(2, 1, map { row(ints => [$_]) } 1 .. 500);

# a table of no columns: empty rows written, committed, counted by scans,
# truncated and dropped
$seeds{'20-zero-columns'} = chr(0)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'nocols') . pb_field_bytes(2, '') . pb_field_varint(3, 1))
  . frame(F_BEGIN, '')
  . write_batch(1, 4, row(), row(), row())
  . write_batch(2, 4, row())
  . commit(2, 4)
  . scan(table => 4)
  . scan(table => 4, batch_rows => 3, limit => 2)
  . frame(F_TABLE_OP, pb_field_varint(1, TRUNCATE) . pb_field_varint(2, 4))
  . scan(table => 4)
  . frame(F_TABLE_OP, pb_field_varint(1, DROP) . pb_field_varint(2, 4));

# load labels: claimed twice in a session (CLAIMED, OWN), published by a
# commit, refused in the next session (PUBLISHED), prepared with a label,
# resolved, listed, forgotten; then claimed outside a session (PROTOCOL)
sub label_op
{
	my ($op, $table, $label, $in_session) = @_;
	return frame(F_TABLE_OP, pb_field_varint(1, $op) . pb_field_varint(2, $table)
		  . ($in_session ? pb_field_varint(3, 1) : '') . pb_field_bytes(4, $label));
}
$seeds{'22-load-labels'} = chr(0)
  . frame(F_BEGIN, '')
  . label_op(LOAD_LABEL, 1, 'load-1', 1)
  . label_op(LOAD_LABEL, 1, 'load-1', 1)
  . write_batch(1, 1, kv_row(1), kv_row(2))
  . commit(1, 2)
  . frame(F_BEGIN, '')
  . label_op(LOAD_LABEL, 1, 'load-1', 1)
  . label_op(LOAD_LABEL, 1, 'load-2', 1)
  . write_batch(1, 1, kv_row(3))
  . prepare(1, 1, 'seed:22')
  . resolve('seed:22', 1)
  . frame(F_LIST_LABELS, pb_field_varint(1, 1))
  . label_op(FORGET_LABEL, 1, 'load-1', 0)
  . frame(F_LIST_LABELS, pb_field_varint(1, 1))
  . label_op(LOAD_LABEL, 1, 'load-3', 0);

# updates and deletes in a session, a direct modify adding to n of keys
# 1..5, a savepoint's rollback to after the first two batches, then the
# commit; a scan naming a session by a key it does not hold (refused)
sub write_kind
{
	my ($seq, $table, $kind, @rows) = @_;
	return frame(F_WRITE, pb_field_varint(1, $seq) . pb_field_varint(2, $table)
		  . join('', map { pb_field_bytes(3, $_) } @rows) . pb_field_varint(4, $kind));
}
$seeds{'23-update-delete-modify-rollback'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 6)
  . write_kind(2, 1, WRITE_UPDATE, kv_row(2, 'updated'))
  . write_kind(3, 1, WRITE_DELETE, kv_row(3))
  . frame(F_MODIFY, pb_field_varint(1, 4) . pb_field_varint(2, 1) . pb_field_varint(3, WRITE_UPDATE)
	  . pb_field_bytes(4, bound(1, ints => [1])) . pb_field_bytes(5, bound(1, ints => [5]))
	  . pb_field_bytes(6, pb_field_varint(1, 4) . pb_field_varint(2, ASSIGN_ADD)
		  . pb_field_varint(3, zigzag(-1000000)) . pb_field_varint(4, zigzag(1000000)))
	  . pb_field_bytes(7, row(ints => [7])))
  . frame(F_ROLLBACK_TO, pb_field_varint(1, 2) . pb_field_varint(2, 7))
  . commit(2, 7)
  . scan(table => 1)
  . frame(F_SCAN, pb_field_varint(1, 1) . pb_field_varint(7, 1) . pb_field_bytes(8, "\0" x 16));

# snapshots: one taken before a commit reads none of its rows; a session
# begun on it may not update a row committed since (CONCURRENT_UPDATE)
sub begin_at
{
	my ($snapshot) = @_;
	return frame(F_BEGIN, pb_field_varint(1, $snapshot) . pb_field_bytes(2, KEY));
}
$seeds{'24-snapshot-concurrent-update'} = chr(0)
  . frame(F_SNAPSHOT, '')
  . scan(table => 1, snapshot => 1)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 3)
  . commit(1, 3)
  . scan(table => 1, snapshot => 1)
  . begin_at(1)
  . write_kind(1, 1, WRITE_UPDATE, kv_row(2, 'late'));

# a session begun on a snapshot updates and deletes, commits; the snapshot
# still reads the old rows; another snapshot replaces it (then not found)
$seeds{'25-snapshot-session-commit'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 3)
  . commit(1, 3)
  . frame(F_SNAPSHOT, '')
  . begin_at(1)
  . write_kind(1, 1, WRITE_UPDATE, kv_row(2, 'updated'))
  . write_kind(2, 1, WRITE_DELETE, kv_row(3))
  . commit(2, 2)
  . scan(table => 1, snapshot => 1, batch_rows => 2)
  . scan(table => 1)
  . frame(F_SNAPSHOT, '')
  . scan(table => 1, snapshot => 2)
  . scan(table => 1, snapshot => 1);

# streams of a session: opened and closed with nothing staged by them
# (the rows its own connection wrote before count), committed; then a JOIN
# of a session no longer there (SESSION_LOST)
$seeds{'26-streams-open-close'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 2)
  . frame(F_STREAMS, pb_field_varint(1, 1))
  . frame(F_STREAMS, pb_field_varint(2, 0) . pb_field_varint(3, 2))
  . commit(1, 2)
  . frame(F_JOIN, pb_field_varint(1, 1) . pb_field_bytes(2, KEY));

# streams open: the session's own write is refused
$seeds{'27-streams-own-write'} = chr(0)
  . frame(F_BEGIN, '')
  . frame(F_STREAMS, pb_field_varint(1, 1))
  . write_batch(1, 1, kv_row(1))
  . frame(F_CHUNK, pb_field_varint(1, 1));

# skips on the session's own connection: chunks 1-2, then 3 with last; a
# rollback ends the streams; opened again, chunk 1 skipped, closed naming
# it, committed
$seeds{'28-streams-skips'} = chr(0)
  . frame(F_BEGIN, '')
  . frame(F_STREAMS, pb_field_varint(1, 1))
  . frame(F_CHUNK, pb_field_varint(1, 1) . pb_field_varint(5, 2))
  . frame(F_CHUNK, pb_field_varint(1, 3) . pb_field_varint(5, 3) . pb_field_varint(4, 1))
  . frame(F_ROLLBACK_TO, pb_field_varint(1, 0) . pb_field_varint(2, 0))
  . frame(F_STREAMS, pb_field_varint(1, 1))
  . frame(F_CHUNK, pb_field_varint(1, 1) . pb_field_varint(5, 1))
  . frame(F_STREAMS, pb_field_varint(2, 1) . pb_field_varint(3, 0))
  . commit(0, 0);

# backups: the harness allows them only under a directory that does not
# exist (fuzz_frames.c), so each is refused, and each refusal ends its
# connection: a path outside it, one of every malformed kind, a scoped
# client, a backup in a session
sub backup { my ($dir) = @_; return frame(F_BACKUP, pb_field_bytes(1, $dir)); }
$seeds{'29-backup-outside-root'} = chr(0) . backup('/tmp/tcopy-fuzz-backup');
$seeds{'30-backup-in-root'} = chr(0) . backup('/nonexistent/tcopy-fuzz-backups/b1');
$seeds{'31-backup-relative'} = chr(0) . backup('backups/b1');
$seeds{'32-backup-nul'} = chr(0) . backup("/nonexistent/tcopy-fuzz-backups/b\0x");
$seeds{'33-backup-not-utf8'} = chr(0) . backup("/nonexistent/tcopy-fuzz-backups/\xff\xfe");
$seeds{'34-backup-too-long'} = chr(0) . backup('/' . 'a' x 1100);
$seeds{'35-backup-dot-dot'} = chr(0) . backup('/nonexistent/tcopy-fuzz-backups/../b');
$seeds{'36-backup-scoped'} = chr(TOKEN | SCOPED) . backup('/nonexistent/tcopy-fuzz-backups/b2');
$seeds{'37-backup-in-session'} = chr(0) . frame(F_BEGIN, '')
  . backup('/nonexistent/tcopy-fuzz-backups/b3');

# filters on kv (id int, b bool, f float, s text, n int): AND, OR, NOT,
# IN, IS NULL, floats, bytes; then VALUE_BE_INT on s, whose 5-byte values
# are no big-endian integer (ERROR_STORAGE)
$seeds{'38-kv-filter-scan'} = chr(0)
  . frame(F_BEGIN, '')
  . write_batch(1, 1, map { kv_row($_) } 1 .. 9)
  . commit(1, 9)
  . scan(table => 1, columns => [0], filter => expr(op => 1, args => [
		expr(op => 12, column => 0, type => 1, ints => [ 2, 3, 5, 7 ]),
		expr(op => 2, args => [ expr(op => 3, args => [ expr(op => 6, column => 1, type => 1, ints => [1]) ]),
			expr(op => 4, column => 3), expr(op => 10, column => 2, type => 2, floats => [0.5]) ]),
		expr(op => 7, column => 3, type => 3, blobs => ['row 5']) ]))
  . scan(table => 1, limit => 2, batch_rows => 1, filter => expr(op => 9, column => 4, type => 1, ints => [-3000]))
  . scan(table => 1, filter => expr(op => 6, column => 3, type => 4, ints => [0]));

# kv's schema with forms: added to the stored one, then a type renamed
# (same forms), then another form (SCHEMA_MISMATCH)
sub kv_schema
{
	my ($s_type, $s_form) = @_;
	return pb_field_bytes(2, column('id', KIND_INT, 'int4', 'int4')
		  . column('b', KIND_BOOL, 'bool', 'bool') . column('f', KIND_FLOAT, 'float8', 'float8')
		  . column('s', KIND_BYTES, $s_type, $s_form) . column('n', KIND_INT, 'int8', 'int8')
		  . pb_field_bytes(2, pb_varint(0)));
}
$seeds{'21-forms-added-renamed'} = chr(0)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv') . kv_schema('text', 'text'))
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv') . kv_schema('words', 'text'))
  . scan(table => 1)
  . frame(F_OPEN_TABLE, pb_field_bytes(1, 'kv') . kv_schema('words', 'bytea'));

# a field of any wire type: tag, then the value's bytes as given
sub pb_raw
{
	my ($field, $wire, $bytes) = @_;
	return pb_varint(($field << 3) | $wire) . $bytes;
}

sub zigzag { my ($v) = @_; return $v >= 0 ? 2 * $v : -2 * $v - 1; }

# rows in the stored form: inserted, updated, deleted, committed, scanned;
# then records the tserver refuses (a tag of 2, a value short of a column,
# a length past the end, a long varint, rows and records together)
$seeds{'39-kv-records'} = chr(0)
  . frame(F_BEGIN, '')
  . write_records(1, 1, map { kv_record($_) } 1 .. 5)
  . frame(F_WRITE, pb_field_varint(1, 2) . pb_field_varint(2, 1) . pb_field_varint(4, WRITE_UPDATE)
	  . pb_field_bytes(5, kv_record(2, 'updated')))
  . frame(F_WRITE, pb_field_varint(1, 3) . pb_field_varint(2, 1) . pb_field_varint(4, WRITE_DELETE)
	  . pb_field_bytes(5, stored_record(stored_key_int(3), '')))
  . commit(3, 7)
  . scan(table => 1);
$seeds{'40-kv-records-refused'} = chr(0)
  . frame(F_BEGIN, '')
  . write_records(1, 1, stored_record(stored_key_int(1), "\x02"))
  . write_records(1, 1, stored_record(stored_key_int(1), stored_value(bool => 1)))
  . write_records(1, 1, kv_record(1) . "\x08\x01")
  . write_records(1, 1, stored_record(stored_key_int(1),
	  stored_value(bool => 1, float => 0.5, bytes => 'x') . "\x01\x80\x00"))
  . frame(F_WRITE, pb_field_varint(1, 1) . pb_field_varint(2, 1)
	  . pb_field_bytes(3, kv_row(1)) . pb_field_bytes(5, kv_record(2)));

if ($batch_mode)
{
	my %batch;
	my $rows = join('', map { pb_field_bytes(3, kv_row($_)) } 1 .. 5);

	$batch{'b01-packed'} = pb_field_varint(1, 1) . pb_field_varint(2, 1) . $rows;
	$batch{'b02-empty'} = '';
	$batch{'b03-empty-rows-and-blobs'} = pb_field_varint(1, 2)
	  . pb_field_bytes(3, '') . pb_field_bytes(3, row(blobs => [ '', '', 'x' ]))
	  . pb_field_bytes(3, '');
	$batch{'b04-unpacked-ints-nulls-floats'} = pb_field_varint(1, 3) . pb_field_bytes(3,
		pb_field_varint(1, zigzag(-5)) . pb_field_varint(1, zigzag(7))
		  . pb_raw(2, 1, pack('d<', 2.5)) . pb_field_varint(4, 1) . pb_field_varint(4, 3)
		  . pb_field_packed_sint64(1, 9, -9) . pb_raw(2, 1, pack('d<', -1)));
	$batch{'b05-out-of-order'} = pb_field_bytes(3, pb_field_bytes(3, 'blob')
		  . pb_field_bytes(4, pb_varint(2)) . pb_field_packed_sint64(1, 1, 2))
	  . pb_field_varint(2, 3) . pb_field_bytes(3, row(ints => [3])) . pb_field_varint(1, 4);
	$batch{'b06-unknown-fields'} = pb_raw(9, 0, pb_varint(300)) . pb_raw(10, 1, 'x' x 8)
	  . pb_field_varint(1, 5) . pb_raw(11, 5, 'y' x 4) . pb_field_bytes(12, 'unknown')
	  . pb_field_bytes(3, pb_raw(7, 0, pb_varint(1)) . pb_field_packed_sint64(1, 4)
		  . pb_raw(8, 5, 'zzzz') . pb_raw(9, 1, 'w' x 8) . pb_field_bytes(5, 'u'))
	  . pb_raw(536870911, 0, chr(0));
	$batch{'b07-duplicate-seq-table'} = pb_field_varint(1, 1) . pb_field_varint(2, 9)
	  . $rows . pb_field_varint(1, 6) . pb_field_varint(2, 1);
	# 10-byte varints, non-minimal encodings, a 5-byte tag, a multi-byte tag 0
	$batch{'b08-long-varints'} = pb_raw(1, 0, "\xff" x 9 . "\x01")
	  . pb_raw(2, 0, "\xff" x 9 . "\x7f") . "\x90\x80\x80\x80\x00" . "\x81\x00"
	  . "\x80\x00" . "\x05" . pb_field_bytes(3, pb_raw(1, 0, "\x80" x 9 . "\x00")
		  . pb_field_bytes(1, "\xff" x 9 . "\x01" . "\x81\x00") . pb_raw(4, 0, "\xff" x 4 . "\x7f"));
	$batch{'b09-packed-floats'} = pb_field_bytes(3, pb_field_bytes(2, pack('d<*', 0.5, -0.0, 9**9**9))
		  . pb_field_bytes(2, '') . pb_field_bytes(1, ''));
	# malformed: protobuf-c refuses each
	$batch{'b10-bad-truncated-length'} = pb_field_varint(1, 1) . "\x1a\x05ab";
	$batch{'b11-bad-floats-not-8'} = pb_field_bytes(3, pb_field_bytes(2, 'x' x 7));
	$batch{'b12-bad-wire-type'} = pb_raw(3, 0, "\x01");
	$batch{'b13-bad-packed-tail'} = pb_field_bytes(3, pb_field_bytes(1, "\x02\x81"));
	$batch{'b14-bad-group'} = pb_raw(5, 3, '');
	$batch{'b15-bad-tag-zero'} = "\x00\x00";
	# records: once, twice (the later replaces the earlier), empty, beside rows
	$batch{'b16-records'} = pb_field_varint(1, 1) . pb_field_varint(2, 1)
	  . pb_field_bytes(5, kv_record(1) . kv_record(2));
	$batch{'b17-records-twice'} = pb_field_bytes(5, kv_record(1)) . pb_field_bytes(5, '')
	  . pb_field_bytes(5, kv_record(3)) . $rows;
	$batch{'b18-bad-records-wire-type'} = pb_raw(5, 0, "\x01");
	%seeds = %batch;
}

make_path($out);
for my $name (sort keys %seeds)
{
	open(my $fh, '>:raw', "$out/$name") or die "$out/$name: $!";
	print $fh $seeds{$name};
	close $fh or die "$out/$name: $!";
}
printf "%d seeds in %s\n", scalar(keys %seeds), $out;
