#!/usr/bin/perl
# powerloss_rebuild.pl [--ext4 DIRS] [--all DIRS] LOG OUTDIRS [BASEDIRS]
#	Rebuild the directory trees a power loss leaves, from the log
#	test/tools/powerloss.c wrote of a process's changes under the
#	directories it watched (its roots): a file's contents as of its last
#	sync (an O_DSYNC write's bytes as it returned), a directory's entries
#	as of its last sync, nothing else.  A file whose entry is durable but
#	whose data was never synced is there, empty.  OUTDIRS (which must not
#	exist yet) become the roots, one per root in PL_ROOT's order, separated
#	by ':' as there.  Prints one line: "changes N syncs M cut 0|1".
#	BASEDIRS are copies of the roots as they were when the process started
#	(the log's E records name their entries): the durable state the log
#	starts from; without them the trees must have been empty.
#	--ext4 DIRS also rebuilds ext4's outcome (data=ordered, a journal
#	commit right at the end of the log): every change of a directory's
#	entries and every size change (truncate, fallocate, O_TRUNC) is
#	durable, in the log's order; data only as synced.  --all DIRS rebuilds
#	what was written, as if every change had been synced: the live trees
#	after a kill -9, which the self-check of 191 compares them with.
#
#	Objects are numbered as the log makes them, not by inode: an inode
#	freed and used again for a new file is a new object, while a durable
#	entry may still name the old one.
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Path qw(make_path);

my %also;
while (@ARGV && $ARGV[0] =~ /^--(ext4|all)$/)
{
	shift @ARGV;
	$also{$1} = [ split /:/, shift(@ARGV) // '' ];
}
@ARGV == 2 || @ARGV == 3 or die "usage: $0 [--ext4 DIRS] [--all DIRS] LOG OUTDIRS [BASEDIRS]\n";
my ($log, $out, $base) = @ARGV;
my @outs = split /:/, $out;
my @bases = defined $base ? split(/:/, $base) : ();
-e $_ and die "$_ exists\n" for @outs, map { @$_ } values %also;

my %obj_of_ino;			# inode -> the object it is now
my %is_dir;				# object -> 1 for a directory
my %data;				# object -> its contents now (files)
my %synced;				# object -> its contents at its last sync
my %meta;				# object -> ext4's: as synced, sized as it is now
my %entries;			# object -> { name -> object } now (directories)
my %durable;			# object -> { name -> object } at its last sync
my %path_of;			# object -> its path in BASEDIRS (E records)
my @roots;				# the roots' objects, in the log's order
my $next = 0;
my ($changes, $syncs, $cut) = (0, 0, 0);

open(my $fh, '<:raw', $log) or die "$log: $!\n";

sub obj
{
	my ($ino) = @_;
	return $obj_of_ino{$ino};
}

sub dir_obj
{
	my ($ino) = @_;
	my $o = $obj_of_ino{$ino};
	return defined $o && $is_dir{$o} ? $o : undef;
}

sub slurp
{
	my ($path) = @_;
	open(my $in, '<:raw', $path) or die "$path: $!\n";
	local $/;
	my $bytes = <$in> // '';
	close $in;
	return $bytes;
}

# a log whose process was killed (not cut) may end inside a record: the
# change it was logging is one the power loss did not keep
while (my $line = <$fh>)
{
	last unless $line =~ /\n\z/;
	chomp $line;
	my ($op, @a) = split / /, $line;
	if ($op eq 'K')
	{
		$cut = 1;
		last;
	}
	if ($op eq 'B')
	{
		# a root: a directory made durable before the log began
		my $o = $next++;
		$obj_of_ino{ $a[0] } = $o;
		$is_dir{$o} = 1;
		$entries{$o} = {};
		$durable{$o} = {};
		$path_of{$o} = $bases[ scalar @roots ];
		push @roots, $o;
		next;
	}
	if ($op eq 'E')
	{
		my ($parent, $name, $ino, $kind) = @a;
		my $p = dir_obj($parent);
		die "an E record outside the tree: $line\n" unless defined $p;
		my $o = $next++;
		$obj_of_ino{$ino} = $o;
		$path_of{$o} = defined $path_of{$p} ? "$path_of{$p}/$name" : undef;
		if ($kind eq 'd')
		{
			$is_dir{$o} = 1;
			$entries{$o} = {};
			$durable{$o} = {};
		}
		else
		{
			die "E records of files but no BASEDIRS\n" unless defined $path_of{$o};
			$data{$o} = $synced{$o} = $meta{$o} = slurp($path_of{$o});
		}
		$entries{$p}{$name} = $o;
		$durable{$p}{$name} = $o;
		next;
	}
	$changes++ unless $op eq 'Y';	# a write through is its W's change
	if ($op eq 'W')
	{
		my ($ino, $off, $len) = @a;
		my $bytes = '';
		my $got = read($fh, $bytes, $len);
		last unless defined $got && $got == $len;
		my $o = obj($ino);
		next unless defined $o;
		my $d = \$data{$o};
		$$d .= "\0" x ($off - length($$d)) if length($$d) < $off;
		substr($$d, $off, $len) = $bytes;
	}
	elsif ($op eq 'T')
	{
		my ($ino, $size) = @a;
		my $o = obj($ino);
		next unless defined $o;
		for my $d (\$data{$o}, \$meta{$o})
		{
			if (length($$d) > $size) { substr($$d, $size) = ''; }
			else { $$d .= "\0" x ($size - length($$d)); }
		}
	}
	elsif ($op eq 'S')
	{
		$syncs++;
		my $o = obj($a[0]);
		$synced{$o} = $meta{$o} = $data{$o} if defined $o;
	}
	elsif ($op eq 'Y')
	{
		# bytes written through: durable as the write returned
		$syncs++;
		my ($ino, $off, $len) = @a;
		my $o = obj($ino);
		next unless defined $o && !$is_dir{$o};
		my $bytes = length($data{$o}) > $off ? substr($data{$o}, $off, $len) : '';
		for my $d (\$synced{$o}, \$meta{$o})
		{
			$$d //= '';
			$$d .= "\0" x ($off - length($$d)) if length($$d) < $off;
			substr($$d, $off, length($bytes)) = $bytes;
		}
	}
	elsif ($op eq 'D')
	{
		$syncs++;
		my $o = dir_obj($a[0]);
		$durable{$o} = { %{ $entries{$o} } } if defined $o && $is_dir{$o};
	}
	elsif ($op eq 'C')
	{
		my ($parent, $name, $ino, $kind) = @a;
		my $p = dir_obj($parent);
		my $o = $next++;
		$obj_of_ino{$ino} = $o;
		if ($kind eq 'd')
		{
			$is_dir{$o} = 1;
			$entries{$o} = {};
			$durable{$o} = {};
		}
		else
		{
			$data{$o} = $meta{$o} = '';
		}
		$entries{$p}{$name} = $o if defined $p;
	}
	elsif ($op eq 'L')
	{
		my ($ino, $parent, $name) = @a;
		my $p = dir_obj($parent);
		my $o = obj($ino);
		if (defined $p)
		{
			if (defined $o) { $entries{$p}{$name} = $o; }
			else { delete $entries{$p}{$name}; }
		}
	}
	elsif ($op eq 'R')
	{
		my ($fp, $fname, $tp, $tname) = @a;
		my ($f, $t) = (dir_obj($fp), dir_obj($tp));
		my $o = defined $f ? delete $entries{$f}{$fname} : undef;
		if (defined $t)
		{
			if (defined $o) { $entries{$t}{$tname} = $o; }
			else { delete $entries{$t}{$tname}; }
		}
	}
	elsif ($op eq 'U')
	{
		my ($parent, $name) = @a;
		my $p = dir_obj($parent);
		delete $entries{$p}{$name} if defined $p;
	}
	else
	{
		die "unknown log record \"$line\"\n";
	}
}
close $fh;

# Write a tree: a directory's entries from $dirs (durable or now), each file
# with its contents from $files (none: empty).
sub build
{
	my ($o, $path, $dirs, $files) = @_;
	mkdir($path, 0700) or die "mkdir $path: $!\n";
	# a directory reached twice (renamed, its old entry durable too) is made
	# again: its entries are what its own syncs made them
	for my $name (sort keys %{ $dirs->{$o} })
	{
		my $c = $dirs->{$o}{$name};
		if ($is_dir{$c})
		{
			build($c, "$path/$name", $dirs, $files);
			next;
		}
		open(my $w, '>:raw', "$path/$name") or die "$path/$name: $!\n";
		print $w ($files->{$c} // '');
		close($w) or die "$path/$name: $!\n";
		chmod(0600, "$path/$name") or die "chmod $path/$name: $!\n";
	}
}
my %models = (synced => [ \@outs, \%durable, \%synced ], ext4 => [ $also{ext4}, \%entries, \%meta ],
	all => [ $also{all}, \%entries, \%data ]);
for my $m (sort keys %models)
{
	my ($dirs, $tree, $files) = @{ $models{$m} };
	next unless $dirs;
	die "$m: " . scalar(@$dirs) . " directories for " . scalar(@roots) . " roots\n"
	  unless @$dirs == @roots;
	for my $i (0 .. $#roots)
	{
		make_path(dirname($dirs->[$i]));
		build($roots[$i], $dirs->[$i], $tree, $files);
	}
}
print "changes $changes syncs $syncs cut $cut\n";
