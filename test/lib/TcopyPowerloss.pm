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
use TcopyTest;

our $SHIM = "$TcopyTest::TOP/build/powerloss.so";
our $REBUILD = "$TcopyTest::TOP/test/tools/powerloss_rebuild.pl";

# Run $code with the layer's environment for $cut ({ log, roots => [dirs],
# op | sync }); without $cut, with none of it.
sub with_layer
{
	my ($cut, $code) = @_;
	local $ENV{LD_PRELOAD} = $cut ? $SHIM : ($ENV{LD_PRELOAD} // '');
	local $ENV{PL_LOG} = $cut ? $cut->{log} : undef;
	local $ENV{PL_ROOT} = $cut ? join(':', @{ $cut->{roots} }) : undef;
	local $ENV{PL_CUT_OP} = $cut && $cut->{op} ? $cut->{op} : undef;
	local $ENV{PL_CUT_SYNC} = $cut && $cut->{sync} ? $cut->{sync} : undef;
	delete $ENV{$_} for grep { !defined $ENV{$_} || $ENV{$_} eq '' }
	  qw(LD_PRELOAD PL_LOG PL_ROOT PL_CUT_OP PL_CUT_SYNC);
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
# (changes, syncs), as the layer numbers them for PL_CUT_OP and PL_CUT_SYNC;
# a record still being written is left for the next call.
sub log_counts
{
	my ($log, $st) = @_;
	$st->{$_} //= 0 for qw(offset changes syncs);
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

1;
