# 032_raft_tls.pl
#	TLS on the raft port (issue 43, item 7; docs/security.md#the-raft-port):
#	- a member with neither --raft-tls-cert/--raft-tls-key/--raft-tls-ca
#	  nor --raft-insecure-cleartext refuses to start, in one line naming
#	  both;
#	- a group in TLS (TcopyGroup's default) takes a spilled load whose
#	  rows and files travel over the raft port: the port's packets, read
#	  off the wire (a packet socket, root only), hold none of the rows'
#	  bytes nor the table's name; the same load on a group started with
#	  --raft-insecure-cleartext shows both (the capture works);
#	- member 3 restarted with a certificate of another CA is refused by
#	  the others, who log why, and gets no entry; with a certificate of
#	  the group's it catches up;
#	- member 3 restarted in the clear is refused the same way: by the TLS
#	  members (it does not speak TLS) and by itself (they do);
#	- member 3 back, past the log kept (--raft-log-entries 8), fetches a
#	  member's state (a RocksDB checkpoint: files) in TLS: none of the
#	  files' bytes on the wire;
#	- in the end the members hold the same rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use POSIX ();
use Socket qw(SOL_SOCKET);
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyGroup;
use TcopyTls;

plan skip_all => 'the openssl command is needed for certificates' unless TcopyTls::have_openssl();

# What travels in the clear: a row of tserver-cli load holds 84 spaces
# (in a write batch's entry); a spilled session's files (FILE entries)
# are RocksDB tables, compressed, but each ends with the block-based
# table's magic number; the table's name travels in its create.
my $FILLER = ' ' x 84;
my $SST_MAGIC = pack('V V', 0x85f4cff7, 0x88e241b7);	# 0x88e241b785f4cff7, little-endian
my $TABLE = 'tls_marker_rows';

# ---- no TLS, no explicit clear text: no start ----
{
	my ($port) = TcopyTest::free_tcp_ports(1);
	my $lone = TcopyGroup->new(members => 1, cleartext => 1);
	my $ts = TcopyTest->new(extra_args => [ '--raft-id', 1, '--raft-listen', "127.0.0.1:$port",
		'--raft-secret-file', $lone->secret_file ]);
	my ($what, $status) = $ts->spawn;
	is($what, 'exited', 'a member with neither TLS files nor --raft-insecure-cleartext does not start');
	isnt($status, 0, '... and exits with an error');
	my ($first) = split /\n/, $ts->log_contents;
	like($first // '', qr/^tserver: a replica group's member needs --raft-tls-cert, --raft-tls-key and --raft-tls-ca .*, or --raft-insecure-cleartext$/,
		'... its first line says why, naming both ways');
}

# ---- reading the raft port's packets ----

# A child process that copies the TCP payload of every packet to or from
# one of @ports, on any interface, into $file, until SIGTERM; undef
# without the right to open a packet socket (root).
sub start_capture
{
	my ($file, @ports) = @_;
	my %ports = map { $_ => 1 } @ports;
	# AF_PACKET, SOCK_RAW, ETH_P_ALL in network order
	socket(my $s, 17, 3, unpack('S', pack('n', 3))) or return undef;
	# SO_RCVBUFFORCE: room for the loads' bursts, or packets are dropped
	setsockopt($s, SOL_SOCKET, 33, pack('i', 256 << 20));
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		my $stop = 0;
		local $SIG{TERM} = sub { $stop = 1 };
		open(my $out, '>:raw', $file) or POSIX::_exit(1);
		my $rin = '';
		vec($rin, fileno($s), 1) = 1;
		while (!$stop)
		{
			my $n = select(my $rout = $rin, undef, undef, 0.2);
			next unless $n && $n > 0;
			defined(recv($s, my $frame, 70000, 0)) or next;
			next if length($frame) < 54 || unpack('n', substr($frame, 12, 2)) != 0x0800;
			my $ihl = (ord(substr($frame, 14, 1)) & 0x0f) * 4;
			next unless ord(substr($frame, 23, 1)) == 6;	# TCP
			my ($sport, $dport) = unpack('n n', substr($frame, 14 + $ihl, 4));
			next unless $ports{$sport} || $ports{$dport};
			my $doff = (ord(substr($frame, 14 + $ihl + 12, 1)) >> 4) * 4;
			print $out substr($frame, 14 + $ihl + $doff);
		}
		close $out;
		POSIX::_exit(0);
	}
	close $s;
	return $pid;
}

# Stop the capture; what it read.
sub stop_capture
{
	my ($pid, $file) = @_;
	kill 'TERM', $pid;
	waitpid($pid, 0);
	open(my $fh, '<:raw', $file) or return '';
	local $/;
	return <$fh> // '';
}

# Start a group, load a spilled session into $TABLE under a capture of
# its raft ports; the bytes read (undef without root), and the group.
sub captured_load
{
	my (%opts) = @_;
	# a short log: member 3, away for a while, catches up by a state fetch
	my $group = TcopyGroup->new(%opts,
		extra_args => [ '--session-memory-mb', 4, '--raft-log-entries', 8 ]);
	$group->start_all or BAIL_OUT('the group did not start');
	ok(defined $group->leader, 'the group elects a leader');
	my $file = $group->{base} . '/capture';
	my $cap = start_capture($file, map { $group->raft_port($_) } 1 .. 3);
	$group->cli_ok('a load through the group', 'load', $TABLE, '--rows', 5_000);
	$group->cli_ok('a spilled load through the group', 'load', $TABLE, '--rows', 60_000,
		'--start', 5_001);
	ok($group->settle, 'every member applied it');
	return ($cap ? stop_capture($cap, $file) : undef, $group);
}

my ($clear, $clear_group) = captured_load(cleartext => 1);
$clear_group->stop_all;
my ($wire, $group) = captured_load();
SKIP:
{
	skip 'reading packets needs root', 7 unless defined $wire && defined $clear;
	my $count = sub { my ($bytes, $s) = @_; my $n = () = $bytes =~ /\Q$s\E/g; $n };
	cmp_ok($count->($clear, $FILLER), '>=', 5_000, 'in the clear, the rows are on the wire (the capture works)');
	cmp_ok($count->($clear, $SST_MAGIC), '>', 0, "in the clear, so are a spilled session's files");
	cmp_ok($count->($clear, $TABLE), '>', 0, 'in the clear, so is the table name');
	cmp_ok(length($wire), '>', length($clear) / 2,
		'in TLS, the loads crossed the raft port: ' . length($wire) . ' bytes (' . length($clear)
		  . ' in the clear)');
	is($count->($wire, $FILLER), 0, 'in TLS, no row is on the wire');
	is($count->($wire, $SST_MAGIC), 0, 'in TLS, nor any file');
	is($count->($wire, $TABLE), 0, 'in TLS, nor the table name');
}
my %expect = ($TABLE => $group->checksum($TABLE));
like($group->member(1)->log_contents, qr/raft connection .* proven/, 'the members prove themselves inside TLS');

# ---- a member with a certificate of another CA ----

# Whether member 3 applied what the leader did, within $timeout seconds.
sub member3_caught_up
{
	my ($timeout) = @_;
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		my $s = $group->cli('group-status');
		my ($applied) = $s->{out} =~ /applied (\d+)/;
		my $r = $group->member(3)->cli('ping');
		my ($own) = $r->{err} =~ /has applied entry (\d+)/;
		return 1 if $r->{rc} == 0 || (defined $applied && defined $own && $own >= $applied);
		sleep(0.2);
	}
	return 0;
}

# Whether a line matching $re is in the log of member 1 or 2 within 10 s.
sub peers_log
{
	my ($re) = @_;
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		return 1 if grep { $group->member($_)->log_contents =~ $re } 1, 2;
		sleep(0.2);
	}
	return 0;
}

my $m3 = $group->member(3);
$m3->stop;
ok(defined $group->leader, 'members 1 and 2 lead on without member 3');
my $c = $group->certs;
$group->set_raft_tls(3, '--raft-tls-cert', $c->{other_member}{crt}, '--raft-tls-key',
	$c->{other_member}{key}, '--raft-tls-ca', $c->{ca}{crt});
ok($m3->start, 'member 3 starts with a certificate of another CA');
# 40 sessions, an entry each at least: past the 24 entries the log keeps
my $loads_ok = 1;
for my $k (0 .. 39)
{
	my $r = $group->cli('load', 'while_refused', '--rows', 100, '--start', 1 + 100 * $k);
	$loads_ok &&= $r->{rc} == 0;
}
ok($loads_ok, 'loads while member 3 is refused');
$expect{while_refused} = $group->checksum('while_refused');
ok(peers_log(qr/raft connection (from|to) \S+ refused: its certificate is not of this group's CA/),
	"the others refuse member 3's certificate, and log why");
ok(!member3_caught_up(3), 'member 3 gets no entry');
$m3->stop;

# ---- a member in the clear ----
$group->set_raft_tls(3, '--raft-insecure-cleartext');
ok($m3->start, 'member 3 starts with --raft-insecure-cleartext');
$group->cli_ok('a load while member 3 speaks in the clear', 'load', 'while_clear', '--rows', 5_000);
$expect{while_clear} = $group->checksum('while_clear');
ok(peers_log(qr/raft connection from \S+ refused: it does not speak TLS/),
	'the TLS members refuse a peer in the clear, and log why');
ok(!member3_caught_up(3), 'member 3 in the clear gets no entry');
like($m3->log_contents, qr/it speaks TLS, and this member runs --raft-insecure-cleartext/,
	'member 3 refuses the TLS members, and says why');
$m3->stop;

# ---- back with the group's certificate: it catches up ----
$group->set_raft_tls(3, $group->raft_tls_args(3));
my $file = $group->{base} . '/capture-fetch';
my $cap = start_capture($file, map { $group->raft_port($_) } 1 .. 3);
ok($m3->start, "member 3 starts again with the group's certificate");
ok(member3_caught_up(30), 'member 3 catches up');
like($m3->log_contents, qr/state fetched from member/,
	"... by fetching another member's state (past the log kept)");
SKIP:
{
	skip 'reading packets needs root', 2 unless $cap;
	my $fetch = stop_capture($cap, $file);
	cmp_ok(length($fetch), '>', 100_000, 'the state crossed the raft port: ' . length($fetch) . ' bytes');
	my $n = () = $fetch =~ /\Q$SST_MAGIC\E/g;
	is($n, 0, "in TLS: none of the state's files is on the wire");
}
my $sums = $group->member_checksums(sort keys %expect);
for my $i (1 .. 3)
{
	for my $t (sort keys %expect)
	{
		is($sums->{$i}{$t}, $expect{$t}, "member $i holds $t as the group served it");
	}
}
done_testing();
