# 033_scan_filter.pl
#	Scan.filter on a real tserver: the rows a filter passes (three-valued,
#	on columns the scan does not project), LIMIT and batches counting only
#	those, an empty batch that is not the last after many rows filtered
#	out; and malformed filters (unknown operator, column out of range, a
#	type that does not fit the column, no constant, nested too deep, in the
#	message or in its bytes before they are unpacked), each answered with
#	ERROR_PROTOCOL and a closed connection while the server lives on.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all error_of pb_varints);

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

# pgbench's shape: aid int key, bid int, abalance int (all 5), filler bytes
my $ROWS = 70_000;
my $r = $ts->cli('load', 'm', '--rows', $ROWS, '--value', 5);
is($r->{rc}, 0, "table m created with $ROWS rows") or diag($r->{err});

# ExprOp and ValueType (proto/tcopy.proto)
my %OP = (AND => 1, OR => 2, NOT => 3, IS_NULL => 4, IS_NOT_NULL => 5, EQ => 6, NE => 7,
	LT => 8, LE => 9, GT => 10, GE => 11, IN => 12);
my %TYPE = (INT => 1, FLOAT => 2, BYTES => 3, BE_INT => 4);

# An Expr's bytes: op, args (bytes of Exprs), column, type, ints, floats.
sub expr
{
	my (%e) = @_;
	my $m = pb_field_varint(1, $e{op});
	$m .= join('', map { pb_field_bytes(2, $_) } @{ $e{args} // [] });
	$m .= pb_field_varint(3, $e{column}) if $e{column};
	$m .= pb_field_varint(4, $e{type}) if $e{type};
	$m .= pb_field_packed_sint64(5, @{ $e{ints} }) if $e{ints};
	$m .= pb_field_bytes(6, pack('d<*', @{ $e{floats} })) if $e{floats};
	return $m;
}

sub leaf
{
	my ($op, $column, @ints) = @_;
	return expr(op => $OP{$op}, column => $column, type => $TYPE{INT}, ints => \@ints);
}

sub scan_msg
{
	my ($table_id, %s) = @_;
	my $m = pb_field_varint(1, $table_id);
	$m .= pb_field_bytes(2, join('', map { pb_varint($_) } @{ $s{columns} })) if $s{columns};
	$m .= pb_field_varint(5, $s{batch_rows}) if $s{batch_rows};
	$m .= pb_field_varint(6, $s{limit}) if $s{limit};
	$m .= pb_field_bytes(13, $s{filter}) if defined $s{filter};
	return $m;
}

sub open_m
{
	my ($sock) = @_;
	my ($type, $payload) = TcopyTest::request($sock, FRAME_OPEN_TABLE, pb_field_bytes(1, 'm'));
	die "OPEN_TABLE m: no TABLE_INFO" unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

# The aids a filter passes (projecting aid alone), the batches' sizes, and
# the rows they say the filter removed (ScanBatch.filtered).
sub filtered_aids
{
	my (%s) = @_;
	my $sock = $ts->connect_ready or die "handshake failed";
	my $id = open_m($sock);
	TcopyTest::send_frame($sock, FRAME_SCAN, scan_msg($id, columns => [0], %s));
	my (@aids, @sizes);
	my $filtered = 0;
	for (;;)
	{
		my ($type, $payload) = TcopyTest::read_frame($sock, 30);
		return ('error ' . join(': ', error_of($payload // ''))) if ($type // 0) == FRAME_ERROR;
		return ('frame ' . ($type // 'none')) unless ($type // 0) == FRAME_SCAN_BATCH;
		my $f = pb_decode($payload);
		push @sizes, scalar @{ $f->{1} // [] };
		$filtered += $f->{4}[0] // 0;
		for my $row (@{ $f->{1} // [] })
		{
			my ($v) = pb_varints(pb_decode($row)->{1}[0] // '');
			push @aids, $v & 1 ? -(($v + 1) >> 1) : $v >> 1;
		}
		last if $f->{2} && $f->{2}[0];
	}
	close $sock;
	return (join(',', @aids), \@sizes, $filtered);
}

my ($aids, $sizes, $filtered);
($aids, $sizes, $filtered) = filtered_aids(filter => leaf('IN', 0, 5, 17, 69_999, 123_456));
is($aids, '5,17,69999', 'aid IN (5, 17, 69999, 123456)');
is($filtered, $ROWS - 3, '... and the batches say the other rows were filtered out');
($aids) = filtered_aids(filter => expr(op => $OP{AND},
		args => [ expr(op => $OP{NOT}, args => [ leaf('GE', 0, 10) ]), leaf('EQ', 2, 5) ]));
is($aids, '1,2,3,4,5,6,7,8,9', 'NOT (aid >= 10) AND abalance = 5, abalance not projected');
($aids) = filtered_aids(filter => expr(op => $OP{OR},
		args => [ leaf('LT', 0, 3), expr(op => $OP{IS_NULL}, column => 3), leaf('GT', 0, 69_998) ]));
is($aids, '1,2,69999,70000', 'aid < 3 OR filler IS NULL OR aid > 69998');
($aids) = filtered_aids(filter => leaf('NE', 2, 5));
is($aids, '', 'abalance <> 5: no row');
($aids, $sizes) = filtered_aids(filter => leaf('GT', 0, 100), limit => 3, batch_rows => 2);
is($aids, '101,102,103', 'LIMIT 3 counts the rows that pass');
is("@$sizes", '2 1', '... in batches of 2 rows that pass');
($aids, $sizes) = filtered_aids(filter => leaf('EQ', 0, $ROWS));
is($aids, $ROWS, "aid = $ROWS");
ok(@$sizes >= 2 && $sizes->[0] == 0,
	'after 65536 rows filtered out, an empty batch that is not the last')
  or diag("batch sizes: @$sizes");
my ($float_filter) = filtered_aids(filter => expr(op => $OP{EQ}, column => 0, type => $TYPE{FLOAT},
		floats => [1.0]));
like($float_filter, qr/^error ${\ ERROR_PROTOCOL}: /, 'a float compared with an int column: ERROR_PROTOCOL');

# malformed filters: ERROR_PROTOCOL, the connection closed, the server alive
my $deep = leaf('EQ', 0, 1);
$deep = expr(op => $OP{NOT}, args => [$deep]) for 1 .. 64;
my $raw_deep = '';
$raw_deep = pb_field_bytes(2, $raw_deep) for 1 .. 20_000;
my @bad = (
	[ 'an unknown operator', expr(op => 99, column => 0, type => $TYPE{INT}, ints => [1]) ],
	[ 'EXPR_NONE', expr(op => 0) ],
	[ 'a column out of range', leaf('EQ', 9, 1) ],
	[ 'IS NULL of a column out of range', expr(op => $OP{IS_NULL}, column => 4) ],
	[ 'BE_INT on an INT column', expr(op => $OP{EQ}, column => 1, type => $TYPE{BE_INT}, ints => [1]) ],
	[ 'ordering bytes', expr(op => $OP{LT}, column => 3, type => $TYPE{BYTES}) ],
	[ 'a comparison with no constant', leaf('EQ', 0) ],
	[ 'a comparison with two constants', leaf('EQ', 0, 1, 2) ],
	[ 'AND of one', expr(op => $OP{AND}, args => [ leaf('EQ', 0, 1) ]) ],
	[ 'NOT with a column', expr(op => $OP{NOT}, column => 1, args => [ leaf('EQ', 0, 1) ]) ],
	[ '65 levels', $deep ],
	[ '20000 levels of raw bytes', $raw_deep ],
);
for my $case (@bad)
{
	my ($name, $filter) = @$case;
	my $sock = $ts->connect_ready or die "handshake failed";
	my $id = open_m($sock);
	TcopyTest::send_frame($sock, FRAME_SCAN, scan_msg($id, filter => $filter));
	my ($type, $payload) = TcopyTest::read_frame($sock, 10);
	is($type, FRAME_ERROR, "$name: an ERROR frame");
	my ($code, $message) = error_of($payload // '');
	is($code, ERROR_PROTOCOL, "$name: ERROR_PROTOCOL") or diag($message);
	ok(TcopyTest::wait_closed($sock, 10), "$name: the connection is closed");
	is($ts->cli('ping')->{rc}, 0, "$name: the tserver still answers");
}
($aids) = filtered_aids(filter => leaf('EQ', 0, 42));
is($aids, '42', 'a good filter after them all');

$ts->stop;
done_testing();
