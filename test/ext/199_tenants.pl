# 199_tenants.pl
#	Two tenants of one tserver seen from Postgres (issue 32): two servers
#	whose user mappings hold scoped tokens of namespaces a. and b., and a
#	tserver with --max-namespace-disk-mb 2:
#	- each tenant's transactions commit through two-phase commit in its own
#	  gid space: both commit at once, and each sees only its own prepared
#	  sessions and its own figures in tcopy.server_stats;
#	- a COPY of tenant a that would pass its disk quota fails with 53100
#	  (disk_full), naming the quota, and keeps nothing, while tenant b's
#	  COPY goes through; tenant a can still TRUNCATE to make room (a
#	  TRUNCATE through a scoped token opens the table on the write
#	  connection, which was refused before: found by this test).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv sqlstates);

my $tmp = PostgreSQL::Test::Utils::tempdir_short();
my $scoped = "$tmp/scoped";
open(my $fh, '>', $scoped) or die "$scoped: $!";
print $fh "a. tenant a token 0123456789\nb. tenant b token 0123456789\n";
close $fh;
chmod(0600, $scoped) or die "chmod: $!";

my ($node, $ts) = setup_node(name => 'tenants',
	tserver => { auth => [ '--allow-uid', $>, '--scoped-tokens', $scoped,
		'--max-namespace-disk-mb', 2, '--session-memory-mb', 4 ] });
my $address = $ts->address;
$node->safe_psql('postgres', qq{
	CREATE SERVER ts_a FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts_a OPTIONS (token 'tenant a token 0123456789');
	CREATE SERVER ts_b FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts_b OPTIONS (token 'tenant b token 0123456789');
	CREATE FOREIGN TABLE ta (aid int NOT NULL, bid int, abalance int, filler text)
		SERVER ts_a OPTIONS (key 'aid', table_name 'a.accounts');
	CREATE FOREIGN TABLE tb (aid int NOT NULL, bid int, abalance int, filler text)
		SERVER ts_b OPTIONS (key 'aid', table_name 'b.accounts');
});

# ---- two-phase commits of both tenants, each in its own gid space ----
$node->safe_psql('postgres', q{
	INSERT INTO ta SELECT g, 1, 0, 'a' FROM generate_series(1, 1000) g;
	INSERT INTO tb SELECT g, 1, 0, 'b' FROM generate_series(1, 700) g;
	BEGIN;
	INSERT INTO ta VALUES (5001, 1, 0, 'both');
	INSERT INTO tb VALUES (5001, 1, 0, 'both');
	COMMIT;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM ta'), '1001', "tenant a's rows");
is($node->safe_psql('postgres', 'SELECT count(*) FROM tb'), '701', "tenant b's rows");
is($node->safe_psql('postgres', 'SELECT count(*) FROM tcopy.prepared_sessions()'), '0',
	'nothing is left prepared');
my %sa = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', "SELECT stat, value FROM tcopy.server_stats('ts_a')");
is($sa{tables}, 1, "tenant a's server_stats: its one table");
is($sa{rows_committed}, 0, '... and no server-wide figure (rows committed: 0)');
my %sadmin = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', "SELECT stat, value FROM tcopy.server_stats('ts')");
ok($sadmin{rows_committed} >= 1702, "the uid-admitted server sees all ($sadmin{rows_committed} rows)");

# ---- the disk quota ----
my $csv = "$tmp/accounts.csv";
write_accounts_csv($csv, 10_001, 300_000);
my ($rc, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nCOPY ta FROM '$csv' (FORMAT csv)");
is(join(',', sqlstates($err)), '53100', "tenant a's COPY past its disk quota: 53100") or diag($err);
like($err, qr/namespace "a\." is over its disk quota: .* of the 2 MB it may \(--max-namespace-disk-mb\)/,
	'... saying so');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ta'), '1001', '... and nothing of it is kept');
($rc, $out, $err) = $node->psql('postgres', "COPY tb FROM '$csv' (FORMAT csv) WHERE aid < 40000");
is($rc, 0, "tenant b's COPY goes through") or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM tb'), 701 + 29_999, '... with its rows');
($rc, $out, $err) = $node->psql('postgres', 'TRUNCATE ta');
is($rc, 0, 'tenant a may TRUNCATE (its table, opened on its own write connection)') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM ta'), '0', '... and its table is empty');

$node->stop;
$ts->stop;
done_testing();
