# 102_concurrent_copy.pl
#	Four sessions COPY disjoint ranges of accounts into one tcopy table at
#	once (TCOPY_TAP_ROWS rows in all, default 1M): every row is there
#	afterwards, the same as in a heap table loaded from the same files, and
#	a reader watching meanwhile only ever sees whole loads (each session
#	commits atomically).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum);

my $sessions = 4;
my $per_session = int(($ENV{TCOPY_TAP_ROWS} // 1_000_000) / $sessions);
my $rows = $per_session * $sessions;

my ($node, $ts) = setup_node();
$node->safe_psql('postgres', accounts_ddl(heap => ['accounts_heap'], tcopy => ['accounts']));

my @files;
my ($aid_sum, $abalance_sum) = (0, 0);
for my $i (0 .. $sessions - 1)
{
	my $file = $node->basedir . "/accounts.$i.csv";
	my $e = write_accounts_csv($file, 1 + $i * $per_session, $per_session);
	$aid_sum += $e->{aid_sum};
	$abalance_sum += $e->{abalance_sum};
	push @files, $file;
}

# start every COPY, then watch the table until all of them are done
my @copies;
for my $i (0 .. $sessions - 1)
{
	my $s = TcopyPgTest::Session->new($node);
	$s->run_ok('SELECT 1;');	# connected before any COPY starts
	push @copies, $s;
}
my $t0 = time();
$_->[0]->send("COPY accounts FROM '$_->[1]' (FORMAT csv);") for map { [ $copies[$_], $files[$_] ] } 0 .. $#copies;

my %seen;
my $reader = TcopyPgTest::Session->new($node);
while (grep { !$_->done } @copies)
{
	my ($count, $err) = $reader->run('SELECT count(*) FROM accounts;');
	$seen{$count}++ if $err eq '';
	sleep(0.05);
}
note(sprintf("%d concurrent COPYs of %d rows: %.1f s", $sessions, $per_session, time() - $t0));

for my $i (0 .. $#copies)
{
	my ($out, $err) = $copies[$i]->result;
	is($out, "COPY $per_session", "session $i copied its range") or diag($err);
	is($err, '', "session $i: no error");
	$copies[$i]->quit;
}
my @partial = grep { $_ % $per_session != 0 } keys %seen;
is_deeply(\@partial, [], 'a reader saw only whole loads while they ran')
  or diag(explain \%seen);
note('counts seen while loading: ' . join(', ', sort { $a <=> $b } keys %seen));

$node->safe_psql('postgres', join(";\n", map { "COPY accounts_heap FROM '$_' (FORMAT csv)" } @files));
my $heap_sum = table_checksum($node, 'accounts_heap');
like($heap_sum, qr/^\Q$rows $aid_sum $abalance_sum\E -?\d+$/, 'the heap table holds every row');
is(table_checksum($node, 'accounts'), $heap_sum, 'the tcopy table holds the same rows');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT * FROM accounts EXCEPT ALL SELECT * FROM accounts_heap) d'),
	'0', 'EXCEPT ALL: no row differs');

# the tserver committed one session per COPY
my $stats = $ts->stats;
ok($stats && $stats->{sessions_committed} >= $sessions,
	"the tserver committed at least $sessions sessions")
  or diag(explain $stats);
is($stats->{sessions_open}, 0, 'no session is left open') if $stats;

$reader->quit;
$node->stop;
$ts->stop;
done_testing();
