# 155_load_id.pl
#	COPY ... (load_id 'label') (issue 14, loads that can be re-run): a
#	labelled load retried after any failure loads every row exactly once.
#	Table t (key id) of the two-phase commit tests; each load n is the
#	COPY of its rows (60,000, TCOPY_2PC_BIG_ROWS: spilled, the tserver
#	runs with --session-memory-mb 1).  Asserted:
#	- the tserver killed -9 in the middle of a labelled COPY: the COPY
#	  fails, the label is not published, the retry loads every row, and a
#	  second retry loads nothing (NOTICE "was already published");
#	- Postgres stopped in immediate mode between the prepare and the commit
#	  record (after-prepare): while the backend is paused, a COPY with the
#	  same label waits (here until its statement_timeout); after the
#	  restart, before recovery, the retry is refused ("prepared but not
#	  resolved", with the hint to wait for recovery); after recovery
#	  (which discards the session) the retry loads every row once;
#	- the same between the commit record and the publish (before-publish),
#	  the tserver killed -9 and restarted too (its claim comes back from
#	  the prepared record): refused before recovery; after recovery (which
#	  publishes) the retry loads nothing, and the rows are there once;
#	- two COPYs with one label at once: one loads, the other waits and
#	  loads nothing;
#	- no 08007 anywhere.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_setup rows_copy_sql psql_bg start_paused prepared_sessions
  recover_all wait_until held_copy_sql release_held_copy copy_progress assert_no_08007);

my $rows = $ENV{TCOPY_2PC_BIG_ROWS} // 60_000;
my ($node, $ts) = twopc_setup(
	recovery_interval => '0',
	tserver => { extra_args => [ '--session-memory-mb', '1' ] });
my @outputs;

# The COPY of load n's rows with label.
sub labelled
{
	my ($n, $label) = @_;
	my $sql = rows_copy_sql($node, $n, per => $rows);
	$sql =~ s/\(FORMAT csv\)$/(FORMAT csv, load_id '$label')/ or die "rows_copy_sql changed: $sql";
	return $sql;
}

# "rows distinct-ids" of load n in t.
sub rows_of
{
	my ($n) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) || ' ' || count(DISTINCT id) FROM t WHERE n = $n");
}

# Run a labelled COPY; (rc, stdout, stderr).
sub run_copy
{
	my ($n, $label, $before) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', ($before // '') . labelled($n, $label) . ';');
	push @outputs, $out, $err;
	return ($rc, $out, $err);
}

# The retry of load n loads it (no NOTICE), then a second retry loads nothing.
sub retry_loads_once
{
	my ($name, $n, $label) = @_;
	my ($rc, $out, $err) = run_copy($n, $label);
	is($rc, 0, "$name: the retry succeeds") or diag($err);
	unlike($err, qr/already published/, "$name: ... and loads");
	is(rows_of($n), "$rows $rows", "$name: every row is there once");
	($rc, $out, $err) = run_copy($n, $label);
	is($rc, 0, "$name: a second retry succeeds");
	like($err, qr/NOTICE:  load "\Q$label\E" of foreign table "t" was already published; nothing loaded/,
		"$name: ... loads nothing, and says so");
	is(rows_of($n), "$rows $rows", "$name: still every row once");
}

# ---- the tserver killed -9 in the middle of a labelled COPY ----
{
	my $name = 'tserver killed -9 mid-COPY';
	my $n = 1;
	my $file = $node->basedir . '/load1.csv';
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh join('', map { ($n * $rows + $_) . ",$n,row $n/$_\n" } 1 .. $rows);
	close($fh);
	my $sql = held_copy_sql($node, 't (id, n, payload)', $file, 20_000);
	$sql =~ s/\(FORMAT csv\)$/(FORMAT csv, load_id 'a')/ or die;
	my $p = psql_bg($node, [$sql]);
	ok(wait_until(60, sub { my @c = copy_progress($node, 't'); @c && $c[1] > 20_000 }),
		"$name: the COPY is past 20,000 rows");
	$ts->kill9;
	release_held_copy($node);	# meets the dead connection at once
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	isnt($rc, 0, "$name: the COPY fails") or diag($out);
	$ts->start or BAIL_OUT('tserver did not start after kill -9');
	is(rows_of($n), '0 0', "$name: nothing of it is visible");
	is($node->safe_psql('postgres', "SELECT count(*) FROM tcopy.load_labels('t')"), '0',
		"$name: the label is not published");
	retry_loads_once($name, $n, 'a');
}

# ---- Postgres stopped between the prepare and the commit record ----
{
	my $name = 'immediate stop after-prepare';
	my $n = 2;
	my ($p, $pid) = start_paused($node, 'after-prepare', [ 'BEGIN', labelled($n, 'b'), 'COMMIT' ]);
	ok($pid, "$name: the backend pauses") or diag(join("\n", $p->finish));
	my ($rc, $out, $err) = run_copy($n, 'b', "SET statement_timeout = '1500ms';\n");
	like($err, qr/canceling statement due to statement timeout/,
		"$name: a COPY with the label waits while the paused backend holds it");
	$node->stop('immediate');
	($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	$node->start;
	my $sessions;
	wait_until(10, sub { ($sessions) = prepared_sessions($node); $sessions && @$sessions == 1 && $sessions->[0]{attached} eq 'f' });
	($rc, $out, $err) = run_copy($n, 'b', "SET statement_timeout = '10s';\n");
	like($err, qr/ERROR:  load "b" of foreign table "t" is prepared but not resolved/,
		"$name: before recovery, the retry is refused");
	like($err, qr/HINT:  .*tcopy\.recover_prepared_sessions\(\)/, "$name: ... with the hint to recover");
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: recovery resolves the session") or diag($left);
	is(rows_of($n), '0 0', "$name: recovery discarded the rows");
	retry_loads_once($name, $n, 'b');
}

# ---- Postgres stopped between the commit record and the publish, and the tserver killed ----
{
	my $name = 'immediate stop before-publish, tserver killed -9';
	my $n = 3;
	my ($p, $pid) = start_paused($node, 'before-publish', [ 'BEGIN', labelled($n, 'c'), 'COMMIT' ]);
	ok($pid, "$name: the backend pauses") or diag(join("\n", $p->finish));
	$node->stop('immediate');
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	$ts->kill9;
	$ts->start or BAIL_OUT('tserver did not start after kill -9');
	$node->start;
	($rc, $out, $err) = run_copy($n, 'c', "SET statement_timeout = '10s';\n");
	like($err, qr/ERROR:  load "c" of foreign table "t" is prepared but not resolved/,
		"$name: before recovery, the retry is refused (the restarted tserver keeps the claim)");
	my ($ok, $resolved, $left) = recover_all($node, ts => $ts, timeout => 60);
	ok($ok, "$name: recovery resolves the session") or diag($left);
	is(rows_of($n), "$rows $rows", "$name: recovery published the rows");
	($rc, $out, $err) = run_copy($n, 'c');
	like($err, qr/NOTICE:  load "c" of foreign table "t" was already published; nothing loaded/,
		"$name: the retry loads nothing");
	is(rows_of($n), "$rows $rows", "$name: every row is there once");
}

# ---- two COPYs with one label at once ----
{
	my $name = 'two concurrent COPYs, one label';
	my $n = 4;
	my $pa = psql_bg($node, [ labelled($n, 'd') ]);
	my $pb = psql_bg($node, [ labelled($n, 'd') ]);
	my @a = $pa->finish;
	my @b = $pb->finish;
	push @outputs, @a[1, 2], @b[1, 2];
	is("$a[0] $b[0]", '0 0', "$name: both succeed") or diag(join("\n", @a, @b));
	my $notices = grep { /was already published; nothing loaded/ } $a[2], $b[2];
	is($notices, 1, "$name: exactly one loads nothing");
	is(rows_of($n), "$rows $rows", "$name: every row is there once");
	is($node->safe_psql('postgres', "SELECT string_agg(label, ' ' ORDER BY label) FROM tcopy.load_labels('t')"),
		'a b c d', "$name: the table's labels are listed");
}

assert_no_08007($node, 'load_id', @outputs);
$node->stop;
$ts->stop;
done_testing();
