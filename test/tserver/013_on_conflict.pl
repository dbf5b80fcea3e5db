# 013_on_conflict.pl
#	A session's on_conflict (TABLE_OP ON_CONFLICT) over the wire: with 1 MB
#	of session memory, loads in key order and shuffled, in memory and
#	spilled, each with one key sent again at the end.  replace keeps the
#	later row, ignore the first, error fails the session with
#	DUPLICATE_KEY, Postgres' DETAIL, and nothing committed; a policy set
#	after the session wrote to the table is a protocol error.
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

# a keyless table: ids never repeat, the policy is accepted and moot
my $r = $ts->cli('load', 'nokey', '--rows', 10, '--keyless', '--on-conflict', 'error');
is($r->{rc}, 0, 'keyless table: on_conflict error accepted');
is($ts->count('nokey'), 10, 'keyless table: 10 rows');

$ts->check_log;
$ts->stop;
done_testing();
