#!/usr/bin/perl
# tcopy_proxy.pl
#	A fault-injecting proxy for the tcopy wire protocol, for the fault
#	tests (test/ext/112_proxy_faults.pl, 122_twopc_faults.pl).  It
#	listens on a unix socket of its own, connects each client it accepts
#	to the tserver, and forwards whole frames (4-byte big-endian payload
#	length, 1-byte type; see proto/tcopy.proto) both ways.  With --fault
#	it cuts one connection at a chosen step of the protocol, once; every
#	other connection, and every connection after the fault fired, is
#	forwarded untouched.
#
#	Cutting a connection means: forward what was received before the step,
#	then close both sides, so that each peer sees the connection end
#	exactly there.  The steps:
#
#	  hello        the tserver's READY is dropped (the handshake never ends)
#	  begin        the client's BEGIN is dropped
#	  write        the client's WRITE of batch --nth (default 1) is dropped
#	  mid_write    the header and half the payload of WRITE --nth go through
#	  ack          the tserver's ACK of batch --nth is dropped
#	  commit       the client's COMMIT --nth is dropped (the one-step commit
#	               of tserver-cli; the extension commits with PREPARE and
#	               RESOLVE, below)
#	  commit_sent  the client's COMMIT --nth goes through, then the cut comes
#	               at once, before the tserver can answer
#	  commit_ok    the tserver's COMMIT_OK --nth is dropped
#	  abort        the client's ABORT is dropped
#
#	The two-phase commit's steps (protocol version 2; the frames PREPARE
#	21, PREPARE_OK 22, RESOLVE 23, RESOLVE_OK 24, LIST_PREPARED 25,
#	PREPARED_LIST 26).  A resolve step names the decision it acts on: a
#	RESOLVE is a publish (commit) when its field 2 (bool commit) is true, a
#	discard (abort) otherwise, and a RESOLVE_OK is of the decision of the
#	connection's oldest unanswered RESOLVE; --nth counts the frames of that
#	decision on the connection:
#
#	  prepare              the client's PREPARE --nth is dropped
#	  prepare_sent         PREPARE --nth goes through, then the cut
#	  prepare_ok           the tserver's PREPARE_OK --nth is dropped
#	  resolve_commit       the client's RESOLVE (commit) --nth is dropped
#	  resolve_commit_sent  RESOLVE (commit) --nth goes through, then the cut
#	  resolve_commit_ok    the tserver's RESOLVE_OK to it is dropped
#	  resolve_abort, resolve_abort_sent, resolve_abort_ok
#	                       the same for a RESOLVE (abort)
#	  list_prepared        the client's LIST_PREPARED --nth is dropped
#	  prepared_list        the tserver's PREPARED_LIST --nth is dropped
#
#	With --kill PID, the fault kills process PID (the tserver) with SIGKILL
#	as well: for a step that drops a frame, the kill comes before the cut
#	(the frame never arrives; a dropped answer was sent by a tserver that
#	then died); for a step that sends the frame, right after the frame is
#	written (the tserver dies while it handles it, or just before).
#
#	With --trace, every frame forwarded is printed as "connection N c2s
#	NAME BYTES" (with "commit" or "abort" after a RESOLVE or RESOLVE_OK).
#
#	Usage: tcopy_proxy.pl --listen PATH --upstream PATH [--fault STEP [--nth N]
#	         [--kill PID]] [--trace]
#
#	It prints "proxy ready" once listening, "fired STEP on connection N"
#	(then " killed PID" with --kill) when the fault fires, and one line per
#	connection opened and closed, on stdout (unbuffered).  SIGTERM ends it.
use strict;
use warnings;

use Errno qw(EAGAIN EINTR EWOULDBLOCK);
use Getopt::Long;
use IO::Select;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM SHUT_RDWR);

# proto/tcopy.proto FrameType: the ones the steps look at
use constant {
	FRAME_READY => 3,
	FRAME_BEGIN => 6,
	FRAME_WRITE => 8,
	FRAME_ACK => 9,
	FRAME_COMMIT => 10,
	FRAME_COMMIT_OK => 11,
	FRAME_ABORT => 12,
	FRAME_PREPARE => 21,
	FRAME_PREPARE_OK => 22,
	FRAME_RESOLVE => 23,
	FRAME_RESOLVE_OK => 24,
	FRAME_LIST_PREPARED => 25,
	FRAME_PREPARED_LIST => 26,
};

# every FrameType, for --trace
my %FRAME_NAMES = (
	1 => 'SERVER_HELLO', 2 => 'HELLO', 3 => 'READY', 4 => 'OPEN_TABLE',
	5 => 'TABLE_INFO', 6 => 'BEGIN', 7 => 'BEGIN_OK', 8 => 'WRITE', 9 => 'ACK',
	10 => 'COMMIT', 11 => 'COMMIT_OK', 12 => 'ABORT', 13 => 'ABORT_OK',
	14 => 'SCAN', 15 => 'SCAN_BATCH', 16 => 'TABLE_OP', 17 => 'TABLE_OP_OK',
	18 => 'STATS_REQUEST', 19 => 'STATS', 20 => 'ERROR',
	21 => 'PREPARE', 22 => 'PREPARE_OK', 23 => 'RESOLVE', 24 => 'RESOLVE_OK',
	25 => 'LIST_PREPARED', 26 => 'PREPARED_LIST',
);
use constant HEADER_SIZE => 5;
use constant MAX_PAYLOAD => 256 * 1024 * 1024;	# beyond: not a frame, cut

# step => [direction the frame travels, frame type, action, decision];
# c2s is client to server.  drop: cut instead of forwarding the frame;
# half: forward the header and half the payload, then cut; after: forward
# it, then cut.  decision (resolve steps only): 1 commit, 0 abort.
my %STEPS = (
	hello => [ 's2c', FRAME_READY, 'drop' ],
	begin => [ 'c2s', FRAME_BEGIN, 'drop' ],
	write => [ 'c2s', FRAME_WRITE, 'drop' ],
	mid_write => [ 'c2s', FRAME_WRITE, 'half' ],
	ack => [ 's2c', FRAME_ACK, 'drop' ],
	commit => [ 'c2s', FRAME_COMMIT, 'drop' ],
	commit_sent => [ 'c2s', FRAME_COMMIT, 'after' ],
	commit_ok => [ 's2c', FRAME_COMMIT_OK, 'drop' ],
	abort => [ 'c2s', FRAME_ABORT, 'drop' ],
	prepare => [ 'c2s', FRAME_PREPARE, 'drop' ],
	prepare_sent => [ 'c2s', FRAME_PREPARE, 'after' ],
	prepare_ok => [ 's2c', FRAME_PREPARE_OK, 'drop' ],
	resolve_commit => [ 'c2s', FRAME_RESOLVE, 'drop', 1 ],
	resolve_commit_sent => [ 'c2s', FRAME_RESOLVE, 'after', 1 ],
	resolve_commit_ok => [ 's2c', FRAME_RESOLVE_OK, 'drop', 1 ],
	resolve_abort => [ 'c2s', FRAME_RESOLVE, 'drop', 0 ],
	resolve_abort_sent => [ 'c2s', FRAME_RESOLVE, 'after', 0 ],
	resolve_abort_ok => [ 's2c', FRAME_RESOLVE_OK, 'drop', 0 ],
	list_prepared => [ 'c2s', FRAME_LIST_PREPARED, 'drop' ],
	prepared_list => [ 's2c', FRAME_PREPARED_LIST, 'drop' ],
);

my ($listen_path, $upstream_path, $fault, $nth) = (undef, undef, undef, 1);
my ($kill_pid, $trace);
GetOptions(
	'listen=s' => \$listen_path,
	'upstream=s' => \$upstream_path,
	'fault=s' => \$fault,
	'nth=i' => \$nth,
	'kill=i' => \$kill_pid,
	'trace' => \$trace,
) or usage();
usage() unless defined $listen_path && defined $upstream_path;
usage() if defined $fault && !$STEPS{$fault};
usage() if defined $kill_pid && (!defined $fault || $STEPS{$fault}[2] eq 'half');

sub usage
{
	print STDERR "usage: $0 --listen PATH --upstream PATH [--fault "
	  . join('|', sort keys %STEPS) . " [--nth N] [--kill PID]] [--trace]\n";
	exit 2;
}

$| = 1;
$SIG{PIPE} = 'IGNORE';
my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };

unlink $listen_path;
my $listener = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $listen_path, Listen => 64)
  or die "tcopy_proxy: listen on $listen_path: $!\n";
$listener->blocking(0);

my $armed = defined $fault;
my $next_id = 0;
my %pairs;			# fileno of either socket => pair
my $sel = IO::Select->new($listener);

print "proxy ready\n";

# A pair: { id, c, s, in => { c2s, s2c } (bytes read, not yet forwarded),
# out => { c2s, s2c } (bytes to write), seen => { "dir type" => frames of
# that type forwarded that way } }.
sub open_pair
{
	my $client = $listener->accept or return;
	my $server = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $upstream_path);
	my $id = ++$next_id;
	if (!$server)
	{
		print "connection $id: upstream $upstream_path: $!\n";
		close $client;
		return;
	}
	$_->blocking(0) for $client, $server;
	my $pair = {
		id => $id,
		c => $client,
		s => $server,
		in => { c2s => '', s2c => '' },
		out => { c2s => '', s2c => '' },
		seen => {},
		resolves => [],		# decisions of the RESOLVEs not answered yet
		decided => {},		# "dir type decision" => frames of that decision seen
	};
	$pairs{ fileno $client } = $pairs{ fileno $server } = $pair;
	$sel->add($client, $server);
	print "connection $id opened\n";
}

# Close both sides of a pair: nothing more is read from either, and each
# is closed once what is queued for it is written.  The main loop writes
# the queues as the peers read them: a blocking write here would stop the
# whole proxy behind a peer that does not read (a tserver's stream thread
# waiting for its chunk's turn), and with it every other connection, the
# one that turn waits for too.  A peer that reads nothing for
# CLOSE_FLUSH_SECONDS is closed with its queue unwritten.
use constant CLOSE_FLUSH_SECONDS => 5;

sub close_pair
{
	my ($pair, $why) = @_;
	return if $pair->{closing};
	$pair->{closing} = $why;
	$pair->{close_by} = time() + CLOSE_FLUSH_SECONDS;
	$sel->remove($pair->{c}, $pair->{s});
	finish_pair($pair);
}

# Write what a closing pair's peers take now; close each side whose queue
# is empty (every side with force, or past the pair's deadline).
sub finish_pair
{
	my ($pair, $force) = @_;
	for my $dir ('c2s', 's2c')
	{
		my $sock = $dir eq 'c2s' ? $pair->{s} : $pair->{c};
		next if $pair->{shut}{$dir};
		write_all($sock, \$pair->{out}{$dir});
		next if length $pair->{out}{$dir} && !$force && time() < $pair->{close_by};
		delete $pairs{ fileno $sock };
		shutdown($sock, SHUT_RDWR);
		close $sock;
		$pair->{shut}{$dir} = 1;
	}
	print "connection $pair->{id} closed: $pair->{closing}\n"
	  if $pair->{shut}{c2s} && $pair->{shut}{s2c};
}

# Write what can be written of $$buf now (or all of it, on a blocking socket).
sub write_all
{
	my ($sock, $buf) = @_;
	while (length $$buf)
	{
		my $n = syswrite($sock, $$buf);
		if (!defined $n)
		{
			next if $! == EINTR;
			return 1 if $! == EAGAIN || $! == EWOULDBLOCK;
			$$buf = '';
			return 0;
		}
		substr($$buf, 0, $n, '');
	}
	return 1;
}

# The first varint field of a message (Ack.seq), or 0.
sub first_varint
{
	my ($payload) = @_;
	return 0 unless length $payload && ord($payload) == 0x08;
	my ($n, $shift, $pos) = (0, 0, 1);
	while ($pos < length $payload)
	{
		my $b = ord(substr($payload, $pos++, 1));
		$n |= ($b & 0x7F) << $shift;
		return $n unless $b & 0x80;
		$shift += 7;
	}
	return 0;
}

# The decision of a Resolve message: 1 when its field 2 (bool commit) is
# set, else 0 (proto3 leaves a false bool out).
sub resolve_decision
{
	my ($payload) = @_;
	my $pos = 0;
	my $len = length $payload;
	my $varint = sub {
		my ($n, $shift) = (0, 0);
		while ($pos < $len)
		{
			my $b = ord(substr($payload, $pos++, 1));
			$n |= ($b & 0x7F) << $shift;
			return $n unless $b & 0x80;
			$shift += 7;
		}
		return undef;
	};
	my $commit = 0;
	while ($pos < $len)
	{
		my $tag = $varint->() // last;
		my ($field, $wire) = ($tag >> 3, $tag & 7);
		if ($wire == 0)
		{
			my $v = $varint->() // last;
			$commit = $v ? 1 : 0 if $field == 2;
		}
		elsif ($wire == 2)
		{
			my $n = $varint->() // last;
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
	return $commit;
}

# Whether the armed fault applies to a frame of this pair: the index-th
# frame of its type in its direction, with this payload (or its first half);
# for a resolve step, the nth complete frame of the step's decision
# (decision: that of this RESOLVE or RESOLVE_OK, undef for other frames or
# an incomplete one).
sub fault_matches
{
	my ($pair, $dir, $type, $index, $payload, $decision) = @_;
	return 0 unless $armed;
	my ($fdir, $ftype, undef, $fdecision) = @{ $STEPS{$fault} };
	return 0 unless $dir eq $fdir && $type == $ftype;
	if (defined $fdecision)
	{
		return 0 unless defined $decision && $decision == $fdecision;
		return ++$pair->{decided}{"$dir $type $decision"} == $nth;
	}
	return first_varint($payload) == $nth if $type == FRAME_ACK;
	return $index == $nth;
}

# The fault fired on a pair: with --kill, kill the process.
sub kill_target
{
	return unless defined $kill_pid;
	my $ok = kill('KILL', $kill_pid);
	print $ok ? " killed $kill_pid" : " could not kill $kill_pid: $!";
}

# Move the complete frames of in{dir} to out{dir}, applying the fault.
# Returns 0 when the pair was cut.
sub forward_frames
{
	my ($pair, $dir) = @_;
	my $in = \$pair->{in}{$dir};
	while (length($$in) >= HEADER_SIZE)
	{
		my ($len, $type) = unpack('NC', $$in);
		if ($len > MAX_PAYLOAD)
		{
			close_pair($pair, "$dir frame of $len bytes: not a frame");
			return 0;
		}
		my $index = ($pair->{seen}{"$dir $type"} // 0) + 1;
		my $half = $armed && $STEPS{$fault}[2] eq 'half';
		# mid_write acts once half the payload is there
		my $need = HEADER_SIZE + ($half ? int($len / 2) : $len);
		my $complete = length($$in) >= HEADER_SIZE + $len;
		my $decision;
		if ($complete && $dir eq 'c2s' && $type == FRAME_RESOLVE)
		{
			$decision = resolve_decision(substr($$in, HEADER_SIZE, $len));
		}
		elsif ($complete && $dir eq 's2c' && $type == FRAME_RESOLVE_OK)
		{
			$decision = $pair->{resolves}[0];
		}
		if (length($$in) >= $need
			&& fault_matches($pair, $dir, $type, $index, substr($$in, HEADER_SIZE, $need - HEADER_SIZE),
				$decision))
		{
			my $action = $STEPS{$fault}[2];
			$armed = 0;
			print "fired $fault on connection $pair->{id}";
			if ($action eq 'half')
			{
				$pair->{out}{$dir} .= substr($$in, 0, $need);
			}
			elsif ($action eq 'after')
			{
				$pair->{out}{$dir} .= substr($$in, 0, HEADER_SIZE + $len);
				if (defined $kill_pid)
				{
					# the frame reaches the tserver before it dies
					my $sock = $dir eq 'c2s' ? $pair->{s} : $pair->{c};
					$sock->blocking(1);
					write_all($sock, \$pair->{out}{$dir});
				}
			}
			kill_target();
			print "\n";
			close_pair($pair, "fault $fault");
			return 0;
		}
		return 1 unless $complete;
		if ($dir eq 'c2s' && $type == FRAME_RESOLVE)
		{
			push @{ $pair->{resolves} }, $decision;
		}
		elsif ($dir eq 's2c' && $type == FRAME_RESOLVE_OK)
		{
			shift @{ $pair->{resolves} };
		}
		if ($trace)
		{
			print "connection $pair->{id} $dir " . ($FRAME_NAMES{$type} // "frame $type") . " $len"
			  . (defined $decision ? ($decision ? ' commit' : ' abort') : '') . "\n";
		}
		$pair->{seen}{"$dir $type"} = $index;
		$pair->{out}{$dir} .= substr($$in, 0, HEADER_SIZE + $len, '');
	}
	return 1;
}

# Read what a socket of a pair has; forward it.
sub serve
{
	my ($pair, $sock) = @_;
	my $dir = $sock == $pair->{c} ? 'c2s' : 's2c';
	my $n = sysread($sock, $pair->{in}{$dir}, 1 << 20, length $pair->{in}{$dir});
	if (!defined $n)
	{
		return if $! == EINTR || $! == EAGAIN || $! == EWOULDBLOCK;
		close_pair($pair, ($dir eq 'c2s' ? 'client' : 'tserver') . " read error: $!");
		return;
	}
	if ($n == 0)
	{
		# forward what the closing side sent before it closed, down to a
		# frame it left unfinished
		forward_frames($pair, $dir) or return;
		$pair->{out}{$dir} .= $pair->{in}{$dir};
		close_pair($pair, ($dir eq 'c2s' ? 'client' : 'tserver') . ' closed');
		return;
	}
	forward_frames($pair, $dir);
}

while (!$stop)
{
	my $wsel = IO::Select->new;
	my %seen_pair;
	for my $pair (values %pairs)
	{
		next if $seen_pair{ $pair->{id} }++;
		# a closing pair past its deadline closes now
		finish_pair($pair) if $pair->{closing} && time() >= $pair->{close_by};
		$wsel->add($pair->{s}) if length $pair->{out}{c2s} && !$pair->{shut}{c2s};
		$wsel->add($pair->{c}) if length $pair->{out}{s2c} && !$pair->{shut}{s2c};
	}
	my ($readable, $writable) = IO::Select->select($sel, $wsel, undef, 0.5);
	next unless $readable || $writable;
	for my $sock (@{ $writable // [] })
	{
		my $fd = fileno $sock // next;
		my $pair = $pairs{$fd} or next;
		my $dir = $sock == $pair->{s} ? 'c2s' : 's2c';
		if ($pair->{closing})
		{
			finish_pair($pair);
			next;
		}
		write_all($sock, \$pair->{out}{$dir})
		  or close_pair($pair, ($dir eq 's2c' ? 'client' : 'tserver') . " write error: $!");
	}
	for my $sock (@{ $readable // [] })
	{
		if ($sock == $listener)
		{
			open_pair();
			next;
		}
		my $fd = fileno $sock // next;
		my $pair = $pairs{$fd} or next;
		next if $pair->{closing};
		serve($pair, $sock);
	}
}

my %done;
for my $pair (values %pairs)
{
	next if $done{ $pair->{id} }++;
	close_pair($pair, 'proxy stopped');
	finish_pair($pair, 1);
}
unlink $listen_path;
exit 0;
