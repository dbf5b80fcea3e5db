# 016_snapshots.pl
#	Snapshots over the wire (docs/snapshots.md, docs/protocol.md):
#	- SNAPSHOT answers an id and a 16-byte key; a Scan naming them reads
#	  the committed rows as of the snapshot (updates, deletes and inserts
#	  committed since are not seen), one naming none reads them as of now;
#	- a Scan naming a write session and a snapshot reads the session's
#	  writes over the snapshot's rows;
#	- a session begun on a snapshot (Begin.snapshot_id, snapshot_key):
#	  an update of a row committed since is CONCURRENT_UPDATE (17, "...
#	  concurrent update"), a delete of a row deleted since likewise ("...
#	  concurrent delete"), and the batch stages nothing; an update of a
#	  row unchanged since, and an insert, commit;
#	- a snapshot lives while its connection, or a session begun on it,
#	  does: then a Scan or Begin naming it, or naming a wrong key, is
#	  SESSION_LOST (16); a second SNAPSHOT on a connection replaces its
#	  first;
#	- Snapshot.prepared_prefix: SnapshotOk.prepared lists the sessions
#	  prepared (not published) when it was taken whose gids start with it,
#	  and none without it; while 150 prepared sessions of one row each are
#	  published one by one on another connection, every snapshot holds the
#	  row of exactly the sessions it does not list (the list and the
#	  snapshot are taken at one instant: docs/snapshots.md#several-tservers);
#	- a TRUNCATE and reload in one spilled session (--session-memory-mb 1)
#	  drops the table's old files (ts_publish.c): a scan begun before
#	  still reads every old row, a scan after reads the new rows only, and
#	  a snapshot held across a second reload still reads the first's rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use POSIX ();
use Test::More;
use TcopyTest qw(:all request error_of reply_outcome pb_varints scan_rows);

use constant {
	FRAME_SNAPSHOT => 33,
	FRAME_SNAPSHOT_OK => 34,
	WRITE_UPDATE => 1,
	WRITE_DELETE => 2,
	KIND_INT => 2,
	KIND_BYTES => 4,
};

my $ts = TcopyTest->new;
$ts->start or die "tserver did not start";

sub ready { return $ts->connect_ready // die "handshake failed" }

# table (k int8 key, v int8, s text); its id
sub create_table
{
	my ($sock, $name) = @_;
	my $col = sub {
		my ($n, $kind, $type) = @_;
		pb_field_bytes(1, pb_field_bytes(1, $n) . pb_field_varint(2, $kind) . pb_field_bytes(3, $type)
			  . pb_field_varint(4, ~0));
	};
	my $schema = $col->('k', KIND_INT, 'int8') . $col->('v', KIND_INT, 'int8')
	  . $col->('s', KIND_BYTES, 'text') . pb_field_varint(2, 0);
	my ($type, $payload) = request($sock, FRAME_OPEN_TABLE,
		pb_field_bytes(1, $name) . pb_field_bytes(2, $schema) . pb_field_varint(3, 1));
	die "cannot create $name" unless ($type // 0) == FRAME_TABLE_INFO;
	return pb_decode($payload)->{1}[0];
}

sub row { my ($k, $v, $s) = @_; return pb_field_packed_sint64(1, $k, $v) . pb_field_bytes(3, $s) }

# SNAPSHOT on sock, listing the prepared sessions under prefix if given:
# { id, key, prepared => [gids] }
sub snapshot
{
	my ($sock, $prefix) = @_;
	my ($type, $payload) = request($sock, FRAME_SNAPSHOT,
		defined $prefix ? pb_field_bytes(1, $prefix) : '');
	die 'SNAPSHOT: ' . reply_outcome(FRAME_SNAPSHOT_OK, $type, $payload) unless ($type // 0) == FRAME_SNAPSHOT_OK;
	my $f = pb_decode($payload);
	return { id => $f->{1}[0], key => $f->{2}[0] // '', prepared => $f->{3} // [] };
}

# a session on a new connection, begun on snapshot if given: { sock, id, key, seq, rows },
# or "error ..." when BEGIN failed
sub begin
{
	my ($snap, %o) = @_;
	my $sock = ready();
	my ($type, $payload) = request($sock, FRAME_BEGIN,
		$snap ? pb_field_varint(1, $snap->{id}) . pb_field_bytes(2, $o{key} // $snap->{key}) : '');
	return reply_outcome(FRAME_BEGIN_OK, $type, $payload) unless ($type // 0) == FRAME_BEGIN_OK;
	my $f = pb_decode($payload);
	return { sock => $sock, id => $f->{1}[0], key => $f->{2}[0] // '', seq => 0, rows => 0 };
}

sub write_batch
{
	my ($s, $table, $kind, @rows) = @_;
	my $seq = ++$s->{seq};
	my ($type, $payload) = request($s->{sock}, FRAME_WRITE, pb_field_varint(1, $seq)
		  . pb_field_varint(2, $table) . join('', map { pb_field_bytes(3, row(@$_)) } @rows)
		  . ($kind ? pb_field_varint(4, $kind) : ''));
	$s->{rows} += @rows;
	return reply_outcome(FRAME_ACK, $type, $payload);
}

sub commit
{
	my ($s) = @_;
	my ($type, $payload) = request($s->{sock}, FRAME_COMMIT,
		pb_field_varint(1, $s->{seq}) . pb_field_varint(2, $s->{rows}));
	return reply_outcome(FRAME_COMMIT_OK, $type, $payload);
}

# Scan table on a new connection, naming snapshot and session if given:
# "k:v:s ..." or "error CODE: message"
sub scan
{
	my ($table, %o) = @_;
	my $sock = ready();
	my $request = pb_field_varint(1, $table);
	$request .= pb_field_varint(7, $o{session}{id}) . pb_field_bytes(8, $o{session}{key}) if $o{session};
	$request .= pb_field_varint(10, $o{snapshot}{id}) . pb_field_bytes(11, $o{key} // $o{snapshot}{key})
	  if $o{snapshot};
	my $rows = scan_rows($sock, $request);
	close($sock);
	return $rows;
}

my $setup = ready();
my $t = create_table($setup, 'snap');
my $s = begin();
is(write_batch($s, $t, 0, map { [ $_, $_ * 10, "r$_" ] } 1 .. 5), '', 'five rows written');
is(commit($s), '', '... and committed');
my $before = '1:10:r1 2:20:r2 3:30:r3 4:40:r4 5:50:r5';
is(scan($t), $before, 'a scan reads them');

my $holder = ready();
my $snap = snapshot($holder);
ok($snap->{id} > 0, 'SNAPSHOT answers an id');
is(length($snap->{key}), 16, '... and a 16-byte key');

$s = begin();
is(write_batch($s, $t, WRITE_UPDATE, [ 1, 100, 'changed' ]), '', 'another session updates row 1');
is(write_batch($s, $t, WRITE_DELETE, [ 2, 0, '' ]), '', '... deletes row 2');
is(write_batch($s, $t, 0, [ 6, 60, 'r6' ]), '', '... inserts row 6');
is(commit($s), '', '... and commits');
my $after = '1:100:changed 3:30:r3 4:40:r4 5:50:r5 6:60:r6';
is(scan($t), $after, 'a scan naming no snapshot reads the commit');
is(scan($t, snapshot => $snap), $before, 'a scan naming the snapshot reads the rows as they were');

# first updater wins
my $c = begin($snap);
ok(ref $c, 'a session begins on the snapshot');
like(write_batch($c, $t, WRITE_UPDATE, [ 1, 1, 'late' ]), qr/^error 17: could not serialize access due to concurrent update$/,
	'its update of a row committed since is CONCURRENT_UPDATE');
$c = begin($snap);
like(write_batch($c, $t, WRITE_DELETE, [ 2, 0, '' ]), qr/^error 17: could not serialize access due to concurrent delete$/,
	'a delete of a row deleted since: ... concurrent delete');
$c = begin($snap);
like(write_batch($c, $t, WRITE_UPDATE, [ 3, 33, 'ok' ], [ 1, 1, 'late' ]), qr/^error 17: /,
	'a batch with one changed row fails whole');
is(scan($t), $after, '... and nothing of it is staged or stored');
$c = begin($snap);
is(write_batch($c, $t, WRITE_UPDATE, [ 3, 33, 'mine' ]), '', 'an update of a row unchanged since is taken');
is(write_batch($c, $t, 0, [ 7, 70, 'r7' ]), '', '... and an insert');
is(scan($t, snapshot => $snap, session => $c), '1:10:r1 2:20:r2 3:33:mine 4:40:r4 5:50:r5 7:70:r7',
	"a scan naming the session and the snapshot reads the session's writes over the snapshot");
is(commit($c), '', 'the session commits');
is(scan($t), '1:100:changed 3:33:mine 4:40:r4 5:50:r5 6:60:r6 7:70:r7', '... and its rows are there');

# the snapshot's life
my $d = begin($snap);
ok(ref $d, 'another session begins on the snapshot');
close($holder);
select(undef, undef, undef, 0.3);	# the connection's thread lets its reference go
is(scan($t, snapshot => $snap), $before, 'with its connection closed, the session still holds the snapshot');
close($d->{sock});
# the connection's thread ends the session, and the snapshot with it, soon
my $gone = '';
for (1 .. 100)
{
	$gone = scan($t, snapshot => $snap);
	last if $gone =~ /^error/;
	select(undef, undef, undef, 0.1);
}
like($gone, qr/^error 16: no snapshot of this id and key/,
	'once nothing holds it, a scan naming it is SESSION_LOST');
like(begin($snap), qr/^error 16: /, '... and so is a BEGIN naming it');
my $h2 = ready();
my $s1 = snapshot($h2);
like(scan($t, snapshot => $s1, key => 'x' x 16), qr/^error 16: /, 'a wrong key is SESSION_LOST');
my $s2 = snapshot($h2);
isnt($s2->{id}, $s1->{id}, 'a second SNAPSHOT on a connection answers another id');
like(scan($t, snapshot => $s1), qr/^error 16: /, '... and the first is gone');
is(scan($t, snapshot => $s2), '1:100:changed 3:33:mine 4:40:r4 5:50:r5 6:60:r6 7:70:r7', '... the second reads');
close($h2);

# the prepared sessions listed with a snapshot
my $pt = create_table($setup, 'prepared_list');
my $N = 150;
my @preparers;
for my $i (1 .. $N)
{
	my $p = begin();
	die "write $i" if write_batch($p, $pt, 0, [ $i, $i, 'p' ]) ne '';
	my ($type, $payload) = request($p->{sock}, FRAME_PREPARE,
		pb_field_varint(1, 1) . pb_field_varint(2, 1) . pb_field_bytes(3, "snap:p:$i"));
	die 'PREPARE: ' . reply_outcome(FRAME_PREPARE_OK, $type, $payload) unless ($type // 0) == FRAME_PREPARE_OK;
	# kept until all are prepared: an orphaned one would hold the next back
	push @preparers, $p->{sock};
}
close($_) for @preparers;	# orphaned: any connection may resolve them
for (1 .. 100)
{
	my $list = $ts->prepared('snap:p:') // [];
	last if @$list == $N && !grep { (split /\t/, $_->{line})[4] ne 'no' } @$list;
	select(undef, undef, undef, 0.1);
}
my $lister = ready();
my $l = snapshot($lister, 'snap:p:');
is(scalar @{ $l->{prepared} }, $N, "a snapshot lists the $N sessions prepared under its prefix");
is(scalar @{ snapshot($lister, 'other:')->{prepared} }, 0, '... none under another prefix');
is(scalar @{ snapshot($lister)->{prepared} }, 0, '... and none without a prefix');

my $pid = fork() // die "fork: $!";
if ($pid == 0)
{
	my $r = ready();
	for my $i (1 .. $N)
	{
		my ($type, $payload) = request($r, FRAME_RESOLVE, pb_field_bytes(1, "snap:p:$i") . pb_field_varint(2, 1));
		POSIX::_exit(1) unless ($type // 0) == FRAME_RESOLVE_OK;
	}
	POSIX::_exit(0);	# not exit: the tserver object is the parent's
}
my ($checked, $torn) = (0, '');
for (;;)
{
	my $snap_p = snapshot($lister, 'snap:p:');
	my %listed = map { $_ => 1 } @{ $snap_p->{prepared} };
	my %present = map { (split /:/)[0] => 1 } split / /, scan($pt, snapshot => $snap_p);
	for my $i (1 .. $N)
	{
		$torn ||= "session $i: listed and its row there" if $listed{"snap:p:$i"} && $present{$i};
		$torn ||= "session $i: neither listed nor its row there" if !$listed{"snap:p:$i"} && !$present{$i};
	}
	$checked++;
	last if !%listed;
}
waitpid($pid, 0);
is($?, 0, "another connection published the $N sessions one by one");
is($torn, '', "each of $checked snapshots taken meanwhile holds the rows of exactly the sessions it does not list");

# truncate and reload: the old rows go with their files, but not from
# under a scan or a snapshot that reads them
$ts->check_log;
$ts->stop;
$ts = TcopyTest->new(extra_args => [ '--session-memory-mb', '1' ]);
$ts->start or die "tserver did not start";
my $rt = create_table(ready(), 'reload');
my $RELOAD_ROWS = 20000;

# one session (truncating the table first when asked) of rows 1..N tagged
sub reload
{
	my ($tag, $truncate) = @_;
	my $r = begin();
	if ($truncate)
	{
		my ($type, $payload) = request($r->{sock}, FRAME_TABLE_OP,
			pb_field_varint(1, 1) . pb_field_varint(2, $rt) . pb_field_varint(3, 1));
		return 'TRUNCATE: ' . reply_outcome(FRAME_TABLE_OP_OK, $type, $payload) unless ($type // 0) == FRAME_TABLE_OP_OK;
	}
	for my $b (0 .. $RELOAD_ROWS / 1000 - 1)
	{
		my $w = write_batch($r, $rt, 0, map { [ $_, $b, $tag . ('x' x 100) ] } ($b * 1000 + 1) .. ($b * 1000 + 1000));
		return "write: $w" if $w ne '';
	}
	return commit($r);
}

# "rows, each tag's count" of a scan's rows
sub tags
{
	my ($rows) = @_;
	my %n;
	$n{ (split /:/)[2] =~ s/x+$//r }++ for split / /, $rows;
	return scalar(split / /, $rows) . ' ' . join(',', map { "$_=$n{$_}" } sort keys %n);
}

is(reload('a', 0), '', "$RELOAD_ROWS rows loaded in a spilled session");
my $sc = ready();
TcopyTest::send_frame($sc, FRAME_SCAN, pb_field_varint(1, $rt) . pb_field_varint(5, 1000));
my ($btype, $bpayload) = TcopyTest::read_frame($sc, 30);
is($btype, FRAME_SCAN_BATCH, 'a scan begins, its first batch read');
my @early = map { join(':', pb_varints(pb_decode($_)->{1}[0] // ''), pb_decode($_)->{3}[0] // '') }
  @{ pb_decode($bpayload)->{1} // [] };
is(reload('b', 1), '', 'TRUNCATE and a reload in one spilled session commit');
for (;;)
{
	my $f = pb_decode($bpayload);
	last if $f->{2} && $f->{2}[0];
	($btype, $bpayload) = TcopyTest::read_frame($sc, 30);
	last unless ($btype // 0) == FRAME_SCAN_BATCH;
	push @early, map { join(':', pb_varints(pb_decode($_)->{1}[0] // ''), pb_decode($_)->{3}[0] // '') }
	  @{ pb_decode($bpayload)->{1} // [] };
}
close($sc);
is(tags(join(' ', map { my @p = split /:/; my ($k, $v) = map { $_ & 1 ? -(($_ + 1) >> 1) : $_ >> 1 } @p[0, 1]; "$k:$v:$p[2]" } @early)),
	"$RELOAD_ROWS a=$RELOAD_ROWS", '... the scan begun before reads every old row to its end');
is(tags(scan($rt)), "$RELOAD_ROWS b=$RELOAD_ROWS", 'a scan after reads the new rows only');
my $holder2 = ready();
my $held = snapshot($holder2);
is(reload('c', 1), '', 'another TRUNCATE and reload, a snapshot held');
is(tags(scan($rt, snapshot => $held)), "$RELOAD_ROWS b=$RELOAD_ROWS", '... the snapshot still reads the rows it saw');
is(tags(scan($rt)), "$RELOAD_ROWS c=$RELOAD_ROWS", '... and a scan without it the new ones');
close($holder2);

$ts->check_log;
$ts->stop;
done_testing();
