# 142_isolation_data.pl
#	A tcopy table is bound to its own data (issue 12), the data's side:
#	- every DROP drops the data, committed: DROP FOREIGN TABLE, DROP
#	  SCHEMA ... CASCADE, DROP SERVER ... CASCADE, DROP OWNED; the tserver
#	  has no row of it after, and a superuser attaching the same name
#	  reads none;
#	- two foreign tables bound to the same tserver table (a superuser's
#	  attach): a transaction that wrote or truncated through one reads its
#	  writes through the other when both use the same server and user
#	  mapping, and is refused through another server (a clear error,
#	  never stale rows), as after a DROP of the data; a TRUNCATE through
#	  the other removes the rows written through the one (issue 48);
#	  committed, the other sees the rows;
#	- a failing row's DETAIL follows Postgres' column privileges: a NOT
#	  NULL violation by INSERT, by COPY (the hook's two paths) and routed
#	  through a partitioned table, and a view's WITH CHECK OPTION, give
#	  the same message, DETAIL and schema/table/column fields as for heap
#	  tables under the same grants, and never a value the user may not
#	  see.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node sqlstates table_name_of);

my ($node, $ts) = setup_node(name => 'data');

# Run sql (as role, default the superuser) in one psql, VERBOSITY verbose,
# not stopping at errors: (exit, stdout, stderr).
sub run
{
	my ($sql, $role) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, on_error_stop => 0,
		extra_params => $role ? [ '-U', $role ] : []);
	return ($rc, $out, $err);
}

# ---- every DROP drops the data ----
$node->safe_psql('postgres', q{
	CREATE ROLE owner_role LOGIN;
	GRANT USAGE ON FOREIGN SERVER ts TO owner_role;
	GRANT CREATE ON DATABASE postgres TO owner_role;
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address 'ADDRESS');
	CREATE USER MAPPING FOR PUBLIC SERVER ts2;
	CREATE SCHEMA d;
	CREATE FOREIGN TABLE d.by_table (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE d.by_schema (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE public.by_server (id int NOT NULL) SERVER ts2 OPTIONS (key 'id');
} =~ s/ADDRESS/$ts->address/er);
my ($rc, $out, $err) = run(q{
	CREATE SCHEMA o;
	CREATE FOREIGN TABLE o.by_owned (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	INSERT INTO o.by_owned SELECT generate_series(1, 40);}, 'owner_role');
is($rc, 0, 'owner_role makes and fills a table') or diag($err);
my %names;
for my $t ('d.by_table', 'd.by_schema', 'public.by_server', 'o.by_owned')
{
	$names{$t} = table_name_of($node, $t);
	$node->safe_psql('postgres', "INSERT INTO $t SELECT generate_series(1, 30)") unless $t eq 'o.by_owned';
	ok(($ts->count($names{$t}) // 0) > 0, "$t has rows on the tserver");
}
for my $drop ([ 'd.by_table', 'DROP FOREIGN TABLE d.by_table' ],
	[ 'd.by_schema', 'DROP SCHEMA d CASCADE' ],
	[ 'public.by_server', 'DROP SERVER ts2 CASCADE' ],
	[ 'o.by_owned', 'DROP OWNED BY owner_role' ])
{
	my ($t, $sql) = @$drop;
	($rc, $out, $err) = run($sql);
	is($rc, 0, "$sql runs") or diag($err);
	my $left = $ts->count($names{$t}) // 'no table';
	ok($left eq 'no table' || $left eq '0', "$sql: the tserver has no row of $t") or diag("left: $left");
	$node->safe_psql('postgres', "CREATE FOREIGN TABLE public.reattach (id int NOT NULL) SERVER ts"
		  . " OPTIONS (key 'id', table_name '$names{$t}')");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM public.reattach'), '0',
		"$sql: a table attached to its old name reads no row");
	$node->safe_psql('postgres', 'DROP FOREIGN TABLE public.reattach');
}

# ---- two foreign tables bound to one tserver table ----
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE t1 (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id');
	INSERT INTO t1 SELECT i, 'v' FROM generate_series(1, 10) i;});
my $shared = table_name_of($node, 't1');
$node->safe_psql('postgres', "CREATE FOREIGN TABLE t2 (id int NOT NULL, v text) SERVER ts"
	  . " OPTIONS (key 'id', table_name '$shared')");
is($node->safe_psql('postgres', 'SELECT count(*) FROM t2'), '10', 't2, attached to t1\'s data, reads its rows');

# through the same server and user mapping, the other table reads the
# transaction's writes (the same write session), and a TRUNCATE through it
# removes them; a read of data dropped at COMMIT is refused
for my $case ([ 'INSERT INTO t1 VALUES (100, \'new\')', 'SELECT count(*) FROM t2', '11' ],
	[ 'INSERT INTO t1 VALUES (100, \'new\')', "TRUNCATE t2;\nSELECT count(*) FROM t1", '0' ],
	[ 'COPY t1 FROM PROGRAM \'echo 101,x\' (FORMAT csv)', 'SELECT count(*) FROM t2', '11' ],
	[ 'TRUNCATE t1', 'SELECT count(*) FROM t2', '0' ],
	[ 'DROP FOREIGN TABLE t1', 'SELECT count(*) FROM t2', undef ])
{
	my ($write, $read, $expect) = @$case;
	($rc, $out, $err) = run("BEGIN;\n$write;\n$read;\nROLLBACK;");
	if (defined $expect)
	{
		is($err, '', "$write, then $read in the same transaction: no error");
		like($out, qr/^$expect$/m, '... and it reads the transaction\'s writes') or diag("out: $out");
		next;
	}
	is_deeply([ sqlstates($err) ], ['0A000'], "$write, then $read in the same transaction: refused")
	  or diag("out: $out\nerr: $err");
	like($err, qr/transaction that (wrote|truncated|dropped)/, '... saying why') or diag($err);
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM t2'), '10', 'rolled back: t2 still reads the 10 rows');

# the same tserver under another spelling of its address
{
	my $alias = $ts->socket_path;
	$alias =~ s{/([^/]+)$}{/./$1};
	$node->safe_psql('postgres', qq{
		CREATE SERVER ts_alias FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$alias');
		CREATE USER MAPPING FOR PUBLIC SERVER ts_alias;
		CREATE FOREIGN TABLE t3 (id int NOT NULL, v text) SERVER ts_alias OPTIONS (key 'id', table_name '$shared');
	});
	for my $write ('INSERT INTO t1 VALUES (100, \'new\')', 'TRUNCATE t1', 'DROP FOREIGN TABLE t1')
	{
		($rc, $out, $err) = run("BEGIN;\n$write;\nSELECT count(*) FROM t3;\nROLLBACK;");
		is_deeply([ sqlstates($err) ], ['0A000'],
			"$write, then a read through the address unix:$alias: refused (another server's mapping)")
		  or diag("out: $out\nerr: $err");
		like($err, qr/transaction that (wrote|truncated|dropped)/, '... saying why') or diag($err);
	}
	# t3 stays: dropping it would drop the data it shares with t1 and t2
}
($rc, $out, $err) = run("BEGIN;\nINSERT INTO t1 VALUES (100, 'new');\nCOMMIT;\nSELECT count(*) FROM t2;");
is($out, '11', 'committed: t2 reads the new row') or diag($err);

# ---- failing rows' DETAIL under column privileges, as Postgres' own ----
$node->safe_psql('postgres', q{
	CREATE ROLE bob LOGIN;
	CREATE SCHEMA p;
	GRANT USAGE ON SCHEMA p TO bob;
	CREATE TABLE p.h (a int, b int NOT NULL, secret text DEFAULT 'hidden-default');
	CREATE FOREIGN TABLE p.f (a int, b int NOT NULL, secret text DEFAULT 'hidden-default') SERVER ts;
	CREATE TABLE p.ph (a int, b int NOT NULL, secret text DEFAULT 'hidden-default') PARTITION BY LIST (a);
	CREATE TABLE p.ph_1 PARTITION OF p.ph FOR VALUES IN (1);
	CREATE TABLE p.pf (a int, b int NOT NULL, secret text DEFAULT 'hidden-default') PARTITION BY LIST (a);
	CREATE FOREIGN TABLE p.pf_1 PARTITION OF p.pf FOR VALUES IN (1) SERVER ts;
	CREATE VIEW p.vh AS SELECT * FROM p.h WHERE b > 0 WITH CHECK OPTION;
	CREATE VIEW p.vf AS SELECT * FROM p.f WHERE b > 0 WITH CHECK OPTION;
	GRANT USAGE ON FOREIGN SERVER ts TO bob;
});

# The error lines of psql's stderr with the heap table's names in place of
# the tcopy table's, and without LOCATION (the source line differs).
sub normalized
{
	my ($err, %names) = @_;
	my @lines = grep { !/^LOCATION:/ && !/^psql:/ } split /\n/, $err;
	my $text = join("\n", @lines);
	$text =~ s/\b\Q$_\E\b/$names{$_}/g for sort { length $b <=> length $a } keys %names;
	return $text;
}

my @grants = (
	[ 'INSERT (a, b) and SELECT (a)', 'GRANT INSERT (a, b), SELECT (a) ON %s TO bob' ],
	[ 'INSERT (a, b), no SELECT', 'GRANT INSERT (a, b) ON %s TO bob' ],
	[ 'INSERT and SELECT on the table', 'GRANT INSERT, SELECT ON %s TO bob' ],
	[ 'INSERT on every column, no SELECT', 'GRANT INSERT ON %s TO bob' ]);
my @statements = (
	[ 'INSERT', 'INSERT INTO %s (a, b) VALUES (1, NULL)' ],
	[ 'COPY (column list)', "COPY %s (a, b) FROM STDIN;\n1\t\\N\n\\.\n" ],
	[ 'COPY (raw fields)', "COPY %s (a, b, secret) FROM STDIN;\n1\t\\N\tmine\n\\.\n", 'secret' ],
	[ 'COPY (raw fields off)', "SET tcopy.raw_fields = off;\nCOPY %s (a, b, secret) FROM STDIN;\n1\t\\N\tmine\n\\.\n", 'secret' ]);
for my $grant (@grants)
{
	my ($gname, $gsql) = @$grant;
	for my $pair ([ 'p.h', 'p.f' ], [ 'p.ph', 'p.pf' ])
	{
		my ($heap, $tcopy) = @$pair;
		$node->safe_psql('postgres', join(";\n",
			"REVOKE ALL ON p.h, p.f, p.ph, p.pf, p.ph_1, p.pf_1 FROM bob",
			sprintf($gsql, $heap), sprintf($gsql, $tcopy)));
		for my $stmt (@statements)
		{
			my ($sname, $ssql, $needs) = @$stmt;
			next if $needs && $gname =~ /\(a, b\)/;	# no INSERT on secret
			my (undef, undef, $herr) = run(sprintf($ssql, $heap), 'bob');
			my (undef, undef, $terr) = run(sprintf($ssql, $tcopy), 'bob');
			my %names = ('f' => 'h', 'pf' => 'ph', 'pf_1' => 'ph_1', 'f_1' => 'h_1');
			like($herr, qr/23502/, "$gname, $sname into $heap: the heap table's NOT NULL error") or diag($herr);
			is(normalized($terr, %names), normalized($herr),
				"$gname, $sname into $tcopy: the same error, DETAIL and fields as $heap");
			unlike($terr, qr/hidden-default/, '... never showing the default bob may not see')
			  if $gname !~ /SELECT on the table/;
		}
	}
}
note('under INSERT (a, b), SELECT (a):');
$node->safe_psql('postgres', "REVOKE ALL ON p.h, p.f FROM bob; GRANT INSERT (a, b), SELECT (a) ON p.h, p.f TO bob");
(undef, undef, $err) = run('INSERT INTO p.f (a, b) VALUES (1, NULL)', 'bob');
like($err, qr/DETAIL:  Failing row contains \(a, b\) = \(1, null\)\./,
	'INSERT (a, b) with SELECT (a): the DETAIL shows a and b only') or diag($err);
like($err, qr/SCHEMA NAME:  p\nTABLE NAME:  f\nCOLUMN NAME:  b/, '... and the schema, table and column fields')
  or diag($err);

# a view's WITH CHECK OPTION: Postgres' own check, for both
$node->safe_psql('postgres', "GRANT INSERT ON p.vh, p.vf TO bob");
my (undef, undef, $herr) = run('INSERT INTO p.vh (a, b) VALUES (1, -1)', 'bob');
my (undef, undef, $terr) = run('INSERT INTO p.vf (a, b) VALUES (1, -1)', 'bob');
like($herr, qr/44000/, "WITH CHECK OPTION: the heap view's error") or diag($herr);
is(normalized($terr, 'vf' => 'vh'), normalized($herr), '... the same for the tcopy view');

$node->stop;
$ts->stop;
done_testing();
