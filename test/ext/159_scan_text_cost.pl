# 159_scan_text_cost.pl
#	A measurement, not a test (skipped unless TCOPY_SCAN_COST_ROWS is set):
#	the time of scans of a table of TCOPY_SCAN_COST_ROWS rows with an ASCII
#	text column (44 bytes a row) and a non-ASCII one (é in each row, 46
#	bytes), to see what verifying text against the database encoding
#	costs.  Prints the median wall time and backend CPU time of 9 runs of
#	each query.  Run it on two
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
use POSIX ();
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
my $pid = $s->backend_pid;
$s->run_ok('\timing on');

# CPU time (user + system) of the backend so far, in ms: steadier than the
# wall time on a busy machine.
sub backend_cpu_ms
{
	open(my $fh, '<', "/proc/$pid/stat") or return 0;
	my @f = split / /, (<$fh> =~ s/^.*\) //r);
	return ($f[11] + $f[12]) * 1000 / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

my $runs = 9;
for my $query ('SELECT count(*) FROM t',
	'SELECT count(*), sum(length(ascii)) FROM t',
	'SELECT count(*), sum(length(latin)) FROM t')
{
	my (@ms, @cpu);
	$s->run("$query;");		# warm
	for (1 .. $runs)
	{
		my $cpu0 = backend_cpu_ms();
		my ($out, $err) = $s->run("$query;");
		push @cpu, backend_cpu_ms() - $cpu0;
		push @ms, $1 if $out =~ /^Time: ([\d.]+) ms/m;
	}
	@ms = sort { $a <=> $b } @ms;
	@cpu = sort { $a <=> $b } @cpu;
	diag(sprintf("%-45s %d rows: median %.0f ms wall, %.0f ms backend CPU (CPU runs: %s)",
		$query, $rows, $ms[$runs / 2] // -1, $cpu[$runs / 2], join(' ', map { sprintf('%.0f', $_) } @cpu)));
	is(scalar(@ms), $runs, "$query: $runs runs timed");
}

$s->quit;
$node->stop;
$ts->stop;
done_testing();
