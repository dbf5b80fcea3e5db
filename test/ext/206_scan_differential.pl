# 206_scan_differential.pl
#	Reads of tcopy tables give Postgres' answers (issue 45): a differential
#	test of random queries against heap twins, whatever the FDW pushes
#	down to the tservers (filters, aggregates, ORDER BY key and LIMIT) or
#	keeps.
#
#	One Postgres node (UTF8, C locale), tservers ts1 and ts2.  Tables of
#	the same ROWS rows (default 2500), made from a seed:
#	  h    heap: id int8, g int4 (1-5, a grouping column), i2, i4, i8,
#	       f4, f8, b, d date, ts timestamp, tz timestamptz, t text, vc
#	       varchar(12), n numeric, tu text under the ICU collation
#	       "und-x-icu" and tci text under a case-insensitive
#	       (nondeterministic) ICU collation (both plain text when the
#	       server has no ICU); NULLs in every column but id, int extremes,
#	       NaN, +-Infinity and -0 in floats, +-infinity in dates and
#	       timestamps, NaN and +-Infinity in numeric, multibyte text
#	       (accents, CJK, an emoji, a combining mark), trailing blanks;
#	  c    tcopy on ts1, key id (ids of both signs and the int8 extremes);
#	  p    partitioned by RANGE (id): p_neg (below 0) on ts1 and p_pos on
#	       ts2, both tcopy, key id;
#	  hk, ck  (k text under "und-x-icu", v int4, w float8): heap and tcopy
#	       keyed by k (on ts2);
#	  hov, cov, pov  (id, g, x float4, y float8, z int8, w int4): 60 rows
#	       of 3e38 or NULL, 1e308 or NULL, the int8 and int4 extremes:
#	       heap, tcopy, and partitioned by HASH (id) on ts1 and ts2, for
#	       sums that overflow (22003 in any order) or pass int64.
#	Floats are mostly multiples of 0.5 under 1000 (sums exact in any
#	order), plus the specials and a few inexact ones (0.1, 1.1).
#	Then TCOPY_DIFF_QUERIES (default 1000) random queries, each run on the
#	heap table and on every tcopy twin, and half of them again as
#	prepared statements under plan_cache_mode force_generic_plan (every
#	constant a parameter): WHERE trees (comparisons with constants of the
#	column's type and of other types: int2/int4/int8/numeric/float8
#	against integer columns, float4 against float8, date against
#	timestamp(tz), text against varchar, name and bpchar, COLLATE "C";
#	BETWEEN [SYMMETRIC], [NOT] IN lists (some with a NULL), IS [NOT]
#	NULL, IS [NOT] DISTINCT FROM, boolean tests, column against column,
#	functions that stay in Postgres; AND/OR/NOT up to depth 3); rows
#	(some with expressions that overflow on the extremes: 22003 errors);
#	count(*), count(c), sum, avg, min, max with and without GROUP BY on 1-2
#	columns, and GROUP BY alone (enable_partitionwise_aggregate on); ORDER BY id or another
#	column then id, LIMIT/OFFSET.  Compared as text (NULL shown as
#	<NULL>): sorted lines, but in order under ORDER BY; in aggregate
#	queries -0 reads as 0 (min/max may keep either, as Postgres does), and
#	sums and averages of float columns compare within their rounding, as
#	their order of summation differs (float8: 1e-9 relative plus 1e-5;
#	sum(f4), added in float4: 3e-5 of sum(abs(f4::float8)), which the
#	query computes next to it); errors by SQLSTATE and message.  Every
#	mismatch prints the seed, the query and both results.  The queries
#	stop early after TCOPY_DIFF_SECONDS (default 60) seconds.  The seed is
#	random unless TCOPY_DIFF_SEED is set, and is printed.
#	Every other batch of 25 queries runs with parallel_setup_cost,
#	parallel_tuple_cost and min_parallel_table_scan_size at 0 (parallel
#	plans, on the heap and on tcopy tables that can be scanned in parts).
#	A quarter of the queries' plans on the tcopy tables are read: the test
#	says how many had a remote filter, a remote aggregate, a key range, a
#	Gather.
#	Also asserted: the comparison itself tells apart what differs (a
#	changed value, a missing row, another error) and forgives what may
#	(-0, float sum rounding, row order without ORDER BY); p has rows on
#	both tservers; the queries return rows (not all empty) and some errors.
use strict;
use warnings;
use utf8;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use TcopyTest;


my $t_start = time();
my $SEED = $ENV{TCOPY_DIFF_SEED} // int(rand(1 << 30));
my $NQUERIES = $ENV{TCOPY_DIFF_QUERIES} // 1000;
my $SECONDS = $ENV{TCOPY_DIFF_SECONDS} // 60;
my $ROWS = $ENV{TCOPY_DIFF_ROWS} // 2500;
my $KROWS = 600;
diag("seed $SEED (TCOPY_DIFF_SEED=$SEED repeats this run)");
srand($SEED);

# ---- the comparison (checked first, on made-up outputs) ----

# Normalized result of one query: its lines (sorted unless ordered), in
# aggregate queries -0 as 0.
sub normalize
{
	my ($lines, $q) = @_;
	my @l = @$lines;
	if ($q->{agg})
	{
		@l = map {
			join('|', map { /^-0(?:\.0*)?(?:e[-+]?0+)?$/ ? '0' : $_ } split(/\|/, $_, -1))
		} @l;
	}
	@l = sort @l unless $q->{ordered};
	return \@l;
}

# Two normalized results equal: line by line, field by field; the fields
# of $q->{fuzzy} (indexes) as numbers within a relative 1e-6.
sub same_result
{
	my ($a, $b, $q) = @_;
	return 0 unless @$a == @$b;
	for my $i (0 .. $#$a)
	{
		next if $a->[$i] eq $b->[$i];
		return 0 unless $q->{fuzzy} && %{ $q->{fuzzy} };
		my @fa = split(/\|/, $a->[$i], -1);
		my @fb = split(/\|/, $b->[$i], -1);
		return 0 unless @fa == @fb;
		for my $f (0 .. $#fa)
		{
			next if $fa[$f] eq $fb[$f];
			my $how = $q->{fuzzy}{$f};
			return 0 unless defined $how;
			my $num = qr/^-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/;
			return 0 unless $fa[$f] =~ $num && $fb[$f] =~ $num;
			my ($x, $y) = ($fa[$f], $fb[$f]);
			my $scale = abs($x) > abs($y) ? abs($x) : abs($y);
			# float8 sums: 1e-9 relative, 1e-5 absolute (2500 roundings of
			# partial sums under 2.5e6); float4 sums: 3e-5 of the sum of
			# the absolute values (field $how, compared exactly)
			my $tol = $how eq 'f8' ? 1e-9 * $scale + 1e-5
			  : ($fa[$how] =~ $num ? 3e-5 * $fa[$how] + 1e-6 * $scale : 0);
			return 0 if abs($x - $y) > $tol;
		}
	}
	return 1;
}

{
	my $agg = { agg => 1, fuzzy => { 1 => 'f8', 2 => 3 } };
	my $cmp = sub { same_result(normalize($_[0], $_[2]), normalize($_[1], $_[2]), $_[2]) };
	ok($cmp->([ '1|2.500000001|5.1|1000', '2|-0|0|0' ], [ '2|0|0|0', '1|2.5|5.0999756|1000' ], $agg),
		'comparison: rows in any order, -0 as 0, float sums within their rounding in aggregates');
	ok(!$cmp->([ '1|2.5001|5.1|1000', '2|0|0|0' ], [ '1|2.5|5.1|1000', '2|0|0|0' ], $agg),
		'comparison: a float8 sum off by 1e-4 differs');
	ok(!$cmp->([ '1|2.5|5.1|1000', '2|0|0|0' ], [ '1|2.5|5.2|1000', '2|0|0|0' ], $agg),
		'comparison: a float4 sum off by 0.1 (1e-4 of its absolute values) differs');
	ok(!$cmp->([ '1|5', '2|0' ], [ '1|6', '2|0' ], { agg => 1, fuzzy => {} }),
		'comparison: a count off by one differs');
	ok(!$cmp->([ '1', '2' ], [ '2', '1' ], { ordered => 1 }), 'comparison: under ORDER BY, the order counts');
	ok(!$cmp->([ '1', '2' ], [ '1' ], {}), 'comparison: a missing row differs');
	ok(!$cmp->([ '-0' ], [ '0' ], {}), 'comparison: -0 and 0 differ in rows');
	ok(!$cmp->([ '@@ERR 22003 integer out of range' ], [ '@@ERR 22012 division by zero' ], {}),
		'comparison: errors differ by SQLSTATE and message');
}

# ---- the cluster ----

my $ts1 = TcopyTest->new;
my $ts2 = TcopyTest->new;
$ts1->start or BAIL_OUT('tserver 1 did not start');
$ts2->start or BAIL_OUT('tserver 2 did not start');
my $node = PostgreSQL::Test::Cluster->new('diff');
$node->init(extra => [ '--encoding=UTF8', '--locale=C' ]);
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n");
$node->start;
$node->safe_psql('postgres', "
	CREATE EXTENSION tcopy;
	CREATE SERVER ts1 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts1->address . "');
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts2->address . "');
	CREATE USER MAPPING FOR PUBLIC SERVER ts1;
	CREATE USER MAPPING FOR PUBLIC SERVER ts2;
");
my $icu = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'") eq '1';
my ($coll_u, $coll_ci) = ('', '');
if ($icu)
{
	$node->safe_psql('postgres',
		"CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)");
	($coll_u, $coll_ci) = (' COLLATE "und-x-icu"', ' COLLATE ci');
}
else
{
	diag('no ICU collations: tu and tci are text under the default collation');
}

my $COLUMNS = "(id int8 NOT NULL, g int4, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8,
	b bool, d date, ts timestamp, tz timestamptz, t text, vc varchar(12), n numeric,
	tu text$coll_u, tci text$coll_ci)";
my $KCOLUMNS = "(k text$coll_u NOT NULL, v int4, w float8)";
# overflows: float sums that overflow in any order (every value positive),
# int8 sums past int64
my $OCOLUMNS = "(id int8 NOT NULL, g int4, x float4, y float8, z int8, w int4)";
$node->safe_psql('postgres', "
	CREATE TABLE h $COLUMNS;
	CREATE FOREIGN TABLE c $COLUMNS SERVER ts1 OPTIONS (key 'id');
	CREATE TABLE p $COLUMNS PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE p_neg PARTITION OF p FOR VALUES FROM (MINVALUE) TO (0) SERVER ts1 OPTIONS (key 'id');
	CREATE FOREIGN TABLE p_pos PARTITION OF p FOR VALUES FROM (0) TO (MAXVALUE) SERVER ts2 OPTIONS (key 'id');
	CREATE TABLE hk $KCOLUMNS;
	CREATE FOREIGN TABLE ck $KCOLUMNS SERVER ts2 OPTIONS (key 'k');
	CREATE TABLE hov $OCOLUMNS;
	CREATE FOREIGN TABLE cov $OCOLUMNS SERVER ts1 OPTIONS (key 'id');
	CREATE TABLE pov $OCOLUMNS PARTITION BY HASH (id);
	CREATE FOREIGN TABLE pov_0 PARTITION OF pov FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER ts1 OPTIONS (key 'id');
	CREATE FOREIGN TABLE pov_1 PARTITION OF pov FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER ts2 OPTIONS (key 'id');
");

# ---- the values ----

sub pick { return $_[ int(rand(@_)) ]; }
sub rint { my ($lo, $hi) = @_; return $lo + int(rand($hi - $lo + 1)); }

my @I2 = (-32768, 32767, 0, -1, 1, 2, 7, 100, -100, 12345, -12345, 255, 256);
my @I4 = (-2147483648, 2147483647, 0, 1, -1, 7, 100, 32767, 32768, -32769, 1000000, -999999, 65536);
my @I8 = ('-9223372036854775808', '9223372036854775807', 0, 1, -1, 7, 2147483647, 2147483648,
	-2147483649, 4294967296, '1000000000000', '-77777777777');
my @FSPECIAL = ('NaN', 'Infinity', '-Infinity', '-0', '0', '0.1', '1.1');
my @F = map { $_ / 2 } (-7, -2, -1, 0, 1, 2, 3, 5, 7, 199, -1999, 1998);
my @DATES = ('2000-01-01', '2000-02-29', '1999-12-31', '2024-06-30', '1970-01-01', '2038-01-19',
	'0044-03-15 BC', 'infinity', '-infinity');
push @DATES, sprintf('%04d-%02d-%02d', rint(1990, 2030), rint(1, 12), rint(1, 28)) for 1 .. 8;
my @FINITE_DATES = grep { !/infinity| BC/ } @DATES;
my @TS = ('infinity', '-infinity', '2000-01-01 12:00:00', '2000-01-01 23:59:59.999999',
	'1999-12-31 00:00:00.000001', '0044-03-15 12:00:00 BC');
push @TS, "$_ 00:00:00" for @FINITE_DATES[0 .. 5];
push @TS, sprintf('%s %02d:%02d:%02d.%06d', pick(@FINITE_DATES), rint(0, 23), rint(0, 59),
	rint(0, 59), rint(0, 999999)) for 1 .. 8;
my @TZ = ('infinity', '-infinity', '2000-01-01 00:00:00+00', '2000-01-01 05:30:00+05:30',
	'1999-12-31 18:30:00-05:30');
push @TZ, "$_ 00:00:00+00" for @FINITE_DATES[0 .. 3];
push @TZ, sprintf('%s %02d:%02d:%02d.%06d%+03d', pick(@FINITE_DATES), rint(0, 23), rint(0, 59),
	rint(0, 59), rint(0, 999999), rint(-11, 12)) for 1 .. 8;
my @TEXT = ('', 'a', 'A', 'b', 'b ', 'abc', 'ABC', 'Abc', 'é', 'É', 'e', "e\x{301}", 'Ω', 'ω',
	'日本', '日本語', '🙂', 'zz', 'ä', 'straße', 'STRASSE', ' lead', 'x y', 'ĳ');
my @N = ('0.00', '1.50', '-1.50', '2.00', '123456789012345678901234.25', '-99999999999999999999.99',
	'0.01', '-0.01', 'NaN', 'Infinity', '-Infinity');
push @N, sprintf('%d.%02d', rint(-100000, 100000), rint(0, 99)) for 1 .. 6;

# A value of a column's family, from its pool (undef: NULL, 10%).
sub float_value { return rand() < 0.25 ? pick(@FSPECIAL) : pick(@F); }
my %gen = (
	g => sub { rint(1, 5) },
	i2 => sub { rand() < 0.5 ? pick(@I2) : rint(-32768, 32767) },
	i4 => sub { rand() < 0.5 ? pick(@I4) : rint(-50000, 50000) },
	i8 => sub { rand() < 0.5 ? pick(@I8) : rint(-(1 << 40), 1 << 40) },
	f4 => \&float_value,
	f8 => sub { rand() < 0.05 ? pick('5e-324', '1e-300') : float_value() },
	b => sub { pick('t', 'f') },
	d => sub { pick(@DATES) },
	ts => sub { pick(@TS) },
	tz => sub { pick(@TZ) },
	t => sub { pick(@TEXT) },
	vc => sub { pick(@TEXT) },
	n => sub { pick(@N) },
	tu => sub { pick(@TEXT) },
	tci => sub { pick(@TEXT) },
);
my @COLS = qw(g i2 i4 i8 f4 f8 b d ts tz t vc n tu tci);

sub copy_escape
{
	my ($v) = @_;
	return '\N' unless defined $v;
	$v =~ s/\\/\\\\/g;
	$v =~ s/\t/\\t/g;
	$v =~ s/\n/\\n/g;
	return $v;
}

my %ids;
my @ids = ('-9223372036854775808', '9223372036854775807', 0, -1, 1);
$ids{$_} = 1 for @ids;
while (@ids < $ROWS)
{
	my $id = rand() < 0.7 ? rint(-100000, 100000) : rint(-(1 << 50), 1 << 50);
	push @ids, $id unless $ids{$id}++;
}
# in key order: a heap scan and a tcopy scan meet the rows in one order
@ids = sort { $a <=> $b } @ids;
my $file = $node->basedir . '/rows.txt';
open(my $fh, '>:encoding(UTF-8)', $file) or die "$file: $!";
for my $id (@ids)
{
	print $fh join("\t", $id, map { copy_escape(rand() < 0.1 ? undef : $gen{$_}->()) } @COLS), "\n";
}
close($fh);
my %keys;
my $kfile = $node->basedir . '/keys.txt';
open($fh, '>:encoding(UTF-8)', $kfile) or die "$kfile: $!";
while (keys %keys < $KROWS)
{
	my $k = pick(@TEXT) . (rand() < 0.5 ? pick(@TEXT) : '') . (rand() < 0.7 ? rint(0, 99) : '');
	next if $keys{$k}++;
	print $fh join("\t", copy_escape($k), copy_escape(rand() < 0.1 ? undef : rint(-50, 50)),
		copy_escape(rand() < 0.1 ? undef : float_value())), "\n";
}
close($fh);
$node->safe_psql('postgres', "
	COPY h FROM '$file'; COPY c FROM '$file'; COPY p FROM '$file';
	COPY hk FROM '$kfile'; COPY ck FROM '$kfile';
	INSERT INTO hov SELECT i, 1 + i % 3,
		CASE WHEN i % 7 = 0 THEN 3e38 END, CASE WHEN i % 11 = 0 THEN 1e308 END,
		CASE WHEN i % 5 < 2 THEN 9223372036854775807 WHEN i % 5 = 2 THEN -9223372036854775808 END,
		CASE WHEN i % 2 = 0 THEN 2147483647 ELSE -2147483648 END
		FROM generate_series(1, 60) i;
	INSERT INTO cov SELECT * FROM hov;
	INSERT INTO pov SELECT * FROM hov;
	ANALYZE h, c, p, hk, ck, hov, cov, pov;
");
is($node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM c) || \' \' || (SELECT count(*) FROM p)'
	  . ' || \' \' || (SELECT count(*) FROM ck)'),
	"$ROWS $ROWS $KROWS", 'the tcopy tables hold every row');
my ($neg, $pos) = split(/\|/, $node->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM p_neg), (SELECT count(*) FROM p_pos)'));
ok($neg > 0 && $pos > 0, "p has rows on both tservers ($neg, $pos)");
my $rows_md5 = sub {
	my ($t, $key) = @_;
	return $node->safe_psql('postgres', "SET TimeZone = 'UTC'; SELECT md5(string_agg(x::text, E'\\n' ORDER BY $key)) FROM $t x");
};
is($rows_md5->('c', 'id'), $rows_md5->('h', 'id'), 'c reads back the rows of h');
is($rows_md5->('p', 'id'), $rows_md5->('h', 'id'), 'p reads back the rows of h');
is($rows_md5->('ck', 'k'), $rows_md5->('hk', 'k'), 'ck reads back the rows of hk');

# ---- the queries ----

# A query is built with constants as objects; render() writes them as
# typed literals, or as parameters $1.. of a PREPARE with their types.
my @consts;		# of the query being made: [type, literal text or undef]
sub const
{
	my ($type, $val) = @_;
	push @consts, [ $type, $val ];
	return "\x01" . $#consts . "\x01";
}

sub lit
{
	my ($c) = @_;
	my ($type, $val) = @$c;
	return "NULL::$type" unless defined $val;
	(my $q = $val) =~ s/'/''/g;
	return "'$q'::$type";
}

# the family of each column, the types of constants compared with it
my %family = (
	g => 'int', i2 => 'int', i4 => 'int', i8 => 'int', f4 => 'float', f8 => 'float',
	b => 'bool', d => 'time', ts => 'time', tz => 'time', t => 'text', vc => 'text',
	n => 'numeric', tu => 'text', tci => 'text', id => 'int', k => 'text', v => 'int',
	w => 'float');
my %col_type = (
	g => 'int4', i2 => 'int2', i4 => 'int4', i8 => 'int8', f4 => 'float4', f8 => 'float8',
	b => 'bool', d => 'date', ts => 'timestamp', tz => 'timestamptz', t => 'text',
	vc => 'varchar', n => 'numeric', tu => 'text', tci => 'text', id => 'int8', k => 'text',
	v => 'int4', w => 'float8');
# text columns whose collations are the same (comparable without COLLATE)
my %coll_group = (t => 'default', vc => 'default', tu => 'icu', k => 'icu', tci => 'ci');
%coll_group = (%coll_group, tu => 'default', k => 'default', tci => 'default') unless $icu;
my %int_range = (
	int2 => [ -32768, 32767 ], int4 => [ -2147483648, 2147483647 ],
	int8 => [ '-9223372036854775808', '9223372036854775807' ]);

sub fits
{
	my ($v, $type) = @_;
	my ($lo, $hi) = @{ $int_range{$type} };
	# as strings of digits: compare by length, then text
	my $cmp = sub {
		my ($x, $y) = @_;
		my ($nx, $ny) = (($x =~ /^-/) ? 1 : 0, ($y =~ /^-/) ? 1 : 0);
		return $nx ? -1 : 1 if $nx != $ny;
		my ($ax, $ay) = map { (my $s = $_) =~ s/^-//; $s } ($x, $y);
		my $c = length($ax) <=> length($ay) || $ax cmp $ay;
		return $nx ? -$c : $c;
	};
	return $cmp->($v, $lo) >= 0 && $cmp->($v, $hi) <= 0;
}

# A constant to compare with column $col (sometimes of another type).
sub const_for
{
	my ($col) = @_;
	my $fam = $family{$col};
	if ($fam eq 'int')
	{
		my $type = pick('int2', 'int4', 'int8', 'int8', $col_type{$col}, $col_type{$col});
		if (rand() < 0.1)
		{
			return const('numeric', pick('0.5', '-1.5', '7.00', '32767.5', '2147483647.5'));
		}
		return const('float8', pick('7', '0.5', '-0', '1e19', 'NaN', 'Infinity')) if rand() < 0.05;
		my $pool = $col eq 'id' ? [ @ids[ map { int(rand(@ids)) } 1 .. 8 ], -1, 0, 1 ]
		  : $col eq 'g' ? [ 0 .. 6 ]
		  : $col eq 'v' ? [ -51 .. 51 ]
		  : [ $gen{$col}->(), $gen{$col}->(), @{ $int_range{$type} } ];
		my @ok = grep { fits($_, $type) } @$pool;
		@ok = (0, 1, -1) unless @ok;
		return const($type, pick(@ok));
	}
	if ($fam eq 'float')
	{
		my $type = pick('float4', 'float8', $col_type{$col});
		return const('int4', pick(0, 1, 7, -1000)) if rand() < 0.05;
		return const('numeric', pick('0.5', '1.1', '-3.5')) if rand() < 0.05;
		return const($type, rand() < 0.6 ? float_value() : pick('3.4e38', '-1e-45', '1e300', '0.25'));
	}
	if ($fam eq 'time')
	{
		my $type = pick('date', 'timestamp', 'timestamptz', $col_type{$col}, $col_type{$col});
		return const($type, $type eq 'date' ? pick(@DATES) : $type eq 'timestamp' ? pick(@TS) : pick(@TZ));
	}
	if ($fam eq 'text')
	{
		# name has collation C: against a column of another collation, an
		# error that only the rows that reach the comparison raise
		my @types = ('text', 'text', 'text', 'varchar', 'bpchar');
		push @types, 'name' if $coll_group{$col} eq 'default';
		my $type = pick(@types);
		my $v = $col eq 'k' && rand() < 0.5 ? pick(keys %keys) : pick(@TEXT);
		return const($type, $v);
	}
	if ($fam eq 'numeric')
	{
		return const('int4', pick(0, 2, -1)) if rand() < 0.1;
		return const('float8', pick('1.5', 'NaN', 'Infinity')) if rand() < 0.1;
		return const('numeric', rand() < 0.7 ? pick(@N) : pick('1.5', '1.500', '0', '-0.0'));
	}
	return const('bool', pick('t', 'f'));
}

my @CMP = ('=', '<>', '<', '<=', '>', '>=');

# A leaf of a WHERE tree over the columns @$cols.
sub leaf
{
	my ($cols) = @_;
	my $col = pick(@$cols);
	my $fam = $family{$col};
	my $r = rand();
	if ($fam eq 'bool')
	{
		return pick("$col", "NOT $col", "$col IS TRUE", "$col IS NOT TRUE", "$col IS FALSE",
			"$col IS NOT FALSE", "$col IS UNKNOWN", "$col IS NOT UNKNOWN",
			"$col = " . const('bool', pick('t', 'f')), "$col <> " . const('bool', pick('t', 'f')),
			"$col IS NULL", "$col IS NOT NULL");
	}
	my $collate = ($fam eq 'text' && rand() < 0.2) ? ' COLLATE "C"' : '';
	return "$col IS NULL" if $r < 0.07;
	return "$col IS NOT NULL" if $r < 0.12;
	if ($r < 0.22)
	{
		my $sym = rand() < 0.2 ? ' SYMMETRIC' : '';
		my $not = rand() < 0.2 ? ' NOT' : '';
		return "$col$collate$not BETWEEN$sym " . const_for($col) . " AND " . const_for($col);
	}
	if ($r < 0.34)
	{
		my $not = rand() < 0.25 ? ' NOT' : '';
		my @list = map { const_for($col) } 1 .. rint(1, 4);
		if (rand() < 0.15)
		{
			my $t = $consts[ ($list[0] =~ /(\d+)/)[0] ][0];
			push @list, const($t, undef);
		}
		return "$col$collate$not IN (" . join(', ', @list) . ")";
	}
	if ($r < 0.38)
	{
		return "$col IS " . pick('', 'NOT ') . "DISTINCT FROM " . const_for($col);
	}
	if ($r < 0.45)
	{
		# column against column of its family
		my @same = grep {
			$family{$_} eq $fam && $_ ne $col && ($fam ne 'text' || $coll_group{$_} eq $coll_group{$col})
		} @$cols;
		return "$col " . pick(@CMP) . " " . pick(@same) . $collate if @same;
	}
	if ($r < 0.50)
	{
		# functions and arithmetic: they stay in Postgres
		return "abs(${col}::numeric) " . pick(@CMP) . " " . const('int8', rint(0, 40000)) if $fam eq 'int';
		return "($col + 0) " . pick(@CMP) . " " . const('float8', float_value()) if $fam eq 'float';
		return "length($col) " . pick(@CMP) . " " . const('int4', rint(0, 4)) if $fam eq 'text';
		return "${col}::date " . pick(@CMP) . " " . const('date', pick(@DATES)) if $fam eq 'time';
		return "round($col) " . pick(@CMP) . " " . const('numeric', pick(@N)) if $fam eq 'numeric';
	}
	if ($r < 0.55)
	{
		return const_for($col) . " " . pick(@CMP) . " $col$collate";
	}
	return "$col$collate " . pick(@CMP) . " " . const_for($col);
}

sub where_tree
{
	my ($cols, $depth) = @_;
	my $r = rand();
	return leaf($cols) if $depth >= 3 || $r < 0.45;
	return "NOT (" . where_tree($cols, $depth + 1) . ")" if $r < 0.52;
	my $op = rand() < 0.55 ? 'AND' : 'OR';
	my @kids = map { where_tree($cols, $depth + 1) } 1 .. rint(2, 3);
	return "(" . join(" $op ", @kids) . ")";
}

sub where_clause
{
	my ($cols) = @_;
	return rand() < 0.12 ? '' : ' WHERE ' . where_tree($cols, 0);
}

my @NUMERIC_COLS = qw(i2 i4 i8 f4 f8 n g);
my @ORDERABLE = qw(g i2 i4 i8 f4 f8 d ts tz t vc n tu);
my @GROUPABLE = qw(g i2 b d t vc n f8 tu ts);
my @OVERFLOWS = ('i4 + 1', 'i8 - 1', 'i2 * 2::int2', 'f4 * \'1e37\'::float4', '-i4', 'i2 + 32000::int2');

# One random query: { sql (with const markers, @ for the table), agg,
# ordered, fuzzy, kind, tables }.
sub make_query
{
	@consts = ();
	my $r = rand();
	my $q = { tables => [ 'h', 'c', 'p' ], consts => undef };
	my @cols = @COLS;
	push @cols, 'id';
	if ($r < 0.05)
	{
		# overflows: sum(x), sum(y), avg(y) fail with 22003 in a group of
		# two values or more; sums and averages of z and w are exact
		$q->{tables} = [ 'hov', 'cov', 'pov' ];
		$q->{agg} = 1;
		$q->{kind} = 'overflow';
		my @aggs = map { pick('sum(x)', 'sum(y)', 'avg(x)', 'avg(y)', 'sum(z)', 'avg(z)', 'sum(w)',
				'avg(w)', 'count(x)', 'min(x)', 'max(y)', 'min(z)', 'max(z)') } 1 .. rint(1, 3);
		my $where = pick('', ' WHERE id BETWEEN ' . const('int8', rint(0, 30)) . ' AND ' . const('int4', rint(1, 61)),
			' WHERE g = ' . const('int4', rint(1, 3)), ' WHERE id = ' . const('int8', rint(1, 60)));
		my $group = rand() < 0.5;
		$q->{sql} = "SELECT " . join(', ', $group ? 'g' : (), @aggs) . " FROM \@$where" . ($group ? ' GROUP BY g' : '');
	}
	elsif ($r < 0.12)
	{
		# the text-keyed table
		$q->{tables} = [ 'hk', 'ck' ];
		my @kc = qw(k v w);
		my $where = where_clause(\@kc);
		if (rand() < 0.6)
		{
			$q->{ordered} = 1;
			$q->{kind} = 'order';
			$q->{sql} = "SELECT k, v, w FROM \@$where ORDER BY k" . pick('', ' DESC')
			  . " LIMIT " . rint(0, 40);
		}
		else
		{
			$q->{agg} = 1;
			$q->{kind} = 'agg';
			$q->{fuzzy} = { 2 => 'f8' };
			$q->{sql} = "SELECT count(*), sum(v), sum(w), min(k), max(k) FROM \@$where";
		}
	}
	elsif ($r < 0.30)
	{
		$q->{kind} = 'rows';
		my @sel = ('id', map { pick(@COLS) } 1 .. rint(1, 4));
		@sel = ('*') if rand() < 0.2;
		push @sel, pick(@OVERFLOWS) if rand() < 0.15;
		$q->{sql} = "SELECT " . join(', ', @sel) . " FROM \@" . where_clause(\@cols);
	}
	elsif ($r < 0.45)
	{
		$q->{kind} = 'order';
		$q->{ordered} = 1;
		my @sel = ('id', map { pick(@COLS) } 1 .. rint(1, 3));
		my $order = 'id' . pick('', ' DESC');
		if (rand() < 0.35)
		{
			my $oc = pick(@ORDERABLE, 'tci', 'b');
			$order = "$oc" . pick('', ' DESC') . pick('', ' NULLS FIRST', ' NULLS LAST') . ", $order";
		}
		my $limit = rand() < 0.85 ? " LIMIT " . rint(0, 60) : '';
		$limit .= " OFFSET " . rint(1, 30) if $limit && rand() < 0.2;
		$q->{sql} = "SELECT " . join(', ', @sel) . " FROM \@" . where_clause(\@cols) . " ORDER BY $order$limit";
	}
	else
	{
		$q->{kind} = 'agg';
		$q->{agg} = 1;
		my @group = ();
		my $gr = rand();
		@group = (pick(@GROUPABLE)) if $gr < 0.6;
		push @group, pick(grep { $_ ne $group[0] } @GROUPABLE) if $gr < 0.25;
		my @aggs;
		my %fuzzy;
		for (1 .. rint(1, 4))
		{
			my $a = rand();
			my $col;
			if ($a < 0.15) { push @aggs, 'count(*)'; next; }
			if ($a < 0.3) { push @aggs, 'count(' . pick(@COLS) . ')'; next; }
			if ($a < 0.65)
			{
				$col = pick(@NUMERIC_COLS);
				my $fn = pick('sum', 'avg');
				my $at = @group + @aggs;
				push @aggs, "$fn($col)";
				if ($fn eq 'sum' && $col eq 'f4')
				{
					# float4 adds in float4: within 3e-5 of the group's sum of
					# absolute values, given next to it (exact in float8)
					push @aggs, 'sum(abs(f4::float8))';
					$fuzzy{$at} = $at + 1;
				}
				$fuzzy{$at} //= 'f8' if $family{$col} eq 'float';
				next;
			}
			$col = pick(@ORDERABLE);
			push @aggs, pick('min', 'max') . "($col)";
		}
		# groups alone, sometimes (as SELECT DISTINCT would)
		if (@group && rand() < 0.1)
		{
			@aggs = ();
			%fuzzy = ();
		}
		$q->{fuzzy} = \%fuzzy;
		# more often without WHERE than other queries: an aggregate pushed
		# down needs every qual shipped
		my $where = rand() < 0.25 ? '' : where_clause(\@cols);
		my $sql = "SELECT " . join(', ', @group, @aggs) . " FROM \@$where";
		$sql .= " GROUP BY " . join(', ', @group) if @group;
		$sql .= " HAVING count(*) > 1" if @group && rand() < 0.1;
		$q->{sql} = $sql;
	}
	$q->{consts} = [@consts];
	return $q;
}

# The query's SQL with literal constants, on table $t.
sub literal_sql
{
	my ($q, $t) = @_;
	(my $s = $q->{sql}) =~ s/\x01(\d+)\x01/lit($q->{consts}[$1])/ge;
	$s =~ s/\@/$t/;
	return $s;
}

# PREPARE name(types) AS the query with $n parameters; EXECUTE with the values.
sub prepared_sql
{
	my ($q, $t, $name) = @_;
	(my $s = $q->{sql}) =~ s/\x01(\d+)\x01/'$' . ($1 + 1)/ge;
	$s =~ s/\@/$t/;
	my $c = $q->{consts};
	my $types = @$c ? '(' . join(', ', map { $_->[0] } @$c) . ')' : '';
	my $args = @$c ? '(' . join(', ', map { lit($_) } @$c) . ')' : '';
	return ("PREPARE $name$types AS $s", "EXECUTE $name$args", "DEALLOCATE $name");
}

# Run the psql script; its output lines.
sub run_script
{
	my ($script) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ('psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres'));
	local $ENV{PGCLIENTENCODING} = 'UTF8';
	my $in = $script;
	utf8::encode($in);
	IPC::Run::run(\@cmd, '<', \$in, '>', \$out, '2>', \$err)
	  or die "psql failed: $err";
	utf8::decode($out);
	# keep empty lines (an empty string is a value), even the last
	$out =~ s/\n\z//;
	return split(/\n/, $out, -1);
}

my $SETUP = "\\pset null <NULL>\nSET TimeZone = 'Asia/Kolkata';\nSET enable_partitionwise_aggregate = on;\n"
  . "SET plan_cache_mode = force_generic_plan;\n";
my $ERR_CHECK = "\\if :ERROR\n\\echo \@\@ERR :SQLSTATE :LAST_ERROR_MESSAGE\n\\endif\n";

my (@mismatches, %kinds, %pushed, %errstates);
my ($ran, $nonempty, $errors, $prepared) = (0, 0, 0, 0);
my $BATCH = 25;
my $qn = 0;
while ($qn < $NQUERIES && time() - $t_start < $SECONDS)
{
	my @batch = map { make_query() } 1 .. ($NQUERIES - $qn < $BATCH ? $NQUERIES - $qn : $BATCH);
	my $script = $SETUP;
	# every other batch costs parallel plans at nothing: partial scans of
	# the heap and of tcopy tables that can be split
	$script .= "SET parallel_setup_cost = 0;\nSET parallel_tuple_cost = 0;\nSET min_parallel_table_scan_size = 0;\n"
	  if ($qn / $BATCH) % 2;
	for my $i (0 .. $#batch)
	{
		my $q = $batch[$i];
		$q->{n} = $qn + $i;
		$q->{prepare} = rand() < 0.5;
		for my $t (@{ $q->{tables} })
		{
			$script .= "\\echo \@\@Q $q->{n} $t plain\n" . literal_sql($q, $t) . ";\n$ERR_CHECK";
			next unless $q->{prepare};
			my ($p, $e, $d) = prepared_sql($q, $t, "q$q->{n}_$t");
			$script .= "$p;\n\\echo \@\@Q $q->{n} $t prepared\n$e;\n$ERR_CHECK$d;\n";
		}
		# a quarter of the plans, to say what was pushed down
		next if $q->{n} % 4;
		for my $t (grep { /^(?:c|p|ck|cov|pov)$/ } @{ $q->{tables} })
		{
			$script .= "\\echo \@\@Q $q->{n} $t explain\nEXPLAIN (VERBOSE, COSTS OFF) " . literal_sql($q, $t) . ";\n";
		}
	}
	my %out;
	my $cur;
	for my $line (run_script($script))
	{
		if ($line =~ /^\@\@Q (\d+) (\S+) (\S+)$/)
		{
			$cur = $out{$1}{"$2 $3"} = [];
			next;
		}
		push @$cur, $line if $cur;
	}
	for my $q (@batch)
	{
		$ran++;
		$kinds{ $q->{kind} }++;
		my $ref_t = $q->{tables}[0];
		my $ref = $out{ $q->{n} }{"$ref_t plain"};
		if (!$ref)
		{
			push @mismatches, "query $q->{n}: no output for $ref_t: " . literal_sql($q, $ref_t);
			next;
		}
		$nonempty++ if @$ref && $ref->[0] !~ /^\@\@ERR/;
		if (@$ref && $ref->[0] =~ /^\@\@ERR (\S+)/)
		{
			$errors++;
			$errstates{$1}++;
		}
		my $norm_ref = normalize($ref, $q);
		for my $t (@{ $q->{tables} })
		{
			my $plan = $out{ $q->{n} }{"$t explain"} or next;
			$plan = join("\n", @$plan);
			$pushed{plans}++;
			$pushed{filter}++ if $plan =~ /Remote Filter/;
			$pushed{aggregate}++ if $plan =~ /Remote (?:Partial )?Aggregate|Remote Group By/;
			$pushed{'key range'}++ if $plan =~ /Key Range/;
			$pushed{'parallel plan'}++ if $plan =~ /Gather/;
		}
		for my $t (@{ $q->{tables} })
		{
			for my $how ('plain', $q->{prepare} ? ('prepared') : ())
			{
				next if $t eq $ref_t && $how eq 'plain';
				$prepared++ if $how eq 'prepared' && $t eq $ref_t;
				my $got = $out{ $q->{n} }{"$t $how"};
				next if $got && same_result($norm_ref, normalize($got, $q), $q);
				my $show = sub { my ($l) = @_; return '(none)' unless $l; my @s = @$l;
					@s = (@s[0 .. 29], '... (' . scalar(@$l) . ' lines)') if @s > 30;
					return join("\n", map { "    $_" } @s) || '    (no rows)'; };
				my $sql = $how eq 'plain' ? literal_sql($q, $t) : join('; ', prepared_sql($q, $t, "q$q->{n}_$t"));
				push @mismatches, "seed $SEED, query $q->{n} ($how) on $t differs from $ref_t:\n  $sql\n"
				  . "  $ref_t: " . literal_sql($q, $ref_t) . "\n" . $show->($ref) . "\n  $t:\n" . $show->($got);
			}
		}
	}
	$qn += @batch;
}

# diag prints bytes: the texts are Perl strings of characters
for my $m (@mismatches[ 0 .. ($#mismatches < 19 ? $#mismatches : 19) ])
{
	utf8::encode(my $bytes = $m);
	diag($bytes);
}
diag(scalar(@mismatches) - 20 . ' more mismatches') if @mismatches > 20;
my $kinds = join(', ', map { "$kinds{$_} $_" } sort keys %kinds);
is(scalar(@mismatches), 0,
	"seed $SEED: $ran queries ($kinds; $prepared also prepared) give the heap's results on every tcopy twin");
ok($ran >= ($NQUERIES < 100 ? $NQUERIES : 100), "ran $ran queries in the time allowed (at least 100)");
ok($nonempty > $ran / 3, "$nonempty of $ran queries returned rows on the heap");
ok($errors > 0 || $ran < 200, "$errors queries failed on the heap (errors compared too: "
	  . join(', ', map { "$errstates{$_} x $_" } sort keys %errstates) . ")");
diag(sprintf('%d queries in %.1f s', $ran, time() - $t_start));
diag("of $pushed{plans} plans on tcopy tables sampled, "
	  . join(', ', map { ($pushed{$_} // 0) . " with a remote $_" } ('filter', 'aggregate', 'key range'))
	  . ', ' . ($pushed{'parallel plan'} // 0) . ' with a Gather');

$node->stop;
$ts1->stop;
$ts2->stop;
done_testing();
