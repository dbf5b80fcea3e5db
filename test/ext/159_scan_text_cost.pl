# 159_scan_text_cost.pl
#	A measurement, not a test (skipped unless TCOPY_SCAN_COST_ROWS is set):
#	the time of scans of a table of TCOPY_SCAN_COST_ROWS rows with an ASCII
#	text column (44 bytes a row) and a non-ASCII one (é in each row, 46
#	bytes), to see what verifying text against the database encoding
#	costs.  Prints the median of 5 runs of each query.  Run it on two
#	builds, e.g.:
#	  flock /var/tmp/tcopy-pg.lock env TCOPY_PG_TESTS=tap TCOPY_TAP=159* \
#	    TCOPY_SCAN_COST_ROWS=2000000 bash test/pg_tests.sh
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use TcopyTest;
use TcopyPgTest qw(setup_node);

my $rows = $ENV{TCOPY_SCAN_COST_ROWS};
plan skip_all => 'a measurement: set TCOPY_SCAN_COST_ROWS' unless $rows;

my ($node, $ts) = setup_node();
$node->safe_psql('postgres', qq{
	CREATE DATABASE utf TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C';
});
my $address = $ts->address;
$node->safe_psql('utf', qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE FOREIGN TABLE t (id int NOT NULL, ascii text, latin text) SERVER ts OPTIONS (key 'id');
	INSERT INTO t SELECT g, 'ascii text of row ' || lpad(g::text, 26, '0'),
		'caf' || chr(233) || ' text of row ' || lpad(g::text, 28, '0')
	FROM generate_series(1, $rows) g;
});

my $s = TcopyPgTest::Session->new($node, dbname => 'utf', timeout => 600);
$s->run_ok('\timing on');
for my $query ('SELECT count(*) FROM t',
	'SELECT count(*), sum(length(ascii)) FROM t',
	'SELECT count(*), sum(length(latin)) FROM t')
{
	my @ms;
	for (1 .. 5)
	{
		my ($out, $err) = $s->run("$query;");
		push @ms, $1 if $out =~ /^Time: ([\d.]+) ms/m;
	}
	@ms = sort { $a <=> $b } @ms;
	diag(sprintf("%-45s %d rows: median %.0f ms (runs: %s)", $query, $rows, $ms[2] // -1,
		join(' ', map { sprintf('%.0f', $_) } @ms)));
	is(scalar(@ms), 5, "$query: 5 runs timed");
}

$s->quit;
$node->stop;
$ts->stop;
done_testing();
