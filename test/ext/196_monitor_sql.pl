# 196_monitor_sql.pl
#	What a tserver stores and does, seen from SQL (issue 29):
#	- tcopy.table_size(regclass): 0 rows for a table never written; after
#	  a COPY of 20000 rows, about 20000 rows and some bytes; a partitioned
#	  table's tcopy partitions summed; refused (42501) to a role that may
#	  not SELECT from the table, and for a heap table (42809, with a hint
#	  naming pg_total_relation_size);
#	- tcopy.server_stats(server): the tserver's counters (rows committed,
#	  tables, open connections) through the caller's user mapping; refused
#	  (42501) to a role without USAGE on the server, and for a server of
#	  another wrapper (42809).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates);

my ($node, $ts) = setup_node(name => 'monitor');
$node->safe_psql('postgres', q{
	CREATE TABLE h (id int, v text);
	CREATE FOREIGN TABLE t (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE empty (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	CREATE TABLE p (id int NOT NULL, v text) PARTITION BY HASH (id);
	CREATE FOREIGN TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 0)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE p1 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 1)
		SERVER ts OPTIONS (key 'id');
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT SELECT ON t TO alice;
	GRANT USAGE ON FOREIGN SERVER ts TO alice;
	CREATE FOREIGN DATA WRAPPER other;
	CREATE SERVER elsewhere FOREIGN DATA WRAPPER other;
});
is($node->safe_psql('postgres', 'SELECT rows, bytes FROM tcopy.table_size(\'empty\')'), '0|0',
	'a table never written: 0 rows, 0 bytes');
$node->safe_psql('postgres', q{
	COPY t FROM PROGRAM 'seq 1 20000 | sed "s/$/,some text/"' (FORMAT csv);
	INSERT INTO p SELECT g, 'x' FROM generate_series(1, 3000) g;
});
my ($rows, $bytes) = split /\|/, $node->safe_psql('postgres', 'SELECT * FROM tcopy.table_size(\'t\')');
ok($rows >= 19000 && $rows <= 21000, "after a COPY of 20000 rows, about 20000 rows ($rows)");
ok($bytes > 20000, "... and some bytes ($bytes)");
($rows) = split /\|/, $node->safe_psql('postgres', 'SELECT * FROM tcopy.table_size(\'p\')');
ok($rows >= 2700 && $rows <= 3300, "a partitioned table: its partitions summed ($rows rows of 3000)");
my ($p0) = split /\|/, $node->safe_psql('postgres', 'SELECT * FROM tcopy.table_size(\'p0\')');
ok($p0 > 0 && $p0 < $rows, "one partition alone holds part of them ($p0)");

my ($rc, $out, $err) = $node->psql('postgres', "SET ROLE alice; SELECT rows > 0 FROM tcopy.table_size('t')");
is($out, 't', 'a role that may SELECT from the table may ask its size') or diag($err);
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET ROLE bob; SELECT * FROM tcopy.table_size('t')");
is(join(',', sqlstates($err)), '42501', 'a role that may not SELECT from it is refused (42501)');
like($err, qr/permission denied for foreign table t/, '... saying so');
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM tcopy.table_size('h')");
is(join(',', sqlstates($err)), '42809', 'a heap table is refused (42809)');
like($err, qr/"h" is not a tcopy table.*HINT:.*pg_total_relation_size/s, '... with a hint');

my %stats = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT stat, value FROM tcopy.server_stats(\'ts\')');
ok(($stats{rows_committed} // 0) >= 23000, "server_stats: rows committed ($stats{rows_committed})");
ok(($stats{tables} // 0) >= 3, "... tables: t and the partitions ($stats{tables})");
ok(($stats{connections_open} // 0) >= 1, "... open connections ($stats{connections_open})");
ok(($stats{uptime_ms} // 0) > 0, '... uptime');
is(scalar(keys %stats), 26, '... 26 counters');
ok(exists $stats{lazy_writes} && exists $stats{wal_background_syncs}, "... the publishes' lazy writes and the background syncer's syncs among them");
ok(($stats{disk_free_bytes} // 0) > 0, "... the room left on the tserver's disk ($stats{disk_free_bytes})");
is($stats{memory_budget_bytes}, 256 * 1024 * 1024, '... the memory budget (--memory-mb, 256 by default)');
($rc, $out, $err) = $node->psql('postgres', "SET ROLE alice; SELECT value > 0 FROM tcopy.server_stats('ts') WHERE stat = 'tables'");
is($out, 't', 'a role with USAGE on the server may read its counters') or diag($err);
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSET ROLE bob; SELECT * FROM tcopy.server_stats('ts')");
is(join(',', sqlstates($err)), '42501', 'a role without USAGE on the server is refused (42501)');
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM tcopy.server_stats('elsewhere')");
is(join(',', sqlstates($err)), '42809', 'a server of another wrapper is refused (42809)');
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM tcopy.server_stats('nowhere')");
is(join(',', sqlstates($err)), '42704', 'an unknown server is refused (42704)');

$node->stop;
$ts->stop;
done_testing();
