# 144_extension_sql.pl
#	The extension's own SQL and catalog lookups against a role that may
#	create objects (issue 31), mallory, while a superuser uses tcopy:
#	- an exact-match operator of mallory's on the superuser's path
#	  (=(oid, regclass), the one create_hash_partitions 1.6 compared with)
#	  does not run: she does not become a superuser;
#	- the sweep: in a schema first on the superuser's path, mallory
#	  creates, for every operator and function name the extension's SQL
#	  uses, one of that name for every combination of the argument types
#	  it could be called with, each recording that it ran; the superuser
#	  then creates the extension (through the update chain from 1.0),
#	  updates one made at 1.0, and runs every extension function and the
#	  statements its hooks see (CREATE, COPY, INSERT, UPDATE, DELETE,
#	  TRUNCATE, enum renames, column renames, DROP); every call succeeds
#	  and none of mallory's ran;
#	- schema squatting: CREATE EXTENSION and ALTER EXTENSION UPDATE refuse
#	  a schema tcopy that is not a superuser's, or that others may create
#	  in (42501), and create the extension once it is made safe;
#	- look-alike tables: with the extension's schema renamed, tables of
#	  mallory's named tcopy.enum_label and tcopy.prepared_session_records
#	  are neither written nor read: enum renames and commit records go to
#	  the extension's own tables, found by membership;
#	- a database without the extension: mallory's view tcopy.enum_label
#	  and enum renames and drops there crash nothing (the hooks do nothing
#	  there);
#	- an install made at 1.0 in schema public, when the extension was
#	  relocatable, updated to the end of the chain: every member is in
#	  schema tcopy, which is the extension's schema, and works;
#	and no backend crashed during any of it (the server log).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node);

my ($node, $ts) = setup_node(name => 'extsql');
my $address = $ts->address;

# Run sql as role on db (VERBOSITY verbose: errors carry their SQLSTATE);
# stops at the first error.
sub as_role
{
	my ($role, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql($db, "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, extra_params => [ '-U', $role ],
		on_error_stop => 1);
	return ($rc, $out, $err);
}

sub is_superuser
{
	my ($role) = @_;
	return $node->safe_psql('postgres',
		"SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) '$role'");
}

# The extension's members outside schema tcopy, and the extension's schema.
sub members_outside
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT coalesce(string_agg(pg_describe_object(d.classid, d.objid, 0), ', '
			ORDER BY pg_describe_object(d.classid, d.objid, 0)), '')
		FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
		WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'tcopy'
		  AND coalesce((SELECT pronamespace::regnamespace::text FROM pg_proc
		                WHERE d.classid = 'pg_proc'::regclass AND oid = d.objid),
		               (SELECT relnamespace::regnamespace::text FROM pg_class
		                WHERE d.classid = 'pg_class'::regclass AND oid = d.objid),
		               'tcopy') <> 'tcopy'
		UNION ALL
		SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'tcopy'});
}

$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	GRANT CREATE ON DATABASE postgres TO mallory;
	GRANT CREATE ON SCHEMA public TO mallory;
});

# ---- 1. the issue's reproduction: =(oid, regclass) in public ----

my ($rc, $out, $err) = as_role('mallory', 'postgres', q{
	CREATE FUNCTION public.evil_eq(oid, regclass) RETURNS bool LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user) THEN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		END IF;
		RETURN $1 OPERATOR(pg_catalog.=) $2::oid;
	END $$;
	CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.evil_eq);
});
is($rc, 0, 'mallory plants =(oid, regclass) in public') or diag($err);
$node->safe_psql('postgres', q{
	CREATE TABLE accounts (aid int NOT NULL, abalance int) PARTITION BY HASH (aid);
	SELECT tcopy.create_hash_partitions('accounts', '{ts}', 2, '{key=aid}');
});
is(is_superuser('mallory'), 'f', 'create_hash_partitions run by a superuser did not run her operator');
# (her operator is still there: the test's own queries compare oids)
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_inherits WHERE inhparent = 'accounts'::regclass::oid"),
	'2', 'and made its two partitions');
$node->safe_psql('postgres', q{
	DROP TABLE accounts;
	DROP OPERATOR public.= (oid, regclass);
	DROP FUNCTION public.evil_eq(oid, regclass);
});

# ---- 2. the sweep ----

# The operator and function names of the extension's SQL (comments and
# string literals taken out; what EXECUTE runs is a literal, and holds no
# operator), as far as pg_catalog has them.
my (%ops, %funcs);
for my $file (glob("$FindBin::Bin/../../src/ext/tcopy--*.sql"))
{
	my $sql = slurp_file($file);
	$sql =~ s/--[^\n]*//g;
	$sql =~ s{/\*.*?\*/}{}gs;
	$sql =~ s/'(?:[^']|'')*'//g;
	$ops{$1} = 1 while $sql =~ /(?<![-+*\/<>=~!@#%^&|`?])([-+*\/<>=~!@#%^&|`?]+)/g;
	$ops{'~~'} = 1 if $sql =~ /\bLIKE\b/i;
	$funcs{ lc $1 } = 1 while $sql =~ /\b([A-Za-z_][A-Za-z_0-9]*)\s*\(/g;
}
my $op_list = join(',', map { my $o = $_; $o =~ s/'/''/g; "'$o'" } sort keys %ops);
my @ops = split /\n/, $node->safe_psql('postgres', qq{
	SELECT DISTINCT oprname FROM pg_operator
	WHERE oprnamespace = 'pg_catalog'::regnamespace AND oprname IN ($op_list) ORDER BY 1});
my $func_list = join(',', map { "'$_'" } sort keys %funcs);
my @funcs = split /\n/, $node->safe_psql('postgres', qq{
	SELECT DISTINCT proname FROM pg_proc
	WHERE pronamespace = 'pg_catalog'::regnamespace AND proname IN ($func_list)
	  AND prokind = 'f' ORDER BY 1});
ok(scalar(grep { $_ eq '=' } @ops) && scalar(grep { $_ eq '||' } @ops),
	'the sweep has the extension SQL\'s operators: ' . join(' ', @ops));
ok(scalar(grep { $_ eq 'format' } @funcs) && scalar(grep { $_ eq 'current_schema' } @funcs),
	'and its functions: ' . join(' ', @funcs));

# The argument types the extension's SQL has values of.
my @types = ('oid', 'regclass', 'regtype', 'regprocedure', 'regnamespace', 'name', 'text',
	'"char"', 'int4', 'int8', 'bool', 'xid8', 'timestamptz', 'text[]', 'name[]');
my @few = ('text', 'name', 'int4');
my $traps = q{
	CREATE TABLE public.trap_hits (what text);
	GRANT INSERT ON public.trap_hits TO PUBLIC;
};
my $n = 0;
# a trap: says and records that it ran (the WARNING reaches the client
# whether or not the statement then fails), then returns NULL
my $trap = sub {
	my ($name, $label, $ret, @args) = @_;
	my $what = "$label(" . join(',', @args) . ')';
	$what =~ s/'/''/g;
	$what =~ s/"//g;
	$n++;
	my $args = join(', ', @args);
	return qq{CREATE FUNCTION public.$name($args) RETURNS $ret LANGUAGE plpgsql AS \$t\$
	BEGIN
		RAISE WARNING 'trap ran: %', '$what';
		INSERT INTO public.trap_hits VALUES ('$what');
		RETURN NULL;
	END \$t\$;\n};
};
my $i = 0;
for my $op (@ops)
{
	for my $l (@types)
	{
		for my $r (@types)
		{
			$i++;
			$traps .= $trap->("trap_op_$i", $op, 'bool', $l, $r);
			$traps .= "CREATE OPERATOR public.$op (LEFTARG = $l, RIGHTARG = $r, FUNCTION = public.trap_op_$i);\n";
		}
	}
}
for my $f (@funcs)
{
	$traps .= $trap->($f, $f, 'text', $_) for @types;
	for my $a (@types)
	{
		$traps .= $trap->($f, $f, 'text', $a, $_) for @types;
	}
	for my $a (@few)
	{
		for my $b (@few)
		{
			$traps .= $trap->($f, $f, 'text', $a, $b, $_) for @few;
		}
	}
}
$node->safe_psql('postgres', 'CREATE DATABASE sweep');
$node->safe_psql('sweep', 'GRANT CREATE ON SCHEMA public TO mallory');
($rc, $out, $err) = as_role('mallory', 'sweep', "BEGIN;\n$traps\nCOMMIT;");
is($rc, 0, "mallory plants $n traps in public of database sweep") or diag(substr($err, 0, 2000));

# Everything the superuser does with tcopy, with public first on its path.
my $csv = join('', map { "$_,row $_\n" } 1 .. 100);
my @steps = (
	'CREATE EXTENSION tcopy',
	"CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address')",
	'CREATE USER MAPPING FOR PUBLIC SERVER ts',
	"CREATE FOREIGN TABLE t (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id')",
	"INSERT INTO t VALUES (1000, 'a'), (1001, 'b')",
	"COPY t FROM STDIN (FORMAT csv)\n$csv\\.",
	"COPY t FROM STDIN (FORMAT csv, load_id 'l1')\n2000,x\n\\.",
	'SELECT count(*) FROM t',
	"UPDATE t SET v = 'c'",
	'SELECT * FROM tcopy.load_labels(\'t\')',
	"SELECT tcopy.forget_load('t', 'l1')",
	'SELECT * FROM tcopy.prepared_sessions()',
	'SELECT tcopy.recover_prepared_sessions()',
	'ANALYZE t',
	'DELETE FROM t',
	'TRUNCATE t',
	'ALTER FOREIGN TABLE t RENAME COLUMN v TO w',
	"CREATE TYPE mood AS ENUM ('sad', 'ok')",
	"ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy'",
	"ALTER TYPE mood ADD VALUE 'fine'",
	"CREATE FOREIGN TABLE m (k int NOT NULL, x mood) SERVER ts OPTIONS (key 'k')",
	"INSERT INTO m VALUES (1, 'unhappy')",
	'SELECT * FROM m',
	'DROP TYPE mood CASCADE',
	"SELECT tcopy.create_pgbench_tables('ts')",
	'CREATE TABLE acc (aid int NOT NULL, v int) PARTITION BY HASH (aid)',
	"SELECT tcopy.create_hash_partitions('acc', '{ts}', 2, '{key=aid}')",
	"COPY acc FROM STDIN (FORMAT csv)\n1,1\n2,2\n3,3\n\\.",
	'DROP TABLE acc',
	'DROP FOREIGN TABLE t, pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history',
	'DROP EXTENSION tcopy CASCADE',
	"CREATE EXTENSION tcopy VERSION '1.0'",
	'ALTER EXTENSION tcopy UPDATE',
	'DROP EXTENSION tcopy CASCADE',
	'DROP SCHEMA tcopy');
for my $step (@steps)
{
	# a COPY's rows follow the statement's first line
	(my $first = $step) =~ s/\n.*//s;
	(my $rest = $step) =~ s/^[^\n]*//;
	my ($r, $o, $e) = as_role('postgres', 'sweep', "SET search_path = public, pg_catalog;\n$first;$rest\n");
	is($r, 0, "with mallory's traps first on the path: $first") or diag($e);
	unlike($e, qr/trap ran/, "and none of her traps ran") or diag($e);
}
is($node->safe_psql('sweep', 'SELECT count(*) FROM public.trap_hits'), '0',
	'none of her traps ran') or diag($node->safe_psql('sweep', 'SELECT * FROM public.trap_hits'));

# the control: 1.6's create_hash_partitions, which had no fixed path, ran hers
($rc, $out, $err) = as_role('postgres', 'sweep', qq{
	CREATE EXTENSION tcopy VERSION '1.6';
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE TABLE acc (aid int NOT NULL, v int) PARTITION BY HASH (aid);
	SET search_path = public, pg_catalog;
	SELECT tcopy.create_hash_partitions('acc', '{ts}', 2, '{key=aid}');
});
like($err, qr/trap ran: =\(oid,regclass\)/, 'the sweep catches 1.6\'s create_hash_partitions running her =(oid, regclass)');
$node->safe_psql('sweep', 'DROP TABLE acc; DROP EXTENSION tcopy CASCADE; DROP SCHEMA tcopy');

# ---- 3. schema squatting ----

$node->safe_psql('postgres', q{
	CREATE DATABASE squat;
	GRANT CREATE ON DATABASE squat TO mallory;
});
($rc, $out, $err) = as_role('mallory', 'squat', 'CREATE SCHEMA tcopy');
is($rc, 0, 'mallory makes schema tcopy first') or diag($err);
($rc, $out, $err) = as_role('postgres', 'squat', 'CREATE EXTENSION tcopy');
isnt($rc, 0, 'CREATE EXTENSION refuses her schema');
like($err, qr/42501: schema "tcopy" is owned by role "mallory", which is not a superuser/,
	'with 42501 and who owns it');
like($err, qr/HINT:  Drop or rename schema tcopy, or leave it, what is in it and the right to create in it to superusers/,
	'and what to do');
is($node->safe_psql('squat', "SELECT count(*) FROM pg_extension WHERE extname = 'tcopy'"), '0',
	'nothing was installed');
$node->safe_psql('squat', 'ALTER SCHEMA tcopy OWNER TO postgres; GRANT CREATE ON SCHEMA tcopy TO mallory');
($rc, $out, $err) = as_role('postgres', 'squat', 'CREATE EXTENSION tcopy');
like($err, qr/42501: role "mallory" may create objects in schema "tcopy", and is not a superuser/,
	'a superuser\'s schema that mallory may create in is refused too');
$node->safe_psql('squat', 'GRANT CREATE ON SCHEMA tcopy TO PUBLIC; REVOKE CREATE ON SCHEMA tcopy FROM mallory');
($rc, $out, $err) = as_role('postgres', 'squat', 'CREATE EXTENSION tcopy');
like($err, qr/42501: PUBLIC may create objects in schema "tcopy"/, 'and one PUBLIC may create in');
$node->safe_psql('squat', 'REVOKE CREATE ON SCHEMA tcopy FROM PUBLIC');
# what she made there while she owned it stays hers
($rc, $out, $err) = as_role('postgres', 'squat', q{
	CREATE TABLE tcopy.note (t text);
	ALTER TABLE tcopy.note OWNER TO mallory;
	CREATE EXTENSION tcopy;
});
like($err, qr/42501: role "mallory" owns objects in schema "tcopy", and is not a superuser/,
	'and one holding an object of hers');
$node->safe_psql('squat', 'DROP TABLE tcopy.note');
($rc, $out, $err) = as_role('postgres', 'squat', 'CREATE EXTENSION tcopy');
is($rc, 0, 'the superuser\'s schema, once only superusers may create in it, takes the extension')
  or diag($err);

# an install at 1.6 whose schema is mallory's: the update refuses
$node->safe_psql('squat', q{
	DROP EXTENSION tcopy;
	CREATE EXTENSION tcopy VERSION '1.6';
	ALTER SCHEMA tcopy OWNER TO mallory;
});
($rc, $out, $err) = as_role('postgres', 'squat', 'ALTER EXTENSION tcopy UPDATE');
like($err, qr/42501: schema "tcopy" is owned by role "mallory"/, 'ALTER EXTENSION UPDATE refuses her schema');
is($node->safe_psql('squat', "SELECT extversion FROM pg_extension WHERE extname = 'tcopy'"), '1.6',
	'and leaves the extension at 1.6');
$node->safe_psql('squat', 'ALTER SCHEMA tcopy OWNER TO postgres; ALTER EXTENSION tcopy UPDATE');
is($node->safe_psql('squat', "SELECT extversion FROM pg_extension WHERE extname = 'tcopy'"), '1.12',
	'given back to a superuser, it updates to 1.12');

# ---- 4. look-alike tables: found by membership, never by name ----

$node->safe_psql('squat', qq{
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE FOREIGN TABLE lt (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	ALTER SCHEMA tcopy RENAME TO tcopy_own;
	CREATE SCHEMA tcopy AUTHORIZATION mallory;
});
($rc, $out, $err) = as_role('mallory', 'squat', q{
	CREATE TABLE tcopy.enum_label (enumtype regtype NOT NULL, stored text NOT NULL, label text NOT NULL,
		PRIMARY KEY (enumtype, stored));
	CREATE TABLE tcopy.prepared_session_records (gid text PRIMARY KEY, server_id oid NOT NULL,
		user_id oid NOT NULL, xid xid8 NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now());
	GRANT ALL ON tcopy.enum_label, tcopy.prepared_session_records TO PUBLIC;
	INSERT INTO tcopy.enum_label VALUES ('regclass', 'x', 'y');
});
is($rc, 0, 'mallory puts look-alikes of the extension\'s tables in a new schema tcopy') or diag($err);
$node->safe_psql('squat', q{
	CREATE TYPE mood AS ENUM ('sad', 'ok');
	ALTER TYPE mood RENAME VALUE 'sad' TO 'unhappy';
	INSERT INTO lt SELECT generate_series(1, 50);
});
is($node->safe_psql('squat', 'SELECT stored || \'=\' || label FROM tcopy_own.enum_label'), 'sad=unhappy',
	'the rename is recorded in the extension\'s own enum_label');
is($node->safe_psql('squat', 'SELECT count(*) FROM tcopy.enum_label'), '1',
	'her enum_label is untouched');
is($node->safe_psql('squat', 'SELECT count(*) FROM tcopy.prepared_session_records'), '0',
	'no commit recorded in her prepared_session_records');
is($node->safe_psql('squat', 'SELECT count(*) FROM lt'), '50', 'the writes committed');
$node->safe_psql('squat', 'DROP SCHEMA tcopy CASCADE; ALTER SCHEMA tcopy_own RENAME TO tcopy');

# ---- 5. a database without the extension ----

$node->safe_psql('postgres', q{
	CREATE DATABASE noext;
	GRANT CREATE ON DATABASE noext TO mallory;
});
($rc, $out, $err) = as_role('mallory', 'noext', q{
	CREATE SCHEMA tcopy;
	CREATE VIEW tcopy.enum_label AS SELECT 0::regtype enumtype, ''::text stored, ''::text label;
	CREATE VIEW tcopy.prepared_session_records AS SELECT ''::text gid;
	CREATE TYPE tcopy.e AS ENUM ('a');
	ALTER TYPE tcopy.e ADD VALUE 'b';
	ALTER TYPE tcopy.e RENAME VALUE 'a' TO 'c';
	DROP TYPE tcopy.e;
	SELECT 1;
});
is($rc, 0, 'without the extension, enum renames and drops beside her views go through') or diag($err);
is($node->safe_psql('noext', 'SELECT 1'), '1', 'and the server is up');

# ---- 6. an install made at 1.0 in schema public ----

$node->safe_psql('postgres', 'CREATE DATABASE old');
# what a 1.0 install, relocatable then, looked like: its two functions in public
$node->safe_psql('old', q{
	CREATE EXTENSION tcopy VERSION '1.0';
	ALTER FUNCTION tcopy.tcopy_fdw_handler() SET SCHEMA public;
	ALTER FUNCTION tcopy.tcopy_fdw_validator(text[], oid) SET SCHEMA public;
	UPDATE pg_depend SET refobjid = 'public'::regnamespace
	WHERE classid = 'pg_extension'::regclass
	  AND objid = (SELECT oid FROM pg_extension WHERE extname = 'tcopy')
	  AND refclassid = 'pg_namespace'::regclass;
	UPDATE pg_extension SET extnamespace = 'public'::regnamespace WHERE extname = 'tcopy';
	DROP SCHEMA tcopy;
});
is(members_outside('old'), "function tcopy_fdw_handler(), function tcopy_fdw_validator(text[],oid)\npublic",
	'a 1.0 install in public');
$node->safe_psql('old', 'ALTER EXTENSION tcopy UPDATE TO \'1.6\'');
is(members_outside('old'),
	'function create_hash_partitions(regclass,name[],integer,text[]), function create_pgbench_tables(name), '
	  . 'function forget_load(regclass,text), function load_labels(regclass), function tcopy_fdw_handler(), '
	  . "function tcopy_fdw_validator(text[],oid), table enum_label\npublic",
	'updated to 1.6, its functions and enum_label were in public, its records in tcopy');
$node->safe_psql('old', 'ALTER EXTENSION tcopy UPDATE');
is(members_outside('old'), "\ntcopy", 'updated to 1.12, every member is in schema tcopy, the extension\'s');
$node->safe_psql('old', qq{
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE FOREIGN TABLE o (id int NOT NULL) SERVER ts OPTIONS (key 'id');
	INSERT INTO o SELECT generate_series(1, 20);
	CREATE TYPE mood AS ENUM ('sad');
	ALTER TYPE mood RENAME VALUE 'sad' TO 'glad';
});
is($node->safe_psql('old', 'SELECT count(*) FROM o'), '20', 'and writes commit');
is($node->safe_psql('old', 'SELECT label FROM tcopy.enum_label'), 'glad', 'and renames are recorded');

# ---- no backend crashed ----

unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');

$node->stop;
$ts->stop;
done_testing();
