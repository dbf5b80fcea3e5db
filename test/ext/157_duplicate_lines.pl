# 157_duplicate_lines.pl
#	The CONTEXT of a duplicate key under on_conflict 'error' in loads that
#	spill (the tserver runs with --session-memory-mb 1: a buffer holds some
#	ten thousand rows), beside a heap table with a primary key
#	(docs/storage.md, "Duplicate keys", which paths name the line):
#	- a load in key order whose duplicate follows its key, many spills in:
#	  the heap table's "COPY t, line N";
#	- a load in key order meeting a stored key, checked as a spill writes
#	  it: the heap table's line;
#	- a shuffled load whose duplicate is in another spill than its key
#	  (met by the merge of runs): the DETAIL, and no CONTEXT;
#	- a load whose lines do not follow each other more than 65536 times
#	  (WHERE excludes every other line): a duplicate before that has its
#	  line, one after it none.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node);

my ($node, $ts) = setup_node(tserver => { extra_args => [ '--session-memory-mb', '1' ] });
my $dir = $node->basedir;

$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE d (id int, v text) SERVER ts OPTIONS (key 'id');
	CREATE TABLE h (id int PRIMARY KEY, v text);
});

# Write the lines "id\tv" of ids to a file; its path.
sub write_ids
{
	my ($name, @ids) = @_;
	my $path = "$dir/$name.tsv";
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh "$_\tline of $_\n" for @ids;
	close($fh) or die "$path: $!";
	return $path;
}

# COPY file into table (a WHERE clause appended); its stderr.
sub copy_err
{
	my ($table, $path, $where) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"COPY $table FROM '$path'" . ($where ? " WHERE $where" : ''));
	isnt($rc, 0, "COPY $table from $path fails");
	return $err;
}

# The DETAIL and CONTEXT lines of a psql error output.
sub detail  { my ($err) = @_; return $err =~ /^DETAIL:\s+(.*)$/m ? $1 : undef; }
sub context { my ($err) = @_; return $err =~ /^CONTEXT:\s+(.*)$/m ? $1 : undef; }

# in key order; line 60000 repeats the id of line 59999
my $n = 100_000;
my $sorted = write_ids('sorted', (1 .. 59_999), 59_999, (60_000 .. $n));
my $heap = copy_err('h', $sorted);
my $tcopy = copy_err('d', $sorted);
is(context($heap), 'COPY h, line 60000', 'sorted: the heap table names line 60000');
is(detail($tcopy), detail($heap), 'sorted: the DETAIL of the heap table');
is(context($tcopy), 'COPY d, line 60000', 'sorted, spilled: the line of the duplicate');
is($node->safe_psql('postgres', 'SELECT count(*) FROM d'), 0, 'sorted: nothing loaded');

# a stored key met in key order: 150000 is stored, the load is 100001..200000
$node->safe_psql('postgres', q{
	INSERT INTO d VALUES (150000, 'stored');
	INSERT INTO h VALUES (150000, 'stored');
});
my $above = write_ids('above', 100_001 .. 200_000);
$heap = copy_err('h', $above);
$tcopy = copy_err('d', $above);
is(context($heap), 'COPY h, line 50000', 'stored key: the heap table names line 50000');
is(detail($tcopy), detail($heap), 'stored key: the DETAIL of the heap table');
is(context($tcopy), 'COPY d, line 50000', 'stored key, met by a spill: the line');

# shuffled: id 7 comes again at the end, spills after its first line
srand(3);
my @ids = (1 .. $n);
for (my $i = $#ids; $i > 0; $i--)
{
	my $j = int(rand($i + 1));
	@ids[ $i, $j ] = @ids[ $j, $i ];
}
my ($first7) = grep { $ids[$_] == 7 } 0 .. $#ids;
cmp_ok($first7, '<', $n - 30_000, 'shuffled: id 7 comes spills before the end');
my $shuffled = write_ids('shuffled', @ids, 7);
$heap = copy_err('h', $shuffled);
$tcopy = copy_err('d', $shuffled);
is(context($heap), 'COPY h, line ' . ($n + 1), 'shuffled: the heap table names the last line');
is(detail($tcopy), 'Key (id)=(7) already exists.', 'shuffled: the DETAIL');
is(context($tcopy), undef, 'shuffled, met by the merge of runs: no CONTEXT');

# every other line excluded: 70000 runs of lines; id 1000 repeats at line
# 2002 (a run short of the map's cap), id 139000 at line 140000 (past it)
my @lines;
for my $i (1 .. 70_000)
{
	push @lines, $i * 2, 1;	# 1: excluded by WHERE id > 1
}
$lines[2001] = 2000;	# line 2002, after line 2001's id 2000
my $gaps = write_ids('gaps', @lines);
$heap = copy_err('h', $gaps, 'id > 1');
$tcopy = copy_err('d', $gaps, 'id > 1');
is(context($heap), 'COPY h, line 2002', 'gaps: the heap table names line 2002');
is(context($tcopy), 'COPY d, line 2002', 'gaps: a duplicate within the map has its line');
$lines[2001] = 1;
$lines[139_999] = 139_998;
$gaps = write_ids('gaps2', @lines);
$heap = copy_err('h', $gaps, 'id > 1');
$tcopy = copy_err('d', $gaps, 'id > 1');
is(context($heap), 'COPY h, line 140000', 'gaps past the cap: the heap table names line 140000');
is(detail($tcopy), detail($heap), 'gaps past the cap: the DETAIL of the heap table');
is(context($tcopy), undef, 'gaps past the cap: no CONTEXT');

$node->stop;
$ts->stop;
done_testing();
