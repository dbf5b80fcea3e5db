# TcopyPowerloss.pm
#	The power-loss harness's Perl side (test/ext/191_power_loss.pl): a
#	process started under test/tools/powerloss.c (the layer), the trees
#	rebuilt from its log by test/tools/powerloss_rebuild.pl, the log's
#	changes and syncs counted as it grows, and two trees compared.
package TcopyPowerloss;

use strict;
use warnings;

use Carp;
use Digest::MD5;
use File::Find;
use PostgreSQL::Test::Utils;
use TcopyTest;

our $SHIM = "$TcopyTest::TOP/build/powerloss.so";
our $REBUILD = "$TcopyTest::TOP/test/tools/powerloss_rebuild.pl";

# Run $code with the layer's environment for $cut ({ log, roots => [dirs],
# op | sync | chunk, cut_file, kill_also }: test/tools/powerloss.c's
# PL_*); without $cut, with none of it.
sub with_layer
{
	my ($cut, $code) = @_;
	my %env = (LD_PRELOAD => $SHIM, PL_LOG => 'log', PL_CUT_OP => 'op', PL_CUT_SYNC => 'sync',
		PL_CUT_CHUNK => 'chunk', PL_CUT_FILE => 'cut_file', PL_KILL_ALSO => 'kill_also');
	my $preload = $ENV{LD_PRELOAD};
	local @ENV{ keys %env, 'PL_ROOT' };
	for my $k (keys %env)
	{
		$ENV{$k} = !$cut ? ($k eq 'LD_PRELOAD' ? $preload : undef)
		  : $k eq 'LD_PRELOAD' ? $SHIM : $cut->{ $env{$k} };
		delete $ENV{$k} unless defined $ENV{$k} && $ENV{$k} ne '';
	}
	$ENV{PL_ROOT} = join(':', @{ $cut->{roots} }) if $cut;
	delete $ENV{PL_ROOT} unless $cut;
	return $code->();
}

# Rebuild the trees a power loss leaves from $log: the synced model into
# @$outs (one per root), ext4's into @{ $opts{ext4} }, everything written
# into @{ $opts{all} }; @$bases, the copies the log began from (or none).
# Returns { changes, syncs, cut }.
sub rebuild
{
	my ($log, $outs, $bases, %opts) = @_;
	my @cmd = ('perl', $REBUILD);
	push @cmd, '--ext4', join(':', @{ $opts{ext4} }) if $opts{ext4};
	push @cmd, '--all', join(':', @{ $opts{all} }) if $opts{all};
	push @cmd, $log, join(':', @$outs);
	push @cmd, join(':', @$bases) if $bases && @$bases;
	open(my $fh, '-|', @cmd) or croak "powerloss_rebuild.pl: $!";
	my $line = join('', <$fh>);
	close($fh) or croak "powerloss_rebuild.pl $log failed (" . ($? >> 8) . ")";
	my %r = $line =~ /(\w+) (\d+)/g;
	return \%r;
}

# Count the changes and syncs $log holds past $st->{offset} into $st
# (changes, syncs; through: of those syncs, writes that wrote through,
# O_DSYNC or io_submit), as the layer numbers them for PL_CUT_OP and
# PL_CUT_SYNC;
# a record still being written is left for the next call.
sub log_counts
{
	my ($log, $st) = @_;
	$st->{$_} //= 0 for qw(offset changes syncs through);
	open(my $fh, '<:raw', $log) or return $st;
	seek($fh, $st->{offset}, 0);
	while (defined(my $line = <$fh>))
	{
		last unless $line =~ /\n\z/;
		my ($op, @a) = split / /, $line;
		if ($op eq 'W')
		{
			my $skip = '';
			last unless (read($fh, $skip, $a[2]) // 0) == $a[2];
		}
		$st->{changes}++ unless $op =~ /^[BEKY]$/;
		$st->{syncs}++ if $op =~ /^[SDY]$/;
		$st->{through}++ if $op eq 'Y';
		$st->{offset} = tell($fh);
	}
	close $fh;
	return $st;
}

# Every entry under $dir: { relative path => [kind, size, md5] }.
sub tree_of
{
	my ($dir) = @_;
	my %t;
	return \%t unless -d $dir;
	find({ no_chdir => 1, wanted => sub {
		return if $_ eq $dir;
		my $rel = substr($_, length($dir) + 1);
		if (-d $_) { $t{$rel} = [ 'd', 0, '' ]; return; }
		return unless -f $_;
		open(my $fh, '<:raw', $_) or croak "$_: $!";
		$t{$rel} = [ 'f', -s $_, Digest::MD5->new->addfile($fh)->hexdigest ];
		close $fh;
	} }, $dir);
	return \%t;
}

# Compare two trees: { names, sizes, contents (counts of entries that
# differ so), diffs => [the first few, said] }.
sub compare_trees
{
	my ($live, $built) = @_;
	my ($a, $b) = (tree_of($live), tree_of($built));
	my %r = (names => 0, sizes => 0, contents => 0, diffs => []);
	for my $p (sort(keys %{ { %$a, %$b } }))
	{
		my ($x, $y) = ($a->{$p}, $b->{$p});
		my $what = !$x || !$y || $x->[0] ne $y->[0] ? 'names'
		  : $x->[1] != $y->[1] ? 'sizes' : $x->[2] ne $y->[2] ? 'contents' : undef;
		next unless $what;
		$r{$what}++;
		push @{ $r{diffs} }, sprintf('%s: %s', $p,
			!$x ? 'only rebuilt' : !$y ? 'only live'
			: $what eq 'sizes' ? "live $x->[1] bytes, rebuilt $y->[1]" : "$what differ")
		  if @{ $r{diffs} } < 10;
	}
	return \%r;
}

# ---- the ledger load ----
# Each round's transactions, in a fixed order, on three foreign tables
# aR, bR, cR of round R (k bigint key, v int), each with a row (R, n) in
# the heap table ledger: Postgres decides, so a transaction committed
# exactly when its ledger row is there.
#	copy      COPY of 500 rows into a (keys n*1000000+1.., v = n)
#	replace   COPY of keys 1..200 into b (on_conflict 'replace'), v = n
#	copy_big  COPY of 40,000 rows (load_init's big) into a (spilled)
# load_init's pad: a's COPYs also fill its third column, pad text, with
# that many random hex digits a row (a spilled SST file then outgrows a
# replica group's 1 MiB FILE chunk).
#	reload    TRUNCATE c, COPY of keys 1..3000 into c, v = n
#	insert    INSERT of 20 rows into a
#	delete    DELETE FROM a of the rows of the copy five transactions back
our @KINDS = qw(copy replace copy_big reload insert delete);
our %ROWS_OF = (copy => 500, replace => 200, copy_big => 40_000, reload => 3000, insert => 20);
our $NTXN = 12;
my ($node, $rows_script, $pad);

# The load runs on $pg (a PostgreSQL::Test::Cluster with tcopy and the
# ledger table); big: copy_big's rows.
sub load_init
{
	my ($pg, %opts) = @_;
	$node = $pg;
	$ROWS_OF{copy_big} = $opts{big} if $opts{big};
	$pad = $opts{pad};
	$rows_script = $node->basedir . '/rows.pl';
	return if -e $rows_script;
	PostgreSQL::Test::Utils::append_to_file($rows_script, <<'PERL');
my ($first, $count, $v, $pad) = @ARGV;
$SIG{PIPE} = sub { exit 0 };
for my $k ($first .. $first + $count - 1)
{
	print "$k,$v", ($pad ? ',' . join('', map { sprintf('%08x', int(rand(2**32))) } 1 .. $pad / 8) : ''), "\n";
}
PERL
}

sub copy_sql
{
	my ($table, $first, $count, $v, $with_pad) = @_;
	return $with_pad && $pad
	  ? "COPY $table (k, v, pad) FROM PROGRAM 'perl $rows_script $first $count $v $pad' (FORMAT csv)"
	  : "COPY $table (k, v) FROM PROGRAM 'perl $rows_script $first $count $v' (FORMAT csv)";
}

# The statements of round r's transaction n: (kind, SQL).
sub txn_sql
{
	my ($r, $n) = @_;
	my $kind = $KINDS[($n - 1) % @KINDS];
	my $body = $kind eq 'copy' || $kind eq 'copy_big' ? copy_sql("a$r", $n * 1_000_000 + 1, $ROWS_OF{$kind}, $n, 1)
	  : $kind eq 'replace' ? copy_sql("b$r", 1, $ROWS_OF{replace}, $n)
	  : $kind eq 'reload' ? "TRUNCATE c$r; " . copy_sql("c$r", 1, $ROWS_OF{reload}, $n)
	  : $kind eq 'insert' ? "INSERT INTO a$r SELECT $n * 1000000 + g, $n FROM generate_series(1, $ROWS_OF{insert}) g"
	  : "DELETE FROM a$r WHERE v = " . ($n - 5);
	return ($kind, "BEGIN;\n$body;\nINSERT INTO ledger VALUES ($r, $n);\nCOMMIT;\n");
}

# What round r must show: from the ledger and the kinds.  Returns
# { a => { v => rows }, b => v|undef, c => v|undef, tables => 1|0 }.
sub expected
{
	my ($r, $committed) = @_;
	my (%rows_a, $last_b, $last_c);
	for my $n (sort { $a <=> $b } keys %$committed)
	{
		my $kind = $KINDS[($n - 1) % @KINDS];
		if ($kind =~ /^(copy|copy_big|insert)$/) { $rows_a{$n} = $ROWS_OF{$kind}; }
		elsif ($kind eq 'replace') { $last_b = $n; }
		elsif ($kind eq 'reload') { $last_c = $n; }
		else { delete $rows_a{$n - 5}; }
	}
	return { a => \%rows_a, b => $last_b, c => $last_c };
}

# The tables' contents: { a => { v => rows }, b => { v => rows }, ... }, or
# an error string.
sub contents
{
	my ($r) = @_;
	my %got;
	for my $t (qw(a b c))
	{
		my ($rc, $out, $err) = $node->psql('postgres',
			"SELECT v, count(*), count(DISTINCT k) FROM $t$r GROUP BY v ORDER BY v");
		return "$t$r: $err" if $rc != 0;
		$got{$t} = {};
		for (split /\n/, $out)
		{
			my ($v, $count, $distinct) = split /\|/;
			return "$t$r: $count rows of v $v but $distinct keys" if $count != $distinct;
			$got{$t}{$v} = $count;
		}
	}
	return \%got;
}

sub describe
{
	my ($h) = @_;
	return '{' . join(' ', map { "$_:$h->{$_}" } sort { $a <=> $b } keys %$h) . '}';
}

# Compare; returns the differences (empty: none).  With acked (a set of n)
# and before recovery: only what acknowledged transactions promise, and
# that nothing uncommitted shows.
sub compare
{
	my ($r, $got, $committed, $acked) = @_;
	my @diff;
	my $want = expected($r, $committed);
	for my $t (qw(a b c))
	{
		for my $v (keys %{ $got->{$t} })
		{
			push @diff, "$t$r has rows of transaction $v, which Postgres did not commit"
			  unless $committed->{$v};
		}
	}
	if (!$acked)
	{
		push @diff, "a$r is " . describe($got->{a}) . ", want " . describe($want->{a})
		  if describe($got->{a}) ne describe($want->{a});
		for my $t (qw(b c))
		{
			my $w = defined $want->{$t} ? { $want->{$t} => $ROWS_OF{ $t eq 'b' ? 'replace' : 'reload' } } : {};
			push @diff, "$t$r is " . describe($got->{$t}) . ", want " . describe($w)
			  if describe($got->{$t}) ne describe($w);
		}
		return @diff;
	}
	# before recovery: each acknowledged transaction's effect is there
	# unless a later committed one may have changed it
	for my $n (sort { $a <=> $b } keys %$acked)
	{
		my $kind = $KINDS[($n - 1) % @KINDS];
		if ($kind =~ /^(copy|copy_big|insert)$/)
		{
			next if $committed->{$n + 5} && ($n + 5 - 1) % @KINDS == 5;
			my $have = $got->{a}{$n} // 0;
			push @diff, "a$r has $have rows of acknowledged transaction $n, want $ROWS_OF{$kind}"
			  if $have != $ROWS_OF{$kind};
		}
		elsif ($kind eq 'delete')
		{
			push @diff, "a$r still has rows of transaction " . ($n - 5) . " that acknowledged transaction $n deleted"
			  if $got->{a}{ $n - 5 };
		}
		else
		{
			my $t = $kind eq 'replace' ? 'b' : 'c';
			next unless defined $want->{$t} && $want->{$t} == $n;
			my $w = describe({ $n => $ROWS_OF{$kind} });
			push @diff, "$t$r is " . describe($got->{$t}) . ", want $w (acknowledged transaction $n)"
			  if describe($got->{$t}) ne $w;
		}
	}
	return @diff;
}

# A cut point where something is at stake, from an uncut round's marks
# (@$began, @$acked: the layer's { changes, syncs } where transaction n
# began and where its COMMIT returned): inside transaction n (2 and on:
# the first is acknowledged by then), half the time among the last changes
# or syncs before its COMMIT returned; odd r cut before a change, even r
# after a sync.  { op => N } or { sync => N }.
sub at_stake
{
	my ($r, $began, $acked, $total_changes, $total_syncs) = @_;
	my @ns = grep { $began->[$_] && $acked->[$_] } 2 .. $NTXN;
	return $r % 2 ? { op => 1 + int(rand($total_changes)) } : { sync => 1 + int(rand($total_syncs)) }
	  unless @ns;
	my $n = $ns[ int(rand(@ns)) ];
	my $unit = $r % 2 ? 'changes' : 'syncs';
	my ($lo, $hi) = ($began->[$n]{$unit}, $acked->[$n]{$unit});
	$hi = $lo + 1 if $hi <= $lo;
	my $near = $unit eq 'syncs' ? 4 : 8;
	my $at = rand() < 0.5 ? $hi - int(rand($near < $hi - $lo ? $near : $hi - $lo))
	  : $lo + 1 + int(rand($hi - $lo));
	return { ($r % 2 ? 'op' : 'sync') => $at };
}

1;
