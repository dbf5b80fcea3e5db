# TcopyPgTest.pm
#	Helpers of the extension's TAP tests (test/ext/*.pl, run by
#	test/pg_tests.sh with PostgreSQL's test modules on PERL5LIB): a
#	PostgreSQL::Test::Cluster node with the tcopy extension and a server
#	`ts` pointing at a tserver started with TcopyTest, pgbench_accounts-
#	shaped CSV files, table checksums, and psql sessions that run in the
#	background and print command tags (so a test can read "COPY n", find
#	its backend's pid and watch it while a statement runs); for the fault
#	tests, one-shot psql runs in the background with their exit status,
#	the progress of a running COPY, and waiting for a tserver to hold no
#	session (prepared ones included; running recovery meanwhile, when
#	asked).  For the two-phase commit tests (test/ext/12*.pl): a node set
#	up with a heap table marker(n) and a tcopy table t(id, n, payload),
#	where transaction n inserts marker row n and rows with ids n * per + 1
#	.. n * per + per; the node's log, the test pause points, recovery,
#	the atomicity check of every transaction, the 08007 check, and the
#	fault proxy (test/tools/tcopy_proxy.pl) as an object.
package TcopyPgTest;

use strict;
use warnings;

use Carp;
use Exporter qw(import);
use File::Find ();
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

use TcopyTest;

our @EXPORT_OK = qw(setup_node write_accounts_csv accounts_ddl table_checksum
  rss_anon_kb checksum_add wait_until copy_progress wait_tserver_idle
  staging_entries held_copy_sql release_held_copy
  twopc_conf twopc_setup twopc_ddl rows_copy_sql rows_insert_sql txn_sql
  psql_bg log_position wait_for_log start_paused prepared_sessions
  recover_all assert_atomic assert_tserver_unprepared assert_no_08007
  sqlstates table_name_of commit_txn archive_wal restore_to_point assert_restored_point
  psql_cmds pg_messages copy_ways parallel_worker_pids parallel_copy_available
  start_txn_loop stop_txn_loop run_pgbench assert_pgbench_invariant);

# Columns of pgbench_accounts.
use constant ACCOUNTS_COLUMNS =>
  '(aid int NOT NULL, bid int, abalance int, filler char(84))';

# Start a tserver (TcopyTest->new(%tserver_opts)), or take group (a
# TcopyGroup, started), and a Postgres node (init => Cluster::init's
# options) with the extension, server ts at the tserver (the group's
# members) and a PUBLIC user mapping.
# Returns (node, tserver or group).
sub setup_node
{
	my (%opts) = @_;
	my $ts = $opts{group} // TcopyTest->new(%{ $opts{tserver} // {} });
	$opts{group} or $ts->start or BAIL_OUT("tserver did not start");
	my $node = PostgreSQL::Test::Cluster->new($opts{name} // 'main');
	$node->init(%{ $opts{init} // {} });
	# heap loads of millions of rows: fewer checkpoints
	$node->append_conf('postgresql.conf', "max_wal_size = 4GB\n");
	# as the README asks: the COPY hook is there from a session's first statement
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n");
	$node->append_conf('postgresql.conf', $opts{conf}) if $opts{conf};
	$node->start;
	my $address = $ts->address;
	$node->safe_psql('postgres', qq{
		CREATE EXTENSION tcopy;
		CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
		CREATE USER MAPPING FOR PUBLIC SERVER ts;
	});
	return ($node, $ts);
}

# The table_name option of foreign table $table (the name of its tserver
# data), as any role can read it in pg_foreign_table.
sub table_name_of
{
	my ($node, $table, $db) = @_;
	return $node->safe_psql($db // 'postgres', qq{
		SELECT option_value FROM pg_options_to_table(
			(SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = '$table'::regclass))
		WHERE option_name = 'table_name'});
}

# CREATE statements for a heap table and tcopy tables of accounts' shape.
sub accounts_ddl
{
	my (%tables) = @_;
	my @sql;
	push @sql, "CREATE TABLE $_ " . ACCOUNTS_COLUMNS . ";" for @{ $tables{heap} // [] };
	push @sql, "CREATE FOREIGN TABLE $_ " . ACCOUNTS_COLUMNS
	  . " SERVER ts OPTIONS (key 'aid');" for @{ $tables{tcopy} // [] };
	return join("\n", @sql);
}

# Write rows of pgbench_accounts as CSV, aids first .. first+rows-1: bid as
# pgbench makes it, a balance that varies (negative too) and an 84-byte
# filler that differs per row, so that a checksum sees every column.
# Returns { rows, aid_sum, abalance_sum, bytes }.
sub write_accounts_csv
{
	my ($path, $first, $rows) = @_;
	open(my $fh, '>', $path) or croak "open $path: $!";
	my $abalance_sum = 0;
	my $bytes = 0;
	my $buf = '';
	my $pad = 'abcdefghij' x 8;
	for my $aid ($first .. $first + $rows - 1)
	{
		my $bid = int(($aid - 1) / 100000) + 1;
		my $abalance = ($aid * 7919) % 20001 - 10000;
		$abalance_sum += $abalance;
		$buf .= "$aid,$bid,$abalance,$pad" . sprintf("%04d", $aid % 10000) . "\n";
		if (length($buf) > 1 << 20)
		{
			print $fh $buf or croak "write $path: $!";
			$bytes += length $buf;
			$buf = '';
		}
	}
	print $fh $buf or croak "write $path: $!";
	$bytes += length $buf;
	close($fh) or croak "close $path: $!";
	return {
		rows => $rows,
		aid_sum => TcopyTest::aid_sum($rows, $first),
		abalance_sum => $abalance_sum,
		bytes => $bytes,
	};
}

# "count sum(aid) sum(abalance) sum(hash of the row's text)" of an
# accounts-shaped table: equal for tables holding the same rows.
sub table_checksum
{
	my ($node, $table, $where) = @_;
	$where = $where ? "WHERE $where" : '';
	return $node->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || coalesce(sum(aid), 0) || ' ' || coalesce(sum(abalance), 0)
			|| ' ' || coalesce(sum(hashtext(a::text)::bigint), 0)
		FROM $table a $where});
}

# The checksum of the union of disjoint row sets: table_checksum's fields
# are sums, so they add up.
sub checksum_add
{
	my (@sums) = @_;
	my @total = (0, 0, 0, 0);
	for my $sum (@sums)
	{
		my @f = split / /, $sum;
		croak "not a table checksum: $sum" unless @f == 4;
		$total[$_] += $f[$_] for 0 .. 3;
	}
	return join(' ', @total);
}

# Call check every 50 ms until it returns true or timeout seconds pass;
# its last result.
sub wait_until
{
	my ($timeout, $check) = @_;
	my $deadline = time() + $timeout;
	while (1)
	{
		my $r = $check->();
		return $r if $r || time() >= $deadline;
		sleep(0.05);
	}
}

# A COPY into table whose rows never run out while a test watches it:
# COPY FROM PROGRAM of a script that sends the first `fast` lines of file
# at full speed, then one line every 20 ms until release_held_copy (then
# the rest at full speed), and exits when the backend closes the pipe (the
# next line it writes fails).  A fault test can wait until the COPY is past
# some point, knowing it is still running however fast the machine loads
# rows.  One held COPY per node at a time.
sub held_copy_sql
{
	my ($node, $table, $file, $fast) = @_;
	my $script = $node->basedir . '/held_copy.pl';
	my $pidfile = $node->basedir . '/held_copy.pid';
	PostgreSQL::Test::Utils::append_to_file($script, <<'PERL') unless -e $script;
my ($fast, $file, $pidfile) = @ARGV;
my $released = 0;
$SIG{USR1} = sub { $released = 1 };
$SIG{PIPE} = sub { exit 0 };
open(my $pf, '>', $pidfile) or die "$pidfile: $!";
print $pf "$$\n";
close($pf);
open(my $in, '<', $file) or die "$file: $!";
while (my $line = <$in>)
{
	if ($. > $fast && !$released)
	{
		$| = 1;
		select(undef, undef, undef, 0.02);
	}
	print $line or exit 0;
}
PERL
	unlink($pidfile);
	return "COPY $table FROM PROGRAM 'perl $script $fast $file $pidfile' (FORMAT csv)";
}

# Let the held COPY of node send the rest of its rows at full speed.  A
# program already gone is no error: the COPY ended first (a fault the test
# caused made it fail, and the backend closed the pipe).
sub release_held_copy
{
	my ($node) = @_;
	my $pid = PostgreSQL::Test::Utils::slurp_file($node->basedir . '/held_copy.pid');
	chomp $pid;
	kill('USR1', $pid) or $!{ESRCH} or croak "release_held_copy: kill $pid: $!";
}

# (pid, tuples processed) of a COPY into table running now, or ().
sub copy_progress
{
	my ($node, $table) = @_;
	my $row = $node->safe_psql('postgres', qq{
		SELECT pid || ' ' || tuples_processed FROM pg_stat_progress_copy
		WHERE relid = '$table'::regclass LIMIT 1});
	return $row =~ /^(\d+) (\d+)$/ ? ($1, $2) : ();
}

# Wait until the tserver holds no session and no session data (in memory
# or spilled), prepared sessions included (stats sessions_prepared; a
# tserver whose stats lack it counts as holding none); returns (true,
# stats), or (false, the last stats) after timeout seconds.
#
# Option recover => node: a connection cut at a commit may leave its
# session prepared on the tserver (orphaned) until recovery resolves it;
# while waiting, call tcopy.recover_prepared_sessions() on node's postgres
# database every half second (the first time at once), and count the
# tserver idle only when two checks in a row find it so.  The list
# returned then goes on with the sessions the calls resolved and the last
# call's error ('' when it worked).
sub wait_tserver_idle
{
	my ($ts, $timeout, %opts) = @_;
	my $node = $opts{recover};
	my ($stats, $resolved, $error, $called, $idle_checks) = (undef, 0, '', 0, 0);
	my $idle = wait_until($timeout, sub {
		if ($node && time() - $called >= 0.5)
		{
			$called = time();
			my ($rc, $out, $err) = $node->psql('postgres', 'SELECT tcopy.recover_prepared_sessions()');
			if ($rc == 0 && $out =~ /^(\d+)$/)
			{
				$resolved += $1;
				$error = '';
			}
			else
			{
				$error = $err || "psql exit $rc";
			}
		}
		$stats = $ts->stats;
		my $now = $stats && $stats->{sessions_open} == 0 && ($stats->{sessions_prepared} // 0) == 0
		  && $stats->{staged_bytes} == 0 && $stats->{spilled_bytes} == 0;
		$idle_checks = $now ? $idle_checks + 1 : 0;
		return $idle_checks >= ($node ? 2 : 1);
	});
	return ($idle ? 1 : 0, $stats, $resolved, $error);
}

# Files and directories under the tserver's staging directory (where
# sessions spill), which holds nothing when no session is open.
sub staging_entries
{
	my ($ts) = @_;
	my $dir = $ts->data_dir . '/staging';
	my @entries;
	File::Find::find({ wanted => sub { push @entries, $_ if $_ ne $dir }, no_chdir => 1 }, $dir)
	  if -d $dir;
	return @entries;
}

# RssAnon of a process in kB (its private memory), undef when it is gone.
sub rss_anon_kb
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	while (<$fh>)
	{
		return $1 if /^RssAnon:\s+(\d+)\s+kB/;
	}
	return undef;
}

# ---- parallel COPY (test/ext/18*.pl) ----

# Run psql on database db (default postgres) with one -c per command of
# cmds (one session: SET carries over; psql meta-commands such as \copy,
# \echo and \warn work), unaligned and tuples only, ON_ERROR_STOP off
# unless stop => 1.  stdin => string or stdin_file => path feeds psql's
# standard input (what COPY ... FROM STDIN and \copy ... FROM pstdin
# read); timeout in seconds (default 300).  Returns (exit status, stdout,
# stderr, each without its last newline); the status is -1 on a timeout or
# a signal.
sub psql_cmds
{
	my ($node, $db, $cmds, %opts) = @_;
	my @cmd = ($node->installed_command('psql'), '-XAt', '-v', 'ON_ERROR_STOP=' . ($opts{stop} ? 1 : 0),
		'-d', $node->connstr($db // 'postgres'), map { ('-c', $_) } @$cmds);
	my ($out, $err) = ('', '');
	my $in = defined $opts{stdin_file} ? $opts{stdin_file} : \($opts{stdin} // '');
	my $rc;
	eval {
		my $h = IPC::Run::start(\@cmd, '<', $in, '>', \$out, '2>', \$err,
			IPC::Run::timeout($opts{timeout} // 300));
		$h->finish;
		$rc = $h->full_result(0);
		$rc = ($rc & 127) ? -1 : $rc >> 8;
		1;
	} or do {
		$err .= "\n(test harness: $@)";
		$rc = -1;
	};
	chomp $out;
	chomp $err;
	return ($rc, $out, $err);
}

# psql's stderr without the DEBUG and LOG messages (and their DETAIL,
# CONTEXT... lines; LOG: log_statement's, at client_min_messages debug1)
# and without LOCATION lines (VERBOSITY verbose: a source file and
# line, which may differ between a backend and a parallel worker raising
# the same error), and without psql's "psql:FILE:LINE: " prefix: what a
# user sees at the default client_min_messages, to compare exactly.
sub pg_messages
{
	my ($err) = @_;
	my @keep;
	my $in_debug = 0;
	for my $line (split /\n/, $err // '')
	{
		$line =~ s/^psql:[^:]*:\d+: //;
		if ($line =~ /^(DEBUG|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC):  /)
		{
			$in_debug = $1 eq 'DEBUG' || $1 eq 'LOG';
		}
		elsif ($line !~ /^(DETAIL|HINT|CONTEXT|QUERY|STATEMENT|LOCATION):  / && $line !~ /^\s/)
		{
			$in_debug = 0;	# psql's own words
		}
		next if $in_debug || $line =~ /^LOCATION:  /;
		push @keep, $line;
	}
	return join("\n", @keep);
}

# How the COPYs of a psql stderr (client_min_messages debug1) went, from
# the leader's DEBUG1 "tcopy: COPY ..." lines, in order: 'parallel' for
# one that says it runs parallel workers, 'alone' for one parsed by the
# backend alone; '' when there is no such line.
sub copy_ways
{
	my ($err) = @_;
	my @ways;
	for my $line (split /\n/, $err // '')
	{
		next unless $line =~ /^(?:psql:[^:]*:\d+: )?DEBUG:  (?:[0-9A-Z]{5}: )?tcopy: COPY\b(.*)$/;
		my $rest = $1;
		if ($rest =~ /\balone\b/)
		{
			push @ways, 'alone';
		}
		elsif ($rest =~ /\bparallel\b/)
		{
			push @ways, 'parallel';
		}
	}
	return join(' ', @ways);
}

# The pids of the parallel workers running now (of leader pid leader,
# when given), as pg_stat_activity lists them.
sub parallel_worker_pids
{
	my ($node, $db, $leader) = @_;
	my $out = $node->safe_psql($db // 'postgres', q{
		SELECT pid FROM pg_stat_activity WHERE backend_type = 'parallel worker'}
		  . (defined $leader ? " AND leader_pid = $leader" : '') . ' ORDER BY pid');
	return grep { /^\d+$/ } split /\n/, $out;
}

# Whether the node's tcopy has parallel COPY (the GUC tcopy.copy_workers).
sub parallel_copy_available
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		q{SELECT count(*) FROM pg_settings WHERE name = 'tcopy.copy_workers'}) eq '1';
}

# ---- the two-phase commit tests ----

# Settings of a two-phase commit test node: the SQLSTATE of every log line
# (%e, for assert_no_08007), recovery every recovery_interval (default
# '1s'; '0' disables the background worker), the postmaster restarting
# backends after one is killed with -9, and max_prepared_transactions when
# given.
sub twopc_conf
{
	my (%opts) = @_;
	my $conf = "log_line_prefix = '%m [%p] %e %q%a '\n"
	  . "restart_after_crash = on\n"
	  . "tcopy.recovery_interval = '" . ($opts{recovery_interval} // '1s') . "'\n";
	$conf .= "max_prepared_transactions = $opts{max_prepared_transactions}\n"
	  if defined $opts{max_prepared_transactions};
	return $conf;
}

# The marker and t tables (see the header); with a table name, only a tcopy
# table of t's shape by that name (and OPTIONS (key 'id', more options)).
sub twopc_ddl
{
	my ($table, $options) = @_;
	my $opts = "key 'id'" . ($options ? ", $options" : '');
	return "CREATE FOREIGN TABLE $table (id int NOT NULL, n int NOT NULL, payload text)"
	  . " SERVER ts OPTIONS ($opts);" if defined $table;
	return "CREATE TABLE marker (n int PRIMARY KEY);\n" . twopc_ddl('t');
}

# setup_node with twopc_conf (options recovery_interval,
# max_prepared_transactions; conf is added after it; name, init and
# tserver are setup_node's) and twopc_ddl.
# Returns (node, tserver).
sub twopc_setup
{
	my (%opts) = @_;
	my ($node, $ts) = setup_node(
		name => $opts{name},
		init => $opts{init},
		tserver => $opts{tserver},
		conf => twopc_conf(%opts) . ($opts{conf} // ''));
	$node->safe_psql('postgres', twopc_ddl());
	return ($node, $ts);
}

# The program COPY reads transaction n's rows from: CSV lines
# "id,n,payload" for ids n * per + first .. n * per + last.
sub rows_script
{
	my ($node) = @_;
	my $script = $node->basedir . '/twopc_rows.pl';
	PostgreSQL::Test::Utils::append_to_file($script, <<'PERL') unless -e $script;
my ($n, $per, $first, $last) = @ARGV;
$SIG{PIPE} = sub { exit 0 };
my $buf = '';
for my $i ($first .. $last)
{
	$buf .= ($n * $per + $i) . ",$n,row $n/$i\n";
	if (length($buf) > 65536)
	{
		print $buf or exit 0;
		$buf = '';
	}
}
print $buf;
PERL
	return $script;
}

# COPY of transaction n's rows into table (default t) from a program;
# options per (default 1000), first (default 1), last (default per).
sub rows_copy_sql
{
	my ($node, $n, %opts) = @_;
	my $per = $opts{per} // 1000;
	my $first = $opts{first} // 1;
	my $last = $opts{last} // $per;
	my $table = $opts{table} // 't';
	my $script = rows_script($node);
	return "COPY $table (id, n, payload) FROM PROGRAM 'perl $script $n $per $first $last' (FORMAT csv)";
}

# INSERT of transaction n's rows first .. last (options as rows_copy_sql's).
sub rows_insert_sql
{
	my ($n, %opts) = @_;
	my $per = $opts{per} // 1000;
	my $first = $opts{first} // 1;
	my $last = $opts{last} // $per;
	my $table = $opts{table} // 't';
	return "INSERT INTO $table (id, n, payload) SELECT $n * $per + i, $n, 'row $n/' || i"
	  . " FROM generate_series($first, $last) i";
}

# The statements of transaction n: BEGIN, its marker row, the COPY of its
# per rows (option per, default 1000), COMMIT.
sub txn_sql
{
	my ($node, $n, %opts) = @_;
	return ('BEGIN', "INSERT INTO marker VALUES ($n)", rows_copy_sql($node, $n, %opts), 'COMMIT');
}

# TcopyPgTest::Psql->start of statements, run after \set VERBOSITY verbose
# (errors and warnings show their SQLSTATE); options as Psql->start's.
sub psql_bg
{
	my ($node, $sql, %opts) = @_;
	return TcopyPgTest::Psql->start($node, [ '\set VERBOSITY verbose', ref $sql ? @$sql : ($sql) ], %opts);
}

# The SQLSTATEs in psql's stderr (VERBOSITY verbose: "ERROR:  40001: ...")
# or in log lines, in order.
sub sqlstates
{
	my ($text) = @_;
	return $text =~ /\b(?:ERROR|FATAL|PANIC|WARNING):  ([0-9A-Z]{5}):/g;
}

# The size of the node's log now: an offset for wait_for_log.
sub log_position
{
	my ($node) = @_;
	return -s $node->logfile // 0;
}

# Wait until the node's log, from offset (default 0), has a line matching
# regex; the first such line, or '' after timeout seconds or as soon as
# give_up (a sub) returns true.
sub wait_for_log
{
	my ($node, $regex, $timeout, $offset, $give_up) = @_;
	my $line = '';
	wait_until($timeout, sub {
		if (open(my $fh, '<', $node->logfile))
		{
			seek($fh, $offset // 0, 0);
			while (my $l = <$fh>)
			{
				if ($l =~ $regex)
				{
					chomp($line = $l);
					return 1;
				}
			}
		}
		return $give_up && $give_up->();
	});
	return $line;
}

# Run statements (usually ending in COMMIT) with tcopy.test_pause_at = point
# in psql_bg, and wait up to timeout seconds (default 30) for the log line
# "tcopy: paused at point".  Returns (psql, pid of the paused backend or
# undef when it did not pause: the psql then tells why).
sub start_paused
{
	my ($node, $point, $sql, %opts) = @_;
	my $offset = log_position($node);
	my $p = psql_bg($node, [ "SET tcopy.test_pause_at = '$point'", @$sql ], timeout => $opts{timeout} // 300);
	my $line = wait_for_log($node, qr/tcopy: paused at \Q$point\E/, $opts{pause_timeout} // 30,
		$offset, sub { $p->done });
	my ($pid) = $line =~ /\[(\d+)\]/;
	return ($p, $pid);
}

# The prepared sessions of the node's database as tcopy.prepared_sessions()
# lists them: an array of { server, gid, xid, rows, attached ('t' or 'f'),
# decision }, or (undef, psql's error) when the call fails.
sub prepared_sessions
{
	my ($node) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', q{
		SELECT server, gid, xid, rows, attached, decision
		FROM tcopy.prepared_sessions() ORDER BY gid});
	return (undef, $err || "psql exit $rc") if $rc != 0;
	my @sessions;
	for my $line (split /\n/, $out)
	{
		my %s;
		@s{qw(server gid xid rows attached decision)} = split /\|/, $line, -1;
		push @sessions, \%s;
	}
	return \@sessions;
}

# Start committing transactions (txn_sql's: opts per) numbered from from
# (default 100) in a loop, one after the other, in a psql session of their
# own, until stop_txn_loop: a table stop_load (made here) with a row stops
# it.  psql reads them from a file, its output but errors discarded.
# Returns the session.
sub start_txn_loop
{
	my ($node, %opts) = @_;
	my $first = delete $opts{from} // 100;
	my $file = $node->basedir . "/txn_loop_$first.sql";
	$node->safe_psql('postgres', 'CREATE TABLE IF NOT EXISTS stop_load (stop bool)');
	open(my $fh, '>', $file) or croak "$file: $!";
	print $fh "SELECT NOT EXISTS (SELECT FROM stop_load) AS go \\gset\n\\if :go\n"
	  . join(";\n", txn_sql($node, $_, %opts)) . ";\n\\endif\n" for $first .. $first + 19_999;
	close $fh;
	my $loop = TcopyPgTest::Session->new($node, load => 0);
	$loop->send("\\o /dev/null\n\\i $file\n\\o");
	return $loop;
}

# Stop start_txn_loop's loop and wait for it: psql's (stdout, stderr).
sub stop_txn_loop
{
	my ($node, $loop) = @_;
	$node->safe_psql('postgres', 'INSERT INTO stop_load VALUES (true)');
	my ($out, $err) = $loop->result;
	$loop->quit;
	$node->safe_psql('postgres', 'DELETE FROM stop_load');
	return ($out, $err);
}

# Run Postgres' pgbench with args on node's postgres database, for at most
# 300 s: (exit status, stdout, stderr); the status is -1 when it timed out
# or died of a signal.
sub run_pgbench
{
	my ($node, @args) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($node->installed_command('pgbench'), '-h', $node->host, '-p', $node->port, @args,
		'postgres');
	require IPC::Run;
	my $ok = eval {
		IPC::Run::run(\@cmd, '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
		1;
	};
	my $rc = !$ok ? -1 : ($? & 127) ? -1 : $? >> 8;
	$err .= "\n(test harness: $@)" unless $ok;
	return ($rc, $out, $err);
}

# pgbench's invariant on node's pgbench tables (a test named name):
# sum(abalance) = sum(bbalance) = sum(tbalance) = sum(delta).
sub assert_pgbench_invariant
{
	my ($node, $name) = @_;
	my $sums = $node->safe_psql('postgres', q{
		SELECT (SELECT sum(abalance) FROM pgbench_accounts),
			(SELECT sum(bbalance) FROM pgbench_branches),
			(SELECT sum(tbalance) FROM pgbench_tellers),
			(SELECT coalesce(sum(delta), 0) FROM pgbench_history)});
	my @s = split /\|/, $sums;
	ok(@s == 4 && $s[0] == $s[3] && $s[1] == $s[3] && $s[2] == $s[3],
		"$name: sum(abalance) = sum(bbalance) = sum(tbalance) = sum(delta)")
	  or diag("abalance, bbalance, tbalance, delta: $sums");
}

# Commit transaction n of txn_sql (opts: per) on node, in one psql call.
sub commit_txn
{
	my ($node, $n, %opts) = @_;
	$node->safe_psql('postgres', join(";\n", txn_sql($node, $n, %opts)) . ';');
}

# After a restore to a tcopy.backup()'s point, with recovery done: assert
# (assert_atomic, options per and sizes) that transactions 1-6 and 8 are
# there (7 was prepared only, 9-10 came after), and of those numbered from
# 100 that committed around the backup, a first run.  Returns that run.
sub assert_restored_point
{
	my ($node, %opts) = @_;
	my $result = assert_atomic($node, 'restored', %opts);
	my @present = sort { $a <=> $b } keys %{ $result->{present} };
	my @before = grep { $_ < 100 } @present;
	is("@before", '1 2 3 4 5 6 8', 'before the backup: 1-6 and 8 (committed, unpublished) are '
		  . 'there, 7 (prepared only) is not, nor 9-10 (after it)');
	my @during = grep { $_ >= 100 } @present;
	is("@during", join(' ', 100 .. 100 + @during - 1),
		'of the transactions committing around the backup, a first run of them is there');
	return @during;
}

# Switch the WAL and wait until its segment is archived: true once it is.
sub archive_wal
{
	my ($node) = @_;
	my $segment = $node->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
	$node->safe_psql('postgres', 'SELECT pg_switch_wal()');
	return $node->poll_query_until('postgres',
		"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver");
}

# A new node, name, restored from node's backup by point-in-time recovery
# to the restore point label and promoted; started.  True once promoted.
sub restore_to_point
{
	my ($node, $backup, $name, $label) = @_;
	my $restored = PostgreSQL::Test::Cluster->new($name);
	$restored->init_from_backup($node, $backup, has_restoring => 1);
	$restored->append_conf('postgresql.conf', "recovery_target_name = '$label'\n"
		  . "recovery_target_action = 'promote'\n");
	$restored->start;
	return ($restored, $restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'));
}

# Run recovery until nothing is left prepared: call
# tcopy.recover_prepared_sessions() (unless manual => 0: then only the
# background worker does it) every half second until
# tcopy.prepared_sessions() is empty twice in a row, and with ts => tserver,
# the tserver lists no prepared session and holds no open session either;
# at most timeout seconds (default 60), less when give_up (a sub) says so.  Returns (ok, sessions resolved by
# the calls, what was left or the last error, for diag).
sub recover_all
{
	my ($node, %opts) = @_;
	my $manual = $opts{manual} // 1;
	my $resolved = 0;
	my $empty = 0;
	my $left = '';
	my $ok = wait_until($opts{timeout} // 60, sub {
		return -1 if $opts{give_up} && $opts{give_up}->();
		if ($manual)
		{
			my ($rc, $out, $err) = $node->psql('postgres', 'SELECT tcopy.recover_prepared_sessions()');
			if ($rc == 0 && $out =~ /^(\d+)$/)
			{
				$resolved += $1;
			}
			else
			{
				$left = "tcopy.recover_prepared_sessions(): $err";
				$empty = 0;
				# no such function: no point in waiting
				return -1 if $err =~ /does not exist/;
				sleep(0.45);
				return 0;
			}
		}
		my ($sessions, $err) = prepared_sessions($node);
		return -1 if !$sessions && $err =~ /does not exist/;
		my $clean = $sessions && !@$sessions;
		$left = $sessions
		  ? join("\n", map { my $s = $_; join(' ', map { "$_=" . ($s->{$_} // '') } qw(gid xid rows attached decision)) } @$sessions)
		  : "tcopy.prepared_sessions(): $err";
		if ($clean && $opts{ts})
		{
			my $at_ts = $opts{ts}->prepared;
			my $stats = $opts{ts}->stats;
			$clean = $at_ts && !@$at_ts && $stats && ($stats->{sessions_open} // 1) == 0;
			$left = 'the tserver: ' . ($at_ts ? join("\n", map { $_->{line} } @$at_ts) : 'tserver-cli prepared failed')
			  . ($stats ? ", sessions_open $stats->{sessions_open}" : ', no stats')
			  unless $clean;
		}
		$empty = $clean ? $empty + 1 : 0;
		return 1 if $empty >= 2;
		sleep(0.45);
		return 0;
	});
	return ($ok && $ok > 0 ? 1 : 0, $resolved, $ok && $ok > 0 ? '' : $left);
}

# Assert that the tserver holds no prepared session: tserver-cli prepared
# lists none, and its stats say sessions_prepared 0.
sub assert_tserver_unprepared
{
	my ($ts, $name) = @_;
	my $list = $ts->prepared;
	ok($list && !@$list, "$name: the tserver lists no prepared session")
	  or diag($list ? join("\n", map { $_->{line} } @$list) : 'tserver-cli prepared failed');
	my $stats = $ts->stats;
	is($stats && $stats->{sessions_prepared}, '0', "$name: the tserver's stats say sessions_prepared 0")
	  or diag(explain($stats));
}

# Check every transaction of the marker/t tables (per: rows per
# transaction, default 1000; pers: { n => per } for transactions of
# another size, sizes: { n => rows } for transactions of fewer rows than
# their per): its marker row is there exactly when all of its rows are
# (ids n * per + 1 .. n * per + rows), never a part of them; the
# transactions in committed (array) are there, those in aborted are not.  Returns { present => { n => 1 }, partial => count, error => psql's
# error if the check could not run }.
sub assert_atomic
{
	my ($node, $name, %opts) = @_;
	my $per = $opts{per} // 1000;
	my ($rc, $out, $err) = $node->psql('postgres', qq{
		SELECT coalesce(m.n, c.n), m.n IS NOT NULL, coalesce(c.rows, 0), c.min_id, c.max_id
		FROM marker m
		FULL JOIN (SELECT n, count(*) AS rows, min(id) AS min_id, max(id) AS max_id
			FROM t GROUP BY n) c ON c.n = m.n
		ORDER BY 1});
	my %result = (present => {}, partial => 0);
	if ($rc != 0)
	{
		fail("$name: the marker and t tables can be read") or diag($err);
		$result{error} = $err;
		return \%result;
	}
	my @violations;
	for my $line (split /\n/, $out)
	{
		my ($n, $marked, $rows, $min_id, $max_id) = split /\|/, $line, -1;
		my $n_per = $opts{pers} && $opts{pers}{$n} ? $opts{pers}{$n} : $per;
		my $want = $opts{sizes} && $opts{sizes}{$n} ? $opts{sizes}{$n} : $n_per;
		# the key is id: want rows within the range are all of them
		my $ids_ok = $rows == 0 || ($min_id >= $n * $n_per + 1 && $max_id <= $n * $n_per + $want) ? 't' : 'f';
		if ($marked eq 't' && $rows == $want && $ids_ok eq 't')
		{
			$result{present}{$n} = 1;
		}
		else
		{
			push @violations, "transaction $n: marker " . ($marked eq 't' ? 'present' : 'absent')
			  . ", $rows of its $want rows" . ($ids_ok eq 't' ? '' : ', some with ids not its own');
			$result{partial}++ if $rows > 0 && $rows != $want;
		}
	}
	ok(!@violations, "$name: each transaction's marker row is there exactly when all of its rows are")
	  or diag(join("\n", @violations[ 0 .. ($#violations < 19 ? $#violations : 19) ]));
	if ($opts{committed})
	{
		my @missing = grep { !$result{present}{$_} } @{ $opts{committed} };
		ok(!@missing, "$name: the committed transactions are there ("
			  . join(', ', @{ $opts{committed} }[ 0 .. ($#{ $opts{committed} } < 9 ? $#{ $opts{committed} } : 9) ])
			  . (@{ $opts{committed} } > 10 ? ', ...' : '') . ')')
		  or diag('missing: ' . join(', ', @missing));
	}
	if ($opts{aborted})
	{
		my %seen = map { $_ => 1 } grep { /^\d+$/ } map { (split /\|/)[0] } split /\n/, $out;
		my @there = grep { $seen{$_} } @{ $opts{aborted} };
		ok(!@there, "$name: nothing of the transactions that did not commit is there ("
			  . join(', ', @{ $opts{aborted} }[ 0 .. ($#{ $opts{aborted} } < 9 ? $#{ $opts{aborted} } : 9) ])
			  . (@{ $opts{aborted} } > 10 ? ', ...' : '') . ')')
		  or diag('there: ' . join(', ', @there));
	}
	return \%result;
}

# Assert that SQLSTATE 08007 (transaction_resolution_unknown, "could not
# learn whether tserver ... committed") appears in none of texts (psql
# outputs) nor in the node's log (whose lines carry their SQLSTATE, see
# twopc_conf).
sub assert_no_08007
{
	my ($node, $name, @texts) = @_;
	my $re = qr/\b08007\b|could not learn whether/;
	my @hits = grep { /$re/ } map { split /\n/ } grep { defined } @texts;
	ok(!@hits, "$name: no 08007 in any psql output") or diag(join("\n", @hits[ 0 .. ($#hits < 9 ? $#hits : 9) ]));
	my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile);
	@hits = grep { /$re/ } split /\n/, $log;
	ok(!@hits, "$name: no 08007 in the node's log") or diag(join("\n", @hits[ 0 .. ($#hits < 9 ? $#hits : 9) ]));
}

package TcopyPgTest::Proxy;

use strict;
use warnings;

use Carp;
use POSIX qw(:sys_wait_h);
use Test::More;
use Time::HiRes qw(sleep time);

my @live_proxies;
our $starts = 0;				# proxies started: each logs to a file of its own

# Start test/tools/tcopy_proxy.pl in front of a tserver, listening on
# socket (default proxy.sock in the tserver's directory); options fault,
# nth, kill (a pid), trace.  BAIL_OUT when it does not come up.
sub start
{
	my ($class, $ts, %opts) = @_;
	my $self = bless {
		socket => $opts{socket} // $ts->base_dir . '/proxy.sock',
		log => $ts->base_dir . '/proxy.' . (++$starts) . '.log',
	}, $class;
	my @args = ('--listen', $self->{socket}, '--upstream', $ts->socket_path);
	push @args, '--fault', $opts{fault}, '--nth', $opts{nth} // 1 if $opts{fault};
	push @args, '--kill', $opts{kill} if $opts{kill};
	push @args, '--trace' if $opts{trace};
	my $pid = fork();
	croak "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $self->{log}) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec($^X, "$TcopyTest::TOP/test/tools/tcopy_proxy.pl", @args) or POSIX::_exit(127);
	}
	$self->{pid} = $pid;
	push @live_proxies, $self;
	TcopyPgTest::wait_until(10, sub { $self->log_text =~ /^proxy ready$/m || waitpid($pid, WNOHANG) == $pid })
	  and $self->log_text =~ /^proxy ready$/m
	  or BAIL_OUT("the proxy did not start: " . $self->log_text);
	return $self;
}

sub address { 'unix:' . $_[0]->{socket} }

sub log_text
{
	my ($self) = @_;
	open(my $fh, '<', $self->{log}) or return '';
	local $/;
	return <$fh> // '';
}

# The "fired ..." line, or '' until the proxy has written all of it.  The
# proxy prints "fired STEP on connection N", then, with --kill, " killed
# PID" once the kill is done, then the newline: only a line that has its
# newline is complete, so a test that sees it knows the kill happened.
sub fired
{
	my ($self) = @_;
	return $self->log_text =~ /^(fired [^\n]*)\n/m ? $1 : '';
}

# Wait up to timeout seconds for the fault to fire (its whole line, see
# fired), or until give_up returns true; the "fired ..." line or ''.  When
# give_up ends the wait while the line is being written, wait a little
# more for its end, which follows as soon as the kill is done.
sub wait_fired
{
	my ($self, $timeout, $give_up) = @_;
	TcopyPgTest::wait_until($timeout, sub { $self->fired || ($give_up && $give_up->()) });
	TcopyPgTest::wait_until(5, sub { $self->fired })
	  if !$self->fired && $self->log_text =~ /^fired /m;
	return $self->fired;
}

sub stop
{
	my ($self) = @_;
	my $pid = $self->{pid} or return;
	kill 'TERM', $pid;
	TcopyPgTest::wait_until(10, sub { waitpid($pid, WNOHANG) == $pid })
	  or do { kill 'KILL', $pid; waitpid($pid, 0) };
	$self->{pid} = undef;
}

END
{
	for my $proxy (@live_proxies)
	{
		kill 'KILL', $proxy->{pid} if $proxy->{pid};
	}
}

package TcopyPgTest::Session;

use strict;
use warnings;

use Carp;
use IPC::Run ();
use Time::HiRes qw(sleep time);

# Start psql (unaligned, tuples only, command tags shown, errors do not
# stop it) on the node's postgres database.  Unless load => 0, the session
# starts with LOAD 'tcopy', so that its first COPY goes through the COPY
# hook even when nothing has loaded the library yet (101_copy_cluster.pl
# checks a fresh session separately).  Option user => ROLE logs in as ROLE.
sub new
{
	my ($class, $node, %opts) = @_;
	my $self = bless {
		in => '',
		out => '',
		err => '',
		serial => 0,
		timeout => $opts{timeout} // 900,
	}, $class;
	my @cmd = ($node->installed_command('psql'), '-XAt', '-v', 'ON_ERROR_STOP=0',
		'-d', $node->connstr($opts{dbname} // 'postgres') . ($opts{user} ? " user=$opts{user}" : ''),
		'-f', '-');
	$self->{timer} = IPC::Run::timeout($self->{timeout});
	$self->{h} = IPC::Run::start(\@cmd, '<', \$self->{in}, '>', \$self->{out},
		'2>', \$self->{err}, $self->{timer});
	$self->run_ok("LOAD 'tcopy';") if $opts{load} // 1;
	return $self;
}

# Send sql (one or more statements, psql commands, inline COPY data)
# followed by a marker on stdout and stderr; returns the marker.
sub send
{
	my ($self, $sql) = @_;
	my $marker = "__tcopy_done_" . ++$self->{serial} . "__";
	$self->{in} .= "$sql\n\\echo $marker\n\\warn $marker\n";
	$self->{timer}->start($self->{timeout});
	$self->{h}->pump_nb;
	$self->{pending} = $marker;
	return $marker;
}

# Whether what send sent has finished (pumps without blocking).
sub done
{
	my ($self) = @_;
	my $marker = $self->{pending} // return 1;
	eval { $self->{h}->pump_nb; 1 } or return 1;
	return $self->{out} =~ /^\Q$marker\E\n/m && $self->{err} =~ /^\Q$marker\E\n/m;
}

# Wait for what send sent; returns (stdout, stderr) of it.
sub result
{
	my ($self) = @_;
	my $marker = $self->{pending} // croak "nothing sent";
	until ($self->{out} =~ /^\Q$marker\E\n/m && $self->{err} =~ /^\Q$marker\E\n/m)
	{
		if (!$self->{h}->pumpable)
		{
			croak "psql exited; stdout: $self->{out}\nstderr: $self->{err}";
		}
		$self->{h}->pump;
	}
	my ($out, $err) = ($self->{out}, $self->{err});
	$out =~ s/^\Q$marker\E\n//m;
	$err =~ s/^\Q$marker\E\n//m;
	$self->{out} = $self->{err} = '';
	$self->{pending} = undef;
	chomp $out;
	chomp $err;
	return ($out, $err);
}

# send + result.
sub run
{
	my ($self, $sql) = @_;
	$self->send($sql);
	return $self->result;
}

# run, and die on anything on stderr; returns stdout.
sub run_ok
{
	my ($self, $sql) = @_;
	my ($out, $err) = $self->run($sql);
	croak "statement failed: $sql\n$err" if $err ne '';
	return $out;
}

# The backend's pid.
sub backend_pid
{
	my ($self) = @_;
	my $pid = $self->run_ok('SELECT pg_backend_pid();');
	croak "no pid from pg_backend_pid(): $pid" unless $pid =~ /^\d+$/;
	return $pid;
}

sub quit
{
	my ($self) = @_;
	$self->{in} .= "\\q\n";
	eval { $self->{h}->finish; 1 } or eval { $self->{h}->kill_kill };
}

package TcopyPgTest::Psql;

use strict;
use warnings;

use IPC::Run ();
use Time::HiRes qw(sleep time);

# Start one psql run of sql (-c, ON_ERROR_STOP) in the background, so that
# a test can do something to the processes while it runs and still see
# its exit status.  sql may be a list of statements (one -c each, in one
# session).  timeout (seconds, default 900) bounds it.
sub start
{
	my ($class, $node, $sql, %opts) = @_;
	my $self = bless { out => '', err => '', timeout => $opts{timeout} // 900 }, $class;
	my @cmd = ($node->installed_command('psql'), '-XAt', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr($opts{dbname} // 'postgres'),
		map { ('-c', $_) } ref $sql ? @$sql : ($sql));
	$self->{h} = IPC::Run::start(\@cmd, '<', \undef, '>', \$self->{out},
		'2>', \$self->{err}, IPC::Run::timeout($self->{timeout}));
	$self->{started} = time();
	return $self;
}

# Whether psql has exited (pumps without blocking).
sub done
{
	my ($self) = @_;
	return 1 if defined $self->{rc};
	my $running = eval { $self->{h}->pump_nb; $self->{h}->pumpable };
	$self->{ended} //= time() unless $running;
	return !$running;
}

# Wait for psql to exit: (exit status, stdout, stderr, seconds it ran, as
# of the first call of done that saw it exited, if any).
# The status is -1 when it timed out (it is then killed) or died of a
# signal.
sub finish
{
	my ($self) = @_;
	if (!defined $self->{rc})
	{
		my $rc;
		eval {
			$self->{h}->finish;
			$rc = $self->{h}->full_result(0);
			$rc = ($rc & 127) ? -1 : $rc >> 8;
			1;
		} or do {
			$self->{err} .= "\n(test harness: $@)";
			eval { $self->{h}->kill_kill };
			$rc = -1;
		};
		$self->{rc} = $rc;
		$self->{secs} = ($self->{ended} // time()) - $self->{started};
		chomp $self->{out};
		chomp $self->{err};
	}
	return ($self->{rc}, $self->{out}, $self->{err}, $self->{secs});
}

1;
