# 172_partition_faults.pl
#	Scale-out (issue 16): a partitioned table whose leaf partitions are
#	tcopy tables on three tservers, and one tserver failing at each step of
#	a transaction that loads all of them: "a failure of any one tserver
#	(kill -9, stall, disk full) at any step leaves nothing of the
#	transaction anywhere", and a committed transaction has all of its rows
#	everywhere (Postgres decides).
#
#	One Postgres node (tcopy.recovery_interval 0: only
#	tcopy.recover_prepared_sessions() resolves; tcopy.batch_rows 100, so
#	that every leaf sends batches early in a COPY), tservers ts1, ts2, ts3,
#	a heap table marker(n) and pt (aid, n, payload) PARTITION BY HASH
#	(aid), whose 6 leaves pt_0 .. pt_5 are tcopy tables (key 'aid') on
#	ts1, ts2, ts3, ts1, ts2, ts3.  Transaction n is BEGIN; INSERT INTO
#	marker VALUES (n); COPY pt FROM PROGRAM of rows aid n * K + 1 ..
#	n * K + K (K = 6000: about 1000 on every leaf); COMMIT.  The COPY goes
#	through whatever path COPY into a partitioned table takes (Postgres'
#	COPY and the FDW's insert path, or the COPY hook once it takes
#	partitioned tables).  For the mid-COPY faults the program sends the
#	first rows, then waits for the test to open a gate (a file) before it
#	sends the rest, so the fault lands while the COPY is running, after
#	every tserver has received some of its batches.  Payloads are 100 hex
#	digits (1.5 kB in case 3): Postgres reads a program's output in 64 kB
#	blocks, so the rows before the gate must fill many of them.
#
#	ts3's data directory is on a 64 MB tmpfs of its own, mounted in an
#	unprivileged user and mount namespace (unshare) that a holder process
#	keeps alive across ts3's restarts; ts3 runs in that namespace (nsenter)
#	with --session-memory-mb 1, so that a COPY spills to its staging
#	directory.  Without unprivileged namespaces ts3 is a plain tserver and
#	case 3 is skipped.
#
#	Cases (transaction numbers in brackets):
#	0. no fault [1]: all rows on every leaf right after COMMIT, per leaf as
#	   Postgres' hash routing puts them;
#	1. ts1 killed -9 mid-COPY [2]: the COPY fails (not 08007), nothing
#	   anywhere once ts1 is restarted;
#	2. ts2 stopped (SIGSTOP) mid-COPY, the COPY cancelled (pg_cancel_backend):
#	   it ends with 57014 within a few seconds; SIGCONT; nothing anywhere [3];
#	3. ts3's disk filled up mid-COPY [4] (rows of 1.5 kB, which ts3 must
#	   spill): the transaction fails with ENOSPC's words; ts3 keeps
#	   running, holds no session and an empty staging directory; space
#	   freed, ts3 restarted cleanly; nothing anywhere;
#	4. paused after-prepare [5] (each tserver lists the session prepared),
#	   ts3 and the backend killed -9, ts3 restarted: still prepared on every
#	   tserver before recovery; after recovery nothing anywhere;
#	5. paused before-publish [6], ts1 and the backend killed -9, ts1
#	   restarted: after recovery the marker and all rows on every leaf;
#	6. ts2 killed -9 after the COPY, before COMMIT [7]: COMMIT fails (not
#	   with 08007); nothing anywhere once ts2 is restarted;
#	7. no fault [8] after all that.
#	After every case, once recovery has run, for every transaction so far:
#	its marker is there exactly when all of its rows are on every leaf
#	(rows per leaf through Postgres, and per tserver table with
#	tserver-cli), the committed ones are there, the others have no row
#	anywhere; no tserver lists a prepared or open session; tcopy's view
#	lists nothing prepared; no 08007 in any output nor in the node's log.
#
#	TCOPY_172_COPY_HOOK=off runs it with tcopy.copy_hook off: the COPY
#	then goes through Postgres' COPY and the FDW's insert path.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use IO::Handle;
use POSIX qw(:sys_wait_h);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(twopc_conf psql_bg start_paused prepared_sessions recover_all
  assert_tserver_unprepared assert_no_08007 sqlstates wait_until copy_progress
  table_name_of wait_tserver_idle);

my $K = 6000;				# rows of a transaction
my $PARTS = 6;				# leaves of pt
my $FIRST = 3000;			# rows the gated program sends before the gate
my $DISK_FIRST = 1500;		# ... for the disk-full case (less than ts3 spills)
my $PAD = 100;				# payload bytes of a row
my $DISK_PAD = 1500;		# ... in the disk-full case
my $CANCEL_BOUND = 10;		# seconds a cancelled COPY may take to end
my $t_begin = time();

# ---- ts3 in a user and mount namespace of its own, on a tmpfs ----

# A tserver started through a wrapper (nsenter into the holder's
# namespaces); everything else as TcopyTest.
package NsTserver;
our @ISA = ('TcopyTest');

sub spawn
{
	my $self = shift;
	local $TcopyTest::TSERVER = $self->{ns_wrapper} if $self->{ns_wrapper};
	return $self->SUPER::spawn(@_);
}

package main;

my ($disk_mnt, $holder, $disk_skip, $disk_root);

# Start the holder: unshare a user namespace (our uid and gid mapped to
# themselves, capabilities kept) and a mount namespace, mount a 64 MB
# tmpfs on disk_mnt there and sleep.  Returns the wrapper script that
# runs the tserver in those namespaces, or undef with disk_skip set.
sub start_holder
{
	for my $tool (qw(unshare nsenter))
	{
		if (!grep { -x "$_/$tool" } split /:/, $ENV{PATH})
		{
			$disk_skip = "no $tool in PATH";
			return undef;
		}
	}
	$disk_mnt = tempdir('tcpfXXXXXX', DIR => '/tmp', CLEANUP => 1);
	my $log = "$disk_mnt.holder.log";
	my $gid = (split ' ', $))[0];
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec('unshare', '--user', "--map-user=$>", "--map-group=$gid", '--keep-caps', '--mount',
			'sh', '-c', "mount -t tmpfs -o size=64m,mode=0700 tcopy-part-disk '$disk_mnt' && exec sleep 3600")
		  or POSIX::_exit(127);
	}
	my $mounted = wait_until(10, sub {
		return -1 if waitpid($pid, WNOHANG) == $pid;
		open(my $fh, '<', "/proc/$pid/mountinfo") or return 0;
		local $/;
		my $info = <$fh> // '';
		return $info =~ m{ \Q$disk_mnt\E .* - tmpfs }m ? 1 : 0;
	});
	if ($mounted != 1)
	{
		kill('KILL', $pid) if $mounted != -1;
		waitpid($pid, 0);
		$disk_skip = 'cannot mount a tmpfs in an unprivileged user and mount namespace: '
		  . (-e $log ? slurp_file($log) : 'no output');
		$disk_skip =~ s/\s+$//;
		return undef;
	}
	$holder = $pid;
	$disk_root = "/proc/$holder/root$disk_mnt";
	my $wrapper = "$disk_mnt.tserver";
	open(my $fh, '>', $wrapper) or die "$wrapper: $!";
	print $fh "#!/bin/sh\nexec nsenter -t $holder -U -m --preserve-credentials $TcopyTest::TSERVER \"\$@\"\n";
	close($fh);
	chmod(0755, $wrapper) or die "chmod $wrapper: $!";
	return $wrapper;
}

# Fill ts3's file system up to `leave` bytes free, with one file.
sub fill_disk
{
	my ($leave) = @_;
	my $filler = "$disk_root/filler";
	open(my $fh, '>', $filler) or die "open $filler: $!";
	my $chunk = "\0" x (1 << 20);
	my $size = 0;
	while (1)
	{
		my $n = syswrite($fh, $chunk);
		last unless $n;
		$size += $n;
	}
	close $fh;
	truncate($filler, $size > $leave ? $size - $leave : 0) or die "truncate $filler: $!";
	return $size;
}

sub free_disk
{
	unlink("$disk_root/filler") if $disk_root;
}

my $wrapper = start_holder();
note($wrapper ? "ts3 on a tmpfs at $disk_mnt (holder $holder)" : "ts3 on the ordinary disk: $disk_skip");

my $ts1 = TcopyTest->new;
my $ts2 = TcopyTest->new;
my $ts3 = NsTserver->new(
	$wrapper ? (data => "$disk_mnt/data") : (),
	extra_args => [ '--session-memory-mb', '1' ]);
$ts3->{ns_wrapper} = $wrapper;
my @ts = ($ts1, $ts2, $ts3);
$_->start or BAIL_OUT('a tserver did not start') for @ts;

my @gates;					# gate files, opened at the end whatever happens
my $stopped;				# a tserver stopped with SIGSTOP

END
{
	local $?;
	kill('CONT', $stopped->pid) if $stopped && $stopped->pid;
	for my $gate (@gates)
	{
		if (open(my $fh, '>', $gate)) { close $fh }
	}
	if ($holder)
	{
		# the tserver in the namespace first, then the namespace
		if ($ts3 && $ts3->pid)
		{
			kill('KILL', $ts3->pid);
			waitpid($ts3->pid, 0);
			$ts3->{pid} = undef;
		}
		kill('KILL', $holder);
		waitpid($holder, 0);
		unlink("$disk_mnt.tserver", "$disk_mnt.holder.log");
	}
}

my $node = PostgreSQL::Test::Cluster->new('parts');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\n"
	  . twopc_conf(recovery_interval => '0')
	  . "tcopy.batch_rows = 100\n"
	  . (($ENV{TCOPY_172_COPY_HOOK} // '') eq 'off' ? "tcopy.copy_hook = off\n" : ''));
$node->start;
my $ddl = "CREATE EXTENSION tcopy;\n";
for my $i (1 .. 3)
{
	$ddl .= "CREATE SERVER ts$i FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts[ $i - 1 ]->address . "');\n"
	  . "CREATE USER MAPPING FOR PUBLIC SERVER ts$i;\n";
}
$ddl .= "CREATE TABLE marker (n int PRIMARY KEY);\n"
  . "CREATE TABLE pt (aid int NOT NULL, n int NOT NULL, payload text) PARTITION BY HASH (aid);\n";
my @leaf_ts;				# leaf r => its tserver
for my $r (0 .. $PARTS - 1)
{
	my $s = $r % 3;
	$leaf_ts[$r] = $ts[$s];
	$ddl .= "CREATE FOREIGN TABLE pt_$r PARTITION OF pt FOR VALUES WITH (MODULUS $PARTS, REMAINDER $r)"
	  . " SERVER ts" . ($s + 1) . " OPTIONS (key 'aid');\n";
}
$node->safe_psql('postgres', $ddl);
my @leaf_table = map { table_name_of($node, "pt_$_") } 0 .. $PARTS - 1;
{
	# which path COPY into pt takes (for the log only): the COPY hook
	# refuses load_id for a partitioned table, Postgres' COPY does not know it
	my ($rc, $out, $err) = $node->psql('postgres', "COPY pt FROM PROGRAM 'true' (FORMAT csv, load_id 'probe')");
	note('COPY into pt goes through '
		  . ($err =~ /not supported for partitioned table/ ? "tcopy's COPY hook"
			  : $err =~ /not recognized/ ? "Postgres' COPY and the insert path" : "? ($err)"));
}

# The program COPY reads transaction n's rows from: CSV "aid,n,payload"
# for aids n * K + 1 .. n * K + K, in order; with a gate (a path, '-' for
# none), after `first` rows it flushes and waits (at most 60 s, then exits
# 3: the COPY then fails) until the gate file exists; with pad, payloads
# of pad hex digits that do not compress.
my $script = $node->basedir . '/part_rows.pl';
append_to_file($script, <<'PERL');
use strict;
use IO::Handle;
use Digest::SHA qw(sha256_hex);
use Time::HiRes qw(sleep time);
my ($n, $K, $first, $gate, $pad) = @ARGV;
$SIG{PIPE} = sub { exit 0 };
my $buf = '';
for my $i (1 .. $K)
{
	my $payload = "r$n/$i";
	if ($pad)
	{
		my ($p, $j) = ('', 0);
		$p .= sha256_hex("$n/$i/" . $j++) while length($p) < $pad;
		$payload = substr($p, 0, $pad);
	}
	$buf .= ($n * $K + $i) . ",$n,$payload\n";
	my $at_gate = $gate ne '-' && $i == $first;
	if (length($buf) > 65536 || $at_gate)
	{
		print $buf or exit 0;
		STDOUT->flush or exit 0;
		$buf = '';
	}
	if ($at_gate)
	{
		my $deadline = time() + 60;
		until (-e $gate)
		{
			exit 3 if time() > $deadline;
			sleep(0.01);
		}
	}
}
print $buf;
PERL

sub copy_sql
{
	my ($n, %o) = @_;
	my $gate = $o{gate} // '-';
	my $first = $o{first} // 0;
	my $pad = $o{pad} // $PAD;
	return "COPY pt (aid, n, payload) FROM PROGRAM 'perl $script $n $K $first $gate $pad' (FORMAT csv)";
}

sub txn
{
	my ($n, %o) = @_;
	return ('BEGIN', "INSERT INTO marker VALUES ($n)", copy_sql($n, %o), 'COMMIT');
}

my @outputs;				# every psql output, for the 08007 check
my (@committed, @aborted);
my %expected;				# n => [ rows of n on leaf r ]

# Rows of transaction n per leaf, as Postgres' hash routing spreads them.
sub expect_txn
{
	my ($n) = @_;
	my ($lo, $hi) = ($n * $K + 1, $n * $K + $K);
	my $out = $node->safe_psql('postgres', qq{
		SELECT r, count(a) FROM generate_series(0, $PARTS - 1) r
		LEFT JOIN generate_series($lo, $hi) a ON satisfies_hash_partition('pt'::regclass, $PARTS, r, a)
		GROUP BY r ORDER BY r});
	my @per = map { (split /\|/)[1] } split /\n/, $out;
	$expected{$n} = \@per;
	return @per;
}

# { n => { leaf r => [ rows, min aid, max aid ] } } through Postgres, each
# leaf scanned by itself; or (undef, error).
sub actual_rows
{
	my $sql = join(" UNION ALL ",
		map { "SELECT $_, n, count(*), min(aid), max(aid) FROM pt_$_ GROUP BY n" } 0 .. $PARTS - 1);
	my ($rc, $out, $err) = $node->psql('postgres', $sql);
	return (undef, $err) if $rc != 0;
	my %rows;
	for my $line (split /\n/, $out)
	{
		my ($r, $n, $count, $min, $max) = split /\|/, $line;
		$rows{$n}{$r} = [ $count, $min, $max ];
	}
	return \%rows;
}

# Resolve what is left: recovery until tcopy's view and every tserver list
# nothing prepared and no tserver holds an open session.
sub settle
{
	my ($name) = @_;
	for my $i (0 .. 2)
	{
		my ($ok, undef, $left) = recover_all($node, ts => $ts[$i], timeout => 30);
		ok($ok, "$name: after recovery nothing is prepared or open on ts" . ($i + 1)) or diag($left);
	}
}

# The checks after every case (see the header).
sub check_all
{
	my ($name) = @_;
	my ($rows, $err) = actual_rows();
	my %markers = map { $_ => 1 } split /\n/, $node->safe_psql('postgres', 'SELECT n FROM marker ORDER BY n');
	my %committed = map { $_ => 1 } @committed;
	my %aborted = map { $_ => 1 } @aborted;
	my @bad;
	push @bad, "the leaves cannot be read: $err" unless $rows;
	$rows //= {};
	my %all = (%markers, map { $_ => 1 } keys %$rows, @committed, @aborted);
	for my $n (sort { $a <=> $b } keys %all)
	{
		my $on = $rows->{$n} // {};
		my @state = map { ($on->{$_} // [0])->[0] } 0 .. $PARTS - 1;
		my $desc = "transaction $n: marker " . ($markers{$n} ? 'present' : 'absent')
		  . ", rows per leaf " . join('/', @state);
		my $complete = $expected{$n} && join('/', @state) eq join('/', @{ $expected{$n} });
		for my $r (keys %$on)
		{
			my ($count, $min, $max) = @{ $on->{$r} };
			$complete = 0, $desc .= " (pt_$r holds aids $min .. $max, not all its own)"
			  if $min < $n * $K + 1 || $max > $n * $K + $K;
		}
		if ($markers{$n} xor $complete)
		{
			push @bad, "$desc: not all or nothing";
		}
		elsif ($committed{$n} && !$markers{$n})
		{
			push @bad, "$desc: committed but absent";
		}
		elsif ($aborted{$n} && ($markers{$n} || grep { $_ } @state))
		{
			push @bad, "$desc: did not commit but is there";
		}
		elsif (!$committed{$n} && !$aborted{$n})
		{
			push @bad, "$desc: not a transaction of this test";
		}
	}
	ok(!@bad, "$name: each transaction's marker is there exactly when all of its rows are on every leaf"
		  . " (committed " . join(',', @committed) . '; failed ' . join(',', @aborted) . ')')
	  or diag(join("\n", @bad));

	# the tservers' own view: each leaf's tserver table holds the rows of
	# the committed transactions, and nothing else
	my @tbad;
	my %per_ts;
	for my $r (0 .. $PARTS - 1)
	{
		my $want = 0;
		$want += $expected{$_}[$r] for @committed;
		my $got = $leaf_ts[$r]->count($leaf_table[$r]);
		my $s = 1 + (grep { $ts[$_] == $leaf_ts[$r] } 0 .. 2)[0];
		$per_ts{$s}{want} += $want;
		$per_ts{$s}{got} += $got // 0;
		push @tbad, "pt_$r on ts$s ($leaf_table[$r]): " . ($got // 'scan failed') . " rows, want $want"
		  unless defined $got && $got eq $want;
	}
	ok(!@tbad, "$name: every tserver holds exactly the committed rows of its leaves ("
		  . join(', ', map { "ts$_ $per_ts{$_}{got}" } sort keys %per_ts) . ')')
	  or diag(join("\n", @tbad));

	my ($sessions, $perr) = prepared_sessions($node);
	ok($sessions && !@$sessions, "$name: tcopy.prepared_sessions() lists nothing")
	  or diag($sessions ? explain($sessions) : $perr);
	assert_tserver_unprepared($ts[$_], "$name, ts" . ($_ + 1)) for 0 .. 2;
	assert_no_08007($node, $name, @outputs);
}

sub batches_received
{
	my ($ts) = @_;
	my $stats = $ts->stats;
	return $stats ? $stats->{batches_received} // 0 : 0;
}

# Start transaction n with its COPY held at the gate after `first` rows;
# wait until the COPY runs and every tserver has received (and so
# acknowledges) at least 2 batches of it.  Returns (psql, gate, pid of the
# backend or undef).
sub start_gated
{
	my ($n, $name, %o) = @_;
	my $gate = $node->basedir . "/gate.$n";
	unlink($gate);
	push @gates, $gate;
	my @base = map { batches_received($_) } @ts;
	my $p = psql_bg($node, [ txn($n, gate => $gate, first => $o{first} // $FIRST, pad => $o{pad}) ],
		timeout => 120);
	my $pid;
	my $running = wait_until(30, sub {
		return -1 if $p->done;
		my ($ppid, $tuples) = copy_progress($node, 'pt');
		return 0 unless $ppid;
		$pid = $ppid;
		for my $i (0 .. 2)
		{
			return 0 if batches_received($ts[$i]) < $base[$i] + 2;
		}
		return 1;
	});
	ok($running == 1, "$name: the COPY is running, each tserver has received batches of it")
	  or diag('received: ' . join(', ', map { batches_received($ts[$_]) - $base[$_] } 0 .. 2)
		  . ($p->done ? "\npsql ended: " . join("\n", ($p->finish)[ 0 .. 2 ]) : ''));
	return ($p, $gate, $running == 1 ? $pid : undef);
}

sub open_gate
{
	my ($gate) = @_;
	open(my $fh, '>', $gate) or die "$gate: $!";
	close $fh;
}

# A statement's failure: psql exited with an error (status 1), the COPY or
# the COMMIT did not report success (want: what stdout must be), an ERROR
# with a SQLSTATE other than 08007.
sub assert_failed
{
	my ($name, $rc, $out, $err, $want_out, $what) = @_;
	is($rc, 1, "$name: psql stops at an ERROR") or diag("stdout: $out\nstderr: $err");
	is($out, $want_out, "$name: $what") or diag($err);
	my @states = sqlstates($err);
	ok(@states && !grep({ $_ eq '08007' } @states), "$name: ... with an ERROR whose SQLSTATE is not 08007 ("
		  . join(',', @states) . ')') or diag($err);
	return @states;
}

# SIGSTOP a tserver and wait until every thread of it has stopped.
sub thread_state
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '?';
	my $line = <$fh> // '';
	return $line =~ /^\d+ \(.*\) (\S)/ ? $1 : '?';
}

sub stop_tserver
{
	my ($ts) = @_;
	my $pid = $ts->pid;
	$stopped = $ts;
	kill 'STOP', $pid;
	wait_until(5, sub {
		my @states = map { thread_state($_) } glob("/proc/$pid/task/*/stat");
		return @states && !grep { $_ ne 'T' } @states;
	}) or diag("tserver $pid: not every thread stopped");
}

# ---- 0. no fault ----
{
	my $n = 1;
	my $name = 'no fault';
	my @per = expect_txn($n);
	ok(!grep({ $_ < $K / $PARTS / 2 } @per), "$name: the rows spread over every leaf (" . join('/', @per) . ')');
	my ($rc, $out, $err) = psql_bg($node, [ txn($n) ], timeout => 60)->finish;
	push @outputs, $out, $err;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $K\nCOMMIT", "$name: the transaction commits") or diag($err);
	push @committed, $n;
	check_all($name);
}

# ---- 1. kill -9 of ts1 mid-COPY ----
{
	my $n = 2;
	my $name = 'ts1 killed -9 mid-COPY';
	expect_txn($n);
	my ($p, $gate) = start_gated($n, $name);
	$ts1->kill9;
	my $t0 = time();
	open_gate($gate);
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	assert_failed($name, $rc, $out, $err, "BEGIN\nINSERT 0 1", 'the COPY fails');
	note(sprintf("$name: the COPY ended %.1f s after the kill: %s", time() - $t0, $err));
	push @aborted, $n;
	$ts1->start or BAIL_OUT('ts1 did not start after kill -9');
	settle($name);
	check_all($name);
}

# ---- 2. ts2 stalled mid-COPY, the COPY cancelled ----
{
	my $n = 3;
	my $name = 'ts2 stopped mid-COPY, the COPY cancelled';
	expect_txn($n);
	my ($p, $gate, $pid) = start_gated($n, $name);
	stop_tserver($ts2);
	open_gate($gate);
	# the rest of the rows go out until the window to ts2 is full
	my $waits = wait_until(5, sub {
		return -1 if $p->done;
		my $ev = $node->safe_psql('postgres', "SELECT wait_event_type || ' ' || wait_event FROM pg_stat_activity WHERE pid = " . ($pid // 0));
		return $ev eq 'Extension Extension';
	});
	ok($waits == 1, "$name: the COPY waits on the stopped tserver");
	my $t0 = time();
	is($node->safe_psql('postgres', "SELECT pg_cancel_backend(" . ($pid // 0) . ")"), 't',
		"$name: pg_cancel_backend from another session");
	my $ended = wait_until($CANCEL_BOUND, sub { $p->done });
	my $secs = time() - $t0;
	ok($ended, sprintf("$name: the COPY ends within %d s of the cancel (%.1f s)", $CANCEL_BOUND, $secs));
	kill 'CONT', $ts2->pid;
	$stopped = undef;
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	my @states = assert_failed($name, $rc, $out, $err, "BEGIN\nINSERT 0 1", 'the COPY fails');
	is($states[0], '57014', "$name: ... with 57014 (canceling statement due to user request)") or diag($err);
	push @aborted, $n;
	settle($name);
	check_all($name);
}

# ---- 3. ts3's disk full mid-COPY ----
SKIP:
{
	skip("disk full: $disk_skip", 1) unless $wrapper;
	my $n = 4;
	my $name = "ts3's disk full mid-COPY";
	expect_txn($n);
	my ($p, $gate) = start_gated($n, $name, first => $DISK_FIRST, pad => $DISK_PAD);
	my $size = fill_disk(128 * 1024);
	note("$name: filled ts3's file system with " . int($size / 1048576) . " MB, 128 kB left");
	my $t0 = time();
	open_gate($gate);
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	free_disk();
	unlike($out, qr/^COMMIT$/m, "$name: the transaction does not commit") or diag($err);
	is($rc, 1, "$name: psql stops at an ERROR") or diag("stdout: $out\nstderr: $err");
	my @states = sqlstates($err);
	ok(@states && !grep({ $_ eq '08007' } @states), "$name: ... whose SQLSTATE is not 08007 ("
		  . join(',', @states) . ')') or diag($err);
	like($err, qr/No space left on device/, "$name: ... and says that there is no space left") or diag($err);
	ok((grep { $_ eq '53100' } @states), "$name: ... as Postgres' disk_full (53100)") or diag($err);
	note(sprintf("$name: %s failed %.1f s after the disk filled up: %s",
		$out =~ /^COPY \d+$/m ? 'the COMMIT' : 'the COPY', time() - $t0, $err));
	push @aborted, $n;
	ok(!defined $ts3->wait_exit(0.2), "$name: ts3 is still running") or BAIL_OUT('ts3 died on a full disk');
	my ($idle, $stats) = wait_tserver_idle($ts3, 10);
	ok($idle, "$name: ts3 holds no session, nothing staged or spilled") or diag(explain($stats));
	my @left = glob("$disk_root/data/staging/*");
	is(scalar(@left), 0, "$name: ts3's staging directory is empty") or diag("@left");
	$ts3->restart or BAIL_OUT('ts3 did not restart');
	settle($name);
	check_all($name);
}

# Transaction n paused at point with its sessions prepared on the three
# tservers; kill -9 the victim, then the backend; restart the victim; wait
# for Postgres; the sessions are still prepared; recover.
sub paused_crash
{
	my ($name, $n, $point, $victim) = @_;
	my ($p, $pid) = start_paused($node, $point, [ txn($n) ], timeout => 60);
	ok($pid, "$name: the backend pauses at $point") or do {
		my ($rc, $out, $err) = $p->finish;
		diag("exit $rc\n$out\n$err");
		return;
	};
	my ($sessions, $perr) = prepared_sessions($node);
	is(join(' ', sort map { $_->{server} } @{ $sessions // [] }), 'ts1 ts2 ts3',
		"$name: while paused, tcopy.prepared_sessions() lists one session on each server")
	  or diag($sessions ? explain($sessions) : $perr);
	my @lists = map { $_->prepared } @ts;
	ok(!grep({ !$_ || @$_ != 1 } @lists), "$name: while paused, each tserver lists one prepared session")
	  or diag(explain(\@lists));
	$victim->kill9;
	ok(kill('KILL', $pid), "$name: kill -9 of the paused backend");
	my ($rc, $out, $err) = $p->finish;
	push @outputs, $out, $err;
	is($rc, 2, "$name: psql reports the connection lost") or diag("$out\n$err");
	unlike($out, qr/^COMMIT$/m, "$name: ... and no COMMIT");
	$victim->start or BAIL_OUT('tserver did not start after kill -9');
	ok(wait_until(60, sub { ($node->psql('postgres', 'SELECT 1'))[0] == 0 }),
		"$name: Postgres accepts connections again after the crash restart");
	@lists = map { $_->prepared } @ts;
	ok(!grep({ !$_ || @$_ != 1 } @lists),
		"$name: after the restarts, before recovery, each tserver still lists the session prepared")
	  or diag(explain(\@lists));
	my ($ok, $resolved, $left) = recover_all($node, timeout => 30);
	ok($ok, "$name: after recovery nothing is left prepared in Postgres' view") or diag($left);
	is($resolved, 3, "$name: tcopy.recover_prepared_sessions() resolved the three sessions");
	settle($name);
}

# ---- 4. after-prepare, ts3 killed ----
{
	my $n = 5;
	my $name = 'paused after-prepare, ts3 and the backend killed -9';
	expect_txn($n);
	paused_crash($name, $n, 'after-prepare', $ts3);
	push @aborted, $n;
	check_all($name);
}

# ---- 5. before-publish, ts1 killed ----
{
	my $n = 6;
	my $name = 'paused before-publish, ts1 and the backend killed -9';
	expect_txn($n);
	paused_crash($name, $n, 'before-publish', $ts1);
	push @committed, $n;
	check_all($name);
}

# ---- 6. ts2 killed after the COPY, before COMMIT ----
{
	my $n = 7;
	my $name = 'ts2 killed -9 after the COPY, before COMMIT';
	expect_txn($n);
	my $s = TcopyPgTest::Session->new($node, timeout => 60);
	$s->run_ok('\set VERBOSITY verbose');
	my @stmts = txn($n);
	my $commit = pop @stmts;
	my ($out, $err) = $s->run(join(";\n", @stmts) . ';');
	push @outputs, $out, $err;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $K", "$name: the COPY succeeds") or diag($err);
	$ts2->kill9;
	($out, $err) = $s->run("$commit;");
	push @outputs, $out, $err;
	unlike($out, qr/^COMMIT$/m, "$name: COMMIT does not commit");
	my @states = sqlstates($err);
	ok(@states && $err =~ /\bERROR:  [0-9A-Z]{5}: /, "$name: ... it fails with an ERROR") or diag($err);
	ok(@states && !grep({ $_ eq '08007' } @states), "$name: ... whose SQLSTATE is not 08007 ("
		  . join(',', @states) . ')') or diag($err);
	$s->quit;
	push @aborted, $n;
	$ts2->start or BAIL_OUT('ts2 did not start after kill -9');
	settle($name);
	check_all($name);
}

# ---- 7. no fault, after all that ----
{
	my $n = 8;
	my $name = 'no fault at the end';
	expect_txn($n);
	my ($rc, $out, $err) = psql_bg($node, [ txn($n) ], timeout => 60)->finish;
	push @outputs, $out, $err;
	is($out, "BEGIN\nINSERT 0 1\nCOPY $K\nCOMMIT", "$name: the transaction commits") or diag($err);
	push @committed, $n;
	check_all($name);
}

note(sprintf('172_partition_faults: %.1f s', time() - $t_begin));
$node->stop;
$_->stop for @ts;
done_testing();
