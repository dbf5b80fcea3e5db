# TcopyTest.pm
#	Shared helpers of the tserver TAP tests: start and stop a tserver on a
#	fresh data directory, run tserver-cli against it (in the foreground or
#	in the background), read its peak memory, and talk the wire protocol
#	by hand for the malformed-input tests.
#
#	The binaries are $ENV{TSERVER_BIN} (default build/tserver) and
#	$ENV{TSERVER_CLI} (default build/tserver-cli) under the repository top.
#	A tserver authenticates its clients (it refuses to start otherwise): by
#	default it is started with --allow-uid of the uid running the test, so
#	that the test's own clients (tserver-cli, raw sockets, a Postgres
#	cluster running as the same user) need no token (a start that adds a
#	tcp: listener, where no uid admits a client, gets --insecure instead:
#	the TLS tests' clients there carry no token); new(token => T)
#	starts it with a token file holding T instead, which cli() then
#	passes, and new(auth => [ARGS]) with exactly those arguments.
#	Each start logs the tserver's stderr to its own file in the server's
#	temporary directory; stop and kill9 check that log for sanitizer
#	reports.  With TCOPY_TEST_LOG_DIR set, every log is also copied there
#	(run_tests.sh greps them after the ASan run); with TCOPY_TEST_KEEP set,
#	the temporary directories are kept.
package TcopyTest;

use strict;
use warnings;

use Carp;
use Cwd qw(abs_path);
use Digest::SHA qw(hmac_sha256);
use Exporter qw(import);
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use File::Basename qw(basename dirname);
use File::Copy qw(copy);
use File::Find;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use IPC::Run ();
use POSIX qw(:sys_wait_h);
use Socket qw(SOCK_STREAM);
use Test::More;
use Time::HiRes qw(sleep time);

our @EXPORT_OK = qw(fnv1a64_hex aid_sum dir_size free_tcp_ports PROTOCOL_VERSION auth_proof
  pb_varint pb_field_varint pb_field_bytes pb_field_packed_sint64 pb_decode
  stored_record stored_key_int stored_key_bytes stored_value
  FRAME_SERVER_HELLO FRAME_HELLO FRAME_READY FRAME_OPEN_TABLE FRAME_TABLE_INFO
  FRAME_BEGIN FRAME_BEGIN_OK FRAME_WRITE FRAME_ACK FRAME_COMMIT FRAME_COMMIT_OK
  FRAME_ABORT FRAME_SCAN FRAME_STATS_REQUEST FRAME_STATS FRAME_ERROR
  ERROR_PROTOCOL ERROR_AUTH ERROR_TOO_LARGE ERROR_UNKNOWN_TABLE
  ERROR_SCHEMA_MISMATCH ERROR_BAD_ROW ERROR_PERMISSION ERROR_TOO_MANY_CONNECTIONS
  ERROR_SESSION_LOST ERROR_CONCURRENT_UPDATE
  FRAME_TABLE_OP FRAME_TABLE_OP_OK FRAME_SCAN_BATCH
  FRAME_PREPARE FRAME_PREPARE_OK FRAME_RESOLVE FRAME_RESOLVE_OK
  FRAME_LIST_PREPARED FRAME_PREPARED_LIST
  RESOLVE_NONE RESOLVE_DONE RESOLVE_NOT_FOUND RESOLVE_BUSY);
# frame helpers, imported by name (some tests define their own of these names)
our @FRAME_HELPERS = qw(request error_of reply_outcome pb_varints scan_rows);
our %EXPORT_TAGS = (all => [@EXPORT_OK]);
push @EXPORT_OK, @FRAME_HELPERS;

# proto/tcopy.proto FrameType and ErrorCode, and TC_PROTOCOL_VERSION
use constant {
	PROTOCOL_VERSION => 7,
	FRAME_SERVER_HELLO => 1,
	FRAME_HELLO => 2,
	FRAME_READY => 3,
	FRAME_OPEN_TABLE => 4,
	FRAME_TABLE_INFO => 5,
	FRAME_BEGIN => 6,
	FRAME_BEGIN_OK => 7,
	FRAME_WRITE => 8,
	FRAME_ACK => 9,
	FRAME_COMMIT => 10,
	FRAME_COMMIT_OK => 11,
	FRAME_ABORT => 12,
	FRAME_SCAN => 14,
	FRAME_SCAN_BATCH => 15,
	FRAME_TABLE_OP => 16,
	FRAME_TABLE_OP_OK => 17,
	FRAME_STATS_REQUEST => 18,
	FRAME_STATS => 19,
	FRAME_ERROR => 20,
	ERROR_PROTOCOL => 1,
	ERROR_AUTH => 2,
	ERROR_TOO_LARGE => 3,
	ERROR_UNKNOWN_TABLE => 4,
	ERROR_SCHEMA_MISMATCH => 5,
	ERROR_BAD_ROW => 6,
	ERROR_PERMISSION => 10,
	ERROR_TOO_MANY_CONNECTIONS => 11,
	ERROR_SESSION_LOST => 16,
	ERROR_CONCURRENT_UPDATE => 17,
};

# the two-phase commit's frames and Resolve outcomes (protocol version 2)
use constant {
	FRAME_PREPARE => 21,
	FRAME_PREPARE_OK => 22,
	FRAME_RESOLVE => 23,
	FRAME_RESOLVE_OK => 24,
	FRAME_LIST_PREPARED => 25,
	FRAME_PREPARED_LIST => 26,
	RESOLVE_NONE => 0,
	RESOLVE_DONE => 1,
	RESOLVE_NOT_FOUND => 2,
	RESOLVE_BUSY => 3,
};

our $TOP = abs_path(dirname(__FILE__) . "/../..");
our $TSERVER = $ENV{TSERVER_BIN} // "$TOP/build/tserver";
our $CLI = $ENV{TSERVER_CLI} // "$TOP/build/tserver-cli";
our $READY_TIMEOUT = 30;		# seconds to wait for "tserver ready"
our $STOP_TIMEOUT = 60;			# seconds a SIGTERM'ed tserver may take
our $CLI_TIMEOUT = 900;			# seconds one tserver-cli run may take

$SIG{PIPE} = 'IGNORE';			# a server closing on us is a result, not a crash

my @live_servers;				# stopped at END if a test died half way

# Make a server object: a short temporary directory (a unix socket path
# must fit sun_path's 108 bytes) holding the data directory, the socket
# and the logs.  extra_args are added to every start.
sub new
{
	my ($class, %opts) = @_;
	my $base = tempdir("tcXXXXXX", DIR => "/tmp", CLEANUP => !$ENV{TCOPY_TEST_KEEP});
	my $self = bless {
		base => $base,
		data => $opts{data} // "$base/data",
		socket => $opts{socket} // "$base/ts.sock",
		extra_args => $opts{extra_args} // [],
		exec_prefix => $opts{exec_prefix} // [],	# e.g. ip netns exec NS
		auth_args => $opts{auth},	# undef: the default, see spawn
		cli_args => [],
		starts => 0,
		pid => undef,
		log => undef,
	}, $class;
	croak "socket path $self->{socket} is too long" if length($self->{socket}) > 100;
	if (defined $opts{token})
	{
		my $file = "$base/token";
		open(my $fh, '>', $file) or croak "$file: $!";
		print $fh "$opts{token}\n";
		close $fh;
		chmod(0600, $file) or croak "chmod $file: $!";
		$self->{token_file} = $file;
		$self->{token} = $opts{token};
		$self->{auth_args} = [ '--token-file', $file ];
		$self->{cli_args} = [ '--token-file', $file ];
	}
	push @live_servers, $self;
	return $self;
}

sub data_dir { $_[0]->{data} }
sub socket_path { $_[0]->{socket} }
sub address { "unix:" . $_[0]->{socket} }
sub pid { $_[0]->{pid} }
sub log_file { $_[0]->{log} }
sub base_dir { $_[0]->{base} }
sub token_file { $_[0]->{token_file} }

sub log_contents
{
	my ($self) = @_;
	return "" unless defined $self->{log} && -e $self->{log};
	open(my $fh, '<', $self->{log}) or return "";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text // "";
}

# Spawn a tserver with stderr (and stdout) to a new log file; wait until
# it prints "tserver ready" or exits.  Returns ('ready', pid) or
# ('exited', wait status) or ('timeout', pid).
sub spawn
{
	my ($self, @args) = @_;
	$self->{starts}++;
	my $log = "$self->{base}/tserver.$self->{starts}.log";
	my @all = (@{ $self->{extra_args} }, @args);
	my $tcp = grep { /^tcp:/ } @all;
	my $auth = $self->{auth_args} // ($tcp ? ['--insecure'] : [ '--allow-uid', $> ]);
	my @cmd = (@{ $self->{exec_prefix} }, $TSERVER, '--data', $self->{data},
		'--listen', $self->address, @$auth, @all);
	my $pid = fork();
	croak "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec(@cmd) or POSIX::_exit(127);
	}
	$self->{log} = $log;
	my $deadline = time() + $READY_TIMEOUT;
	while (time() < $deadline)
	{
		my $r = waitpid($pid, WNOHANG);
		if ($r == $pid)
		{
			$self->save_log;
			return ('exited', $?);
		}
		return ('ready', $pid) if $self->log_contents =~ /tserver ready/;
		sleep(0.05);
	}
	return ('timeout', $pid);
}

# Start the tserver; true once it is ready.  On failure the log is shown.
sub start
{
	my ($self, @args) = @_;
	croak "tserver already running" if $self->{pid};
	my ($what, $value) = $self->spawn(@args);
	if ($what eq 'ready')
	{
		$self->{pid} = $value;
		return 1;
	}
	if ($what eq 'timeout')
	{
		kill 'KILL', $value;
		waitpid($value, 0);
	}
	diag("tserver did not start ($what" . ($what eq 'exited' ? " with status $value" : "")
		  . "); log:\n" . $self->log_contents);
	return 0;
}

# Wait up to $timeout seconds for the tserver to exit; its wait status,
# or undef on timeout.
sub wait_exit
{
	my ($self, $timeout) = @_;
	my $pid = $self->{pid};
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		my $r = waitpid($pid, WNOHANG);
		if ($r == $pid || $r == -1)
		{
			my $status = $r == $pid ? $? : -1;
			$self->{pid} = undef;
			return $status;
		}
		sleep(0.05);
	}
	return undef;
}

# SIGTERM, wait, and assert a clean exit (status 0) and a clean log.
sub stop
{
	my ($self, $name) = @_;
	croak "tserver not running" unless $self->{pid};
	my $pid = $self->{pid};
	kill 'TERM', $pid;
	my $status = $self->wait_exit($STOP_TIMEOUT);
	if (!defined $status)
	{
		kill 'KILL', $pid;
		$status = $self->wait_exit(10) // -1;
		diag("tserver $pid did not exit within $STOP_TIMEOUT s of SIGTERM");
		$status = -1;
	}
	my $ok = is($status, 0, $name // "tserver exits with status 0 on SIGTERM");
	diag("tserver log:\n" . tail($self->log_contents, 40)) unless $ok;
	$self->check_log;
	return $ok;
}

# SIGKILL and reap; no assertion about the exit.
sub kill9
{
	my ($self) = @_;
	croak "tserver not running" unless $self->{pid};
	kill 'KILL', $self->{pid};
	$self->wait_exit(30);
	$self->check_log;
	return 1;
}

# Stop (SIGTERM, asserting exit 0) and start again on the same data.
sub restart
{
	my ($self, @args) = @_;
	$self->stop("tserver exits with status 0 on SIGTERM before restart");
	return $self->start(@args);
}

# The log holds no sanitizer report.
sub check_log
{
	my ($self) = @_;
	my $log = $self->log_contents;
	$self->save_log;
	my $ok = unlike($log, qr/ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:/,
		"no sanitizer report in " . basename($self->{log} // "log"));
	diag(tail($log, 60)) unless $ok;
	return $ok;
}

# Copy the current log into $TCOPY_TEST_LOG_DIR, if set.
sub save_log
{
	my ($self) = @_;
	my $dir = $ENV{TCOPY_TEST_LOG_DIR};
	return unless $dir && defined $self->{log} && -e $self->{log};
	my $script = basename($0, '.pl');
	copy($self->{log}, "$dir/$script." . basename($self->{base}) . "." . basename($self->{log}));
}

sub tail
{
	my ($text, $n) = @_;
	my @lines = split /\n/, $text;
	@lines = @lines[-$n .. -1] if @lines > $n;
	return join("\n", @lines);
}

# Peak resident set size (VmHWM) of the running tserver, in kB.
sub vmhwm_kb
{
	my ($self) = @_;
	open(my $fh, '<', "/proc/$self->{pid}/status") or return undef;
	while (<$fh>)
	{
		return $1 if /^VmHWM:\s+(\d+)\s+kB/;
	}
	return undef;
}

# Run tserver-cli against this server: { rc, out, err }.  rc is -1 on a
# timeout or when the cli was killed by a signal.
sub cli
{
	my ($self, @args) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($CLI, '--address', $self->address, @{ $self->{cli_args} }, @args);
	my $rc;
	eval {
		IPC::Run::run(\@cmd, '<', \undef, '>', \$out, '2>', \$err,
			IPC::Run::timeout($CLI_TIMEOUT));
		$rc = ($? & 127) ? -1 : $? >> 8;
		1;
	} or do {
		$err .= "\n(test harness: $@)";
		$rc = -1;
	};
	return { rc => $rc, out => $out, err => $err, cmd => join(' ', 'tserver-cli', @args) };
}

# Run tserver-cli and assert it succeeds; returns its stdout.
sub cli_ok
{
	my ($self, $name, @args) = @_;
	my $r = $self->cli(@args);
	is($r->{rc}, 0, $name) or diag("$r->{cmd}: exit $r->{rc}\nstdout: $r->{out}\nstderr: $r->{err}");
	return $r->{out};
}

# Start tserver-cli in the background with a pipe to its stdin.
sub cli_bg
{
	my ($self, @args) = @_;
	my $bg = { in => '', out => '', err => '', cmd => join(' ', 'tserver-cli', @args) };
	my @cmd = ($CLI, '--address', $self->address, @{ $self->{cli_args} }, @args);
	$bg->{h} = IPC::Run::start(\@cmd, '<', \$bg->{in}, '>', \$bg->{out}, '2>', \$bg->{err},
		IPC::Run::timeout($CLI_TIMEOUT));
	return bless $bg, 'TcopyTest::Bg';
}

# Stats as a hash of name => value.
sub stats
{
	my ($self) = @_;
	my $r = $self->cli('stats');
	return undef if $r->{rc} != 0;
	my %stats = $r->{out} =~ /^(\w+): (\d+)$/mg;
	return \%stats;
}

# The prepared sessions the tserver holds (tserver-cli prepared [--prefix
# P]): a list of { gid, line } (line: the cli's whole line for that
# session, for diagnostics), or undef when the cli fails (an unreachable
# tserver, or a tserver-cli without the command).  A session is a line
# whose first field (split on white space, commas or tabs) is a gid the
# extension makes (tcopy:...), or, with a prefix, starts with it; other
# lines (a header) are ignored.
sub prepared
{
	my ($self, $prefix) = @_;
	my $r = $self->cli('prepared', defined $prefix ? ('--prefix', $prefix) : ());
	return undef if $r->{rc} != 0;
	my $want = $prefix // 'tcopy:';
	my @sessions;
	for my $line (split /\n/, $r->{out})
	{
		my ($gid) = $line =~ /^\s*([^\s,]+)/ or next;
		push @sessions, { gid => $gid, line => $line } if index($gid, $want) == 0;
	}
	return \@sessions;
}

# tserver-cli resolve GID commit|abort: { rc, out, err, cmd }.
sub resolve
{
	my ($self, $gid, $commit) = @_;
	return $self->cli('resolve', $gid, $commit ? 'commit' : 'abort');
}

# Row count of a scan (scan --format count), or undef when it fails.
sub count
{
	my ($self, $table, @args) = @_;
	my $r = $self->cli('scan', $table, '--format', 'count', @args);
	return undef if $r->{rc} != 0;
	return $r->{out} =~ /^(\d+)\n\z/ ? $1 : "unparsable: $r->{out}";
}

# scan --format checksum: { rows, sum, hash, line } or undef on failure.
sub checksum
{
	my ($self, $table, @args) = @_;
	my $r = $self->cli('scan', $table, '--format', 'checksum', @args);
	return undef if $r->{rc} != 0;
	return undef unless $r->{out} =~ /^rows (\d+) sum (-?\d+) hash ([0-9a-f]+)\n\z/;
	return { rows => $1, sum => $2, hash => $3, line => $r->{out} };
}

# Sum of aid over start .. start+rows-1.
sub aid_sum
{
	my ($rows, $start) = @_;
	$start //= 1;
	my $last = $start + $rows - 1;
	return ($start + $last) * $rows / 2;
}

# n TCP ports on 127.0.0.1 that no one listens on and that stay this test's
# for as long as it runs.  They are taken below the kernel's ephemeral
# range: a port in it can become the local end of any outgoing connection
# (a raft member's, a client's) while a tserver is down, and its restart
# then fails to bind.  Each is reserved by a file under /tmp/tcopy-ports
# naming this process, so that tests run side by side (prove -j) take
# different ones; a reservation whose process is gone is free again.
sub free_tcp_ports
{
	my ($n) = @_;
	my $dir = '/tmp/tcopy-ports';
	my ($low) = split ' ', first_line('/proc/sys/net/ipv4/ip_local_port_range');
	my $top = ($low && $low > 11000 ? $low : 32768) - 1;
	my @ports;

	chmod(01777, $dir) if mkdir $dir;	# shared by every user running tests
	for (my $tries = 0; @ports < $n; $tries++)
	{
		croak "no free TCP port below $top" if $tries > 10_000;
		my $port = 10000 + int(rand($top - 10000));
		next unless reserve_port("$dir/$port");
		my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
			Proto => 'tcp', ReuseAddr => 1, Listen => 1) or next;
		close $sock;
		push @ports, $port;
	}
	return @ports;
}

# The first line of $file without its newline, '' if it cannot be read.
sub first_line
{
	my ($file) = @_;
	open(my $fh, '<', $file) or return '';
	my $line = <$fh> // '';
	chomp $line;
	return $line;
}

# Take the reservation file $file for this process: false if a live
# process holds it.
sub reserve_port
{
	my ($file) = @_;
	for (1 .. 2)
	{
		if (sysopen(my $fh, $file, O_WRONLY | O_CREAT | O_EXCL, 0666))
		{
			print $fh "$$\n";
			close $fh;
			return 1;
		}
		my $pid = first_line($file);
		return 0 if $pid =~ /^\d+$/ && ($pid == $$ || kill(0, $pid) || $!{EPERM});
		unlink $file;			# its process is gone: free again
	}
	return 0;
}


# FNV-1a 64 of a string, in 16 hex digits, computed in 32-bit halves so
# that Perl's arithmetic stays exact.
sub fnv1a64_hex
{
	my ($text) = @_;
	my ($hi, $lo) = (0xcbf29ce4, 0x84222325);
	for my $byte (unpack('C*', $text))
	{
		$lo ^= $byte;
		# multiply by the prime 0x00000100_000001b3 modulo 2^64
		my $lo_full = $lo * 0x1b3;
		my $new_lo = $lo_full % 4294967296;
		my $carry = int($lo_full / 4294967296);
		$hi = ($hi * 0x1b3 + $lo * 0x100 + $carry) % 4294967296;
		$lo = $new_lo;
	}
	return sprintf("%08x%08x", $hi, $lo);
}

# Total bytes of the files under dir.
sub dir_size
{
	my ($dir) = @_;
	my $total = 0;
	find({ wanted => sub { $total += -s $_ if -f $_ }, no_chdir => 1 }, $dir) if -d $dir;
	return $total;
}

# ---- the wire protocol by hand ----

sub pb_varint
{
	my ($n) = @_;
	my $bytes = '';
	while ($n >= 0x80)
	{
		$bytes .= chr(($n & 0x7F) | 0x80);
		$n >>= 7;
	}
	return $bytes . chr($n);
}

sub pb_field_varint
{
	my ($field, $n) = @_;
	return pb_varint($field << 3) . pb_varint($n);
}

sub pb_field_bytes
{
	my ($field, $bytes) = @_;
	return pb_varint(($field << 3) | 2) . pb_varint(length $bytes) . $bytes;
}

# A packed repeated sint64 (zigzag) field.
sub pb_field_packed_sint64
{
	my ($field, @values) = @_;
	my $body = join('', map { pb_varint($_ >= 0 ? 2 * $_ : -2 * $_ - 1) } @values);
	return pb_field_bytes($field, $body);
}

# ---- rows in the stored form (src/common/tc_record.h), WriteBatch.records ----

# One record: key (without the table id) and value bytes, each length first.
sub stored_record
{
	my ($key, $value) = @_;
	return pb_varint(length $key) . $key . pb_varint(length $value) . $value;
}

# An int key column: 8 bytes big-endian, the sign bit flipped.
sub stored_key_int
{
	my ($n) = @_;
	return pack('q>', $n) ^ "\x80" . ("\0" x 7);
}

# A bytes key column: zero bytes escaped, then the terminator.
sub stored_key_bytes
{
	my ($s) = @_;
	$s =~ s/\0/\0\xff/g;
	return $s . "\0\x01";
}

# A value from (kind => v) pairs in schema order, non-key columns only:
# null => undef, bool => 0/1, int => n, float => x, bytes => s.
sub stored_value
{
	my (@cols) = @_;
	my $v = '';
	while (my ($kind, $x) = splice(@cols, 0, 2))
	{
		if ($kind eq 'null') { $v .= "\0"; next; }
		$v .= "\x01";
		if ($kind eq 'bool') { $v .= chr($x); }
		elsif ($kind eq 'int') { $v .= pb_varint($x >= 0 ? 2 * $x : -2 * $x - 1); }
		elsif ($kind eq 'float') { $v .= pack('d<', $x); }
		elsif ($kind eq 'bytes') { $v .= pb_varint(length $x) . $x; }
		else { die "stored_value: no kind $kind"; }
	}
	return $v;
}

# Decode a message's varint and length-delimited fields: field => [values].
sub pb_decode
{
	my ($bytes) = @_;
	my %fields;
	my $pos = 0;
	my $len = length $bytes;
	my $read_varint = sub {
		my ($n, $shift) = (0, 0);
		while ($pos < $len)
		{
			my $b = ord(substr($bytes, $pos++, 1));
			$n |= ($b & 0x7F) << $shift;
			return $n unless $b & 0x80;
			$shift += 7;
		}
		return undef;
	};
	while ($pos < $len)
	{
		my $tag = $read_varint->() // last;
		my ($field, $wire) = ($tag >> 3, $tag & 7);
		if ($wire == 0)
		{
			push @{ $fields{$field} }, $read_varint->();
		}
		elsif ($wire == 2)
		{
			my $n = $read_varint->() // last;
			push @{ $fields{$field} }, substr($bytes, $pos, $n);
			$pos += $n;
		}
		elsif ($wire == 1)
		{
			$pos += 8;
		}
		elsif ($wire == 5)
		{
			$pos += 4;
		}
		else
		{
			last;
		}
	}
	return \%fields;
}

# Connect to the server's unix socket; undef on failure.
sub connect_raw
{
	my ($self) = @_;
	return IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $self->{socket});
}

# Send a frame: 4-byte big-endian payload length, type byte, payload.
sub send_frame
{
	my ($sock, $type, $payload) = @_;
	return send_bytes($sock, pack('NC', length $payload, $type) . $payload);
}

sub send_bytes
{
	my ($sock, $bytes) = @_;
	my $off = 0;
	while ($off < length $bytes)
	{
		my $n = syswrite($sock, $bytes, length($bytes) - $off, $off);
		return 0 unless defined $n && $n > 0;
		$off += $n;
	}
	return 1;
}

# Read exactly n bytes within timeout; the bytes, or undef on EOF (with
# $! clear) or timeout ($! set to ETIMEDOUT).
sub read_exact
{
	my ($sock, $n, $timeout) = @_;
	my $buf = '';
	my $sel = IO::Select->new($sock);
	my $deadline = time() + $timeout;
	while (length($buf) < $n)
	{
		my $left = $deadline - time();
		if ($left <= 0 || !$sel->can_read($left))
		{
			$! = POSIX::ETIMEDOUT;
			return undef;
		}
		my $got = sysread($sock, $buf, $n - length($buf), length($buf));
		if (!$got)
		{
			$! = 0 if defined $got;
			return undef;
		}
	}
	return $buf;
}

# Send a frame on sock and read the answer: (type, payload), or ().
sub request
{
	my ($sock, $type, $payload) = @_;
	send_frame($sock, $type, $payload);
	return read_frame($sock, 30);
}

# request, with the answer decoded: (type or -1, pb_decode of its payload).
sub request_decoded
{
	my ($sock, $type, $payload) = @_;
	my ($t, $p) = request($sock, $type, $payload);
	return ($t // -1, pb_decode($p // ''));
}

# Write content to a file name under dir, of mode (default 0600, as token
# files must be); its path.
sub write_private_file
{
	my ($dir, $name, $content, $mode) = @_;
	my $path = "$dir/$name";
	open(my $fh, '>', $path) or croak "$path: $!";
	print $fh $content;
	close $fh;
	chmod($mode // 0600, $path) or croak "chmod $path: $!";
	return $path;
}

# An Error frame's (code, message).
sub error_of
{
	my ($payload) = @_;
	my $f = pb_decode($payload // '');
	return ($f->{1}[0] // 0, $f->{2}[0] // '');
}

# '' for an answer of type ok, else "error CODE: message" or "frame TYPE".
sub reply_outcome
{
	my ($ok, $type, $payload) = @_;
	return '' if ($type // 0) == $ok;
	return ($type // 0) == FRAME_ERROR ? 'error ' . join(': ', error_of($payload))
	  : 'frame ' . ($type // 'none');
}

# The varints of a packed field.
sub pb_varints
{
	my ($packed) = @_;
	my @out;
	my ($n, $shift) = (0, 0);
	for my $b (map { ord } split //, $packed)
	{
		$n |= ($b & 0x7F) << $shift;
		$shift += 7;
		next if $b & 0x80;
		push @out, $n;
		($n, $shift) = (0, 0);
	}
	return @out;
}

# Send SCAN request (a Scan's fields) on sock and read every batch: the
# rows as "int:int:...:blob" (the ints zigzag-decoded, the first blob)
# joined by spaces, or "error CODE: message", or "frame TYPE".
sub scan_rows
{
	my ($sock, $request) = @_;
	send_frame($sock, FRAME_SCAN, $request);
	my @rows;
	for (;;)
	{
		my ($type, $payload) = read_frame($sock, 30);
		return 'error ' . join(': ', error_of($payload)) if ($type // 0) == FRAME_ERROR;
		return 'frame ' . ($type // 'none') unless ($type // 0) == FRAME_SCAN_BATCH;
		my $f = pb_decode($payload);
		for my $r (@{ $f->{1} // [] })
		{
			my $rf = pb_decode($r);
			my @ints = map { $_ & 1 ? -(($_ + 1) >> 1) : $_ >> 1 } pb_varints($rf->{1}[0] // '');
			push @rows, join(':', @ints, $rf->{3}[0] // '');
		}
		return join(' ', @rows) if $f->{2} && $f->{2}[0];
	}
}

# Read one frame: (type, payload), or () on EOF or timeout.
sub read_frame
{
	my ($sock, $timeout) = @_;
	$timeout //= 10;
	my $header = read_exact($sock, 5, $timeout) // return ();
	my ($len, $type) = unpack('NC', $header);
	return () if $len > 64 * 1024 * 1024;
	my $payload = $len ? read_exact($sock, $len, $timeout) : '';
	return () unless defined $payload;
	return ($type, $payload);
}

# True when the peer closes the connection within timeout (reading and
# discarding anything it still sends).
sub wait_closed
{
	my ($sock, $timeout) = @_;
	my $sel = IO::Select->new($sock);
	my $deadline = time() + ($timeout // 10);
	while ((my $left = $deadline - time()) > 0)
	{
		return 0 unless $sel->can_read($left);
		my $buf;
		my $got = sysread($sock, $buf, 4096);
		return 1 if !defined $got || $got == 0;	# EOF or reset
	}
	return 0;
}

# A proof of the handshake (src/common/tc_auth.h): HMAC-SHA256 under token
# of the role's label (client or server) with its NUL, the server's nonce
# and the client's.
sub auth_proof
{
	my ($token, $role, $server_nonce, $client_nonce) = @_;
	my $label = $role eq 'client' ? "tcopy v3 client proof\0" : "tcopy v3 server proof\0";
	return hmac_sha256($label . $server_nonce . $client_nonce, $token);
}

# Connect and do the handshake (read ServerHello, send Hello of
# PROTOCOL_VERSION, read Ready); the socket, or undef with a diagnostic.
# With a token (token => T, or the server's own from new(token => T)), the
# Hello proves it and the Ready's proof is checked.
sub connect_ready
{
	my ($self, %opts) = @_;
	my $token = exists $opts{token} ? $opts{token} : $self->{token};
	my $sock = $self->connect_raw or do { diag("connect: $!"); return undef };
	my ($type, $payload) = read_frame($sock);
	if (!defined $type || $type != FRAME_SERVER_HELLO)
	{
		diag("expected ServerHello, got " . ($type // 'nothing'));
		return undef;
	}
	my $hello = pb_field_varint(1, PROTOCOL_VERSION);
	my ($server_nonce, $client_nonce);
	if (defined $token)
	{
		$server_nonce = pb_decode($payload)->{3}[0] // '';
		$client_nonce = join('', map { chr(int(rand(256))) } 1 .. 32);
		$hello .= pb_field_bytes(3, auth_proof($token, 'client', $server_nonce, $client_nonce))
		  . pb_field_bytes(4, $client_nonce);
	}
	send_frame($sock, FRAME_HELLO, $hello);
	($type, $payload) = read_frame($sock);
	if (!defined $type || $type != FRAME_READY)
	{
		my $why = defined $type && $type == FRAME_ERROR ? ': ' . (pb_decode($payload)->{2}[0] // '') : '';
		diag("expected Ready, got " . ($type // 'nothing') . $why);
		return undef;
	}
	if (defined $token
		&& (pb_decode($payload)->{2}[0] // '') ne auth_proof($token, 'server', $server_nonce, $client_nonce))
	{
		diag("the server's proof in Ready is wrong");
		return undef;
	}
	# the tserver's id of the connection (its log names it), for connection_id
	${*$sock}{tcopy_connection_id} = pb_decode($payload)->{1}[0];
	return $sock;
}

# The id the tserver gave a connection of connect_ready (Ready.connection_id).
sub connection_id
{
	my ($sock) = @_;
	return ${*$sock}{tcopy_connection_id};
}

END
{
	# servers of a test that died half way
	for my $server (@live_servers)
	{
		if ($server->{pid})
		{
			kill 'KILL', $server->{pid};
			waitpid($server->{pid}, 0);
			$server->save_log;
		}
	}
}

# ---- a tserver-cli running in the background ----
package TcopyTest::Bg;

use strict;
use warnings;
use Time::HiRes qw(sleep time);

# Pump until stdout matches re; true when it did within timeout seconds.
sub wait_for
{
	my ($self, $re, $timeout) = @_;
	my $deadline = time() + ($timeout // 60);
	while (time() < $deadline)
	{
		return 1 if $self->{out} =~ $re;
		last unless $self->{h}->pumpable;
		eval { $self->{h}->pump_nb; 1 } or last;
		sleep(0.02);
	}
	return $self->{out} =~ $re ? 1 : 0;
}

# Send a line to stdin.
sub send_line
{
	my ($self, $line) = @_;
	$self->{in} .= ($line // '') . "\n";
	eval { $self->{h}->pump_nb while length $self->{in} && $self->{h}->pumpable; 1 };
}

# Close stdin, wait for the exit; the exit status (-1 when killed or on a
# timeout).
sub finish
{
	my ($self, $timeout) = @_;
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
	return $rc;
}

sub out { $_[0]->{out} }
sub err { $_[0]->{err} }
sub cmd { $_[0]->{cmd} }

1;
