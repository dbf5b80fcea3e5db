# 154_enum_rename_race.pl
#	Concurrent ALTER TYPE ... ADD / RENAME VALUE keep tcopy.enum_label
#	right (enum_labels.c): the hook looks for a label tcopy stores only
#	after taking the lock Postgres' own ADD and RENAME VALUE take, and
#	reads what is committed then, whatever the transaction's snapshot:
#	- while session A renames sad to unhappy, uncommitted, session B's
#	  ADD VALUE 'sad' (and then RENAME VALUE ... TO 'sad') waits for A,
#	  and once A commits is refused (42710): 'sad' never names two values;
#	- a REPEATABLE READ transaction is refused a label A's rename,
#	  committed after its snapshot, stores, and its own rename of a value
#	  A renamed extends A's row (one row per value) instead of adding a
#	  second one;
#	- after A rolls back, B's ADD VALUE goes through.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node wait_until sqlstates);

my ($node, $ts) = setup_node(name => 'enum_race');
$node->safe_psql('postgres', q{CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')});

my $a = TcopyPgTest::Session->new($node);
my $b = TcopyPgTest::Session->new($node);
$b->run_ok('\set VERBOSITY verbose');

sub labels
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(stored || '>' || label, ' ' ORDER BY stored)
		FROM tcopy.enum_label WHERE enumtype = 'mood'::regtype});
}

sub enum_labels
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(enumlabel::text, ' ' ORDER BY enumsortorder)
		FROM pg_enum WHERE enumtypid = 'mood'::regtype});
}

# Send sql in session b, which must then wait for a lock on an object
# (the type) held by a; returns whether it did.
sub b_waits_for_a
{
	my ($sql) = @_;
	$b->send($sql);
	return wait_until(30, sub {
		$node->safe_psql('postgres', q{
			SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND NOT granted}) eq '1'
	});
}

# ---- B's ADD VALUE waits for A's rename, then is refused ----
$a->run_ok(q{BEGIN; ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy';});
ok(b_waits_for_a(q{ALTER TYPE mood ADD VALUE 'sad';}),
	'ADD VALUE of the label being renamed away waits for the renaming transaction');
ok(!$b->done, '... and is still waiting');
$a->run_ok('COMMIT;');
my (undef, $err) = $b->result;
is_deeply([ sqlstates($err) ], ['42710'], '... then, once it commits, is refused with 42710')
  or diag($err);
like($err, qr/enum label "sad" is stored by tcopy for the value now called "unhappy"/,
	'... saying which value the label is stored for');
is(enum_labels(), 'unhappy ok happy', 'the type has no second "sad"');
is(labels(), 'sad>unhappy', 'one row: sad is stored for unhappy');

# ---- the same for RENAME VALUE ... TO the label ----
$a->run_ok(q{BEGIN; ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';});
ok(b_waits_for_a(q{ALTER TYPE mood RENAME VALUE 'happy' TO 'ok';}),
	'RENAME VALUE to the label being renamed away waits');
$a->run_ok('COMMIT;');
(undef, $err) = $b->result;
is_deeply([ sqlstates($err) ], ['42710'], '... then is refused with 42710') or diag($err);
is(enum_labels(), 'unhappy fine happy', 'the type is as A left it');

# ---- a REPEATABLE READ snapshot older than the rename ----
$b->run_ok('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM tcopy.enum_label;');
$a->run_ok(q{ALTER TYPE mood RENAME VALUE 'unhappy' TO 'blue';});
$a->run_ok(q{ALTER TYPE mood RENAME VALUE 'happy' TO 'glad';});
is(labels(), 'happy>glad ok>fine sad>blue', "A's chained rename is one row");
is($b->run_ok(q{SELECT string_agg(label, ' ' ORDER BY label) FROM tcopy.enum_label;}),
	'fine unhappy', "B's snapshot does not see A's rename");
(undef, $err) = $b->run(q{ALTER TYPE mood ADD VALUE 'unhappy';});
is($err, '', 'B may add the label A renamed away, which tcopy does not store');
(undef, $err) = $b->run(q{SAVEPOINT s; ALTER TYPE mood ADD VALUE 'happy';});
is_deeply([ sqlstates($err) ], ['42710'],
	'B is refused the stored label, as of the latest commit, not its snapshot')
  or diag($err);
$b->run_ok(q{ROLLBACK TO SAVEPOINT s; ALTER TYPE mood RENAME VALUE 'blue' TO 'green';});
$b->run_ok('COMMIT;');
is(labels(), 'happy>glad ok>fine sad>green', "B's rename extends A's row: still one row per value");

# ---- after A rolls back, B's ADD VALUE goes through ----
$a->run_ok(q{BEGIN; ALTER TYPE mood RENAME VALUE 'green' TO 'sad';});
is(labels(), 'happy>glad ok>fine sad>green', 'a rename back is not seen before it commits');
ok(b_waits_for_a(q{ALTER TYPE mood ADD VALUE 'tmp';}), 'B waits for A');
$a->run_ok('ROLLBACK;');
(undef, $err) = $b->result;
is($err, '', '... and adds its value once A rolled back');
is(labels(), 'happy>glad ok>fine sad>green', 'the rows are as before A');
is(enum_labels(), 'green fine glad unhappy tmp', 'the type too, with B\'s values');

$a->quit;
$b->quit;
$node->stop;
$ts->stop;
done_testing();
