# 200_idle_timeout.pl
#	A tserver that closes idle connections (--idle-timeout 1, issue 32)
#	under a Postgres session that keeps its connections between
#	statements: its cached write connection and its idle scan connection
#	are found closed and replaced, without an error to the user, for
#	INSERT, SELECT, COPY, and a REPEATABLE READ transaction that sleeps
#	between its reads (its snapshot's connection holds the snapshot, so it
#	is not idle, and is not closed).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TcopyTest;
use TcopyPgTest qw(setup_node);

my ($node, $ts) = setup_node(name => 'idle', tserver => { extra_args => [ '--idle-timeout', 1 ] });
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE t (id int NOT NULL, v text) SERVER ts OPTIONS (key 'id');
});
my $s = TcopyPgTest::Session->new($node);
my ($out, $err);

($out, $err) = $s->run("INSERT INTO t VALUES (1, 'a');");
is($err, '', 'an INSERT');
($out, $err) = $s->run("SELECT count(*) FROM t;");
is($out, '1', 'a SELECT');
$s->run('SELECT pg_sleep(2.2);');
($out, $err) = $s->run("INSERT INTO t VALUES (2, 'b');");
is($err, '', 'after 2 s idle, an INSERT on the closed write connection: no error');
$s->run('SELECT pg_sleep(2.2);');
($out, $err) = $s->run("SELECT count(*) FROM t;");
is("$out$err", '2', 'after 2 s idle, a SELECT on the closed scan connection: no error');
$s->run('SELECT pg_sleep(2.2);');
($out, $err) = $s->run("COPY t FROM STDIN (FORMAT csv);\n3,c\n4,d\n\\.\n");
is($err, '', 'after 2 s idle, a COPY: no error');
($out, $err) = $s->run("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM t;");
like($out, qr/^4$/m, 'a REPEATABLE READ transaction reads 4 rows');
$node->safe_psql('postgres', q{INSERT INTO t VALUES (5, 'e')});
$s->run('SELECT pg_sleep(2.2);');
($out, $err) = $s->run("SELECT count(*) FROM t; COMMIT;");
like("$out$err", qr/^4$/m, '... and after 2 s idle, 4 again from its snapshot, with no error');
($out, $err) = $s->run("SELECT count(*) FROM t;");
is($out, '5', 'a new snapshot reads 5');
like($ts->log_contents, qr/idle for 1 s, closed \(--idle-timeout\)/, 'the tserver did close idle ones');

$s->quit;
$node->stop;
$ts->stop;
done_testing();
