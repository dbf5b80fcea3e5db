# 141_isolation_roles.pl
#	A tcopy table is bound to its own data (issue 12), tried by roles:
#	alice makes a.secret and fills it; bob, who has USAGE on the server
#	and may create tables, tries every way to reach her rows:
#	- CREATE FOREIGN TABLE with table_name in every spelling: the name
#	  tables had before 1.2 ('postgres.a.secret', quoted variants), and
#	  the generated name, which bob can read from pg_foreign_table;
#	- with a definition that does not match hers (the old way to learn
#	  her columns from a schema mismatch);
#	- ALTER FOREIGN TABLE of his own table: OPTIONS (SET / ADD /
#	  DROP table_name);
#	- the names her table had before a rename, a schema rename, a DROP:
#	  a new table of that name is a new, empty table;
#	every attempt fails with SQLSTATE 42501 (or the DROP's own error), says
#	nothing of her table, and her rows are unchanged (checksum);
#	- the owner of a server (carol) may attach data by name, a superuser
#	  too; what bob makes through his own tables never touches hers;
#	- in a cluster without tcopy in shared_preload_libraries, where the
#	  validator loads the library in the middle of the statement: the
#	  validator refuses a table without table_name and bob's table_name,
#	  with a hint to load tcopy and retry; the retry works.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates table_name_of);

my ($node, $ts) = setup_node(name => 'roles');

# Run sql as role (VERBOSITY verbose: errors carry their SQLSTATE).
sub as_role
{
	my ($role, $sql, $db) = @_;
	my ($rc, $out, $err) = (0, '', '');
	$rc = $node->psql($db // 'postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, extra_params => [ '-U', $role ],
		on_error_stop => 1);
	return ($rc, $out, $err);
}

# "count sum(id) sum(hash of the row)" of a table, read as alice.
sub alice_checksum
{
	my ($table) = @_;
	my ($rc, $out, $err) = as_role('alice', qq{
		SELECT count(*) || ' ' || coalesce(sum(id), 0) || ' ' || coalesce(sum(hashtext(s::text)::bigint), 0)
		FROM $table s});
	return $rc == 0 ? $out : "error: $err";
}

my $db = 'postgres';
$node->safe_psql('postgres', qq{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE ROLE carol LOGIN;
	GRANT USAGE ON FOREIGN SERVER ts TO alice, bob;
	GRANT CREATE ON DATABASE $db TO alice, bob, carol;
	GRANT USAGE ON FOREIGN DATA WRAPPER tcopy TO carol;
});

my ($rc, $out, $err) = as_role('alice', q{
	CREATE SCHEMA a;
	CREATE FOREIGN TABLE a.secret (id int NOT NULL, card text, pin int) SERVER ts OPTIONS (key 'id');
	INSERT INTO a.secret SELECT i, 'card-' || i, i % 10000 FROM generate_series(1, 500) i;
	CREATE FOREIGN TABLE a.later (id int NOT NULL, note text) SERVER ts OPTIONS (key 'id');
	INSERT INTO a.later SELECT i, 'later ' || i FROM generate_series(1, 50) i;
	GRANT USAGE ON SCHEMA a TO bob;
});
is($rc, 0, 'alice makes a.secret and fills it') or diag($err);
my $secret = alice_checksum('a.secret');
like($secret, qr/^500 125250 /, "a.secret holds alice's 500 rows");
my $generated = table_name_of($node, 'a.secret');
like($generated, qr/^\d+\.\d+\.[0-9a-f]{32}$/, 'a.secret got a generated table_name, readable by anyone');
is($ts->count($generated), 500, 'the tserver holds her rows under that name');

($rc, $out, $err) = as_role('bob', 'CREATE SCHEMA b');
is($rc, 0, 'bob makes schema b') or diag($err);

# Every spelling of her data bob could try, and a table of another shape
# (a schema mismatch used to tell him her columns).
my @names = ('postgres.a.secret', '"postgres"."a"."secret"', 'postgres.a."secret"',
	'"postgres".a.secret', $generated, uc($generated), " $generated");
my $n = 0;
for my $name (@names)
{
	for my $columns ('(id int NOT NULL, card text, pin int)', '(x bytea)')
	{
		$n++;
		(my $literal = $name) =~ s/'/''/g;
		($rc, $out, $err) = as_role('bob',
			"CREATE FOREIGN TABLE b.steal$n $columns SERVER ts OPTIONS (key '"
			  . ($columns =~ /^\(id/ ? 'id' : 'x') . "', table_name '$literal')");
		is_deeply([ sqlstates($err) ], ['42501'], "bob: CREATE FOREIGN TABLE $columns with table_name '$name': 42501")
		  or diag($err);
		unlike($err, qr/card|pin|\bsecret\b.*column|has \d+ columns/,
			'... and the error says nothing of her columns') or diag($err);
	}
}
like($err, qr/permission denied to set option "table_name"/, 'the error says what is denied') or diag($err);
like($err, qr/HINT:  Leave out table_name/, '... and what to do instead') or diag($err);
note("bob's attach: $err");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'steal%'}), '0',
	'none of those tables exists');

# His own table: altering its table_name is an attach, dropping it refused.
($rc, $out, $err) = as_role('bob', q{
	CREATE FOREIGN TABLE b.own (id int NOT NULL, card text, pin int) SERVER ts OPTIONS (key 'id');
	INSERT INTO b.own VALUES (1, 'bob', 1);});
is($rc, 0, 'bob makes and fills a table of his own') or diag($err);
for my $action ("SET table_name '$generated'", "SET table_name 'postgres.a.secret'",
	"ADD table_name '$generated'", 'DROP table_name')
{
	($rc, $out, $err) = as_role('bob', "ALTER FOREIGN TABLE b.own OPTIONS ($action)");
	my @expected = $action =~ /^DROP/ ? ('0A000') : ('42501');
	is_deeply([ sqlstates($err) ], \@expected, "bob: ALTER FOREIGN TABLE b.own OPTIONS ($action) is refused")
	  or diag($err);
}
isnt(table_name_of($node, 'b.own'), $generated, "bob's table is still bound to its own data");
($rc, $out, $err) = as_role('bob', q{SELECT count(*) FROM b.own});
is($out, '1', 'bob reads his own one row') or diag($err);
($rc, $out, $err) = as_role('bob', q{TRUNCATE b.own; INSERT INTO b.own SELECT i, 'x', 0 FROM generate_series(1, 600) i;});
is($rc, 0, 'bob truncates and overwrites his own table') or diag($err);

# Names her tables had: renamed, schema renamed, dropped.
($rc, $out, $err) = as_role('alice', q{
	ALTER FOREIGN TABLE a.secret RENAME TO secret_renamed;
	GRANT CREATE ON SCHEMA a TO bob;});
is($rc, 0, 'alice renames a.secret') or diag($err);
is(alice_checksum('a.secret_renamed'), $secret, 'the renamed table keeps her rows');
($rc, $out, $err) = as_role('bob', q{
	CREATE FOREIGN TABLE a.secret (id int NOT NULL, card text, pin int) SERVER ts OPTIONS (key 'id');
	SELECT count(*) FROM a.secret;});
is($out, '0', "bob's new a.secret, the name hers had, is empty") or diag($err);
($rc, $out, $err) = as_role('bob', q{INSERT INTO a.secret VALUES (1, 'overwritten', 0), (2, 'overwritten', 0)});
is(alice_checksum('a.secret_renamed'), $secret, "... and writing it leaves hers alone");

($rc, $out, $err) = as_role('alice', q{ALTER SCHEMA a RENAME TO a_moved});
is($rc, 0, 'alice renames schema a') or diag($err);
is(alice_checksum('a_moved.secret_renamed'), $secret, 'her table keeps her rows in the renamed schema');
($rc, $out, $err) = as_role('bob', q{
	CREATE SCHEMA a;
	CREATE FOREIGN TABLE a.secret_renamed (id int NOT NULL, card text, pin int) SERVER ts OPTIONS (key 'id');
	SELECT count(*) FROM a.secret_renamed;});
is($out, '0', "bob's a.secret_renamed, in a new schema a, is empty") or diag($err);

my $later = table_name_of($node, 'a_moved.later');
($rc, $out, $err) = as_role('alice', q{DROP FOREIGN TABLE a_moved.later});
is($rc, 0, 'alice drops a table') or diag($err);
my $left = $ts->count($later) // 'no table';
ok($left eq 'no table' || $left eq '0', 'its data is gone from the tserver') or diag("left: $left");
($rc, $out, $err) = as_role('bob', q{
	CREATE FOREIGN TABLE a.later (id int NOT NULL, note text) SERVER ts OPTIONS (key 'id');
	SELECT count(*) FROM a.later;});
is($out, '0', "bob's a.later, the dropped table's old name, is empty") or diag($err);
($rc, $out, $err) = as_role('bob', "CREATE FOREIGN TABLE b.later (id int NOT NULL, note text) SERVER ts"
	  . " OPTIONS (key 'id', table_name '$later')");
is_deeply([ sqlstates($err) ], ['42501'], "bob cannot attach the dropped table's generated name either")
  or diag($err);

is(alice_checksum('a_moved.secret_renamed'), $secret, "after all of bob's tries, alice's rows are unchanged");
is($ts->count($generated), 500, '... on the tserver too');

# The server's owner and superusers may attach.
($rc, $out, $err) = as_role('carol', qq{
	CREATE SERVER ts_carol FOREIGN DATA WRAPPER tcopy OPTIONS (address '${\ $ts->address }');
	CREATE USER MAPPING FOR carol SERVER ts_carol;
	CREATE SCHEMA c;
	CREATE FOREIGN TABLE c.attached (id int NOT NULL, card text, pin int) SERVER ts_carol
		OPTIONS (key 'id', table_name '$generated');
	SELECT count(*) FROM c.attached;});
is($out, '500', "carol, owner of her server, attaches alice's data by name") or diag($err);
($rc, $out, $err) = as_role('bob', qq{
	CREATE FOREIGN TABLE b.via_carol (id int NOT NULL, card text, pin int) SERVER ts_carol
		OPTIONS (key 'id', table_name '$generated');});
ok($rc != 0, "bob cannot use carol's server (no USAGE)") or diag($err);
$node->safe_psql('postgres', qq{
	CREATE FOREIGN TABLE public.su_attached (id int NOT NULL, card text, pin int) SERVER ts
		OPTIONS (key 'id', table_name '$generated');});
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.su_attached'), '500',
	'a superuser attaches it too');
($rc, $out, $err) = as_role('alice', q{ALTER FOREIGN TABLE a_moved.secret_renamed OPTIONS (SET key 'id')});
is($rc, 0, 'alice alters other options of her table') or diag($err);

# ---- without shared_preload_libraries: the validator holds the line ----
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '${\ $ts->address }');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE ROLE bob LOGIN;
	GRANT USAGE ON FOREIGN SERVER ts TO bob;
	GRANT CREATE ON SCHEMA public TO bob;
});
# each psql is a new session, where tcopy is not loaded yet
sub plain_as_bob
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $plain->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, extra_params => [ '-U', 'bob' ], on_error_stop => 0);
	return ($rc, $out, $err);
}
($rc, $out, $err) = plain_as_bob("CREATE FOREIGN TABLE s1 (id int) SERVER ts OPTIONS (table_name '$generated')");
is_deeply([ sqlstates($err) ], ['42501'], 'tcopy not loaded: bob\'s table_name is refused by the validator')
  or diag($err);
like($err, qr/shared_preload_libraries/, '... with a hint to load tcopy and retry') or diag($err);
($rc, $out, $err) = plain_as_bob("CREATE FOREIGN TABLE s2 (id int) SERVER ts");
is_deeply([ sqlstates($err) ], ['HV002'], 'tcopy not loaded: a table without table_name is refused')
  or diag($err);
like($err, qr/retry the statement/, '... saying to retry') or diag($err);
note("not loaded: $err");
($rc, $out, $err) = plain_as_bob("CREATE FOREIGN TABLE s2 (id int) SERVER ts;\nCREATE FOREIGN TABLE s2 (id int) SERVER ts;"
	  . "\nINSERT INTO s2 VALUES (1);\nSELECT count(*) FROM s2;");
is($out, '1', 'retried in the same session, where the validator loaded tcopy, it works') or diag($err);
# a read of a tcopy table loads the library, and the hook with it
($rc, $out, $err) = plain_as_bob("SELECT count(*) FROM s2;\n"
	  . "CREATE FOREIGN TABLE s3 (id int) SERVER ts OPTIONS (table_name '$generated')");
is_deeply([ sqlstates($err) ], ['42501'], 'loaded, bob\'s table_name is refused by the hook') or diag($err);
like($err, qr/HINT:  Leave out table_name/, '... with the hook\'s hint') or diag($err);
$plain->safe_psql('postgres', "CREATE FOREIGN TABLE su (id int NOT NULL, card text, pin int) SERVER ts"
	  . " OPTIONS (key 'id', table_name '$generated')");
is($plain->safe_psql('postgres', 'SELECT count(*) FROM su'), '500',
	'tcopy not loaded: a superuser may still attach');
$plain->stop;

$node->stop;
$ts->stop;
done_testing();
