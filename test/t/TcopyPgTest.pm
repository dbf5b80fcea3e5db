# TcopyPgTest.pm
#	Helpers of the extension's TAP tests (test/t/1*.pl, run by
#	test/pg_tests.sh with PostgreSQL's test modules on PERL5LIB): a
#	PostgreSQL::Test::Cluster node with the tcopy extension and a server
#	`ts` pointing at a tserver started with TcopyTest, pgbench_accounts-
#	shaped CSV files, table checksums, and psql sessions that run in the
#	background and print command tags (so a test can read "COPY n", find
#	its backend's pid and watch it while a statement runs).
package TcopyPgTest;

use strict;
use warnings;

use Carp;
use Exporter qw(import);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

use TcopyTest;

our @EXPORT_OK = qw(setup_node write_accounts_csv accounts_ddl table_checksum
  rss_anon_kb);

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

1;
