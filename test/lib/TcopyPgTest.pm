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
#	session.
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
  staging_entries held_copy_sql release_held_copy);

# Columns of pgbench_accounts.
use constant ACCOUNTS_COLUMNS =>
  '(aid int NOT NULL, bid int, abalance int, filler char(84))';

# Start a tserver (TcopyTest->new(%tserver_opts)) and a Postgres node with
# the extension, server ts at the tserver and a PUBLIC user mapping.
# Returns (node, tserver).
sub setup_node
{
	my (%opts) = @_;
	my $ts = TcopyTest->new(%{ $opts{tserver} // {} });
	$ts->start or BAIL_OUT("tserver did not start");
	my $node = PostgreSQL::Test::Cluster->new($opts{name} // 'main');
	$node->init;
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

# Let the held COPY of node send the rest of its rows at full speed.
sub release_held_copy
{
	my ($node) = @_;
	my $pid = PostgreSQL::Test::Utils::slurp_file($node->basedir . '/held_copy.pid');
	chomp $pid;
	kill('USR1', $pid) or croak "release_held_copy: kill $pid: $!";
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
# or spilled); returns (true, stats), or (false, the last stats) after
# timeout seconds.
sub wait_tserver_idle
{
	my ($ts, $timeout) = @_;
	my $stats;
	my $idle = wait_until($timeout, sub {
		$stats = $ts->stats;
		return $stats && $stats->{sessions_open} == 0
		  && $stats->{staged_bytes} == 0 && $stats->{spilled_bytes} == 0;
	});
	return ($idle ? 1 : 0, $stats);
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
# checks a fresh session separately).
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
		'-d', $node->connstr($opts{dbname} // 'postgres'), '-f', '-');
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
