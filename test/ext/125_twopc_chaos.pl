# 125_twopc_chaos.pl
#	Two-phase commit (issue 11) under a kill loop: for TCOPY_CHAOS_SECONDS
#	(default 30) seconds, TCOPY_CHAOS_CLIENTS (default 3) clients each run
#	one small transaction after another,
#	    BEGIN; INSERT INTO marker VALUES (n); COPY t FROM PROGRAM (1,000
#	    rows, ids n * 1000 + 1 ..); COMMIT;
#	(a one-shot psql each, so that a client whose connection breaks just
#	starts the next one), while at random moments (drawn from
#	TCOPY_CHAOS_SEED, printed) the tserver is killed -9 and restarted, and
#	Postgres is stopped in immediate mode and restarted, each a bounded
#	number of times (one tserver kill per 6 s, one Postgres stop per 12 s
#	of the loop, at least one of each).  Recovery runs every second in the
#	background worker.  Afterwards, once recovery has run to the end:
#	- for every n, marker row n is there exactly when all 1,000 of its rows
#	  are, never a partial set;
#	- every transaction whose COMMIT succeeded is there; every one that
#	  failed with an ERROR (psql exit 1) is not; those whose connection
#	  broke (exit 2) may be either, all or nothing;
#	- nothing is left prepared, and no 08007 anywhere.
#	The counts of committed, failed and broken transactions are reported.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use TcopyTest;
use TcopyPgTest qw(twopc_setup);
use TcopyChaos qw(run_chaos);

my ($node, $ts) = twopc_setup(recovery_interval => '1s');
run_chaos(
	node => $node,
	ts => $ts,
	seconds => $ENV{TCOPY_CHAOS_SECONDS} // 30,
	clients => $ENV{TCOPY_CHAOS_CLIENTS} // 3,
	seed => $ENV{TCOPY_CHAOS_SEED} // 125,
	fault => sub {
		$ts->kill9;
		sleep(rand(0.5));
		$ts->start or BAIL_OUT('tserver did not start after kill -9');
	});

$node->stop;
$ts->stop;
done_testing();
