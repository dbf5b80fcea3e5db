# 183_parallel_partitions.pl
#	A parallel COPY into a partitioned table whose partitions live on two
#	tservers: the workers route the rows and send each partition's rows
#	on streams of its write session themselves (issue 27, item 3), and the
#	COPY gives exactly what a serial one gives.
#
#	Differential, as 181_parallel_copy.pl: each input is loaded by a
#	serial COPY (workers 0) and by parallel ones (3 workers, chunks of 64
#	bytes, nearly a row each, so that most chunks have rows for one
#	session only and the others skip them; 2 workers, chunks of 1 kB);
#	the command tag, the messages and the rows afterwards must be the
#	serial run's, and a parallel run must say that its workers sent the
#	rows themselves.  Inputs: text and csv rows over four hash partitions
#	(two on each tserver); equal keys in different chunks under
#	on_conflict error (the duplicate's line), ignore and replace; "\." in
#	the middle of the input; a bad row in the middle; a list-partitioned
#	table whose second partition's tserver is not there and gets no row;
#	a range-partitioned table with a partition on the null transport,
#	whose batches the workers hand to the leader.
#
#	Faults: a row routed to the partition whose tserver is not there fails
#	the COPY (connecting, as serially); a tserver killed while every
#	worker streams to it fails the COPY, and nothing is stored on either
#	tserver once it is back.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv psql_cmds pg_messages copy_ways);

my ($node, $ts) = setup_node(conf => "max_worker_processes = 16\nmax_parallel_workers = 16\n");
my $ts2 = TcopyTest->new;
$ts2->start or BAIL_OUT('the second tserver did not start');
my $dir = $node->basedir;
my ($a1, $a2) = ($ts->address, $ts2->address);
my $DB = 'postgres';
$node->safe_psql($DB, qq{
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '$a2');
	CREATE USER MAPPING FOR PUBLIC SERVER ts2;
	CREATE SERVER gone FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/no-tserver.sock');
	CREATE USER MAPPING FOR PUBLIC SERVER gone;
	CREATE SERVER nowhere FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:');
	CREATE USER MAPPING FOR PUBLIC SERVER nowhere;
	CREATE TABLE tq (id int NOT NULL, n int, s text) PARTITION BY HASH (id);
	CREATE FOREIGN TABLE tq0 PARTITION OF tq FOR VALUES WITH (MODULUS 4, REMAINDER 0)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE tq1 PARTITION OF tq FOR VALUES WITH (MODULUS 4, REMAINDER 1)
		SERVER ts2 OPTIONS (key 'id');
	CREATE FOREIGN TABLE tq2 PARTITION OF tq FOR VALUES WITH (MODULUS 4, REMAINDER 2)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE tq3 PARTITION OF tq FOR VALUES WITH (MODULUS 4, REMAINDER 3)
		SERVER ts2 OPTIONS (key 'id');
	CREATE TABLE tr (id int NOT NULL, g text NOT NULL, s text) PARTITION BY LIST (g);
	CREATE FOREIGN TABLE tr_up PARTITION OF tr FOR VALUES IN ('up') SERVER ts2 OPTIONS (key 'id');
	CREATE FOREIGN TABLE tr_gone PARTITION OF tr FOR VALUES IN ('gone') SERVER gone OPTIONS (key 'id');
	CREATE FOREIGN TABLE tk (id int NOT NULL, n int, s text) SERVER ts2 OPTIONS (key 'id');
	CREATE TABLE tm (id int NOT NULL, s text) PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE tm1 PARTITION OF tm FOR VALUES FROM (MINVALUE) TO (100)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE tm2 PARTITION OF tm FOR VALUES FROM (100) TO (MAXVALUE)
		SERVER nowhere OPTIONS (key 'id');
});

my $N = 300;
my %WAYS = (
	serial => { w => 0, chunk => '1MB' },
	w3c64 => { w => 3, chunk => '64' },
	w2c1k => { w => 2, chunk => '1kB' },
);
my $ncase = 0;

# Run COPY (opts) of data into table one way: { rc, tag, err, way, dump, raw }.
sub run_way
{
	my ($c, $way) = @_;
	my $v = $WAYS{$way};
	my $path = "$dir/case$ncase.dat";
	my ($rc, $out, $err) = psql_cmds($node, $DB, [
		'\set VERBOSITY verbose',
		'TRUNCATE ' . ($c->{read} // $c->{table}),
		"SET tcopy.copy_workers = $v->{w}",
		'SET tcopy.copy_parallel_threshold = 0',
		"SET tcopy.copy_chunk_bytes = '$v->{chunk}'",
		'SET client_min_messages = debug1',
		'\warn @@copy', '\echo @@copy',
		"COPY $c->{table} FROM '$path' WITH (FORMAT $c->{fmt}" . ($c->{opts} ? ", $c->{opts}" : '') . ')',
		'RESET client_min_messages',
		'\warn @@dump', '\echo @@dump',
		'SELECT x::text FROM ' . ($c->{read} // $c->{table}) . ' x ORDER BY x::text COLLATE "C"' ],
		timeout => 120);
	my ($tag) = $out =~ /\@\@copy\n(.*?)\n/;
	my ($dump) = $out =~ /\@\@dump\n?(.*)\z/s;
	my ($copy_err) = $err =~ /\@\@copy\n(.*?)(?:\n\@\@dump|\z)/s;
	return { rc => $rc, tag => $tag // '', err => pg_messages($copy_err), way => copy_ways($copy_err),
		streams => ($copy_err // '') =~ /which send the rows themselves/ ? 1 : 0,
		dump => $dump // '', raw => $err };
}

# Write case c's data, run it every way: the serial run must match c's
# tag (or error), the others the serial run.
sub check_case
{
	my (%c) = @_;
	$ncase++;
	open(my $fh, '>:raw', "$dir/case$ncase.dat") or die $!;
	print $fh $c{data};
	close($fh) or die $!;
	my $ref = run_way(\%c, 'serial');
	if ($c{error})
	{
		like($ref->{err}, $c{error}, "$c{name}: serial: the error") or diag($ref->{raw});
		is($ref->{dump}, '', "$c{name}: serial: nothing loaded");
	}
	else
	{
		like($ref->{tag}, $c{tag} // qr/^COPY \d+$/, "$c{name}: serial: $ref->{tag}") or diag($ref->{raw});
		is($ref->{err}, '', "$c{name}: serial: no message");
	}
	is($ref->{way}, 'alone', "$c{name}: serial: parsed alone");
	for my $way (grep { $_ ne 'serial' } sort keys %WAYS)
	{
		my $r = run_way(\%c, $way);
		my @bad;
		push @bad, "ran $r->{way}" if $r->{way} ne 'parallel';
		push @bad, 'the leader relayed the rows' unless $r->{streams};
		push @bad, "tag '$r->{tag}', serial '$ref->{tag}'" if $r->{tag} ne $ref->{tag};
		push @bad, "messages:\n$r->{err}\n--- serial:\n$ref->{err}" if $r->{err} ne $ref->{err};
		push @bad, 'rows differ from the serial run' if $r->{dump} ne $ref->{dump};
		ok(!@bad, "$c{name}: $way: as serial, the workers sending the rows")
		  or diag(join("\n", @bad) . "\n" . substr($r->{raw}, 0, 3000));
	}
	return $ref;
}

sub text_rows { my ($from, $to, %o) = @_; return join('', map { "$_\t" . ($_ * 7 % 23) . "\trow $_\n" } $from .. $to) }

check_case(name => 'hash partitions on two tservers, text', table => 'tq', fmt => 'text',
	data => text_rows(1, $N), tag => qr/^COPY $N$/);
check_case(name => 'hash partitions on two tservers, csv with quoted newlines', table => 'tq', fmt => 'csv',
	data => join('', map { qq{$_,$_,"line one\nline two of $_"\n} } 1 .. $N), tag => qr/^COPY $N$/);

# equal keys: id 7 at rows 7 and 200, id 12 at rows 12 and 13
my @ids = (1 .. $N);
$ids[199] = 7;
$ids[12] = 12;
my $dups = join('', map { "$ids[$_ - 1]\t$_\trow $_\n" } 1 .. $N);
check_case(name => 'duplicates, on_conflict error', table => 'tq', fmt => 'text', data => $dups,
	error => qr/^ERROR:  23505: duplicate key value violates unique constraint "tq\d_key"\nDETAIL:  Key \(id\)=\(12\) already exists.\nCONTEXT:  COPY tq, line 13$/m);
for my $policy ('ignore', 'replace')
{
	my $ref = check_case(name => "duplicates, on_conflict $policy", table => 'tq', fmt => 'text', data => $dups,
		opts => "on_conflict '$policy'", tag => qr/^COPY $N$/);
	my ($r7, $r12) = $policy eq 'ignore' ? (7, 12) : (200, 13);
	like($ref->{dump}, qr/^\(7,$r7,"row $r7"\)$/m, "duplicates, on_conflict $policy: row $r7 of id 7 kept");
	like($ref->{dump}, qr/^\(12,$r12,"row $r12"\)$/m, "duplicates, on_conflict $policy: row $r12 of id 12 kept");
}
check_case(name => 'end-of-data marker in the middle', table => 'tq', fmt => 'text',
	data => text_rows(1, 150) . "\\.\n" . text_rows(151, $N), tag => qr/^COPY 150$/);
check_case(name => 'a bad row in the middle', table => 'tq', fmt => 'text',
	data => text_rows(1, 149) . "150\tx\trow\n" . text_rows(151, $N),
	error => qr/^ERROR:  22P02: invalid input syntax for type integer: "x"\nCONTEXT:  COPY tq, line 150, column n: "x"$/m);
# (read: the partition there; the table cannot be scanned or truncated)
check_case(name => 'a partition no row reaches, its tserver not there', table => 'tr', fmt => 'csv',
	read => 'tr_up',
	data => join('', map { "$_,up,row $_\n" } 1 .. $N), tag => qr/^COPY $N$/);
check_case(name => 'a partition on the null transport: relayed by the leader', table => 'tm', fmt => 'csv',
	data => join('', map { "$_,row $_\n" } 1 .. $N), tag => qr/^COPY $N$/);

# A duplicate key fails its write session as the rows arrive; the COPY's
# first row for another partition on that session opens the partition's
# table on it, and that open meets the failure: it is the duplicate, with
# its line, as a heap table's COPY reports it, not "could not write to
# foreign table" with the line of the row routed (which it was, serial or
# parallel, streams or not, when the failure came back before the open).
$node->safe_psql($DB, q{
	CREATE TABLE tv (id int NOT NULL, s text) PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE tv1 PARTITION OF tv FOR VALUES FROM (MINVALUE) TO (1000)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE tv2 PARTITION OF tv FOR VALUES FROM (1000) TO (2000)
		SERVER ts2 OPTIONS (key 'id');
	CREATE FOREIGN TABLE tv3 PARTITION OF tv FOR VALUES FROM (2000) TO (MAXVALUE)
		SERVER ts OPTIONS (key 'id');
});
open(my $dfh, '>', "$dir/dup_then_open.csv") or die $!;
print $dfh join('', map { "$_,row $_\n" } 1 .. 999), "999,again\n", join('', map { "$_,row $_\n" } 1000 .. 2100);
close($dfh);
for my $way ([ 'serial', 0, 'on' ], [ 'workers 3, streams', 3, 'on' ], [ 'workers 3, relayed', 3, 'off' ])
{
	my ($name, $w, $streams) = @$way;
	my ($rc, $out, $err) = psql_cmds($node, $DB, [
		'TRUNCATE tv', "SET tcopy.copy_workers = $w", 'SET tcopy.copy_parallel_threshold = 0',
		"SET tcopy.copy_chunk_bytes = '1kB'", 'SET tcopy.batch_rows = 1', "SET tcopy.copy_streams = $streams",
		"COPY tv FROM '$dir/dup_then_open.csv' (FORMAT csv)" ], timeout => 60);
	like($err, qr/ERROR:  duplicate key value violates unique constraint "tv1_key"\nDETAIL:  Key \(id\)=\(999\) already exists.\nCONTEXT:  COPY tv, line 1000$/,
		"$name: a duplicate, then a partition opened on its session: the duplicate's error") or diag($err);
	is($node->safe_psql($DB, 'SELECT count(*) FROM tv'), '0', "$name: ... and nothing is loaded");
}

# ---- faults ----

open(my $fh, '>', "$dir/gone.csv") or die $!;
print $fh join('', map { "$_," . ($_ == 150 ? 'gone' : 'up') . ",row $_\n" } 1 .. $N);
close($fh);
for my $way ('serial', 'w3c64')
{
	my $v = $WAYS{$way};
	my ($rc, $out, $err) = psql_cmds($node, $DB, [
		'TRUNCATE tr_up', "SET tcopy.copy_workers = $v->{w}", 'SET tcopy.copy_parallel_threshold = 0',
		"SET tcopy.copy_chunk_bytes = '$v->{chunk}'", "COPY tr FROM '$dir/gone.csv' (FORMAT csv)" ]);
	like($err, qr/ERROR:  could not connect to tserver at "unix:\Q$dir\E\/no-tserver.sock"/,
		"$way: a row routed to the partition whose tserver is not there fails the COPY");
	like($err, qr/CONTEXT:  COPY tr, line 150\b/, "$way: ... at the line of the first row routed there");
	is($node->safe_psql($DB, 'SELECT count(*) FROM tr_up'), '0', "$way: ... and nothing is loaded");
}

# a parallel COPY that fails in a savepoint: its streams end with the
# rollback, which takes back what they sent; the transaction goes on
open($fh, '>', "$dir/bad.csv") or die $!;
print $fh join('', map { "$_,$_,row $_\n" } 1001 .. 1150), "x,1,bad\n", join('', map { "$_,$_,row $_\n" } 1151 .. 1300);
close($fh);
open($fh, '>', "$dir/more.csv") or die $!;
print $fh join('', map { "$_,$_,row $_\n" } 1151 .. 1300);
close($fh);
for my $table ('tq', 'tk')
{
	my ($rc, $out, $err) = psql_cmds($node, $DB, [
		"TRUNCATE $table", 'SET tcopy.copy_workers = 3', 'SET tcopy.copy_parallel_threshold = 0',
		"SET tcopy.copy_chunk_bytes = '64'", 'BEGIN',
		"COPY $table FROM '$dir/case1.dat' (FORMAT text)",
		'SAVEPOINT s', "COPY $table FROM '$dir/bad.csv' (FORMAT csv)", 'ROLLBACK TO s',
		"SELECT count(*) FROM $table",
		"COPY $table FROM '$dir/more.csv' (FORMAT csv)",
		'COMMIT', "SELECT count(*), count(*) FILTER (WHERE id > 1000) FROM $table" ]);
	like($err, qr/ERROR:  invalid input syntax for type integer: "x"/, "$table: the COPY in the savepoint fails");
	is($out, "TRUNCATE TABLE\nSET\nSET\nSET\nBEGIN\nCOPY $N\nSAVEPOINT\nROLLBACK\n$N\nCOPY 150\nCOMMIT\n" . ($N + 150) . '|150',
		"$table: the rollback to the savepoint takes its rows back, and the next parallel COPY and the commit go on")
	  or diag($err);
}

my $big = "$dir/big.csv";
open($fh, '>', $big) or die $!;
print $fh join('', map { "$_,$_,row $_ " . ('x' x 60) . "\n" } 1 .. 1_000_000);
close($fh);
$node->safe_psql($DB, 'TRUNCATE tq');
my $h = IPC::Run::start([ $node->installed_command('psql'), '-XAt', '-d', $node->connstr($DB),
	'-c', 'SET tcopy.copy_workers = 3', '-c', 'SET tcopy.copy_parallel_threshold = 0',
	'-c', "SET tcopy.copy_chunk_bytes = '64kB'",
	# a pause in the input, so that the kill comes before its end however
	# fast the COPY reads (tcopy's reader loads the file in about a second)
	'-c', "COPY tq FROM PROGRAM 'head -n 300000 $big; sleep 3; tail -n +300001 $big' (FORMAT csv)" ],
	'>', \my $kout, '2>', \my $kerr, IPC::Run::timeout(180));
my $workers = 0;
for (1 .. 200)
{
	$workers = $node->safe_psql($DB, q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'});
	last if $workers >= 3;
	sleep(0.05);
}
is($workers, 3, 'three workers load the big input');
sleep(0.3);
$ts2->kill9;
my $t = time();
eval { $h->finish };
like($kerr, qr/ERROR:  /, 'the tserver killed while the workers stream to it fails the COPY')
  or diag("stdout: $kout\nstderr: $kerr");
unlike($kout, qr/^COPY/m, '... which reports no row count');
cmp_ok(time() - $t, '<', 60, '... within a minute');
$ts2->start or BAIL_OUT('the second tserver did not restart');
is($node->safe_psql($DB, 'SELECT count(*) FROM tq'), '0', 'nothing of it is stored on either tserver');
is($node->safe_psql($DB, q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'}), '0',
	'no parallel worker is left');

$node->stop;
$ts->stop;
$ts2->stop;
done_testing();
