# 014_on_conflict.pl
#	A session's on_conflict (TABLE_OP ON_CONFLICT) over the wire: with 1 MB
#	of session memory, loads in key order and shuffled, in memory and
#	spilled, each with one key sent again at the end.  replace keeps the
#	later row, ignore the first, error fails the session with
#	DUPLICATE_KEY, Postgres' DETAIL, and nothing committed; against rows
#	stored already, error fails and ignore keeps the stored row.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use TcopyTest qw(:all);

my $ts = TcopyTest->new(extra_args => [ '--session-memory-mb', 1 ]);
$ts->start or die "tserver did not start";

for my $rows (1000, 100_000)	# in memory; about ten spills
{
	for my $order ('sorted', 'shuffled')
	{
		my @shape = ('--rows', $rows, '--value', 1,
			$order eq 'shuffled' ? ('--shuffle', '--seed', 5) : ());
		my $what = "$rows rows $order";
		# a key sent again: the last one (adjacent when sorted), a middle one
		for my $again ($rows, int($rows / 2))
		{
			my $tag = "$what, aid $again again";
			(my $t = "t_${rows}_${order}_$again") =~ s/[^a-z0-9_]/_/g;

			my $r = $ts->cli('load', "${t}_r", @shape, '--again', $again, '--on-conflict', 'replace');
			is($r->{rc}, 0, "$tag, replace: commits") or diag($r->{err});
			is($ts->count("${t}_r"), $rows, "$tag, replace: $rows rows");
			is($ts->checksum("${t}_r", '--columns', 'abalance')->{sum}, $rows + 1,
				"$tag, replace: the later row won");

			$r = $ts->cli('load', "${t}_i", @shape, '--again', $again, '--on-conflict', 'ignore');
			if ($rows > 1000 && $order eq 'sorted' && $again != $rows)
			{
				# a spilled sorted session does not read its SST files back
				isnt($r->{rc}, 0, "$tag, ignore: refused");
				like($r->{err}, qr/cannot check keys that arrive out of order/,
					"$tag, ignore: says why");
				is($ts->count("${t}_i"), 0, "$tag, ignore: nothing committed");
				next;
			}
			is($r->{rc}, 0, "$tag, ignore: commits") or diag($r->{err});
			is($ts->count("${t}_i"), $rows, "$tag, ignore: $rows rows");
			is($ts->checksum("${t}_i", '--columns', 'abalance')->{sum}, $rows,
				"$tag, ignore: the first row stayed");

			$r = $ts->cli('load', "${t}_e", @shape, '--again', $again, '--on-conflict', 'error');
			isnt($r->{rc}, 0, "$tag, error: fails");
			like($r->{err}, qr/Key \(aid\)=\($again\) already exists\./,
				"$tag, error: Postgres' DETAIL with the key");
			is($ts->count("${t}_e"), 0, "$tag, error: nothing committed");

			$r = $ts->cli('load', "${t}_e", @shape, '--on-conflict', 'error');
			is($r->{rc}, 0, "$tag, error without a duplicate: commits") or diag($r->{err});
			is($ts->count("${t}_e"), $rows, "$tag, error without a duplicate: $rows rows");
		}
	}
}

# against stored rows: 1..2000 stored with abalance 1; a later session's
# rows of those keys are an error, or ignored, also when spilled
for my $rows (100, 100_000)
{
	my $t = "stored_$rows";
	is($ts->cli('load', $t, '--rows', 2000, '--value', 1)->{rc}, 0, "$t: 2000 rows stored");
	my $r = $ts->cli('load', $t, '--rows', $rows, '--start', 1500, '--value', 2,
		'--shuffle', '--seed', 9, '--on-conflict', 'error');
	isnt($r->{rc}, 0, "$t: error: a stored key fails the session");
	like($r->{err}, qr/Key \(aid\)=\(1500\) already exists\./, "$t: error: the first stored key");
	is($ts->count($t), 2000, "$t: error: nothing committed");
	$r = $ts->cli('load', $t, '--rows', $rows, '--start', 1500, '--value', 2,
		'--shuffle', '--seed', 9, '--on-conflict', 'ignore');
	is($r->{rc}, 0, "$t: ignore: commits") or diag($r->{err});
	my $new = $rows > 501 ? $rows - 501 : 0;	# keys above 2000
	is($ts->count($t), 2000 + $new, "$t: ignore: the new keys added");
	is($ts->checksum($t, '--columns', 'abalance')->{sum}, 2000 + 2 * $new,
		"$t: ignore: the stored rows kept abalance 1");
	$r = $ts->cli('load', $t, '--rows', 10, '--start', 1_000_000, '--on-conflict', 'error');
	is($r->{rc}, 0, "$t: error: keys above the stored ones commit") or diag($r->{err});
	# a session that truncates the table first has no stored rows to meet
	$r = $ts->cli('load', $t, '--rows', 2000, '--truncate', '--on-conflict', 'error');
	is($r->{rc}, 0, "$t: error after the session's TRUNCATE: commits") or diag($r->{err});
	is($ts->count($t), 2000, "$t: error after the session's TRUNCATE: 2000 rows");
}

# a keyless table: ids never repeat, the policy is accepted and moot
my $r = $ts->cli('load', 'nokey', '--rows', 10, '--keyless', '--on-conflict', 'error');
is($r->{rc}, 0, 'keyless table: on_conflict error accepted');
is($ts->count('nokey'), 10, 'keyless table: 10 rows');

$ts->check_log;
$ts->stop;
done_testing();
